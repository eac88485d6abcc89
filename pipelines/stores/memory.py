"""Kept pages in this process's memory, and the duplicate decision made against them (the matcher every store
builds on).

A store answers one question atomically: "is this page a near-duplicate of a
page kept before? if not, remember it".  Asking and remembering happen in one
call with no ``await`` between, so two near-duplicates processed concurrently
can never both be kept.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from ..fingerprint.fingerprinter import Fingerprint
from ..fingerprint.simhash import hamming
from ..fingerprint.sketch import similarity
from ..matching.decision_log import Alias, Decision, Skip
from ..matching.index import SimhashIndex, grown
from ..matching.indexloops import scan
from ..matching.policy import Match, Mode, Policy, dropped
from ..matching.urlrules import Rule

#: Up to this many kept pages, a query reads them all (``indexloops.scan``: one sequential read of 16
#: bytes a page, a few us) rather than the index, whose dozens of scattered reads miss the cache
#: between a crawl's pages (~35 us a query in a crawl, against 4 us in a tight loop).
SCAN_ROWS = 4096


class MemoryStore:
    """Kept pages in this process's memory; forgotten when the crawl ends.

    Per page: both fingerprints in numpy arrays, an index entry for each one
    the mode searches by, the URL and the 64-byte sketch (kept by subclasses
    elsewhere, see ``SqliteStore``).
    """

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        # only what the mode searches by is indexed: "both" checks a content candidate's
        # structure from its row, so the structure index serves "structure" and "either" only
        self._content = SimhashIndex(policy.search_distance) if policy.mode is not Mode.STRUCTURE else None
        self._structure = (
            SimhashIndex(policy.structure_distance) if policy.mode in (Mode.STRUCTURE, Mode.EITHER) else None
        )
        self._fingerprints = np.zeros((0, 2), dtype=np.uint64)  # per row: content, structure
        self._present = np.zeros((0, 3), dtype=bool)  # per row: has content, has structure, is short
        self._rows = 0
        self.remembered = 0  # rows kept before this crawl started (by an earlier crawl)
        self._urls: list[str] = []
        self._sketches: list[bytes | None] = []

    def __len__(self) -> int:
        return self._rows

    def check_and_add(self, url: str, fingerprint: Fingerprint) -> Match | None:
        """The match for ``fingerprint``; or, after remembering it as kept, ``None``, its borderline
        candidate or the page it updates (``dropped`` tells them apart)."""
        match = self._find(url, fingerprint)
        if not dropped(match):
            self._add(url, fingerprint)
        return match

    def record(self, decision: Decision) -> None:
        """Add to the decision log (none with a log length of 0); memory keeps none (the crawl's log lines
        say what was dropped)."""

    def save_run(self, run: dict[str, Any]) -> None:
        """Keep a crawl's settings and counts beside its decisions (for the report; not with a log length
        of 0); memory keeps none."""

    def record_skip(self, skip: Skip) -> None:
        """Add a skipped link or request to the log (none with a log length of 0); memory keeps none."""

    def record_alias(self, alias: Alias) -> None:
        """Keep a URL that names a kept page (the first naming of a URL stays), once the page is written.
        Memory keeps none."""

    def save_rules(self, rules: list[Rule]) -> None:
        """Keep the URL rules that changed; memory keeps none."""

    def load_rules(self) -> tuple[list[Rule], list[str]]:
        """The URL rules kept, and the URLs of the most recently kept pages (already fetched)."""
        return [], []

    def close(self) -> None:
        """Nothing to write for memory; persistent stores flush here."""

    def _find(self, url: str, page: Fingerprint, since: int | None = None) -> Match | None:
        """The kept page the page at ``url`` duplicates (or updates), if any, else its borderline
        candidate, if any; only the rows from ``since`` on if given."""
        borderline = None
        for _, match in self.matches(page, since):
            if match.duplicate:
                return self.policy.decided(url, match)
            borderline = borderline or match
        return borderline

    def matches(self, page: Fingerprint, since: int | None = None) -> Iterator[tuple[int, Match]]:
        """Every kept row near the page and how (duplicates and borderline candidates), in the order
        a store decides by: content candidates nearest first, then structure candidates (modes
        "structure" and "either")."""
        mode = self.policy.mode
        if self._content is not None and page.content is not None:
            for row, distance in self._near(self._content, page.content, since):
                if not self._alive(row):
                    continue
                kept = self._sketch(row)
                structure = _distance(self._part(row, 1), page.structure) if mode is Mode.BOTH else None
                verdict = self.policy.content_verdict(distance, (kept, page.sketch), page.short,
                                                      bool(self._present[row, 2]), structure)
                if verdict is not None:
                    yield row, self._match(row, page, verdict[0], kept, verdict[1])
        if self._structure is not None and page.structure is not None:
            for row, _ in self._near(self._structure, page.structure, since):
                if self._alive(row):
                    yield row, self._match(row, page, "structure", self._sketch(row))

    def load(self, urls: list[str], fingerprints: np.ndarray, present: np.ndarray,
             sketches: list[bytes | None]) -> None:
        """Pages known to be kept, added at once (``fingerprint_rows``' arrays): a shard of a batch job."""
        first = self._rows
        self._load_rows(fingerprints, present)
        for row, (url, sketch) in enumerate(zip(urls, sketches), first):
            self._remember(row, url, sketch)

    def _near(self, index: SimhashIndex, fingerprint: int, since: int | None) -> list[tuple[int, int]]:
        """Rows within the index's distance of ``fingerprint`` and their distances, nearest first:
        through the index, or by brute force over the rows from ``since`` on (a few recent ones), or
        over all of them while there are at most ``SCAN_ROWS``."""
        if since is None and self._rows > SCAN_ROWS:
            return index.query(fingerprint)
        part = 0 if index is self._content else 1
        return scan(self._fingerprints, self._present.view(np.uint8), part, fingerprint, index.max_distance,
                    since or 0, self._rows)

    def _alive(self, row: int) -> bool:
        """Does the kept page still count?  Always, but where pages expire (``RedisStore``)."""
        return True

    def _part(self, row: int, part: int) -> int | None:
        return int(self._fingerprints[row, part]) if self._present[row, part] else None

    def _match(self, row: int, page: Fingerprint, reason: str, kept_sketch: bytes | None,
               duplicate: bool = True) -> Match:
        content_distance = _distance(self._part(row, 0), page.content)
        evidence = None
        if kept_sketch is not None and page.sketch is not None and content_distance is not None:
            evidence = self.policy.evidence(content_distance, kept_sketch, page.sketch)
        if evidence is None:  # beyond every rule (a structure match): the shingles' similarity, for the log
            evidence = (_similarity(kept_sketch, page.sketch), None)
        return Match(
            self._url(row),
            reason,
            content_distance,
            _distance(self._part(row, 1), page.structure),
            *evidence,
            duplicate,
            row < self.remembered,
        )

    def _add(self, url: str, page: Fingerprint) -> None:
        row = self._rows
        self._append_rows(*fingerprint_rows([page]))
        for index, fingerprint in ((self._content, page.content), (self._structure, page.structure)):
            if index is not None and fingerprint is not None:
                index.add(row, fingerprint)
        self._remember(row, url, page.sketch)

    def _append_rows(self, fingerprints: np.ndarray, present: np.ndarray) -> None:
        count = len(fingerprints)
        if self._rows + count > len(self._fingerprints):
            capacity = max(self._rows + count, len(self._fingerprints) * 9 // 8 + 1024)
            self._fingerprints = grown(self._fingerprints, self._rows, capacity)
            self._present = grown(self._present, self._rows, capacity)
        self._fingerprints[self._rows : self._rows + count] = fingerprints
        self._present[self._rows : self._rows + count] = present
        self._rows += count

    def _load_rows(self, fingerprints: np.ndarray, present: np.ndarray) -> None:
        """Rows read back from disk: appended, and indexed with one sort."""
        first = self._rows
        self._append_rows(fingerprints, present)
        rows = np.arange(first, self._rows)
        for part, index in ((0, self._content), (1, self._structure)):
            if index is not None:
                index.add_many(rows[present[:, part]], fingerprints[present[:, part], part])

    def _remember(self, row: int, url: str, sketch: bytes | None) -> None:
        self._urls.append(url)
        self._sketches.append(sketch)

    def _url(self, row: int) -> str:
        return self._urls[row]

    def _sketch(self, row: int) -> bytes | None:
        return self._sketches[row]


def fingerprint_rows(pages: list[Fingerprint]) -> tuple[np.ndarray, np.ndarray]:
    """The pages' rows of fingerprints (content, structure) and of which they have and whether they
    are short, as stores keep them."""
    return (
        np.array([(page.content or 0, page.structure or 0) for page in pages], dtype=np.uint64).reshape(-1, 2),
        np.array([(page.content is not None, page.structure is not None, page.short) for page in pages],
                 dtype=bool).reshape(-1, 3),
    )


def _similarity(a: bytes | None, b: bytes | None) -> float | None:
    return None if a is None or b is None else similarity(a, b)


def _distance(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else hamming(a, b)
