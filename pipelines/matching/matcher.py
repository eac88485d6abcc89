"""The duplicate decision against a set of kept pages: their fingerprints in arrays, the indexes the mode
searches by, and the policy asked about each candidate.  Every store holds one (composition): the store
keeps each page's URL and sketch where it likes (``KeptPages``), the matcher only rows."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

import numpy as np

from ..fingerprint.fingerprinter import Fingerprint
from ..fingerprint.simhash import hamming
from ..fingerprint.sketch import has_own_text, similarity
from .index import SimhashIndex, grown
from .indexloops import scan
from .policy import ADDRESS, Match, Mode, Policy, address_key, dropped

#: Up to this many kept pages, a query reads them all (``indexloops.scan``: one sequential read of 16
#: bytes a page, a few us) rather than the index, whose dozens of scattered reads miss the cache
#: between a crawl's pages (~35 us a query in a crawl, against 4 us in a tight loop).
SCAN_ROWS = 4096


class KeptPages(Protocol):
    """What a matcher asks its store about a kept row."""

    def url(self, row: int) -> str: ...

    def sketch(self, row: int) -> bytes | None: ...

    def alive(self, row: int) -> bool:
        """Does the kept page still count?  Always, but where pages expire (Redis)."""
        ...


class Matcher:
    """Rows of kept pages (both fingerprints, which parts they have, short or not) and their indexes;
    ``find`` decides a page against them.  Only what the mode searches by is indexed: "both" checks a
    content candidate's structure from its row, so the structure index serves "structure" and "either"
    only."""

    def __init__(self, policy: Policy, pages: KeptPages) -> None:
        self.policy = policy
        self.pages = pages
        self.content = SimhashIndex(policy.search_distance) if policy.mode is not Mode.STRUCTURE else None
        self.structure = (
            SimhashIndex(policy.structure_distance) if policy.mode in (Mode.STRUCTURE, Mode.EITHER) else None
        )
        self.fingerprints = np.zeros((0, 2), dtype=np.uint64)  # per row: content, structure
        self.present = np.zeros((0, 3), dtype=bool)  # per row: has content, has structure, is short
        self.addresses = np.zeros(0, dtype=np.uint64)  # per row: the page's address (``policy.address_key``)
        self.by_address = SimhashIndex(0)  # rows by address: a page met again there is judged as its re-crawl
        self.rows = 0
        self.remembered = 0  # rows kept before this crawl started (by an earlier crawl)

    def find(self, url: str, page: Fingerprint, since: int | None = None) -> Match | None:
        """The kept page the page at ``url`` duplicates (or updates), if any, else its borderline
        candidate, if any; only the rows from ``since`` on if given."""
        borderline = None
        for _, match in self.matches(page, since, url):
            if match.duplicate:
                return self.policy.decided(url, match)
            borderline = borderline or match
        return borderline

    def matches(
        self, page: Fingerprint, since: int | None = None, url: str | None = None
    ) -> Iterator[tuple[int, Match]]:
        """Every kept row near the page and how (duplicates and borderline candidates), in the order
        a store decides by: the page kept at its ``url`` (its earlier version, ``Policy.recrawled``), content
        candidates nearest first, then structure candidates (modes "structure" and "either")."""
        mode = self.policy.mode
        if url is not None and page.sketch is not None and self.policy.recrawls:
            for row in self.at_address(address_key(url), since):
                kept = self.pages.sketch(row)
                if self.pages.alive(row) and self.policy.recrawled(kept, page.sketch):
                    yield row, self._match(row, page, ADDRESS, kept)
        if self.content is not None and page.content is not None:
            for row, distance in self.near(self.content, page.content, since):
                if not self.pages.alive(row):
                    continue
                kept = self.pages.sketch(row)
                structure = _distance(self.part(row, 1), page.structure) if mode is Mode.BOTH else None
                verdict = self.policy.content_verdict(
                    distance, (kept, page.sketch), page.short, bool(self.present[row, 2]), structure
                )
                if verdict is not None:
                    yield row, self._match(row, page, verdict[0], kept, verdict[1])
        if self.structure is not None and page.structure is not None:
            for row, _ in self.near(self.structure, page.structure, since):
                if self.pages.alive(row):
                    yield row, self._match(row, page, "structure", self.pages.sketch(row))

    def check_and_add(self, url: str, page: Fingerprint) -> tuple[Match | None, int | None]:
        """The page's match, and unless it is dropped the row it was added at (``None`` if dropped)."""
        match = self.find(url, page)
        return match, (None if dropped(match) else self.add(page, url))

    def add(self, page: Fingerprint, url: str) -> int:
        """Append the page's row (kept at ``url``) and index it; its row."""
        row, address = self.rows, address_key(url)
        self.append_rows(*fingerprint_rows([page]), np.array([address], dtype=np.uint64))
        for index, fingerprint in (
            (self.content, page.content),
            (self.structure, page.structure),
            (self.by_address, address),
        ):
            if index is not None and fingerprint is not None:
                index.add(row, fingerprint)
        return row

    def at_address(self, key: int, since: int | None) -> list[int]:
        """The rows kept at the address ``key`` (from ``since`` on, if given), the latest first."""
        if since is None and self.rows > SCAN_ROWS:
            found = [row for row, _ in self.by_address.query(key)]
        else:
            found = (np.flatnonzero(self.addresses[since or 0 : self.rows] == np.uint64(key)) + (since or 0)).tolist()
        return sorted(found, reverse=True)

    def near(self, index: SimhashIndex, fingerprint: int, since: int | None) -> list[tuple[int, int]]:
        """Rows within the index's distance of ``fingerprint`` and their distances, nearest first:
        through the index, or by brute force over the rows from ``since`` on (a few recent ones), or
        over all of them while there are at most ``SCAN_ROWS``."""
        if since is None and self.rows > SCAN_ROWS:
            return index.query(fingerprint)
        part = 0 if index is self.content else 1
        return scan(
            self.fingerprints, self.present.view(np.uint8), part, fingerprint, index.max_distance, since or 0, self.rows
        )

    def memory_bytes(self) -> int:
        """Bytes of the rows' arrays and the indexes (what a process holds per kept page, capacity included)."""
        indexes = sum(
            index.memory_bytes() for index in (self.content, self.structure, self.by_address) if index is not None
        )
        return self.fingerprints.nbytes + self.present.nbytes + self.addresses.nbytes + indexes

    def part(self, row: int, part: int) -> int | None:
        return int(self.fingerprints[row, part]) if self.present[row, part] else None

    def append_rows(self, fingerprints: np.ndarray, present: np.ndarray, addresses: np.ndarray) -> None:
        """Rows appended (fingerprints, what they have, their addresses' keys), not indexed (found by a scan
        ``since`` them, or indexed by ``load_rows``)."""
        count = len(fingerprints)
        if self.rows + count > len(self.fingerprints):
            capacity = max(self.rows + count, len(self.fingerprints) * 9 // 8 + 64)  # (small sites: small arrays)
            self.fingerprints = grown(self.fingerprints, self.rows, capacity)
            self.present = grown(self.present, self.rows, capacity)
            self.addresses = grown(self.addresses, self.rows, capacity)
        self.fingerprints[self.rows : self.rows + count] = fingerprints
        self.present[self.rows : self.rows + count] = present
        self.addresses[self.rows : self.rows + count] = addresses
        self.rows += count

    def load_rows(self, fingerprints: np.ndarray, present: np.ndarray, addresses: np.ndarray) -> None:
        """Rows read back (from disk, Redis or a shard): appended, and indexed with one sort."""
        first = self.rows
        self.append_rows(fingerprints, present, addresses)
        rows = np.arange(first, self.rows)
        for part, index in ((0, self.content), (1, self.structure)):
            if index is not None:
                index.add_many(rows[present[:, part]], fingerprints[present[:, part], part])
        self.by_address.add_many(rows, np.asarray(addresses, dtype=np.uint64))

    def _match(
        self, row: int, page: Fingerprint, reason: str, kept_sketch: bytes | None, duplicate: bool = True
    ) -> Match:
        content_distance = _distance(self.part(row, 0), page.content)
        sketch = page.sketch
        evidence: tuple[float, float] | None = None
        if reason == ADDRESS:
            assert kept_sketch is not None and sketch is not None, "a drop by the address: Policy.recrawled"
            evidence = self.policy.address_evidence(kept_sketch, sketch)
        elif has_own_text(kept_sketch) and has_own_text(sketch) and content_distance is not None:
            evidence = self.policy.evidence(content_distance, kept_sketch, sketch)
        # beyond every rule (a structure match): the own texts' similarity, for the log
        found, needed = evidence if evidence is not None else (_similarity(kept_sketch, sketch), None)
        return Match(
            self.pages.url(row),
            reason,
            content_distance,
            _distance(self.part(row, 1), page.structure),
            found,
            needed,
            duplicate,
            row < self.remembered,
            row,
        )


def fingerprint_rows(pages: list[Fingerprint]) -> tuple[np.ndarray, np.ndarray]:
    """The pages' rows of fingerprints (content, structure) and of which they have and whether they
    are short, as stores keep them."""
    return (
        np.array([(page.content or 0, page.structure or 0) for page in pages], dtype=np.uint64).reshape(-1, 2),
        np.array(
            [(page.content is not None, page.structure is not None, page.short) for page in pages], dtype=bool
        ).reshape(-1, 3),
    )


def address_keys(urls: list[str]) -> np.ndarray:
    """The keys of pages' addresses (``policy.address_key``), as a matcher's rows keep them."""
    return np.fromiter((address_key(url) for url in urls), dtype=np.uint64, count=len(urls))


def _similarity(a: bytes | None, b: bytes | None) -> float | None:
    return similarity(a, b) if has_own_text(a) and has_own_text(b) else None


def _distance(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else hamming(a, b)
