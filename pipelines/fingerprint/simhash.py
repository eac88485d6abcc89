"""Charikar's SimHash over weighted features, and the Hamming distance.

Every feature is hashed to 64 bits; bit *i* of the fingerprint is 1 where the
weights of the features whose hash has bit *i* set outweigh (or equal) those
whose hash has it clear.  The sum is done on integers (weights quantised to
2**-24) so that the result never depends on the order in which a BLAS library
happens to add floats: the same features give the same fingerprint on every
machine.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Mapping

from .textloops import simhash_bits, xxh3_hashes

FeatureHash = Callable[[bytes], int]

#: Weights are rounded to multiples of 2**-24 before summing (exact integer sums).
WEIGHT_SCALE = 1 << 24
_ALL_BITS = (1 << 64) - 1


def feature_hashes(features: Mapping[str, float]) -> array:
    """XXH3-64 of each feature's UTF-8 bytes, in the mapping's order (an ``array("Q")``): what ``simhash``
    hashes them to by default."""
    return xxh3_hashes(list(features))


def simhash(features: Mapping[str, float], feature_hash: FeatureHash | None = None) -> int:
    """Return the 64-bit SimHash of ``features`` (feature -> weight).  Each feature is hashed by
    ``feature_hash`` over its UTF-8 bytes; by default XXH3-64 (fast, stable across platforms and
    versions; compiled, see :mod:`scrapy_simhash_dedup.fingerprint.textloops`).

    Features with a weight that rounds to zero do not vote.  An empty mapping
    gives 0xFFFF...: callers must not fingerprint pages with too few features
    (they get ``None`` instead, see :mod:`scrapy_simhash_dedup.fingerprint.fingerprinter`).
    """
    if not features:
        return _ALL_BITS
    if feature_hash is None:
        hashes = feature_hashes(features)
    else:
        hashes = array("Q", (feature_hash(feature.encode("utf-8")) for feature in features))
    return simhash_bits(hashes, features.values(), WEIGHT_SCALE)


def hamming(a: int, b: int) -> int:
    """Number of differing bits between two 64-bit fingerprints."""
    return (a ^ b).bit_count()
