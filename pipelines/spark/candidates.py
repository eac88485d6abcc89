"""Candidate pairs at scale: shards of the project's own index, each queried by the pages after it.

The pages to compare are cut, in arrival order, into shards of at most
``shard_pages``.  Task (s, t), for every shard s up to shard t, loads shard s
into a ``MemoryStore`` (its index, its sketches) and asks it, for each page of
shard t, which earlier pages are near and how (``MemoryStore.matches``: the
crawl's own test, pair by pair).  A page's work is one query per shard before
it, each costing what the index costs at a shard's size (``index.choose_layout``):
the work per page grows with the number of shards, not with the candidates of
the whole archive, and no page is exploded into its probe keys (718 rows a page
at 10^9 pages, distance 8).  ``bench/spark.py`` measures a query's cost and
projects it.

Nothing here imports Spark: it runs inside the executors' Python workers.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from ..fingerprint.fingerprinter import Fingerprint
from ..matching.matcher import fingerprint_rows
from ..matching.policy import Match, Policy
from ..matching.scope import Scope, site_key
from ..stores.memory import MemoryStore

#: A page to compare: (order key, URL, content, structure, short, sketch); content/structure may be None.
Node = tuple[int, str, int | None, int | None, bool, bytes | None]


@dataclass(frozen=True)
class Pair:
    """A later page near an earlier one: a duplicate, or a borderline candidate (``match.duplicate``
    False).  ``rank`` orders a page's pairs as a store meets them: content candidates first, each
    stage nearest first, then the earliest page."""

    later: int
    earlier: int
    match: Match

    @property
    def rank(self) -> tuple[int, int, int]:
        structure_stage = self.match.reason == "structure"  # (a borderline keep says "structure_apart")
        distance = self.match.structure_distance if structure_stage else self.match.content_distance
        return int(structure_stage), distance or 0, self.earlier


def fingerprint_of(node: Node) -> Fingerprint:
    _, _, content, structure, short, sketch = node
    return Fingerprint(content, structure, sketch=sketch, short=short)


def shard_store(nodes: Sequence[Node], policy: Policy) -> MemoryStore:
    """A shard's pages loaded as kept pages of a store (its rows: the nodes' positions)."""
    store = MemoryStore(policy)
    fingerprints, present = fingerprint_rows([fingerprint_of(node) for node in nodes])
    store.load([node[1] for node in nodes], fingerprints, present, [node[5] for node in nodes])
    return store


def pairs(earlier: Sequence[Node], later: Sequence[Node], policy: Policy, scope: Scope = Scope.CRAWL) -> Iterator[Pair]:
    """Every pair of a page of ``later`` with an earlier page of ``earlier`` (by order key) that a
    store would call a duplicate or a borderline candidate; in "site" or "host" scope, of the same site."""
    if not earlier or not later or earlier[0][0] >= later[-1][0]:
        return
    store = shard_store(earlier, policy)
    keys = np.array([node[0] for node in earlier], dtype=np.int64)
    sites = [site_key(node[1], scope) for node in earlier]
    for node in later:
        site = site_key(node[1], scope)
        for row, match in store.matches(fingerprint_of(node), node[1]):
            if keys[row] < node[0] and sites[row] == site:
                yield Pair(node[0], int(keys[row]), match)


def shard_tasks(shards: int) -> list[tuple[int, int]]:
    """The (earlier shard, later shard) tasks: every shard with itself and each shard after it."""
    return [(s, t) for t in range(shards) for s in range(t + 1)]
