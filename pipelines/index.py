"""Exact Hamming-ball lookups over 64-bit fingerprints.

This version scans a numpy array (``bitwise_count`` over every stored
fingerprint): exact and compact, but O(N) per query.
"""

from __future__ import annotations

import numpy as np

_INITIAL_CAPACITY = 1024


class SimhashIndex:
    """Integer keys with a fingerprint each; ``query`` finds every key within ``max_distance``."""

    def __init__(self, max_distance: int = 3) -> None:
        if not 0 <= max_distance <= 64:
            raise ValueError(f"max_distance must be within 0..64, got {max_distance}")
        self.max_distance = max_distance
        self._fingerprints = np.empty(_INITIAL_CAPACITY, dtype=np.uint64)
        self._keys = np.empty(_INITIAL_CAPACITY, dtype=np.int64)
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def add(self, key: int, fingerprint: int) -> None:
        if self._size == len(self._keys):
            self._fingerprints = np.resize(self._fingerprints, 2 * self._size)
            self._keys = np.resize(self._keys, 2 * self._size)
        self._fingerprints[self._size] = fingerprint
        self._keys[self._size] = key
        self._size += 1

    def query(self, fingerprint: int) -> list[tuple[int, int]]:
        """Every ``(key, distance)`` within ``max_distance``, nearest first."""
        distances = np.bitwise_count(self._fingerprints[: self._size] ^ np.uint64(fingerprint))
        hits = np.flatnonzero(distances <= self.max_distance)
        order = np.argsort(distances[hits], kind="stable")
        return [(int(self._keys[i]), int(distances[i])) for i in hits[order]]
