"""The crawl's decisions over a candidate graph: kept if and only if no page kept earlier is a duplicate.

That is the lexicographically-first maximal independent set of the graph of
duplicate pairs, in arrival order; not its connected components, which would
drop C of a chain A~B~C that a crawl keeps.  A large graph is cut down by
rounds of joins: in each, a page with a duplicate among the pages already
kept is dropped, and the pairs of dropped pages go (a page whose earlier
duplicates are all dropped has no pair left, so it is kept).  Once few pairs
are left they are decided on the driver, in order (``dropped_locally``).
Every round decides at least the earliest undecided page; chains are short
in practice (``bench/spark.py`` prints the rounds).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any


def dropped_locally(edges: Iterable[tuple[int, int]]) -> set[int]:
    """The pages dropped, given the duplicate pairs ``(later, earlier)``: in order, a page is dropped
    when one of its earlier duplicates is not (a page with no pair is kept)."""
    earlier_of: dict[int, list[int]] = defaultdict(list)
    for later, earlier in edges:
        earlier_of[later].append(earlier)
    dropped: set[int] = set()
    for later in sorted(earlier_of):
        if any(earlier not in dropped for earlier in earlier_of[later]):
            dropped.add(later)
    return dropped


def dropped_by_rounds(edges: Any, driver_pairs: int, partitions: int) -> tuple[Any, int, int]:
    """The pages dropped (an RDD of order keys), the rounds of joins it took and the pairs decided on
    the driver, given the duplicate pairs ``(later, earlier)`` as an RDD: rounds while more than
    ``driver_pairs`` pairs are undecided (in ``partitions`` parts), then the rest on the driver."""
    context = edges.context
    edges = edges.distinct(partitions).persist()
    dropped_parts, rounds = [], 0
    while (remaining := edges.count()) > driver_pairs:
        rounds += 1
        undecided = edges.keys().distinct(partitions).map(lambda page: (page, None))
        # an earlier page that no pair still questions is kept: its later pages are dropped
        newly = (
            edges.map(lambda pair: (pair[1], pair[0]))
            .subtractByKey(undecided, partitions)
            .values()
            .distinct(partitions)
            .map(lambda page: (page, None))
            .persist()
        )
        newly.localCheckpoint()  # its pages outlive this round's pairs
        newly.count()
        dropped_parts.append(newly.keys())
        left = (
            edges.subtractByKey(newly, partitions)
            .map(lambda pair: (pair[1], pair[0]))
            .subtractByKey(newly, partitions)
            .map(lambda pair: (pair[1], pair[0]))
            .persist()
        )
        left.localCheckpoint()
        left.count()
        edges.unpersist()
        edges = left
    local = dropped_locally(edges.collect()) if remaining else set()
    edges.unpersist()
    dropped_parts.append(context.parallelize(sorted(local), max(1, min(len(local) // 100_000, 64))))
    return context.union(dropped_parts), rounds, remaining
