"""When is a page a near-duplicate of a kept one: the mode, the distances, the sketch check, and the
answer a store gives (:class:`Match`).

Every store and every caller of a store (the pipeline, the link guard, batch mode, the decision log)
speaks in these terms; none of them is needed to define them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any, TypeGuard

import xxhash

from ..fingerprint.sketch import (
    has_own_text,
    link_share,
    listing,
    main_share,
    main_similarity,
    named_alike,
    named_the_same,
    own_share,
    same_name,
    same_own_text,
    similarity,
    sketch_size,
    visible_similarity,
)


class Mode(str, Enum):
    """Which fingerprints must be near for a page to count as a duplicate."""

    BOTH = "both"  # content and structure, of the same earlier page
    CONTENT = "content"
    STRUCTURE = "structure"
    EITHER = "either"  # content or structure, of any earlier page


#: Two pages whose names differ (``sketch.same_name``: their titles or headings say they are about different
#: things, or their own texts are not written in the same languages) are one document only when nearly all their
#: text is.  Sibling pages of one template (two classes of a reference, two commands of a manual, two letters of an
#: index) share most of their words beside the few that say what each is about; a partial translation shares most
#: of its original's; an untranslated chapter whose heading alone was translated shares all the others.
#: ``bench/real_sites.py``: see docs/usage/comparison.md, "What counts as the same page".
NAMED_APART_SIMILARITY = 0.85
#: Own text of fewer than ``SMALL_OWN_TEXT`` shingles (a few sentences, or a title and a footer), less than
#: ``OWN_SHARE_LINE`` of the shingles of a page whose characters are mostly links (``LINK_SHARE_LINE``: a table
#: of contents, an index of terms), or read from a list's or a table's short entries (``sketch.listing``), is not
#: evidence enough on its own: the pages' visible texts must agree as well.  (Not a page whose other text is
#: prose: an article under a long comment thread.)
SMALL_OWN_TEXT = 60
OWN_SHARE_LINE = 0.25
LINK_SHARE_LINE = 0.5
#: Own text that is less than this share of the main content's characters (a list article: a lead over the table
#: that is its content) is not evidence enough on its own either, and no body two pages could share.
MAIN_SHARE_LINE = 0.5
#: Two small texts (both own texts under ``SMALL_TEXT_SHINGLES`` shingles) are also compared
#: ``Policy.small_text_extra_bits`` beyond the content distance, at the same ``min_similarity``: SimHash estimates
#: an angle, and one sentence changed in a text of three turns it by up to 12 bits.
SMALL_TEXT_SHINGLES = 150
#: A page met again at the address of a kept page (``Matcher.at_address``) is a re-crawl of it, not a stranger: it is
#: the same document when it says it is about the same thing and what it shows still agrees on this much (its whole
#: visible text's 5-grams, chrome included), however much of its own short text changed.  A product page with one
#: sentence of its description changed agrees on ~0.9; a home page whose stories changed, under ~0.5 (the real
#: sites' judge calls that another document): ``bench/quality.py``, "Same address".
SAME_ADDRESS_VISIBLE_SIMILARITY = 0.6
#: Two pages whose own texts are large (``SAME_BODY_SHINGLES``) and agree this much hold the same body: another site's
#: chrome around it, or another site's name in its title, does not make it another document (``Policy.the_same_body``).
#: At 0.85 from 90 3-grams (were 0.9 from 150) it drops no other document on any real site nor labelled set, and
#: catches 0.939 of the chrome-swapped articles (0.900): ``bench/real_sites.py``'s variants, docs/usage/distances.md.
SAME_BODY_SIMILARITY = 0.85
SAME_BODY_SHINGLES = 90
#: A thin own text of a page named the same as the kept page (its title, heading and languages) needs this much
#: agreement (and its main content too), its visible text still ``min_similarity``: one sentence of a three-sentence
#: stub reworded leaves ~0.4.  It drops no other document on any real site nor labelled set (0.65 before; the same
#: runs: docs/usage/distances.md).
THIN_NAMED_SIMILARITY = 0.35
#: The reason of a drop decided by the address (``Matcher.matches``), and of one decided by the same body alone
#: (``Policy.witness``).
ADDRESS = "address"
BODY = "body"


@dataclass(frozen=True)
class Policy:
    """When is a page a duplicate of a kept one.

    Content matches when the SimHash distance is within ``content_distance``
    and the pages' sketches agree (``evidence``: estimated Jaccard similarity
    of word 3-grams of at least ``min_similarity``, more when the pages' names
    differ, the visible texts' too where the own text is a small part of the
    page).  With ``updates``, a page
    that matches a page kept by an earlier crawl under the same URL, but whose
    text changed, is kept as an update (see ``decided``).
    """

    mode: Mode = Mode.CONTENT
    content_distance: int = 8
    structure_distance: int = 3
    min_similarity: float = 0.65
    updates: bool = False
    small_text_extra_bits: int = 4  # how much further two small texts are compared (not a setting)
    #: What the visible texts must agree on where an own text is thin evidence; ``None``: ``min_similarity``
    #: (not a setting: ``bench/real_sites.py`` measures a lower one, which drops other documents).
    thin_visible_similarity: float | None = None
    #: What a thin own text (and its main content) must agree on where the pages are named the same and their visible
    #: texts agree, at most ``min_similarity``; ``None``: ``min_similarity`` (not a setting: ``bench/real_sites.py``
    #: measures it).
    thin_own_similarity: float | None = THIN_NAMED_SIMILARITY
    #: Own texts that agree this much, both large, are one body whatever the chrome and names around them
    #: (``the_same_body``; not a setting: ``bench/real_sites.py`` measures what it costs).
    same_body_similarity: float | None = SAME_BODY_SIMILARITY
    same_body_shingles: int = SAME_BODY_SHINGLES  # the least own text a body is (not a setting: bench/real_sites.py)

    def decided(self, url: str, match: Match) -> Match:
        """The answer for a page that matched ``match``: a duplicate, or with ``updates`` an update (kept)
        when it is a page of an earlier crawl met again under its URL with another text (its content
        fingerprint or its sketch changed)."""
        changed = match.content_distance != 0 or (match.similarity is not None and match.similarity < 1)
        if self.updates and match.remembered and match.url == url and changed:
            return replace(match, reason=UPDATE, duplicate=False)
        return match

    def content_match(
        self, distance: int, sketches: tuple[bytes | None, bytes | None], short: bool, other_short: bool
    ) -> bool:
        """Are two pages' contents the same, given their content distance and sketches?

        Two short pages (``Fingerprint.short``) only when their own words are
        the same (content distance 0, the same own-text sketch; a page without
        own text, ``has_own_text``, has a hash of its visible words for content) and
        the rest of the evidence agrees.  Any other pair, a short page and a
        longer one included, when within ``content_distance`` and the evidence
        (``evidence``) reaches what it must: the line between short and long is
        drawn on the pair, so a page just under it and its copy with a few words
        more meet.
        """
        a, b = sketches
        if not (has_own_text(a) and has_own_text(b)):
            return short and other_short and distance == 0 and not (has_own_text(a) or has_own_text(b))
        if short and other_short and (distance or not same_own_text(a, b)):
            return False
        evidence = self.evidence(distance, a, b)
        return evidence is not None and evidence[0] >= evidence[1]

    def content_verdict(
        self,
        distance: int,
        sketches: tuple[bytes | None, bytes | None],
        short: bool,
        other_short: bool,
        structure_distance: int | None,
    ) -> tuple[str, bool] | None:
        """How a page stands to a kept page within the content distance: ``(reason, True)`` a duplicate,
        ``(reason, False)`` a borderline candidate (what failed: "similarity"; "name", the pages' names
        differ where their texts alone would match; "structure_apart", mode "both" and the structures differ),
        ``None`` neither (two short texts that differ, a page without own text, a pair beyond the content
        distance).  Symmetric: it serves the stores, which meet the pair in arrival order, and batch jobs,
        which meet it in any order.  (A page at the kept page's address may be its re-crawl: ``recrawled``.)"""
        structure_near = structure_distance is not None and structure_distance <= self.structure_distance
        if short and other_short:  # the same own words, or none
            if distance or not self.content_match(distance, sketches, short, other_short):
                return None
            return ("exact_text", True) if self.mode is not Mode.BOTH or structure_near else None
        a, b = sketches
        if not (has_own_text(a) and has_own_text(b) and self.evidence(distance, a, b)):
            return None
        content = self.content_match(distance, sketches, short, other_short)
        if content and (self.mode is not Mode.BOTH or structure_near):
            return ("both" if self.mode is Mode.BOTH else self.witness(distance, a, b)), True
        return ("structure_apart" if content else "name" if self.named_apart(distance, a, b) else "similarity"), False

    def evidence(self, distance: int, a: bytes, b: bytes) -> tuple[float, float] | None:
        """The similarity a content match of two sketches at this distance rests on, and what it must reach;
        ``None`` beyond the content distance (for two small texts, the search distance).  The similarity is the
        own texts' shingles' (estimated Jaccard), which must reach ``min_similarity``; where an own text is thin
        evidence (``thin``), the visible texts' too, and where the own text is a small part of the main content (a
        lead over tables) the main contents' too, when they fall further short of what they must reach
        (``thin_visible_similarity``).  Pages whose names differ must agree on their own texts, their visible texts
        and their main contents at ``NAMED_APART_SIMILARITY``.  Pages named alike that hold the same body
        (``the_same_body``) match whatever their chrome.  A ``min_similarity`` of -1 turns every check off (SimHash
        alone)."""
        if distance > self.search_distance:
            return None
        own = similarity(a, b)
        body = self.same_body_similarity
        if body is not None and self.the_same_body(distance, own, a, b):
            return own, body
        if distance > self.content_distance and max(sketch_size(a), sketch_size(b)) >= SMALL_TEXT_SHINGLES:
            return None
        if self.min_similarity > -1 and not same_name(a, b):
            needed = max(self.min_similarity, NAMED_APART_SIMILARITY)
            return min(own, visible_similarity(a, b), main_similarity(a, b)), needed
        if not (thin(a) or thin(b)):
            return own, self.min_similarity
        shown = [
            (
                visible_similarity(a, b),
                (self.min_similarity if self.thin_visible_similarity is None else self.thin_visible_similarity),
            )
        ]
        needed = min(
            self.min_similarity, self.min_similarity if self.thin_own_similarity is None else self.thin_own_similarity
        )
        if min(main_share(a), main_share(b)) < MAIN_SHARE_LINE:  # a lead over tables: they must agree too
            shown.append((main_similarity(a, b), needed))
        return min((own, needed), *shown, key=lambda found_needed: found_needed[0] - found_needed[1])

    def witness(self, distance: int, a: bytes, b: bytes) -> str:
        """What decided a content match: ``"content"`` where the own texts do under every rule on names and thin
        texts, ``BODY`` where only the same body does (``the_same_body``: another site's name and chrome)."""
        plain = replace(self, same_body_similarity=None).evidence(distance, a, b)
        return "content" if plain is not None and plain[0] >= plain[1] else BODY

    def the_same_body(self, distance: int, own: float, a: bytes, b: bytes) -> bool:
        """Do two pages named alike (``named_alike``: their titles, headings or headlines) hold the same body: their own
        texts large (neither a small text nor a list's entries) and all but the same (``same_body_similarity``), and so
        are their main contents, tables and lists included (not one lead over other tables), their content
        fingerprints within the search distance (another site's words in a title, counted thrice, move a large text's
        SimHash beyond the content distance)?  Then the rest of the page (another site's header, navigation and
        footer) does not make them two documents, though it is most of what they show.  Not pages whose titles and
        headings both differ: sibling pages of a reference often share their whole body (pandas' ``Series.align`` and
        ``DataFrame.align``), and their names are what they are.  ``same_body_similarity`` ``None``: off."""
        return (
            self.same_body_similarity is not None
            and distance <= self.search_distance
            and named_alike(a, b)
            and own >= self.same_body_similarity
            and min(sketch_size(a), sketch_size(b)) >= self.same_body_shingles
            and not (listing(a) or listing(b))
            and main_similarity(a, b) >= self.same_body_similarity
        )

    @property
    def recrawls(self) -> bool:
        """Is a page met again at a kept page's address judged as its re-crawl (``recrawled``)?  Not where pages
        are compared by structure alone, nor with every check off (SimHash alone)."""
        return self.mode is not Mode.STRUCTURE and self.min_similarity > -1

    @staticmethod
    def recrawled(a: bytes | None, b: bytes | None) -> bool:
        """Is a page met again at the address of a kept page (``Matcher.at_address``) the same document, its own
        text edited or not: its title and heading say what they said and it shows nearly the same (its whole visible
        text agrees on ``SAME_ADDRESS_VISIBLE_SIMILARITY``)?  Not the languages its own text is in: a sentence in
        another language added to a page is an edit of it, and a page whose language changed shows other words.
        Its drop's reason is ``ADDRESS``.  The same for a page without own text (an API page of signatures and
        code, a page of links): its sketch has its name and what it shows."""
        return (
            a is not None
            and b is not None
            and named_the_same(a, b)
            and visible_similarity(a, b) >= SAME_ADDRESS_VISIBLE_SIMILARITY
        )

    @staticmethod
    def address_evidence(a: bytes, b: bytes) -> tuple[float, float]:
        """What a drop by the address rests on: the visible texts' similarity and what it must reach."""
        return visible_similarity(a, b), SAME_ADDRESS_VISIBLE_SIMILARITY

    @property
    def search_distance(self) -> int:
        """How far a store's index looks for content candidates: small texts are compared further."""
        return min(64, self.content_distance + self.small_text_extra_bits)

    def named_apart(self, distance: int, a: bytes, b: bytes) -> bool:
        """Did the names alone keep two pages apart (their texts reach ``min_similarity``, not what pages of
        different names need)?"""
        evidence = self.evidence(distance, a, b)
        return evidence is not None and self.min_similarity <= evidence[0] < evidence[1]


def address_key(url: str) -> int:
    """A page's address as a store's rows keep it: a 64-bit hash of its URL without the fragment (which names a
    part of a page, not another page)."""
    return xxhash.xxh3_64_intdigest(url.partition("#")[0].encode("utf-8", "surrogatepass"))


def thin(sketch: bytes) -> bool:
    """Is the page's own text thin evidence of what it shows: small, a small part of a page of links, a list's
    entries, or a small part of its main content?"""
    return (
        sketch_size(sketch) < SMALL_OWN_TEXT
        or listing(sketch)
        or main_share(sketch) < MAIN_SHARE_LINE
        or (own_share(sketch) < OWN_SHARE_LINE and link_share(sketch) >= LINK_SHARE_LINE)
    )


#: The reason of a match kept as an update (``Policy.updates``).
UPDATE = "update"


@dataclass(frozen=True)
class Match:
    """The earlier page an item duplicates, and how near it is; or, with ``duplicate`` False, the
    nearest content candidate that failed the sketch or the mode (the page is kept, but a user
    tuning the distances should look at the pair: the decision log calls it a borderline keep), or
    the earlier version of a page kept as an update (reason ``UPDATE``).  ``remembered``: the earlier
    page was kept by an earlier crawl (remembered by the store when this one started); ``kept_row``: its row."""

    url: str
    #: A duplicate: "both", "content", "structure", "exact_text", ADDRESS, BODY; else "similarity", "name",
    #: "structure_apart", UPDATE.
    reason: str
    content_distance: int | None
    structure_distance: int | None
    similarity: float | None = None
    similarity_needed: float | None = None  # what the sketches had to agree on
    duplicate: bool = True
    remembered: bool = False
    kept_row: int | None = None  # the earlier page's row in the store that answered (batch mode names its record)


#: What a page's request (``Request.meta``, the add-on's route) or record (a JSON Lines field, ``dedup``) may say of
#: it: ``False`` under ``FILTER_META``, the page is not filtered (not compared nor remembered; its items pass as they
#: are); ``True`` under ``NEVER_DROP_META``, it is compared but never dropped (``never_dropped``).
FILTER_META = "simhash_dedup"
NEVER_DROP_META = "simhash_dedup_never_drop"
#: The reason of a near-duplicate kept because its request said never to drop it: a borderline keep in the decision
#: log, shown so in the report.
NEVER_DROPPED = "never_dropped"


def not_filtered(said: Mapping[str, Any]) -> bool:
    """Did a request's ``meta`` or a record say its page is not filtered (``FILTER_META`` ``False``, exactly)?"""
    return said.get(FILTER_META, True) is False


def never_to_drop(said: Mapping[str, Any]) -> bool:
    """Did a request's ``meta`` or a record say its page is never dropped (``NEVER_DROP_META`` true)?"""
    return bool(said.get(NEVER_DROP_META))


def never_dropped(match: Match) -> Match:
    """The answer for a near-duplicate whose request or record said never to drop it: kept, its match named, reason
    ``NEVER_DROPPED`` (the store did not add it: the page it matched stands for it)."""
    return replace(match, duplicate=False, reason=NEVER_DROPPED)


def dropped(match: Match | None) -> TypeGuard[Match]:
    """Is this the answer for a duplicate (not a keep, with or without a borderline candidate)?  (Yes tells a
    type checker there is a match.)"""
    return match is not None and match.duplicate
