"""When is a page a near-duplicate of a kept one: the mode, the distances, the sketch check, and the
answer a store gives (:class:`Match`).

Every store and every caller of a store (the pipeline, the link guard, batch mode, the decision log)
speaks in these terms; none of them is needed to define them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum

from .sketch import SMALL_TEXT_SHINGLES, similarity, sketch_size, weighted_similarity


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
#: Two small texts (``sketch.SMALL_TEXT_SHINGLES``, both) are also compared ``SMALL_TEXT_EXTRA_BITS`` beyond the
#: content distance, where their sketches must agree on ``SMALL_TEXT_FAR_SIMILARITY`` (or their word weights on
#: ``SMALL_TEXT_WEIGHTED_SIMILARITY``): SimHash estimates an angle, and one reworded sentence of a three-sentence
#: stub turns it as far as 12 bits.  ``bench/quality.py``'s small-text table: 4 is the fewest bits at which
#: every kind of change is caught at 0.98 or more (3: author stubs 0.978), with 0 same-site false drops up to 5;
#: each bit more costs every page's index query (at 1M pages, 12 bits against 11: ~1.5x).
SMALL_TEXT_EXTRA_BITS = 4
SMALL_TEXT_FAR_SIMILARITY = 0.6
#: Two small texts (not both short) within the search distance also match when the weights of their words agree
#: on this much (``sketch.weighted_similarity``): a reworded sentence of a stub replaces most of its shingles but
#: few of its weighted words.  ``python -m bench.small_texts``: reworded stubs agree on 0.74 and more, different
#: small pages of one template within 12 bits on 0.62 at most, and the sketch's estimate (±0.05) at 0.6 drops 7
#: of them; 0.65 and 0.7 catch the same pairs in ``bench/quality.py``, 0.7 with the wider margin.
SMALL_TEXT_WEIGHTED_SIMILARITY = 0.7


@dataclass(frozen=True)
class Policy:
    """When is a page a duplicate of a kept one.

    Content matches when the SimHash distance is within ``content_distance``
    and the pages' shingle sketches agree on at least ``min_similarity``
    (estimated Jaccard similarity of word 3-grams).  With ``updates``, a page
    that matches a page kept by an earlier crawl under the same URL, but whose
    text changed, is kept as an update (see ``decided``).
    """

    mode: Mode = Mode.CONTENT
    content_distance: int = 8
    structure_distance: int = 3
    min_similarity: float = 0.65
    updates: bool = False
    small_text_extra_bits: int = SMALL_TEXT_EXTRA_BITS  # how much further small texts are searched (not a setting)

    def decided(self, url: str, match: Match) -> Match:
        """The answer for a page that matched ``match``: a duplicate, or with ``updates`` an update (kept)
        when it is a page of an earlier crawl met again under its URL with another text (its content
        fingerprint or its sketch changed)."""
        changed = match.content_distance != 0 or (match.similarity is not None and match.similarity < 1)
        if self.updates and match.remembered and match.url == url and changed:
            return replace(match, reason=UPDATE, duplicate=False)
        return match

    def content_match(self, distance: int, sketches: tuple[bytes | None, bytes | None], short: bool,
                      other_short: bool) -> bool:
        """Are two pages' contents the same, given their content distance and sketches?

        Two short pages (``Fingerprint.short``) only when their words are the
        same: content distance 0 and equal sketches (a page without own text
        has none: its content is a hash of its visible words).  Any other pair,
        a short page and a longer one included, when within
        ``content_distance`` and their sketches agree on at least
        ``similarity_needed``: the line between short and long is drawn on the
        pair, so a page just under it and its copy with a few words more meet.
        """
        a, b = sketches
        if short and other_short:
            return distance == 0 and a == b
        if a is None or b is None:
            return False
        evidence = self.evidence(distance, a, b)
        return evidence is not None and evidence[0] >= evidence[1]

    def content_verdict(self, distance: int, sketches: tuple[bytes | None, bytes | None], short: bool,
                        other_short: bool, structure_distance: int | None) -> tuple[str, bool] | None:
        """How a page stands to a kept page within the content search distance: ``(reason, True)`` a
        duplicate, ``(reason, False)`` a borderline candidate (what failed: "similarity", or the
        "structure" of mode "both"), ``None`` neither (two short texts that differ, a page
        without own text, or a pair no rule compares at this distance: two texts not both small
        beyond the content distance).  Symmetric: it serves the stores, which meet the pair in arrival order,
        and batch jobs, which meet it in any order."""
        both_short = short and other_short
        if both_short and distance:
            return None
        if not both_short and (None in sketches or self.evidence(distance, *sketches) is None):
            return None  # beyond every rule: not even a candidate to review
        content = self.content_match(distance, sketches, short, other_short)
        structure_near = structure_distance is not None and structure_distance <= self.structure_distance
        if content and (self.mode is not Mode.BOTH or structure_near):
            return ("exact_text" if both_short else "both" if self.mode is Mode.BOTH else "content"), True
        if both_short:
            return None
        return ("structure" if content else "similarity"), False

    @property
    def search_distance(self) -> int:
        """How far a store's index looks for content candidates: small texts are compared further."""
        return min(64, self.content_distance + self.small_text_extra_bits)

    def evidence(self, distance: int, a: bytes, b: bytes) -> tuple[float, float] | None:
        """The similarity a content match of two sketches at this distance rests on, and what it must reach:
        their shingles' (``pair_similarity_needed``), or, when that falls short, two small texts' word
        weights within the search distance (``SMALL_TEXT_WEIGHTED_SIMILARITY``).  ``None`` beyond both."""
        needed = self.pair_similarity_needed(distance, a, b)
        shingles = None if needed is None else (similarity(a, b), needed)
        if shingles is not None and shingles[0] >= needed:
            return shingles
        weighted = weighted_similarity(a, b) if distance <= self.search_distance else None
        if weighted is not None and (weighted >= SMALL_TEXT_WEIGHTED_SIMILARITY or shingles is None):
            return weighted, SMALL_TEXT_WEIGHTED_SIMILARITY
        return shingles

    def pair_similarity_needed(self, distance: int, a: bytes, b: bytes) -> float | None:
        """What two pages' sketches must agree on at this content distance, ``None`` beyond it: within
        ``content_distance``, ``similarity_needed`` of the shorter text; up to ``search_distance`` for two
        small texts, at least ``SMALL_TEXT_FAR_SIMILARITY``."""
        sizes = sketch_size(a), sketch_size(b)
        needed = self.similarity_needed(min(sizes))
        if distance <= self.content_distance:
            return needed
        if distance <= self.search_distance and max(sizes) < SMALL_TEXT_SHINGLES:
            return max(needed, SMALL_TEXT_FAR_SIMILARITY)
        return None

    def similarity_needed(self, shingles: int) -> float:
        """``min_similarity``, less for short texts: on a text of n shingles, one sentence of
        ``SENTENCE_SHINGLES`` changed leaves a Jaccard similarity of (n - S) / (n + S); never
        less than ``MIN_SIMILARITY_FLOOR``."""
        loss = (shingles - SENTENCE_SHINGLES) / (shingles + SENTENCE_SHINGLES)
        return min(self.min_similarity, max(MIN_SIMILARITY_FLOOR, loss))


#: The reason of a match kept as an update (``Policy.updates``).
UPDATE = "update"


@dataclass(frozen=True)
class Match:
    """The earlier page an item duplicates, and how near it is; or, with ``duplicate`` False, the
    nearest content candidate that failed the sketch or the mode (the page is kept, but a user
    tuning the distances should look at the pair: the decision log calls it a borderline keep), or
    the earlier version of a page kept as an update (reason ``UPDATE``).  ``remembered``: the earlier
    page was kept by an earlier crawl (remembered by the store when this one started)."""

    url: str
    reason: str  # a duplicate: "both", "content", "structure" or "exact_text"; else "similarity", "structure", UPDATE
    content_distance: int | None
    structure_distance: int | None
    similarity: float | None = None
    similarity_needed: float | None = None  # what the sketches had to agree on
    duplicate: bool = True
    remembered: bool = False


def dropped(match: Match | None) -> bool:
    """Is this the answer for a duplicate (not a keep, with or without a borderline candidate)?"""
    return match is not None and match.duplicate
