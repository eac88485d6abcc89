"""A 512-bit sketch of a page's word shingles, for checking SimHash candidates.

SimHash estimates the angle between weighted word vectors; near its threshold
that is too coarse to tell "the same article, edited" from "another article on
the same template".  The sketch estimates the Jaccard similarity of the pages'
word 3-gram sets: one-permutation MinHash (Li, Owen and Zhang 2012) into 512
bins, empty bins filled from the next full one (Shrivastava and Li 2014), and
only the lowest bit of each bin's minimum kept (b-bit MinHash, Li and König
2010).  64 bytes per page; comparing two is an XOR and a popcount.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import xxhash

SKETCH_BITS = 512
SKETCH_BYTES = SKETCH_BITS // 8
_BIN_SHIFT = np.uint64(64 - 9)  # top 9 bits choose one of 512 bins
_VALUE_MASK = np.uint64((1 << 55) - 1)
_EMPTY = np.uint64(1 << 63)


def shingle_sketch(shingles: Iterable[str]) -> bytes:
    """The sketch of a set of shingles (duplicates do not matter)."""
    hashes = np.fromiter(
        (xxhash.xxh3_64_intdigest(s.encode("utf-8")) for s in set(shingles)), dtype=np.uint64
    )
    minima = np.full(SKETCH_BITS, _EMPTY, dtype=np.uint64)
    np.minimum.at(minima, (hashes >> _BIN_SHIFT).astype(np.intp), hashes & _VALUE_MASK)
    full = np.flatnonzero(minima != _EMPTY)
    if len(full) == 0:
        return bytes(SKETCH_BYTES)
    # densify: an empty bin takes the minimum of the next full bin (cyclically)
    next_full = full[np.searchsorted(full, np.arange(SKETCH_BITS)) % len(full)]
    bits = (minima[next_full] & np.uint64(1)).astype(np.uint8)
    return np.packbits(bits, bitorder="little").tobytes()


def similarity(a: bytes, b: bytes) -> float:
    """Estimated Jaccard similarity of the two shingle sets (about ±0.04 near 0.6)."""
    differing = int.from_bytes(a, "little") ^ int.from_bytes(b, "little")
    return 1.0 - 2.0 * differing.bit_count() / SKETCH_BITS
