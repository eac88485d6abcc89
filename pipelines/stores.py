"""Where kept pages are remembered, and the duplicate decision made against them.

A store answers one question atomically: "is this page a near-duplicate of a
page kept before? if not, remember it".  Asking and remembering happen in one
call with no ``await`` between, so two near-duplicates processed concurrently
can never both be kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from .fingerprint import Fingerprint
from .index import SimhashIndex
from .simhash import hamming
from .sketch import similarity


class Mode(str, Enum):
    """Which fingerprints must be near for a page to count as a duplicate."""

    BOTH = "both"  # content and structure, of the same earlier page
    CONTENT = "content"
    STRUCTURE = "structure"
    EITHER = "either"  # content or structure, of any earlier page


@dataclass(frozen=True)
class Policy:
    """When is a page a duplicate of a kept one.

    Content matches when the SimHash distance is within ``content_distance``
    and the pages' shingle sketches agree on at least ``min_similarity``
    (estimated Jaccard similarity of word 3-grams).
    """

    mode: Mode = Mode.CONTENT
    content_distance: int = 8
    structure_distance: int = 3
    min_similarity: float = 0.65


@dataclass(frozen=True)
class Match:
    """The earlier page an item duplicates, and how near it is."""

    url: str
    reason: str  # "both", "content" or "structure": what made it a duplicate
    content_distance: int | None
    structure_distance: int | None
    similarity: float | None = None


class MemoryStore:
    """Kept pages in this process's memory; forgotten when the crawl ends."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self._urls: list[str] = []
        self._pages: list[Fingerprint] = []
        self._content = SimhashIndex(policy.content_distance)
        self._structure = SimhashIndex(policy.structure_distance)

    def __len__(self) -> int:
        return len(self._urls)

    def check_and_add(self, url: str, fingerprint: Fingerprint) -> Match | None:
        """The match for ``fingerprint``, or ``None`` after remembering it as kept."""
        match = self._find(fingerprint)
        if match is None:
            self._add(url, fingerprint)
        return match

    def _find(self, page: Fingerprint) -> Match | None:
        mode = self.policy.mode
        if mode in (Mode.BOTH, Mode.CONTENT, Mode.EITHER) and page.content is not None:
            for row, _ in self._content.query(page.content):
                if not self._sketch_agrees(row, page):
                    continue
                if mode is not Mode.BOTH or self._structure_near(row, page):
                    return self._match(row, page, "both" if mode is Mode.BOTH else "content")
        if mode in (Mode.STRUCTURE, Mode.EITHER) and page.structure is not None:
            for row, _ in self._structure.query(page.structure):
                return self._match(row, page, "structure")
        return None

    def _sketch_agrees(self, row: int, page: Fingerprint) -> bool:
        kept = self._pages[row].sketch
        if kept is None or page.sketch is None:
            return False
        return similarity(kept, page.sketch) >= self.policy.min_similarity

    def _structure_near(self, row: int, page: Fingerprint) -> bool:
        kept = self._pages[row].structure
        return (
            kept is not None
            and page.structure is not None
            and hamming(kept, page.structure) <= self.policy.structure_distance
        )

    def _match(self, row: int, page: Fingerprint, reason: str) -> Match:
        kept = self._pages[row]
        return Match(
            self._urls[row],
            reason,
            _distance(kept.content, page.content),
            _distance(kept.structure, page.structure),
            None if kept.sketch is None or page.sketch is None else similarity(kept.sketch, page.sketch),
        )

    def _add(self, url: str, page: Fingerprint) -> None:
        row = len(self._urls)
        self._urls.append(url)
        self._pages.append(page)
        if page.content is not None:
            self._content.add(row, page.content)
        if page.structure is not None:
            self._structure.add(row, page.structure)


def _distance(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else hamming(a, b)
