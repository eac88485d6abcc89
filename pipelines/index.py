"""Exact Hamming-ball lookups over 64-bit fingerprints, sub-linear in the number stored.

Two fingerprints within ``k`` bits agree somewhere, by the pigeonhole
principle; each *table* below is keyed on a part of the fingerprint where they
must then agree (or nearly), so a query only looks at entries that share a
key with it, and checks those on all 64 bits.  Nothing is missed.

- Manku et al. (2007): cut the 64 bits into ``b`` blocks; two fingerprints
  within ``k`` bits agree exactly on at least ``b - k`` blocks, so one table
  per choice of ``b - k`` blocks, one exact probe each (k = 3: b = 4, four
  tables of 16-bit keys).
- Multi-index hashing (Norouzi et al. 2012): cut into ``m`` blocks; some block
  is within ``k // m`` bits, so one table per block, probed with every value
  within that radius.  Best for large ``k`` (k = 8: 3 tables, radius 2).

Storage is numpy only, no Python object per entry.  As in Manku's design, a
table holds each fingerprint *permuted* so that its key comes first, but only
the top 32 bits of it, packed with the entry's 32-bit position: 8 bytes per
table and entry, plus the fingerprint itself (8 bytes; the key too, 8 more,
unless keys are the positions 0, 1, 2... as a store's rows are).  The bits
after the key are a free filter: a candidate whose 32 bits are already more
than ``k`` away is skipped without reading its fingerprint.  With 4 tables
that is 40 bytes per fingerprint.

New entries go to a small buffer scanned by brute force, then to level 2,
level 1 and level 0 (the bulk) of every table, each merged into the next when
it outgrows it by a ratio that grows as the cube root of the size, so an add
costs O(1) amortised.  A query is one compiled function (numba): per table and
probe, a binary search in each level, a scan of the entries sharing the key.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import itertools
from dataclasses import dataclass
from math import comb

import numba
import numpy as np

BUFFER_SIZE = 256
MAX_TABLES = 6  # 8 bytes per table and entry: <= 56 bytes per fingerprint with the fingerprint
STORED_BITS = 32  # of each permuted fingerprint; the other 32 bits of an entry are its position
_LEVELS = 3
_POSITION = np.uint64(0xFFFFFFFF)
_INITIAL_CAPACITY = 1024
_GROWTH = 1.125  # arrays grow by an eighth: amortised O(1) adds, little unused memory


@dataclass(frozen=True)
class Layout:
    """Tables as lists of (shift, width) key blocks, each probed within ``radius`` bits."""

    tables: tuple[tuple[tuple[int, int], ...], ...]
    radius: int

    def widths(self) -> list[int]:
        return [sum(w for _, w in blocks) for blocks in self.tables]

    def cost(self, max_distance: int, size: int) -> float:
        """Expected work per query: probes, entries scanned, fingerprints read (cache misses)."""
        total = 0.0
        for width in self.widths():
            key_bits = min(STORED_BITS, width)
            probes = sum(comb(key_bits, i) for i in range(self.radius + 1))
            scanned = probes * size / 2.0**key_bits
            filter_bits = STORED_BITS - key_bits + self.radius
            passing = sum(comb(filter_bits, i) for i in range(max_distance + 1)) / 2.0**filter_bits
            total += probes + scanned / 20 + 2 * scanned * min(1.0, passing)
        return total


def _blocks(count: int) -> list[tuple[int, int]]:
    widths = [64 // count + (i < 64 % count) for i in range(count)]
    return list(zip(itertools.accumulate([0, *widths[:-1]]), widths))


def choose_layout(max_distance: int, expected_size: int) -> Layout:
    """The cheapest layout of at most ``MAX_TABLES`` tables for ``expected_size`` entries."""
    options = []
    for b in range(max_distance + 1, 65):  # Manku: tables of b - k blocks, exact probes
        if comb(b, max_distance) <= MAX_TABLES:
            blocks = _blocks(b)
            options.append(Layout(tuple(tuple(c) for c in itertools.combinations(blocks, b - max_distance)), 0))
    for m in range(2, MAX_TABLES + 1):  # multi-index hashing: one block a table, probed within k // m
        options.append(Layout(tuple((block,) for block in _blocks(m)), max_distance // m))
    return min(options, key=lambda layout: layout.cost(max_distance, expected_size))


class SimhashIndex:
    """Integer keys with a 64-bit fingerprint each; ``query`` finds every key within ``max_distance``."""

    def __init__(self, max_distance: int = 3, expected_size: int = 10_000_000) -> None:
        if not 0 <= max_distance <= 64:
            raise ValueError(f"max_distance must be within 0..64, got {max_distance}")
        self.max_distance = max_distance
        self.layout = choose_layout(max_distance, expected_size)
        self._recipes = _recipe_arrays(self.layout)
        self._flips, self._flip_starts = _probe_arrays(self.layout)
        self._scan_limit = 40 * len(self._flips)  # comparing a fingerprint costs ~1/40 of a probe of a level
        self._fingerprints = np.empty(_INITIAL_CAPACITY, dtype=np.uint64)
        self._keys: np.ndarray | None = None  # None while every key equals its position (a store's rows)
        self._size = 0
        self._indexed = 0  # entries [0, _indexed) are in the levels, the rest is the buffer
        # per table, per entry: permuted top 32 bits << 32 | position; each level sorted
        self._entries = np.empty((self.tables, _INITIAL_CAPACITY), dtype=np.uint64)
        self._level_starts = np.zeros(_LEVELS + 1, dtype=np.int64)  # level i is [starts[i], starts[i + 1])
        self._directory_bits = 0  # level 0 directory: per table, where each value of the top bits starts
        self._directory = np.zeros((self.tables, 2), dtype=np.int64)

    def __len__(self) -> int:
        return self._size

    @property
    def tables(self) -> int:
        return len(self.layout.tables)

    def memory_bytes(self) -> int:
        """Bytes of the index's arrays: what it costs, times ``len``, per fingerprint."""
        arrays = (self._fingerprints, self._keys, self._entries)
        return sum(a.nbytes for a in arrays if a is not None)

    def add(self, key: int, fingerprint: int) -> None:
        if self._size == len(self._fingerprints):
            self._grow_fingerprints(self._size + 1)
        self._fingerprints[self._size] = fingerprint
        if self._keys is not None or key != self._size:
            self._store_keys(self._size, np.array([key], dtype=np.int64))
        self._size += 1
        if self._size - self._indexed >= BUFFER_SIZE:
            self._index_buffer()

    def add_many(self, keys: np.ndarray, fingerprints: np.ndarray) -> None:
        """Add many entries at once.  A bulk load (at least as many as are indexed: opening a
        store) is sorted into level 0 in one go; fewer go through the buffer, as single adds do."""
        count = len(keys)
        if self._size + count > len(self._fingerprints):
            self._grow_fingerprints(self._size + count)
        self._fingerprints[self._size : self._size + count] = fingerprints
        self._store_keys(self._size, np.asarray(keys, dtype=np.int64))
        self._size += count
        if count >= self._indexed:
            self._index_buffer(presorted=False)
            self._fold(0)
        elif self._size - self._indexed >= BUFFER_SIZE:
            self._index_buffer()

    def query(self, fingerprint: int) -> list[tuple[int, int]]:
        """Every ``(key, distance)`` within ``max_distance``, nearest first."""
        found = _query(
            np.uint64(fingerprint), self.max_distance, self._fingerprints, self._scan_from(), self._size,
            self._entries, self._level_starts, self._directory, self._directory_bits,
            self._flips, self._flip_starts, *self._recipes,
        )
        if not len(found):
            return []
        positions, distances = (found & _POSITION).astype(np.int64), found >> np.uint64(32)
        keys = positions if self._keys is None else self._keys[positions]
        return list(zip(keys.tolist(), distances.tolist()))

    def _scan_from(self) -> int:
        """Where the query stops probing and compares every fingerprint: the buffer, and the
        small levels after level 0 when binary searches for every probe would cost more (large k:
        hundreds of probes).  Levels hold consecutive positions, so this is one range."""
        start = self._indexed
        for level in (2, 1):
            if self._level_size(level) > self._scan_limit:
                break
            start = self._level_starts[level]
        return start

    def _store_keys(self, start: int, keys: np.ndarray) -> None:
        if self._keys is None:
            if np.array_equal(keys, np.arange(start, start + len(keys))):
                return
            self._keys = np.arange(len(self._fingerprints), dtype=np.int64)
        self._keys[start : start + len(keys)] = keys

    # -- levels ---------------------------------------------------------------------------

    def _stored_bits(self, fingerprints: np.ndarray) -> np.ndarray:
        """Per table, the top 32 bits of every fingerprint permuted for it (tables x fingerprints).

        The same recipe arrays as the compiled query, so both always agree.
        """
        shifts, masks, lefts, _ = self._recipes
        stored = np.zeros((self.tables, len(fingerprints)), dtype=np.uint64)
        for table in range(self.tables):
            for part in range(shifts.shape[1]):
                stored[table] |= ((fingerprints >> shifts[table, part]) & masks[table, part]) << lefts[table, part]
        return stored

    def _index_buffer(self, presorted: bool = True) -> None:
        """Move the buffer into the smallest level, then fold levels that outgrew the next.

        The smallest level is sorted, the buffer is small: a stable sort merges them in linear
        time.  A bulk load (``presorted=False``) takes numpy's faster unstable sort instead.
        """
        stored = self._stored_bits(self._fingerprints[self._indexed : self._size])
        positions = np.arange(self._indexed, self._size, dtype=np.uint64)
        start, end = self._level_starts[2], self._level_starts[-1]
        self._ensure_capacity(end + len(positions))
        self._entries[:, end : end + len(positions)] = (stored << np.uint64(32)) | positions
        self._level_starts[-1] = end + len(positions)
        self._indexed = self._size
        for table in range(self.tables):
            self._entries[table, start : self._level_starts[-1]].sort(kind="stable" if presorted else None)
        # levels grow by a ratio r = (n / buffer) ** (1/3): about 3r entries moved per add
        ratio = max(8.0, (self._size / BUFFER_SIZE) ** (1 / 3))
        if self._level_size(2) >= BUFFER_SIZE * ratio:
            self._fold(2)
        if self._level_size(1) >= BUFFER_SIZE * ratio**2:
            self._fold(1)
        # With hundreds of probes (large k) every query scans levels 1 and 2 whole (`_scan_from`):
        # keep them near sqrt(30 n) entries, where that scan costs a query about what merging
        # them into level 0 costs an add.
        small = (30 * self._size) ** 0.5
        if self._scan_limit >= small and self._level_starts[-1] - self._level_starts[1] > small:
            self._fold(1)

    def _level_size(self, level: int) -> int:
        return self._level_starts[level + 1] - self._level_starts[level]

    def _fold(self, level: int) -> None:
        """Merge ``level`` (and the smaller ones) into ``level - 1`` (level 0 folds into itself)."""
        target = max(0, level - 1)
        start, end = self._level_starts[target], self._level_starts[-1]
        for table in range(self.tables):
            self._entries[table, start:end].sort(kind="stable")  # sorted runs: a linear merge, in place
        for i in range(target + 1, _LEVELS):
            self._level_starts[i] = end
        if target == 0:
            self._index_level_zero()

    def _index_level_zero(self) -> None:
        """Per table, where each value of the top bits starts in level 0, ~16 entries a bucket: a
        probe reads a bucket's bounds, then binary-searches a few cache lines, not the level."""
        size = self._level_starts[1]
        shortest_key = min(min(STORED_BITS, width) for width in self.layout.widths())
        bits = int(min(shortest_key, max(0, np.log2(max(1, size / 16)))))
        buckets = np.arange(1 << bits, dtype=np.uint64) << np.uint64(64 - bits) if bits else np.zeros(1, np.uint64)
        self._directory = np.array(
            [np.append(self._entries[t, :size].searchsorted(buckets), size) for t in range(self.tables)],
            dtype=np.int64,
        )
        self._directory_bits = bits

    def _ensure_capacity(self, needed: int) -> None:
        if needed > self._entries.shape[1]:
            bigger = np.empty((self.tables, max(needed, int(_GROWTH * self._entries.shape[1]))), dtype=np.uint64)
            end = self._level_starts[-1]
            bigger[:, :end] = self._entries[:, :end]
            self._entries = bigger
            _release_freed_memory()

    def _grow_fingerprints(self, needed: int) -> None:
        capacity = max(needed, int(_GROWTH * len(self._fingerprints)))
        self._fingerprints = grown(self._fingerprints, self._size, capacity)
        if self._keys is not None:
            self._keys = grown(self._keys, self._size, capacity)
        _release_freed_memory()


def grown(array: np.ndarray, used: int, capacity: int) -> np.ndarray:
    """A copy of ``array[:used]`` with room for ``capacity`` rows (not ``np.resize``: its result
    keeps alive a base up to twice as big)."""
    grown = np.empty((capacity, *array.shape[1:]), dtype=array.dtype)
    grown[:used] = array[:used]
    return grown


def _load_libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    libc = ctypes.CDLL(name) if name else None
    return libc if libc is not None and hasattr(libc, "malloc_trim") else None


_LIBC = _load_libc()


def _release_freed_memory() -> None:
    """Give the old copy of a grown array back to the system.

    glibc keeps freed blocks under its mmap threshold (which rises to 32 MB
    once big blocks are freed) in the heap, so without this the resident
    memory of a growing index carries the old copies: about 13 bytes per
    fingerprint more at 1M.  A no-op where the C library is not glibc.
    """
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


def _recipe_arrays(layout: Layout) -> tuple[np.ndarray, ...]:
    """Per table: the blocks (shift, mask, where it lands) of the top 32 bits of the permutation
    that puts the key blocks first and the other bits after them; and the key's width."""
    recipes = []
    for blocks in layout.tables:
        rest = sorted(set(range(64)) - {s + i for s, w in blocks for i in range(w)})
        runs = [(bits[0], len(bits)) for bits in _runs(rest)]
        parts, used = [], 0
        for shift, width in [*blocks, *runs]:
            take = min(width, STORED_BITS - used)
            if take <= 0:
                break
            used += take
            parts.append((shift + width - take, take, STORED_BITS - used))
        recipes.append(parts)
    most = max(len(parts) for parts in recipes)
    shifts, masks, lefts = (np.zeros((len(recipes), most), np.uint64) for _ in range(3))
    for t, parts in enumerate(recipes):
        for j, (shift, width, left) in enumerate(parts):
            shifts[t, j], masks[t, j], lefts[t, j] = shift, (1 << width) - 1, left
    key_bits = np.array([min(STORED_BITS, w) for w in layout.widths()], np.uint64)
    return shifts, masks, lefts, key_bits


def _runs(bits: list[int]) -> list[list[int]]:
    """Consecutive runs of sorted bit numbers, highest run first (so the order is fixed)."""
    runs: list[list[int]] = []
    for bit in bits:
        if runs and runs[-1][-1] == bit - 1:
            runs[-1].append(bit)
        else:
            runs.append([bit])
    return runs[::-1]


def _probe_arrays(layout: Layout) -> tuple[np.ndarray, np.ndarray]:
    """Every key value to flip per table (the radius ball, cut to the stored key), in one array."""
    balls = []
    for width in layout.widths():
        cut = max(0, width - STORED_BITS)
        balls.append(np.unique(_ball(width, layout.radius) >> np.uint64(cut)))
    starts = np.cumsum([0, *map(len, balls)]).astype(np.int64)
    return np.concatenate(balls), starts


@numba.njit(cache=True)
def _popcount(x: np.uint64) -> int:
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return int((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@numba.njit(cache=True)
def _query(query, max_distance, fingerprints, scan_from, size, entries, level_starts,
           directory, directory_bits, flips, flip_starts, shifts, masks, lefts, key_bits):
    """Every position within ``max_distance`` as ``distance << 32 | position``, sorted (nearest first)."""
    found = np.empty(16, np.uint64)
    count = 0
    for t in range(entries.shape[0]):
        stored = np.uint64(0)
        for j in range(shifts.shape[1]):
            stored |= ((query >> shifts[t, j]) & masks[t, j]) << lefts[t, j]
        below = np.uint64(STORED_BITS) - key_bits[t]  # filter bits under the key
        key = stored >> below
        for i in range(flip_starts[t], flip_starts[t + 1]):
            probe = key ^ flips[i]
            for level in range(level_starts.shape[0] - 1):
                lo, hi = level_starts[level], min(level_starts[level + 1], scan_from)
                if lo >= hi:
                    continue
                if level == 0:  # the directory narrows the search to a bucket
                    bucket = probe >> (key_bits[t] - np.uint64(directory_bits))
                    lo, hi = directory[t, bucket], directory[t, bucket + 1]
                if level > 0 or directory_bits < key_bits[t]:  # else the bucket is the key
                    lo += np.searchsorted(entries[t, lo:hi], (probe << below) << np.uint64(32))
                for j in range(lo, hi):
                    entry = entries[t, j]
                    if entry >> (below + np.uint64(32)) != probe:
                        break
                    if _popcount((entry >> np.uint64(32)) ^ stored) > max_distance:
                        continue  # already too far on the stored bits: no fingerprint read
                    position = entry & _POSITION
                    distance = _popcount(fingerprints[position] ^ query)
                    if distance <= max_distance and not _contains(found, count, position):
                        found, count = _append(found, count, np.uint64(distance) << np.uint64(32) | position)
    for position in range(scan_from, size):  # the buffer (and small levels)
        distance = _popcount(fingerprints[position] ^ query)
        if distance <= max_distance:
            found, count = _append(found, count, np.uint64(distance) << np.uint64(32) | np.uint64(position))
    return np.sort(found[:count])


@numba.njit(cache=True)
def _contains(found, count, position):
    """Already found (through another table)?"""
    for c in range(count):
        if found[c] & _POSITION == position:
            return True
    return False


@numba.njit(cache=True)
def _append(found, count, value):
    if count == found.shape[0]:
        found = np.concatenate((found, np.empty(count, np.uint64)))
    found[count] = value
    return found, count + 1


def _ball(width: int, radius: int) -> np.ndarray:
    """Every value of ``width`` bits with at most ``radius`` bits set (XOR masks to probe)."""
    flips = [0]
    for r in range(1, radius + 1):
        flips += [sum(1 << b for b in bits) for bits in itertools.combinations(range(width), r)]
    return np.unique(np.array(flips, dtype=np.uint64))
