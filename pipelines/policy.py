"""When is a page a near-duplicate of a kept one: the mode, the distances, the sketch check, and the
answer a store gives (:class:`Match`).

Every store and every caller of a store (the pipeline, the link guard, batch mode, the decision log)
speaks in these terms; none of them is needed to define them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from .sketch import similarity, sketch_size


class Mode(str, Enum):
    """Which fingerprints must be near for a page to count as a duplicate."""

    BOTH = "both"  # content and structure, of the same earlier page
    CONTENT = "content"
    STRUCTURE = "structure"
    EITHER = "either"  # content or structure, of any earlier page


#: Shingles one changed sentence of a short text may replace (a sentence of about 40 words).
SENTENCE_SHINGLES = 40
#: The least sketch similarity ever taken for a content match, however short the text.
MIN_SIMILARITY_FLOOR = 0.4


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

    def content_match(self, distance: int, sketches: tuple[bytes | None, bytes | None], short: bool,
                      other_short: bool) -> bool:
        """Are two pages' contents the same, given their content distance and sketches?

        Short pages (whose content is a hash of their visible words) match only
        each other, and only when equal; other pages within ``content_distance``
        whose sketches agree on at least ``similarity_needed``.
        """
        if short or other_short:
            return short and other_short and distance == 0
        a, b = sketches
        if a is None or b is None or distance > self.content_distance:
            return False
        return similarity(a, b) >= self.similarity_needed(min(sketch_size(a), sketch_size(b)))

    def similarity_needed(self, shingles: int) -> float:
        """``min_similarity``, less for short texts: on a text of n shingles, one sentence of
        ``SENTENCE_SHINGLES`` changed leaves a Jaccard similarity of (n - S) / (n + S); never
        less than ``MIN_SIMILARITY_FLOOR``."""
        loss = (shingles - SENTENCE_SHINGLES) / (shingles + SENTENCE_SHINGLES)
        return min(self.min_similarity, max(MIN_SIMILARITY_FLOOR, loss))


@dataclass(frozen=True)
class Match:
    """The earlier page an item duplicates, and how near it is; or, with ``duplicate`` False, the
    nearest content candidate that failed the sketch or the mode (the page is kept, but a user
    tuning the distances should look at the pair: the decision log calls it a borderline keep)."""

    url: str
    reason: str  # a duplicate: "both", "content", "structure" or "exact_text"; else "similarity" or "structure"
    content_distance: int | None
    structure_distance: int | None
    similarity: float | None = None
    similarity_needed: float | None = None  # what the sketches had to agree on
    duplicate: bool = True


def dropped(match: Match | None) -> bool:
    """Is this the answer for a duplicate (not a keep, with or without a borderline candidate)?"""
    return match is not None and match.duplicate
