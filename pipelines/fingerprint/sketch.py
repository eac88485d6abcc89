"""A page's sketch: what a content candidate is checked against, 217 bytes.

SimHash estimates the angle between weighted word vectors; near its threshold
that is too coarse to tell "the same article, edited" from "another article on
the same template".  The sketch holds three things a candidate must agree on
(``Policy.evidence``):

- the own text's word 3-gram set, sketched so that two sketches estimate the
  sets' Jaccard similarity: one-permutation MinHash (Li, Owen and Zhang 2012)
  into 512 bins, each empty bin filled from the first full one among a fixed
  random sequence of bins of its own (optimal densification, Shrivastava
  2017), and only the lowest bit of each bin's minimum kept (b-bit MinHash, Li
  and König 2010); filling from the *next* full bin instead (Shrivastava and Li
  2014) copies one bin into a whole run of empty ones: for a short text (150
  shingles) its estimate scatters twice as widely (±0.08 against ±0.04).  64
  bytes, then two that hold how many shingles the set has (at most 65,535);
- the page's name: 32-bit hashes of what its title and its heading say it is
  about (0: it has neither), 8 bytes, and of its title's lead (its headline,
  ``content.title_lead``; 0: none), 4 bytes, and the languages its own text is
  written in (``languages.language_bits``; 0: none known), 4 bytes;
- the whole visible text's 5-gram set (the title, links and page furniture
  included), sketched the same way, 64 bytes, and how many 5-grams it holds
  (2 bytes: a menu repeated counts twice), the share of its characters
  that are links (1 byte, in 255ths), whether the own text had to be read
  from a list or a table's short entries (1 byte), and the share of the main
  content's characters that are its own text (1 byte, in 255ths: low where its
  tables or lists are what it holds): when the own text is small, a small part
  of a page of links (a table of contents, an index), a list's entries or a
  small part of its main content, what the page shows must agree too;
- the main content's 5-gram set (its tables, lists and captions included, the
  chrome around it left out), sketched the same way, 64 bytes, and its size (2
  bytes): two pages hold the same body when it agrees, whatever their chrome;
  two list articles with one lead over other tables do not.

Comparing two sketches is an XOR and a popcount.  The sketch holds measures, not
decisions: the thresholds are the policy's (``scrapy_simhash_dedup.matching.policy``).
"""

from __future__ import annotations

from array import array
from typing import TypeGuard

import xxhash

from .textloops import distinct, sketch_bits

SKETCH_BITS = 512
_BITS_BYTES = SKETCH_BITS // 8
#: Where each part of a sketch lies: the own text's bits and set size, the name (title, heading), the title's lead,
#: the languages, the visible text's bits and size, its link share, the listing flag, the main content's own-text
#: share, its bits and size.
_OWN, _OWN_SIZE, _NAME, _LEAD, _LANGUAGES, _VISIBLE, _VISIBLE_SIZE = 0, 64, 66, 74, 78, 82, 146
_LINKS, _LISTING, _MAIN_SHARE, _MAIN, _MAIN_SIZE = 148, 149, 150, 151, 215
SKETCH_BYTES = 217
_MAX_SIZE = (1 << 16) - 1
_VALUE_BITS = 55  # the top 9 bits choose one of 512 bins, the other 55 are the value
_PROBES = 64  # bins an empty bin tries in turn; when none is full (under ~16 full bins), the next full one


def _probe_sequence(bin_: int) -> list[int]:
    return [xxhash.xxh3_64_intdigest(f"{bin_}/{n}".encode()) % SKETCH_BITS for n in range(_PROBES)]


#: Bin after bin, the bins each takes its value from when it is empty, in order (the same on every machine).
_PROBE_TABLE = array("q", [probe for b in range(SKETCH_BITS) for probe in _probe_sequence(b)])


def hashes_sketch(hashes: array) -> bytes:
    """The bits and set size of a set of shingles given by their XXH3-64 hashes (an ``array("Q")``;
    duplicates do not matter: the set's size is the number of distinct hashes).  The bins are filled in a
    compiled loop (``textloops.sketch_bits``)."""
    return _bits(hashes) + min(distinct(hashes), _MAX_SIZE).to_bytes(2, "little")


def _bits(hashes: array) -> bytes:
    """The sketch's bits of a set given by its hashes (zeros for none)."""
    bits = sketch_bits(hashes, _PROBE_TABLE, SKETCH_BITS, _VALUE_BITS)
    return bits if bits is not None else bytes(_BITS_BYTES)


def page_sketch(
    own_shingles: array,
    name: int,
    languages: int,
    visible_shingles: array,
    link_share: float,
    listing: bool,
    main_share: float,
    main_shingles: array,
) -> bytes:
    """A page's sketch: its own text's shingles (``hashes_sketch``), its name (``fingerprinter.name_hash``; 0 for
    none), its languages (a bit set), its visible text's shingles, the share of its characters in links (0 to
    1), whether its own text is a list's entries (``PageText.listing``) and the share of its main content that is
    own text (``PageText.main_share``) and its main content's shingles (``PageText.main_shingles``)."""
    return (
        hashes_sketch(own_shingles)
        + name.to_bytes(12, "little")
        + languages.to_bytes(4, "little")
        + _shown(visible_shingles)
        + bytes([_byte(link_share), listing, _byte(main_share)])
        + _shown(main_shingles)
    )


def _shown(hashes: array) -> bytes:
    """The bits of a text's shingles and how many it shows, repeats counted (a menu repeated counts twice)."""
    return _bits(hashes) + min(len(hashes), _MAX_SIZE).to_bytes(2, "little")


def _byte(share: float) -> int:
    return round(255 * min(1.0, max(0.0, share)))


def fixed_width(sketch: bytes | None) -> bytes:
    """A sketch as a fixed-width store keeps it: ``SKETCH_BYTES``, zeros for none."""
    return sketch or bytes(SKETCH_BYTES)


def from_fixed_width(stored: bytes) -> bytes | None:
    """The sketch ``fixed_width`` stored: ``None`` for none (all zeros)."""
    return stored if any(stored) else None


def has_own_text(sketch: bytes | None) -> TypeGuard[bytes]:
    """Does the page have own text (a page without any has no sketch, or one whose own part is empty: what it
    shows and its name only)?  (Yes tells a type checker the sketch is there.)"""
    return sketch is not None and sketch_size(sketch) > 0


def similarity(a: bytes, b: bytes) -> float:
    """Estimated Jaccard similarity of the two own texts' shingle sets (about ±0.04 near 0.6 for large sets)."""
    return _bits_similarity(a, b, _OWN)


def visible_similarity(a: bytes, b: bytes) -> float:
    """Estimated Jaccard similarity of the two pages' visible texts' shingle sets."""
    return _bits_similarity(a, b, _VISIBLE)


def _bits_similarity(a: bytes, b: bytes, at: int) -> float:
    differing = int.from_bytes(a[at : at + _BITS_BYTES], "little") ^ int.from_bytes(b[at : at + _BITS_BYTES], "little")
    return 1.0 - 2.0 * differing.bit_count() / SKETCH_BITS


def sketch_size(sketch: bytes) -> int:
    """How many distinct shingles the own text has (65,535 for any more)."""
    return int.from_bytes(sketch[_OWN_SIZE:_NAME], "little")


def own_share(sketch: bytes) -> float:
    """The own text's share of the page's visible text: its distinct 3-grams against the visible text's 5-grams
    (1 when the visible text has none)."""
    visible = int.from_bytes(sketch[_VISIBLE_SIZE:_LINKS], "little")
    return min(1.0, sketch_size(sketch) / visible) if visible else 1.0


def link_share(sketch: bytes) -> float:
    """The share of the page's visible characters that are in links (to 1/255)."""
    return sketch[_LINKS] / 255


def main_share(sketch: bytes) -> float:
    """The share of the main content's characters in the own text (to 1/255): low where its tables or lists are
    what it holds."""
    return sketch[_MAIN_SHARE] / 255


def main_similarity(a: bytes, b: bytes) -> float:
    """Estimated Jaccard similarity of the two pages' main contents' shingle sets (tables included, chrome out)."""
    return _bits_similarity(a, b, _MAIN)


def listing(sketch: bytes) -> bool:
    """Was the page's own text read from a list or a table's short entries?"""
    return bool(sketch[_LISTING])


def named_alike(a: bytes, b: bytes) -> bool:
    """Do the two pages have the same name (``same_name``), or say the same in their titles, their headings or their
    titles' leads?  Looser than ``same_name``: one page may show another site's name in its title, or another site's
    banner as its heading."""
    return same_name(a, b) or any(
        a[at : at + 4] == b[at : at + 4] and any(a[at : at + 4]) for at in (_NAME, _NAME + 4, _LEAD)
    )


def named_the_same(a: bytes, b: bytes) -> bool:
    """Do the two pages' titles and headings say the same (whatever languages their texts are in; yes where either
    page says nothing)?"""
    return _agree(a[_NAME:_LEAD], b[_NAME:_LEAD])


def same_name(a: bytes, b: bytes) -> bool:
    """Do the two pages say they are about the same thing, in the same languages?  Each yes where either page
    says nothing (no name; no language known)."""
    return named_the_same(a, b) and _agree(a[_LANGUAGES:_VISIBLE], b[_LANGUAGES:_VISIBLE])


def _agree(x: bytes, y: bytes) -> bool:
    """Two parts of sketches are the same, or either says nothing (all zeros)."""
    return x == y or not any(x) or not any(y)


def written_in(sketch: bytes | None) -> list[str]:
    """The languages the page's own text is written in (``languages.LANGUAGES`` names; none known: [])."""
    from .languages import LANGUAGES

    bits = int.from_bytes(sketch[_LANGUAGES:_VISIBLE], "little") if sketch else 0
    return [name for number, name in enumerate(LANGUAGES) if bits >> number & 1]


def same_own_text(a: bytes, b: bytes) -> bool:
    """Are the two own texts' sketches (bits and set size) the same?"""
    return a[_OWN:_NAME] == b[_OWN:_NAME]
