# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The loops over fingerprints, compiled ahead of time: the index's (see :mod:`pipelines.index`
for the design), a small store's scan of its rows, and the Redis store's check of a batch.

They were numba functions; compiled here at install time instead, they need
no JIT compiler at run time (llvmlite: ~90 MB of memory in the crawl
process, and a compile of several seconds on the reactor thread at the first
query of a fresh install).
"""

from libc.stdint cimport int64_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, qsort
from libc.string cimport memcpy, memset

import numpy as np

cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define popcount64(x) __builtin_popcountll(x)
    #else
    static inline int popcount64(unsigned long long x) {
        x = x - ((x >> 1) & 0x5555555555555555ULL);
        x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
        x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
        return (int)((x * 0x0101010101010101ULL) >> 56);
    }
    #endif
    """
    int popcount64(uint64_t x) nogil

#: Runs up to this long are checked one by one, without counting matches first.
cdef int64_t SHORT_RUN = 32
cdef uint64_t POSITION = 0xFFFFFFFF


cdef inline uint64_t _permute(uint64_t fingerprint, Py_ssize_t t, const uint64_t[:, ::1] shifts,
                              const uint64_t[:, ::1] masks, const uint64_t[:, ::1] lefts) noexcept nogil:
    cdef uint64_t word = 0
    cdef Py_ssize_t j
    for j in range(shifts.shape[1]):
        word |= ((fingerprint >> shifts[t, j]) & masks[t, j]) << lefts[t, j]
    return word


cdef struct Found:  # the matches so far: ``distance << 32 | position``
    uint64_t* entries
    int64_t room
    int64_t count  # may exceed ``room``: the caller asks again with more


cdef inline void _record(Found* found, int distance, uint64_t position) noexcept nogil:
    """Add a match unless already found (through another table); past the room it is only counted."""
    cdef int64_t c
    for c in range(min(found.count, found.room)):
        if found.entries[c] & POSITION == position:
            return
    if found.count < found.room:
        found.entries[found.count] = (<uint64_t>distance) << 32 | position
    found.count += 1


cdef inline void _scan(const uint64_t* words, const uint32_t* positions, int64_t start, int64_t end,
                       uint64_t permuted, int max_distance, Found* found) noexcept nogil:
    """Record every entry of ``words[start:end]`` within ``max_distance`` of ``permuted``.  Long runs
    are counted first, in a loop the compiler vectorises; the loop that records runs only when there
    are matches."""
    cdef int64_t j, hits = 0
    cdef int distance
    if end - start > SHORT_RUN:
        for j in range(start, end):
            hits += popcount64(words[j] ^ permuted) <= max_distance
        if not hits:
            return
    for j in range(start, end):
        distance = popcount64(words[j] ^ permuted)
        if distance <= max_distance:
            _record(found, distance, positions[j])


cdef inline int64_t _lower_bound(const uint64_t* words, int64_t lo, int64_t hi, uint64_t value) noexcept nogil:
    """The first index in ``[lo, hi)`` whose word is not below ``value`` (a sorted run)."""
    cdef int64_t middle
    while lo < hi:
        middle = lo + (hi - lo) // 2
        if words[middle] < value:
            lo = middle + 1
        else:
            hi = middle
    return lo


def query(uint64_t query, int max_distance, const uint64_t[:, ::1] words, const uint32_t[:, ::1] positions,
          const int64_t[::1] level_starts, int64_t scan_from, const uint32_t[:, ::1] directory,
          const uint64_t[::1] directory_bits, const uint64_t[::1] flips, const int64_t[::1] flip_starts,
          const uint64_t[:, ::1] shifts, const uint64_t[:, ::1] masks, const uint64_t[:, ::1] lefts,
          const uint64_t[::1] key_bits, const uint64_t[::1] buffer, int64_t buffered, uint64_t[::1] found):
    """Every position within ``max_distance``, written to ``found`` as ``distance << 32 | position``;
    returns how many there are (more than fit in ``found``: call again, bigger)."""
    cdef int64_t start, end, lo, j, first, n
    cdef Py_ssize_t t, level, i, probe_count
    cdef uint64_t permuted, below, word, bucket, touched = 0
    cdef int distance
    cdef bint narrow
    cdef const uint64_t* table_words
    cdef const uint32_t* table_positions
    cdef Found matches = Found(&found[0], found.shape[0], 0)
    cdef Found* found_ = &matches
    cdef Py_ssize_t most = max(1, flips.shape[0])
    cdef int64_t* los = <int64_t*>malloc(2 * most * sizeof(int64_t))  # per probe, where to search
    cdef uint64_t* probes = <uint64_t*>malloc(most * sizeof(uint64_t))
    if los == NULL or probes == NULL:
        free(los)
        free(probes)
        raise MemoryError()
    cdef int64_t* his = los + most
    with nogil:
        for t in range(words.shape[0]):
            table_words, table_positions = &words[t, 0], &positions[t, 0]
            permuted = _permute(query, t, shifts, masks, lefts)
            below = 64 - key_bits[t]  # bits under the key
            probe_count = flip_starts[t + 1] - flip_starts[t]
            for i in range(probe_count):
                probes[i] = (permuted >> below) ^ flips[flip_starts[t] + i]
            for level in range(level_starts.shape[0] - 1):
                start, end = level_starts[level], min(level_starts[level + 1], scan_from)
                if start >= end:
                    continue
                # First every probe's range (level 0: its directory bucket) and, in level 0, every
                # cache line of those; then the searches.  Independent memory reads, which the
                # processor overlaps, rather than one cache miss after another.
                for i in range(probe_count):
                    los[i], his[i] = start, end
                    if level == 0:
                        bucket = probes[i] >> (key_bits[t] - directory_bits[t])
                        los[i], his[i] = directory[t, bucket], directory[t, bucket + 1]
                        for j in range(los[i], his[i], 8):
                            touched ^= table_words[j]
                narrow = level > 0 or directory_bits[t] < key_bits[t]  # else a bucket is one key
                for i in range(probe_count):
                    if not narrow:  # the bucket is the run of entries with the probe's key
                        _scan(table_words, table_positions, los[i], his[i], permuted, max_distance, found_)
                        continue
                    lo = _lower_bound(table_words, los[i], his[i], probes[i] << below if below < 64 else 0)
                    for j in range(lo, his[i]):  # the run, found by a search: short, checked one by one
                        word = table_words[j]
                        if (word >> below if below < 64 else 0) != probes[i]:
                            break
                        distance = popcount64(word ^ permuted)
                        if distance <= max_distance:
                            _record(found_, distance, table_positions[j])
        # The small levels, if not probed: table 0 whole.
        permuted = _permute(query, 0, shifts, masks, lefts)
        _scan(&words[0, 0], &positions[0, 0], scan_from, level_starts[level_starts.shape[0] - 1], permuted,
              max_distance, found_)
        first = level_starts[level_starts.shape[0] - 1]  # the buffer: positions [first, first + buffered)
        for n in range(buffered):
            distance = popcount64(buffer[n] ^ query)
            if distance <= max_distance:
                _record(found_, distance, first + n)
    free(los)
    free(probes)
    return matches.count, touched


def radix_sort(uint64_t[:, ::1] words, uint32_t[:, ::1] positions, int64_t start, int64_t end):
    """Sort every table's ``words[start:end]`` in place, ``positions`` along: LSD radix sort, 8 bits a
    pass.  Eight passes (even), so the result lands back in the arrays given."""
    cdef int64_t size = end - start, i
    cdef int64_t starts[257]
    cdef Py_ssize_t t
    cdef int shift, digit
    if size <= 1:
        return
    cdef uint64_t* spare_words = <uint64_t*>malloc(size * sizeof(uint64_t))
    cdef uint32_t* spare_positions = <uint32_t*>malloc(size * sizeof(uint32_t))
    cdef uint64_t* run_words
    cdef uint32_t* run_positions
    cdef uint64_t* swap_words
    cdef uint32_t* swap_positions
    if spare_words == NULL or spare_positions == NULL:
        free(spare_words)
        free(spare_positions)
        raise MemoryError()
    with nogil:
        for t in range(words.shape[0]):
            run_words, run_positions = &words[t, start], &positions[t, start]
            for shift in range(0, 64, 8):
                memset(starts, 0, sizeof(starts))
                for i in range(size):
                    starts[((run_words[i] >> shift) & 255) + 1] += 1
                for digit in range(256):
                    starts[digit + 1] += starts[digit]
                for i in range(size):
                    digit = (run_words[i] >> shift) & 255
                    spare_words[starts[digit]], spare_positions[starts[digit]] = run_words[i], run_positions[i]
                    starts[digit] += 1
                swap_words, swap_positions = run_words, run_positions
                run_words, run_positions = spare_words, spare_positions
                spare_words, spare_positions = swap_words, swap_positions
            # eight swaps: run_* are the table's own arrays again, spare_* the buffers
    free(spare_words)
    free(spare_positions)


def count_into_directory(const uint64_t[:, :] added, const uint64_t[::1] bits, uint32_t[:, ::1] directory):
    """Entries ``added`` to level 0, per table: every directory bound past their bucket moves up by
    one (a directory of zeros and all of level 0 make the whole directory)."""
    cdef Py_ssize_t t, bound, i, buckets = directory.shape[1]
    cdef int64_t running
    cdef uint64_t below
    cdef int64_t* counts = <int64_t*>malloc(buckets * sizeof(int64_t))
    if counts == NULL:
        raise MemoryError()
    with nogil:
        for t in range(added.shape[0]):
            memset(counts, 0, buckets * sizeof(int64_t))
            below = 64 - bits[t]
            for i in range(added.shape[1]):
                counts[(added[t, i] >> below) + 1 if below < 64 else 1] += 1
            running = 0
            for bound in range(buckets):
                running += counts[bound]
                directory[t, bound] += running
    free(counts)


def merge(uint64_t[:, ::1] words, uint32_t[:, ::1] positions, int64_t start, int64_t middle, int64_t end):
    """Merge every table's sorted runs ``[start, middle)`` and ``[middle, end)`` in place: from the
    back, with a copy of the right run only (the smaller one: new entries)."""
    cdef int64_t size = end - middle, i, j, k
    cdef Py_ssize_t t
    if size <= 0:
        return
    cdef uint64_t* right_words = <uint64_t*>malloc(size * sizeof(uint64_t))
    cdef uint32_t* right_positions = <uint32_t*>malloc(size * sizeof(uint32_t))
    if right_words == NULL or right_positions == NULL:
        free(right_words)
        free(right_positions)
        raise MemoryError()
    with nogil:
        for t in range(words.shape[0]):
            memcpy(right_words, &words[t, middle], size * sizeof(uint64_t))
            memcpy(right_positions, &positions[t, middle], size * sizeof(uint32_t))
            i, j = middle - 1, size - 1
            k = end - 1
            while j >= 0:
                if i >= start and words[t, i] > right_words[j]:
                    words[t, k], positions[t, k] = words[t, i], positions[t, i]
                    i -= 1
                else:
                    words[t, k], positions[t, k] = right_words[j], right_positions[j]
                    j -= 1
                k -= 1
    free(right_words)
    free(right_positions)


def near_any(fingerprints, present, other, other_present, limits, bint earlier_only):
    """Per row (fingerprints, which exist: as stores keep them): is a row of ``other`` (or, with
    ``earlier_only``, an earlier row of the same rows) within ``limits`` on a part both have (-1:
    that part is not compared)?  Most pages are near none, and need no closer look.  (The Redis
    store's check of a batch against itself and the pages other crawlers added meanwhile.)"""
    near = np.zeros(len(fingerprints), dtype=np.uint8)
    _near_any(fingerprints, present.view(np.uint8), other, other_present.view(np.uint8),
              np.asarray(limits, dtype=np.int64), earlier_only, near)
    return near.view(bool)


cdef void _near_any(const uint64_t[:, :] fingerprints, const unsigned char[:, :] present, const uint64_t[:, :] other,
                    const unsigned char[:, :] other_present, const int64_t[:] limits, bint earlier_only,
                    unsigned char[::1] near):
    cdef Py_ssize_t i, j, part
    with nogil:
        for i in range(fingerprints.shape[0]):
            for j in range(i if earlier_only else other.shape[0]):
                for part in range(2):
                    if (present[i, part] and other_present[j, part]
                            and popcount64(fingerprints[i, part] ^ other[j, part]) <= limits[part]):
                        near[i] = 1


cdef int _ascending(const void* a, const void* b) noexcept nogil:
    cdef uint64_t x = (<const uint64_t*>a)[0], y = (<const uint64_t*>b)[0]
    return (x > y) - (x < y)


def scan(const uint64_t[:, ::1] fingerprints, const unsigned char[:, ::1] present, int part, uint64_t fingerprint,
         int max_distance, Py_ssize_t start, Py_ssize_t end):
    """Rows ``start`` to ``end`` whose fingerprint ``part`` is present and within ``max_distance`` bits of
    ``fingerprint``, as ``(row, distance)``, nearest first (then by row): a store's rows read in one
    pass, a few microseconds even with cold caches, where numpy's calls cost ~35."""
    cdef uint64_t* found = <uint64_t*>malloc(max(end - start, 1) * sizeof(uint64_t))  # distance << 32 | row
    cdef Py_ssize_t row, count = 0, n
    cdef int distance
    if found == NULL:
        raise MemoryError()
    try:
        for row in range(start, end):
            distance = popcount64(fingerprints[row, part] ^ fingerprint)
            if distance <= max_distance and present[row, part]:
                found[count] = (<uint64_t>distance << 32) | <uint64_t>(row - start)
                count += 1
        qsort(found, count, sizeof(uint64_t), _ascending)
        return [(start + <Py_ssize_t>(found[n] & POSITION), <int>(found[n] >> 32)) for n in range(count)]
    finally:
        free(found)
