"""Exact Hamming-ball lookups over 64-bit fingerprints, sub-linear in the number stored.

Two fingerprints within ``k`` bits agree somewhere, by the pigeonhole
principle; each *table* below is keyed on a part of the fingerprint where they
must then agree (or nearly), so a query only looks at entries that share a
key with it, and checks those on all 64 bits.  Nothing is missed.

- Manku et al. (2007): cut the 64 bits into ``b`` blocks; two fingerprints
  within ``k`` bits agree exactly on at least ``b - k`` blocks, so one table
  per choice of ``b - k`` blocks, one exact probe each.  Best for small ``k``
  (k = 3: b = 5, 10 tables of ~25-bit keys).
- Multi-index hashing (Norouzi et al. 2012): cut into ``m`` blocks; some block
  is within ``k // m`` bits, so one table per block, probed with every value
  within that radius.  Best for large ``k`` (k = 8: 3 tables, radius 2).

The layout is chosen for ``max_distance`` and the expected size to keep the
probes and the candidates per query few, with at most ``MAX_TABLES`` tables
(memory).  Storage is numpy only, no Python object per entry: the fingerprint (8
bytes; the key too, 8 more, unless keys are the positions 0, 1, 2... as a
store's rows are) and, per table, a 32-bit key and a 32-bit position.
All tables live in one sorted array of (level, table, key): new entries go to
a small buffer scanned by brute force, then to level 2, level 1 and level 0
(the bulk), each merged into the next when it outgrows it by a ratio that
grows as the cube root of the size, so an add costs O(1) amortised.  A query
is one compiled function (numba): the table keys of the query, a binary search
per probe within each level, the 64-bit check of every candidate.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from math import comb

import numba
import numpy as np

BUFFER_SIZE = 256
MAX_TABLES = 10  # 8 bytes per table per entry: <= 100 bytes per fingerprint with the 16 of the entry
KEY_BITS = 25
_TABLE_BITS = 4
_LEVEL_SHIFT = KEY_BITS + _TABLE_BITS  # two level bits above the table: 31 bits in all
_LEVELS = 3
_SENTINEL = np.uint64(0xFFFFFFFFFFFFFFFF)  # ends the entries: a binary search never falls off the end
_POSITION = np.uint64(0xFFFFFFFF)
_INITIAL_CAPACITY = 1024
_GROWTH = 1.125  # arrays grow by an eighth: amortised O(1) adds, little unused memory


@dataclass(frozen=True)
class Layout:
    """Tables as lists of (shift, width) blocks, each probed within ``radius`` bits."""

    tables: tuple[tuple[tuple[int, int], ...], ...]
    radius: int

    def probes(self) -> int:
        width = sum(w for _, w in self.tables[0])
        return len(self.tables) * sum(comb(width, i) for i in range(self.radius + 1))

    def key_bits(self) -> int:
        return min(KEY_BITS, sum(w for _, w in self.tables[0]))


def _blocks(count: int) -> list[tuple[int, int]]:
    widths = [64 // count + (i < 64 % count) for i in range(count)]
    return list(zip(itertools.accumulate([0, *widths[:-1]]), widths))


def choose_layout(max_distance: int, expected_size: int) -> Layout:
    """The layout with the fewest probes plus expected candidates (a candidate costs ~20 probes)."""
    options = []
    for b in range(max_distance + 1, 65):  # Manku: tables of b - k blocks, exact probes
        if comb(b, max_distance) <= MAX_TABLES:
            blocks = _blocks(b)
            options.append(Layout(tuple(tuple(c) for c in itertools.combinations(blocks, b - max_distance)), 0))
    for m in range(2, MAX_TABLES + 1):  # multi-index hashing: one block a table, probed within k // m
        options.append(Layout(tuple((block,) for block in _blocks(m)), max_distance // m))

    def cost(layout: Layout) -> float:
        return layout.probes() * (1 + 20 * expected_size / 2.0 ** layout.key_bits())

    return min(options, key=cost)


class SimhashIndex:
    """Integer keys with a 64-bit fingerprint each; ``query`` finds every key within ``max_distance``."""

    def __init__(self, max_distance: int = 3, expected_size: int = 10_000_000) -> None:
        if not 0 <= max_distance <= 64:
            raise ValueError(f"max_distance must be within 0..64, got {max_distance}")
        self.max_distance = max_distance
        self.layout = choose_layout(max_distance, expected_size)
        probes = []
        for table, blocks in enumerate(self.layout.tables):
            width = sum(w for _, w in blocks)
            flips = _ball(width, self.layout.radius) >> np.uint64(max(0, width - KEY_BITS))
            probes.append((np.uint64(table << KEY_BITS) | flips, table))
        # every probe as (table << KEY_BITS | bits to flip) and the table it is for
        self._probe_bits = np.concatenate([bits for bits, _ in probes]).astype(np.uint32)
        self._probe_table = np.concatenate([np.full(len(bits), t, dtype=np.int64) for bits, t in probes])
        self._recipes = _recipe_arrays(self.layout)
        self._fingerprints = np.empty(_INITIAL_CAPACITY, dtype=np.uint64)
        self._keys: np.ndarray | None = None  # None while every key equals its position (a store's rows)
        self._size = 0
        self._indexed = 0  # entries [0, _indexed) are in the levels, the rest is the buffer
        # per table and entry: key << 32 | position, sorted (level, table and key are in the key)
        self._entries = np.full(_INITIAL_CAPACITY, _SENTINEL, dtype=np.uint64)
        self._level_starts = np.zeros(_LEVELS + 1, dtype=np.int64)  # level i is [starts[i], starts[i + 1])
        self._directory_bits = 0  # level 0 directory: where each (table, top bits of key) starts
        self._directory = np.zeros(2, dtype=np.int64)

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
            self._grow_entries(self._size + 1)
        self._fingerprints[self._size] = fingerprint
        if self._keys is not None or key != self._size:
            self._store_keys(self._size, np.array([key], dtype=np.int64))
        self._size += 1
        if self._size - self._indexed >= BUFFER_SIZE:
            self._index_buffer()

    def add_many(self, keys: np.ndarray, fingerprints: np.ndarray) -> None:
        """Add many entries at once (loading a store): one sort into level 0."""
        count = len(keys)
        if self._size + count > len(self._fingerprints):
            self._grow_entries(self._size + count)
        self._fingerprints[self._size : self._size + count] = fingerprints
        self._store_keys(self._size, np.asarray(keys, dtype=np.int64))
        self._size += count
        self._index_buffer(presorted=False)
        self._fold(0)

    def query(self, fingerprint: int) -> list[tuple[int, int]]:
        """Every ``(key, distance)`` within ``max_distance``, nearest first."""
        positions, distances = _query(
            np.uint64(fingerprint), self.max_distance, self._fingerprints, self._indexed, self._size,
            self._entries, self._level_starts, self._directory, self._directory_bits,
            self._probe_bits, self._probe_table, *self._recipes,
        )
        order = np.argsort(distances, kind="stable")
        keys = positions if self._keys is None else self._keys[positions]
        return [(int(keys[i]), int(distances[i])) for i in order]

    def _store_keys(self, start: int, keys: np.ndarray) -> None:
        if self._keys is None:
            if np.array_equal(keys, np.arange(start, start + len(keys))):
                return
            self._keys = np.arange(len(self._fingerprints), dtype=np.int64)
        self._keys[start : start + len(keys)] = keys

    # -- levels ---------------------------------------------------------------------------

    def _table_keys(self, fingerprints: np.ndarray) -> np.ndarray:
        """Every table's key of every fingerprint, table after table (without the level).

        The same recipe arrays as the compiled query, so both always agree on the keys.
        """
        shifts, masks, lefts, cuts = self._recipes
        keys = []
        for table in range(self.tables):
            key = np.zeros(len(fingerprints), dtype=np.uint64)
            for part in range(shifts.shape[1]):
                key |= ((fingerprints >> shifts[table, part]) & masks[table, part]) << lefts[table, part]
            keys.append((key >> cuts[table]) | np.uint64(table << KEY_BITS))
        return np.concatenate(keys).astype(np.uint32)

    def _index_buffer(self, presorted: bool = True) -> None:
        """Move the buffer into the smallest level, then fold levels that outgrew the next.

        The smallest level is sorted, the buffer is small: a stable sort merges them in linear
        time.  A bulk load (``presorted=False``) takes numpy's faster unstable sort instead.
        """
        keys = self._table_keys(self._fingerprints[self._indexed : self._size]) | np.uint32(2 << _LEVEL_SHIFT)
        positions = np.tile(np.arange(self._indexed, self._size, dtype=np.uint64), self.tables)
        end = self._level_starts[-1]
        self._ensure_capacity(end + len(keys) + 1)
        self._entries[end : end + len(keys)] = (keys.astype(np.uint64) << np.uint64(32)) | positions
        self._level_starts[-1] = end + len(keys)
        self._entries[end + len(keys)] = _SENTINEL
        self._indexed = self._size
        self._entries[self._level_starts[2] : self._level_starts[3]].sort(kind="stable" if presorted else None)
        # levels grow by a ratio r = (n / buffer) ** (1/3): about 3r entries moved per add
        ratio = max(8.0, (self._size / BUFFER_SIZE) ** (1 / 3))
        if self._level_size(2) >= BUFFER_SIZE * ratio * self.tables:
            self._fold(2)
        if self._level_size(1) >= BUFFER_SIZE * ratio**2 * self.tables:
            self._fold(1)

    def _level_size(self, level: int) -> int:
        return self._level_starts[level + 1] - self._level_starts[level]

    def _fold(self, level: int) -> None:
        """Merge ``level`` (and the smaller ones) into ``level - 1`` (level 0 folds into itself)."""
        target = max(0, level - 1)
        start, end = self._level_starts[target], self._level_starts[-1]
        entries = self._entries[start:end]
        entries &= ~np.uint64(3 << (32 + _LEVEL_SHIFT))
        entries |= np.uint64(target << (32 + _LEVEL_SHIFT))
        entries.sort(kind="stable")  # sorted runs: a linear merge, in place
        for i in range(target + 1, _LEVELS):
            self._level_starts[i] = end
        if target == 0:
            self._index_level_zero()

    def _index_level_zero(self) -> None:
        """A directory of level 0 by (table, top key bits), ~16 entries a bucket: a probe reads a
        bucket's bounds, then binary-searches a few cache lines instead of the whole array."""
        per_table = self._level_starts[1] // self.tables
        bits = int(min(KEY_BITS, max(0, np.log2(max(1, per_table / 16)))))
        buckets = np.arange(self.tables << bits, dtype=np.uint64) << np.uint64(KEY_BITS - bits + 32)
        bounds = self._entries[: self._level_starts[1]].searchsorted(buckets)
        self._directory = np.append(bounds, self._level_starts[1]).astype(np.int64)
        self._directory_bits = bits

    def _ensure_capacity(self, needed: int) -> None:
        if needed > len(self._entries):
            capacity = max(needed, int(_GROWTH * len(self._entries)))
            self._entries = np.concatenate([self._entries, np.full(capacity - len(self._entries), _SENTINEL)])

    def _grow_entries(self, needed: int) -> None:
        capacity = max(needed, int(_GROWTH * len(self._fingerprints)))
        self._fingerprints = np.resize(self._fingerprints, capacity)
        if self._keys is not None:
            self._keys = np.resize(self._keys, capacity)



def _recipe_arrays(layout: Layout) -> tuple[np.ndarray, ...]:
    """Per table and block: shift, mask and where it goes in the key; per table: bits cut off."""
    most = max(len(blocks) for blocks in layout.tables)
    shape = (len(layout.tables), most)
    shifts, masks, lefts = np.zeros(shape, np.uint64), np.zeros(shape, np.uint64), np.zeros(shape, np.uint64)
    cuts = np.zeros(len(layout.tables), np.uint64)
    for t, blocks in enumerate(layout.tables):
        left = width = sum(w for _, w in blocks)
        for j, (shift, block_width) in enumerate(blocks):
            left -= block_width
            shifts[t, j], masks[t, j], lefts[t, j] = shift, (1 << block_width) - 1, left
        cuts[t] = max(0, width - KEY_BITS)
    return shifts, masks, lefts, cuts


@numba.njit(cache=True)
def _popcount(x: np.uint64) -> int:
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return int((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@numba.njit(cache=True)
def _query(query, max_distance, fingerprints, indexed, size, entries, level_starts,
           directory, directory_bits, probe_bits, probe_table, shifts, masks, lefts, cuts):
    found = np.empty(16, np.int64)
    distances = np.empty(16, np.int64)
    count = 0
    tables = cuts.shape[0]
    keys = np.zeros(tables, np.uint32)
    for t in range(tables):
        key = np.uint64(0)
        for j in range(shifts.shape[1]):
            key |= ((query >> shifts[t, j]) & masks[t, j]) << lefts[t, j]
        keys[t] = np.uint32(key >> cuts[t])
    for level in range(level_starts.shape[0] - 1):
        lo, hi = level_starts[level], level_starts[level + 1]
        if lo == hi:
            continue
        flag = np.uint32(level << _LEVEL_SHIFT)
        for i in range(probe_bits.shape[0]):
            probe = (probe_bits[i] ^ keys[probe_table[i]]) | flag
            if level == 0:
                bucket = probe >> np.uint32(KEY_BITS - directory_bits)
                lo, hi = directory[bucket], directory[bucket + 1]
            first = np.uint64(probe) << np.uint64(32)
            j = lo + np.searchsorted(entries[lo:hi], first)
            while j < hi and (entries[j] >> np.uint64(32)) == probe:
                position = entries[j] & _POSITION
                distance = _popcount(fingerprints[position] ^ query)
                if distance <= max_distance:
                    seen = False
                    for c in range(count):
                        if found[c] == position:
                            seen = True
                    if not seen:
                        if count == found.shape[0]:
                            found = np.concatenate((found, np.empty(count, np.int64)))
                            distances = np.concatenate((distances, np.empty(count, np.int64)))
                        found[count], distances[count] = position, distance
                        count += 1
                j += 1
    for position in range(indexed, size):
        distance = _popcount(fingerprints[position] ^ query)
        if distance <= max_distance:
            if count == found.shape[0]:
                found = np.concatenate((found, np.empty(count, np.int64)))
                distances = np.concatenate((distances, np.empty(count, np.int64)))
            found[count], distances[count] = position, distance
            count += 1
    return found[:count], distances[:count]


def _ball(width: int, radius: int) -> np.ndarray:
    """Every value of ``width`` bits with at most ``radius`` bits set (XOR masks to probe)."""
    flips = [0]
    for r in range(1, radius + 1):
        flips += [sum(1 << b for b in bits) for bits in itertools.combinations(range(width), r)]
    return np.unique(np.array(flips, dtype=np.uint64))
