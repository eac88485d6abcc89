# cython: language_level=3, boundscheck=False, wraparound=False
# distutils: language = c++
"""The per-word and per-shingle loops of the content fingerprint, compiled.

In Python each word cost a filter, an encode and a hash call, and each
shingle a join, an encode and a hash call: a fifth of the fingerprint's time.
The hash is xxHash's XXH3-64 (``vendor/xxhash.h``, the library the ``xxhash``
package wraps), over the same UTF-8 bytes, so every value is the one that
package gives.

It also hands a page's text to a worker process as Python holds it (one, two
or four bytes a character) and hashes it so: encoding a page to UTF-8 cost
the reactor thread ~0.1 ms, and pickling it (which encodes it again) ~0.3 ms.
"""

from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.unicode cimport (
    Py_UNICODE_ISDIGIT, PyUnicode_AsUTF8AndSize, PyUnicode_DATA, PyUnicode_FromKindAndData, PyUnicode_GET_LENGTH,
    PyUnicode_KIND,
)
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memset
from libcpp.string cimport string
from libcpp.vector cimport vector

import numpy as np

cdef extern from *:
    """
    #define XXH_INLINE_ALL
    #include "vendor/xxhash.h"
    """
    uint64_t XXH3_64bits(const void* data, size_t length) nogil
    ctypedef struct XXH128_hash_t:
        uint64_t low64
        uint64_t high64
    XXH128_hash_t XXH3_128bits(const void* data, size_t length) nogil


cpdef list only_words(list tokens):
    """The tokens that are words, the SimHash features: not one character, not a number
    (``str.isdigit``: every character a digit)."""
    cdef list found = []
    cdef str token
    for token in tokens:
        if _is_word(token):
            found.append(token)
    return found


def word_counts(list blocks):
    """Word -> how many times it occurs in the blocks (lists of tokens), words as ``only_words``
    keeps them, in order of first occurrence."""
    cdef dict counts = {}
    cdef list block
    cdef str token
    for block in blocks:
        for token in block:
            if _is_word(token):
                counts[token] = counts.get(token, 0) + 1
    return counts


cdef inline bint _is_word(str token):
    return len(token) > 1 and not _all_digits(token)


cdef inline bint _all_digits(str token):
    cdef Py_UCS4 character
    for character in token:
        if not Py_UNICODE_ISDIGIT(character):
            return False
    return True


def starting_in(list words, tuple ranges):
    """Per word, as ``bool``: does its first character fall in one of ``ranges`` (pairs of first and
    last code points)?"""
    found = np.zeros(len(words), dtype=bool)
    cdef unsigned char[::1] out = found.view(np.uint8)
    cdef Py_ssize_t n, r, count = len(ranges)
    cdef long code
    cdef str word
    cdef vector[long] bounds
    for low, high in ranges:
        bounds.push_back(low)
        bounds.push_back(high)
    for n in range(len(words)):
        word = words[n]
        if not word:
            continue
        code = <long>(<Py_UCS4>word[0])
        for r in range(count):
            if bounds[2 * r] <= code <= bounds[2 * r + 1]:
                out[n] = 1
                break
    return found


def xxh3_hashes(list texts):
    """XXH3-64 of each text's UTF-8 bytes, as ``uint64`` (``xxhash.xxh3_64_intdigest``)."""
    hashes = np.empty(len(texts), dtype=np.uint64)
    cdef uint64_t[::1] out = hashes
    cdef Py_ssize_t n, length
    cdef const char* data
    for n in range(len(texts)):
        data = PyUnicode_AsUTF8AndSize(texts[n], &length)
        out[n] = XXH3_64bits(data, length)
    return hashes


def shingle_hashes(list blocks, Py_ssize_t size):
    """XXH3-64 of every shingle of the blocks (lists of tokens): each run of ``size`` consecutive
    tokens within a block, joined by a space; a shorter block is one shingle (an empty one: "")."""
    cdef Py_ssize_t total = 0, start, n, length
    cdef list block
    for block in blocks:
        total += max(1, len(block) - size + 1)
    hashes = np.empty(total, dtype=np.uint64)
    cdef uint64_t[::1] out = hashes
    cdef string joined
    cdef const char* data
    cdef Py_ssize_t at = 0
    for block in blocks:
        for start in range(max(1, len(block) - size + 1)):
            joined.clear()
            for n in range(start, min(start + size, len(block))):
                if n > start:
                    joined.push_back(b" ")
                data = PyUnicode_AsUTF8AndSize(block[n], &length)
                joined.append(data, length)
            out[at] = XXH3_64bits(joined.data(), joined.size())
            at += 1
    return hashes


def sketch_bits(const uint64_t[::1] hashes, const Py_ssize_t[:, ::1] probes, int value_bits):
    """The bits of a sketch (see :mod:`pipelines.sketch`): per bin (the hash's top bits), the lowest
    bit of the least value (its low ``value_bits`` bits); an empty bin takes the bit of the first
    full one among its ``probes``, else of the first full bin from its first probe on.  None when
    every bin is empty."""
    cdef Py_ssize_t bins = probes.shape[0], b, p, n
    cdef int shift = value_bits
    cdef uint64_t empty = (<uint64_t>1) << 63, mask = ((<uint64_t>1) << value_bits) - 1, value
    cdef vector[uint64_t] minima = vector[uint64_t](bins, empty)
    for n in range(hashes.shape[0]):
        b = <Py_ssize_t>((hashes[n] >> shift) % bins)
        value = hashes[n] & mask
        if value < minima[b]:
            minima[b] = value
    cdef Py_ssize_t full = 0
    for b in range(bins):
        full += minima[b] != empty
    if not full:
        return None
    packed = bytearray(bins // 8)
    cdef unsigned char[::1] out = packed
    cdef Py_ssize_t source
    for b in range(bins):
        source = b
        if minima[b] == empty:
            source = -1
            for p in range(probes.shape[1]):
                if minima[probes[b, p]] != empty:
                    source = probes[b, p]
                    break
            if source < 0:  # the first full bin from the first probe on, around the end
                source = probes[b, 0]
                while minima[source] == empty:
                    source = (source + 1) % bins
        if minima[source] & 1:
            out[b // 8] |= 1 << (b % 8)
    return bytes(packed)


def simhash_bits(const uint64_t[::1] hashes, const int64_t[::1] weights):
    """Charikar's SimHash (see :mod:`pipelines.simhash`): bit *i* is 1 where the weights of the
    features whose hash has bit *i* set outweigh, or equal, those whose hash has it clear.  Integer
    sums, wrapping as numpy's int64 would."""
    cdef uint64_t votes[64]
    cdef uint64_t total = 0, weight, hash_, result = 0
    cdef Py_ssize_t n
    cdef int bit
    memset(votes, 0, sizeof(votes))
    for n in range(hashes.shape[0]):
        hash_, weight = hashes[n], <uint64_t>weights[n]
        total += weight
        for bit in range(64):  # no branch: the compiler vectorises it
            votes[bit] += weight & (0 - ((hash_ >> bit) & 1))
    for bit in range(64):
        if <int64_t>(2 * votes[bit] - total) >= 0:  # set minus clear
            result |= (<uint64_t>1) << bit
    return result


def text_payload(str text):
    """``text``'s characters as Python holds them: (bytes per character, the characters' bytes).
    No encoding: ``payload_text`` gives back the equal string."""
    cdef int kind = PyUnicode_KIND(text)
    return kind, PyBytes_FromStringAndSize(<char*>PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text) * kind)


def payload_text(int kind, bytes data):
    """The string ``text_payload`` gave ``(kind, data)`` for."""
    return PyUnicode_FromKindAndData(kind, <char*>data, len(data) // kind)


def text_digest(str text):
    """A 128-bit XXH3 digest of ``text`` (17 bytes: the bytes per character, then the hash of the
    characters as Python holds them): equal strings, equal digests; read in place, no copy."""
    cdef int kind = PyUnicode_KIND(text)
    cdef XXH128_hash_t digest = XXH3_128bits(PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text) * kind)
    return bytes([kind]) + digest.high64.to_bytes(8, "big") + digest.low64.to_bytes(8, "big")
