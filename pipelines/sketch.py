"""A 512-bit sketch of a page's word shingles, for checking SimHash candidates.

SimHash estimates the angle between weighted word vectors; near its threshold
that is too coarse to tell "the same article, edited" from "another article on
the same template".  The sketch estimates the Jaccard similarity of the pages'
word 3-gram sets: one-permutation MinHash (Li, Owen and Zhang 2012) into 512
bins, each empty bin filled from the first full one among a fixed random
sequence of bins of its own (optimal densification, Shrivastava 2017), and
only the lowest bit of each bin's minimum kept (b-bit MinHash, Li and König
2010).  Filling from the *next* full bin instead (Shrivastava and Li 2014)
copies one bin into a whole run of empty ones: for a short text (150
shingles) its estimate scatters twice as widely (±0.08 against ±0.04).  64 bytes per page; comparing two is an XOR and a popcount.  Two more
bytes hold how many shingles the set has (at most 65,535): how much one
changed sentence weighs depends on it (see ``Policy.similarity_needed``).

A small text (under ``SMALL_TEXT_SHINGLES`` shingles) carries 64 bytes more: the same sketch of its words
weighted as the content SimHash weighs them (``weighted_bits``).  One reworded sentence of a three-sentence
stub replaces most of its shingles, so shingles cannot tell it from another page of the same template; the
weights of its words still can (their weighted Jaccard: 0.74 to 0.90 for reworded stubs, 0.14 to 0.60 for
different small pages of one template, ``python -m bench.small_texts``).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable

import xxhash

from .textloops import distinct, sketch_bits, weighted_copies, xxh3_hashes

SKETCH_BITS = 512
SKETCH_BYTES = SKETCH_BITS // 8 + 2  # the bits, then the set's size (little-endian)
#: A sketch with its weighted bits (a small text's), and the width a fixed-width store keeps every sketch at.
SMALL_SKETCH_BYTES = SKETCH_BYTES + SKETCH_BITS // 8
#: Texts with fewer shingles are small: their sketch carries weighted bits (``weighted_bits``).
SMALL_TEXT_SHINGLES = 150
#: Copies of a word per unit of its weight in ``weighted_bits`` (the weight quantised to 1 / WEIGHT_QUANTUM).
WEIGHT_QUANTUM = 2
_MAX_SIZE = (1 << 16) - 1
_VALUE_BITS = 55  # the top 9 bits choose one of 512 bins, the other 55 are the value
_PROBES = 64  # bins an empty bin tries in turn; when none is full (under ~16 full bins), the next full one


def _probe_sequence(bin_: int) -> list[int]:
    return [xxhash.xxh3_64_intdigest(f"{bin_}/{n}".encode()) % SKETCH_BITS for n in range(_PROBES)]


#: Bin after bin, the bins each takes its value from when it is empty, in order (the same on every machine).
_PROBE_TABLE = array("q", [probe for b in range(SKETCH_BITS) for probe in _probe_sequence(b)])


def shingle_sketch(shingles: Iterable[str]) -> bytes:
    """The sketch of a set of shingles (duplicates do not matter)."""
    return hashes_sketch(xxh3_hashes(list(shingles)))


def hashes_sketch(hashes: array) -> bytes:
    """The sketch of a set of shingles given by their XXH3-64 hashes (an ``array("Q")``; duplicates do
    not matter: the set's size is the number of distinct hashes).  The bins are filled in a compiled
    loop (``textloops.sketch_bits``)."""
    return _bits(hashes) + min(distinct(hashes), _MAX_SIZE).to_bytes(2, "little")


def _bits(hashes: array) -> bytes:
    """The sketch's bits alone (no set size: weighted bits need none)."""
    bits = sketch_bits(hashes, _PROBE_TABLE, SKETCH_BITS, _VALUE_BITS)
    return bits if bits is not None else bytes(SKETCH_BITS // 8)


def weighted_bits(word_hashes: array, weights: Iterable[float]) -> bytes:
    """The bits of a sketch whose similarity estimates the weighted Jaccard similarity of two texts' word
    weights (sum of minima over sum of maxima): each word (its ``simhash.feature_hashes`` hash, beside its
    weight) counted as many times as its weight, quantised (Haeupler, Manasse and Talwar 2014), then
    sketched as a set (``textloops.weighted_copies``)."""
    return _bits(weighted_copies(word_hashes, weights, WEIGHT_QUANTUM))


def small_text_sketch(shingles: array, word_hashes: array, weights: Iterable[float]) -> bytes:
    """A text's sketch (``hashes_sketch`` of its shingle hashes), with the weighted bits of its words
    when it is small (``SMALL_TEXT_SHINGLES``)."""
    sketch = hashes_sketch(shingles)
    return sketch + weighted_bits(word_hashes, weights) if sketch_size(sketch) < SMALL_TEXT_SHINGLES else sketch


def weighted_similarity(a: bytes, b: bytes) -> float | None:
    """Estimated weighted Jaccard similarity of two small texts' word weights; ``None`` unless both are small."""
    if len(a) < SMALL_SKETCH_BYTES or len(b) < SMALL_SKETCH_BYTES:
        return None
    return similarity(a[SKETCH_BYTES:], b[SKETCH_BYTES:])


def fixed_width(sketch: bytes | None) -> bytes:
    """A sketch as a fixed-width store keeps it: ``SMALL_SKETCH_BYTES``, zeros for what it lacks."""
    return (sketch or b"").ljust(SMALL_SKETCH_BYTES, b"\0")


def from_fixed_width(stored: bytes) -> bytes | None:
    """The sketch ``fixed_width`` stored: ``None`` for none (no shingle: a size of 0), the weighted bits only
    for a small text."""
    size = sketch_size(stored)
    if size == 0:
        return None
    return stored if size < SMALL_TEXT_SHINGLES else stored[:SKETCH_BYTES]


def similarity(a: bytes, b: bytes) -> float:
    """Estimated Jaccard similarity of the two shingle sets (about ±0.04 near 0.6 for large sets)."""
    bits = SKETCH_BITS // 8
    differing = int.from_bytes(a[:bits], "little") ^ int.from_bytes(b[:bits], "little")
    return 1.0 - 2.0 * differing.bit_count() / SKETCH_BITS


def sketch_size(sketch: bytes) -> int:
    """How many distinct shingles the sketched set has (65,535 for any more)."""
    return int.from_bytes(sketch[SKETCH_BITS // 8 : SKETCH_BYTES], "little")
