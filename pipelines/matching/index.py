"""Exact Hamming-ball lookups over 64-bit fingerprints, sub-linear in the number stored.

Two fingerprints within ``k`` bits agree somewhere, by the pigeonhole
principle; each *table* below is keyed on a part of the fingerprint where they
must then agree (or nearly), so a query only looks at entries that share a
key with it, and checks those on all 64 bits.  Nothing is missed.

- Manku et al. (2007): cut the 64 bits into ``b`` blocks; two fingerprints
  within ``k`` bits agree exactly on at least ``b - k`` blocks, so one table
  per choice of ``b - k`` blocks, one exact probe each (k = 3: b = 4, four
  tables of 16-bit keys).
- Multi-index hashing (Norouzi et al. 2012) with the generalized pigeonhole
  principle (Qin et al. 2018): cut into ``m`` blocks probed within radii
  ``r_i`` with ``sum(r_i + 1) > k``; some block is then within its radius, so
  one table per block, probed with every key value within its radius.  Best
  for large ``k`` (k = 8: 5 tables of 12- and 13-bit keys, radii 1, 1, 1, 1,
  0: 57 probes in all; 4 tables of 16 bits, radii 2, 1, 1, 1: 188 probes of
  shorter runs; radius 2 on 3 tables: 718).

As in Manku's design, a table holds each fingerprint *permuted* so that its
key comes first, sorted: the entries sharing a key are one run, and each one's
distance to the query is a popcount of the entry itself, with no other memory
read.  Numpy only, no Python object per entry: per table and entry, the
permuted fingerprint (8 bytes) and the entry's 32-bit position (4 bytes; up to
4G entries), plus the key (8 more) unless keys are the positions 0, 1, 2... as
a store's rows are.  Which layout is cheapest depends on the size (a cost
model below); the index takes another one as it grows.

New entries go to a small buffer scanned by brute force, then to level 2,
level 1 and level 0 (the bulk) of every table: sorted, and merged into the
next level when it outgrows it by a ratio that grows as the cube root of the
size, so an add costs O(1) amortised.  Level 0 has a directory: where each
value of the key's top bits starts.  A query is one compiled function
(``indexloops.pyx``): per table, the directory buckets of every probe and their cache
lines first (independent reads, which the processor overlaps), then the scans
of the runs; in the small levels, a binary search per probe.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from math import comb

import numpy as np

from ..fingerprint.process_memory import release_freed_memory
from . import indexloops

BUFFER_SIZE = 256
MAX_TABLES = 6  # 12 bytes per table and entry: <= 72 bytes per fingerprint
# Cost model: a probe (a directory read, then its run's first cache line) takes ~100 ns, an
# entry of a run under 1 ns (counted in a vectorised loop).  Fitted to k = 8 at 1M, 3M and 10M
# entries on 2-core x86-64: 5 tables beat 4 up to a few million entries, 4 beat 3 beyond.
SCAN_PER_PROBE = 128
RELAYOUT_GAIN = 0.8  # a growing index takes another layout when it costs queries 20% less
MANY_PROBES = 16  # from this many probes a query scans the small levels, not a binary search per probe
_LEVELS = 3
_POSITION = np.uint64(0xFFFFFFFF)  # a query's result: distance << 32 | position
_INITIAL_CAPACITY = 64  # small: a store per site holds many small indexes
_GROWTH = 1.125  # arrays grow by an eighth: amortised O(1) adds, little unused memory


@dataclass(frozen=True)
class Layout:
    """Tables as lists of (shift, width) key blocks; table ``i`` is probed within ``radii[i]`` bits."""

    tables: tuple[tuple[tuple[int, int], ...], ...]
    radii: tuple[int, ...]

    def widths(self) -> list[int]:
        return [sum(w for _, w in blocks) for blocks in self.tables]

    def probes(self) -> list[int]:
        """Per table, the key values a query looks up: its radius ball."""
        return [sum(comb(width, i) for i in range(radius + 1)) for width, radius in zip(self.widths(), self.radii)]

    def cost(self, size: int) -> float:
        """Expected work per query, in probes: each probe's search, plus the entries it scans."""
        return sum(p * (1 + size / 2.0**width / SCAN_PER_PROBE) for p, width in zip(self.probes(), self.widths()))


def _blocks(count: int) -> list[tuple[int, int]]:
    widths = [64 // count + (i < 64 % count) for i in range(count)]
    return list(zip(itertools.accumulate([0, *widths[:-1]]), widths))


def layout_options(max_distance: int) -> list[Layout]:
    """Every layout of at most ``MAX_TABLES`` tables that finds all fingerprints within ``max_distance``."""
    options = []
    for b in range(max_distance + 1, max_distance + MAX_TABLES + 1):  # Manku: b - k blocks a table, exact
        if max_distance > 0 and comb(b, max_distance) <= MAX_TABLES:  # (k = 0: one table, the whole fingerprint)
            tables = tuple(itertools.combinations(_blocks(b), b - max_distance))
            options.append(Layout(tables, (0,) * len(tables)))
    for m in range(1, min(MAX_TABLES, max_distance + 1) + 1):  # one block a table, radii summing to k + 1 - m
        base, extra = divmod(max_distance + 1 - m, m)
        options.append(Layout(tuple((block,) for block in _blocks(m)), tuple(base + (i < extra) for i in range(m))))
    return list(dict.fromkeys(options))  # (k = 3: Manku's 4 tables are also 4 blocks of radius 0)


def choose_layout(max_distance: int, size: int) -> Layout:
    """The cheapest layout for ``size`` entries."""
    return min(layout_options(max_distance), key=lambda layout: layout.cost(size))


class SimhashIndex:
    """Integer keys with a 64-bit fingerprint each; ``query`` finds every key within ``max_distance``.

    The layout is chosen for the number of entries, and again at each merge into level 0: what
    is cheapest at 1M entries (k = 8: 5 tables of 12- and 13-bit keys) is not at 10M (4 tables of
    16 bits).  A ``layout`` given (tests, benchmarks) is kept.
    """

    def __init__(self, max_distance: int = 3, layout: Layout | None = None) -> None:
        if not 0 <= max_distance <= 64:
            raise ValueError(f"max_distance must be within 0..64, got {max_distance}")
        self.max_distance = max_distance
        self._fixed_layout = layout is not None
        self._keys: np.ndarray | None = None  # None while every key equals its position (a store's rows)
        self._size = 0
        self._indexed = 0  # entries [0, _indexed) are in the levels, the rest in the buffer
        self._buffer = np.empty(BUFFER_SIZE, dtype=np.uint64)  # their fingerprints
        self._level_starts = np.zeros(_LEVELS + 1, dtype=np.int64)  # level i is [starts[i], starts[i + 1])
        self._use(layout or choose_layout(max_distance, 0), _INITIAL_CAPACITY)

    def __len__(self) -> int:
        return self._size

    @property
    def tables(self) -> int:
        return len(self.layout.tables)

    def memory_bytes(self) -> int:
        """Bytes of the index's arrays: what it costs, times ``len``, per fingerprint."""
        arrays = (self._words, self._positions, self._keys, self._buffer, self._directory)
        return sum(a.nbytes for a in arrays if a is not None)

    def add(self, key: int, fingerprint: int) -> None:
        pending = self._size - self._indexed  # < BUFFER_SIZE <= len(self._buffer)
        self._buffer[pending] = fingerprint
        if self._keys is not None or key != self._size:
            self._store_keys(self._size, np.array([key], dtype=np.int64))
        self._size += 1
        if pending + 1 >= BUFFER_SIZE:
            self._index_buffer()

    def add_many(self, keys: np.ndarray, fingerprints: np.ndarray) -> None:
        """Add entries.  A bulk load (at least as many as are indexed: opening a store) is merged
        into level 0 at once; fewer go through the buffer."""
        count, pending = len(keys), self._size - self._indexed
        if pending + count > len(self._buffer):
            self._buffer = grown(self._buffer, pending, pending + count)
        self._buffer[pending : pending + count] = fingerprints
        self._store_keys(self._size, np.asarray(keys, dtype=np.int64))
        self._size += count
        if count >= self._indexed:
            self._rebuild(self.layout if self._fixed_layout else choose_layout(self.max_distance, self._size))
        elif self._size - self._indexed >= BUFFER_SIZE:
            self._index_buffer()

    def query(self, fingerprint: int) -> list[tuple[int, int]]:
        """Every ``(key, distance)`` within ``max_distance``, nearest first."""
        found = np.empty(16, dtype=np.uint64)
        while True:
            count, _ = indexloops.query(
                np.uint64(fingerprint),
                self.max_distance,
                self._words,
                self._positions,
                self._level_starts,
                self._scan_from(),
                self._directory,
                self._directory_bits,
                self._flips,
                self._flip_starts,
                *self._permutation,
                self._key_bits,
                self._buffer,
                self._size - self._indexed,
                found,
            )
            if count <= len(found):
                break
            found = np.empty(count, dtype=np.uint64)  # more matches than room: once more, with room
        if not count:
            return []
        found = np.sort(found[:count])
        positions, distances = (found & _POSITION).astype(np.int64), found >> np.uint64(32)
        keys = positions if self._keys is None else self._keys[positions]
        return list(zip(keys.tolist(), distances.tolist()))

    def _scan_from(self) -> int:
        """Where the query stops probing: with many probes (large k), after level 0; the small
        levels are then scanned whole (table 0), cheaper than a binary search per probe."""
        return self._level_starts[1] if len(self._flips) >= MANY_PROBES else self._level_starts[-1]

    def _store_keys(self, start: int, keys: np.ndarray) -> None:
        if self._keys is None:
            if np.array_equal(keys, np.arange(start, start + len(keys))):
                return
            self._keys = np.arange(start, dtype=np.int64)
        if start + len(keys) > len(self._keys):
            self._keys = grown(self._keys, start, max(start + len(keys), int(_GROWTH * len(self._keys)) + 1))
        self._keys[start : start + len(keys)] = keys

    # -- layout and levels ----------------------------------------------------------------

    def _use(self, layout: Layout, capacity: int) -> None:
        """Take ``layout``, with empty tables of ``capacity`` entries."""
        self.layout = layout
        *permutation, self._key_bits = _recipe_arrays(layout)
        self._permutation = tuple(permutation)  # per table: shifts, masks, lefts
        self._flips, self._flip_starts = _probe_arrays(layout)
        # per table, per entry: the permuted fingerprint and its position; each level sorted
        self._words = np.empty((self.tables, capacity), dtype=np.uint64)
        self._positions = np.empty((self.tables, capacity), dtype=np.uint32)
        self._directory = np.zeros((self.tables, 2), dtype=np.uint32)  # see _index_level_zero
        self._directory_bits = np.zeros(self.tables, dtype=np.uint64)

    def _rebuild(self, layout: Layout) -> None:
        """Index every entry (levels and buffer) afresh into level 0 of ``layout``: a bulk load,
        or a new layout for a grown index."""
        indexed, pending = self._level_starts[-1], self._size - self._indexed
        fingerprints = np.concatenate([_restored(self._words[0, :indexed], *self._permutation), self._buffer[:pending]])
        positions = np.concatenate([self._positions[0, :indexed], np.arange(indexed, self._size, dtype=np.uint32)])
        del self._words, self._positions
        self._use(layout, max(self._size, _INITIAL_CAPACITY))
        self._words[:, : self._size] = _permuted(fingerprints, *self._permutation)
        self._positions[:, : self._size] = positions
        self._sort_run(0, self._size)
        self._level_starts[1:] = self._indexed = self._size
        self._buffer = np.empty(BUFFER_SIZE, dtype=np.uint64)
        self._index_level_zero()

    def _index_buffer(self) -> None:
        """Move the buffer into the smallest level (sorted, then merged), then fold levels that
        outgrew the next."""
        count = self._size - self._indexed
        end = self._level_starts[-1]
        self._ensure_capacity(end + count)
        self._words[:, end : end + count] = _permuted(self._buffer[:count], *self._permutation)
        self._positions[:, end : end + count] = np.arange(self._indexed, self._size, dtype=np.uint32)
        self._sort_run(end, end + count)
        self._level_starts[-1] = end + count
        self._merge_runs([self._level_starts[2], end])
        self._indexed = self._size
        # levels grow by a ratio r = (n / buffer) ** (1/3): about 3r entries moved per add
        ratio = max(8.0, (self._size / BUFFER_SIZE) ** (1 / 3))
        if self._level_size(2) >= BUFFER_SIZE * ratio:
            self._fold(2)
        if self._level_size(1) >= BUFFER_SIZE * ratio**2:
            self._fold(1)
        # With many probes (large k) every query scans levels 1 and 2 whole (`_scan_from`): keep
        # them under sqrt(300 n) entries, where that scan (~0.3 ns an entry) costs a query about
        # what merging them into level 0 (~3 ns an entry and table) costs a few adds.
        many_probes = len(self._flips) >= MANY_PROBES
        if many_probes and self._level_starts[-1] - self._level_starts[1] > (300 * self._size) ** 0.5:
            self._fold(1)

    def _level_size(self, level: int) -> int:
        return self._level_starts[level + 1] - self._level_starts[level]

    def _sort_run(self, start: int, end: int) -> None:
        """Sort every table's entries in ``[start, end)`` by permuted fingerprint."""
        indexloops.radix_sort(self._words, self._positions, start, end)

    def _merge_runs(self, starts: list[int]) -> None:
        """Merge the sorted runs that start at ``starts`` (the last one ends the levels) into one."""
        end = self._level_starts[-1]
        for start, middle in reversed(list(itertools.pairwise(starts))):
            indexloops.merge(self._words, self._positions, start, middle, end)

    def _fold(self, level: int) -> None:
        """Merge ``level`` (and the smaller ones) into ``level - 1`` (level 0 folds into itself)."""
        target = max(0, level - 1)
        if target == 0 and not self._fixed_layout:
            best = choose_layout(self.max_distance, self._size)
            if best.cost(self._size) < RELAYOUT_GAIN * self.layout.cost(self._size):
                self._rebuild(best)  # everything sorted afresh
                return
        added = self._words[:, self._level_starts[1] : self._level_starts[-1]].copy() if target == 0 else None
        self._merge_runs(list(self._level_starts[target:_LEVELS]))
        for i in range(target + 1, _LEVELS):
            self._level_starts[i] = self._level_starts[-1]
        if target == 0:
            self._index_level_zero(added)

    def _index_level_zero(self, added: np.ndarray | None = None) -> None:
        """Per table, where each value of the key's top bits starts in level 0, ~8 entries (a
        cache line) a bucket, or the whole key: a probe reads its bucket's bounds, not the level.
        Updated with the entries ``added`` by a merge, unless the buckets change (or none given)."""
        size = self._level_starts[1]
        bits = np.array([min(w, max(0, int(np.log2(max(1, size / 8))))) for w in self.layout.widths()], np.uint64)
        if added is None or not np.array_equal(bits, self._directory_bits):
            self._directory_bits = bits
            self._directory = np.zeros((self.tables, (1 << int(bits.max())) + 1), dtype=np.uint32)
            added = self._words[:, :size]
        indexloops.count_into_directory(added, self._directory_bits, self._directory)

    def _ensure_capacity(self, needed: int) -> None:
        if needed > self._words.shape[1]:
            capacity = max(needed, int(_GROWTH * self._words.shape[1]))
            end = self._level_starts[-1]
            self._words = grown(self._words, end, capacity, axis=1)
            self._positions = grown(self._positions, end, capacity, axis=1)
            release_freed_memory()  # the old copies: ~13 bytes per fingerprint at 1M


def _permuted(fingerprints: np.ndarray, shifts: np.ndarray, masks: np.ndarray, lefts: np.ndarray) -> np.ndarray:
    """Per table, every fingerprint permuted so that its key comes first (tables x fingerprints);
    the same recipe arrays as the compiled query's permutation, so both always agree."""
    words = np.zeros((len(shifts), len(fingerprints)), dtype=np.uint64)
    for table in range(len(shifts)):
        for part in range(shifts.shape[1]):
            words[table] |= ((fingerprints >> shifts[table, part]) & masks[table, part]) << lefts[table, part]
    return words


def _restored(words: np.ndarray, shifts: np.ndarray, masks: np.ndarray, lefts: np.ndarray) -> np.ndarray:
    """The fingerprints of table 0's ``words``: ``_permuted`` undone."""
    fingerprints = np.zeros(len(words), dtype=np.uint64)
    for part in range(shifts.shape[1]):
        fingerprints |= ((words >> lefts[0, part]) & masks[0, part]) << shifts[0, part]
    return fingerprints


def grown(array: np.ndarray, used: int, capacity: int, axis: int = 0) -> np.ndarray:
    """A copy of the first ``used`` rows (along ``axis``) of ``array`` with room for ``capacity``
    (not ``np.resize``: its result keeps alive a base up to twice as big)."""
    shape = list(array.shape)
    shape[axis] = capacity
    bigger = np.empty(shape, dtype=array.dtype)
    rows = (slice(None),) * axis + (slice(0, used),)
    bigger[rows] = array[rows]
    return bigger


def _recipe_arrays(layout: Layout) -> tuple[np.ndarray, ...]:
    """Per table: the blocks (shift, mask, where it lands) of the permutation that puts the key
    blocks first and the other bits after them; and the key's width."""
    recipes = []
    for blocks in layout.tables:
        rest = sorted(set(range(64)) - {s + i for s, w in blocks for i in range(w)})
        parts, used = [], 0
        for shift, width in [*blocks, *((bits[0], len(bits)) for bits in _runs(rest))]:
            used += width
            parts.append((shift, width, 64 - used))
        recipes.append(parts)
    most = max(len(parts) for parts in recipes)
    shifts, masks, lefts = (np.zeros((len(recipes), most), np.uint64) for _ in range(3))
    for t, parts in enumerate(recipes):
        for j, (shift, width, left) in enumerate(parts):
            shifts[t, j], masks[t, j], lefts[t, j] = shift, (1 << width) - 1, left
    return shifts, masks, lefts, np.array(layout.widths(), np.uint64)


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
    """Every key value to flip per table (its radius ball), in one array."""
    balls = [_ball(width, radius) for width, radius in zip(layout.widths(), layout.radii)]
    starts = np.cumsum([0, *map(len, balls)]).astype(np.int64)
    return np.concatenate(balls), starts


def _ball(width: int, radius: int) -> np.ndarray:
    """Every value of ``width`` bits with at most ``radius`` bits set (XOR masks to probe)."""
    flips = [0]
    for r in range(1, radius + 1):
        flips += [sum(1 << b for b in bits) for bits in itertools.combinations(range(width), r)]
    return np.unique(np.array(flips, dtype=np.uint64))
