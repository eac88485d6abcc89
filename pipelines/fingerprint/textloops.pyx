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
    Py_UNICODE_ISALNUM, Py_UNICODE_ISDIGIT, PyUnicode_1BYTE_KIND, PyUnicode_AsUTF8AndSize, PyUnicode_DATA,
    PyUnicode_FromKindAndData, PyUnicode_GET_LENGTH, PyUnicode_KIND, PyUnicode_READ,
)
from cpython cimport array
from libc.math cimport nearbyint
from libc.stdint cimport int64_t, uint32_t, uint64_t
from libc.string cimport memcpy, memset
from libcpp.algorithm cimport sort, unique
from libcpp.string cimport string
from libcpp.vector cimport vector

import sys
from array import array as _array

cdef array.array _UINT64 = _array("Q")
cdef array.array _DOUBLES = _array("d")

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


def alnum_runs(str text):
    r"""The runs of letters and digits in ``text`` (``str.isalnum``), as ``re.findall(r"[^\W_]+", text)``
    finds them (``\w`` is ``isalnum`` or ``_``), without the regular expression's per-character cost: a
    page's words are split here."""
    cdef int kind = PyUnicode_KIND(text)
    cdef void* data = PyUnicode_DATA(text)
    cdef Py_ssize_t n, length = PyUnicode_GET_LENGTH(text), start = -1
    cdef list found = []
    cdef Py_UCS4 code
    for n in range(length):
        code = PyUnicode_READ(kind, data, n)
        if (_ascii_alnum(code) if code < 0x80 else Py_UNICODE_ISALNUM(code)):
            if start < 0:
                start = n
        elif start >= 0:
            found.append(text[start:n])
            start = -1
    if start >= 0:
        found.append(text[start:])
    return found


def ascii_tokens(str text):
    """``alnum_runs(text.lower())`` for an ASCII ``text``, in one pass and without lowering the whole text: a run
    without capitals is a slice of ``text``, one with capitals is lowered alone.  Most of a page's texts are
    ASCII, and splitting them into words was a tenth of the fingerprint."""
    cdef const unsigned char* data = <const unsigned char*>PyUnicode_DATA(text)
    cdef Py_ssize_t n, at, length = PyUnicode_GET_LENGTH(text), start = -1
    cdef bint capitals = False
    cdef unsigned char code
    cdef string lowered
    cdef list found = []
    if PyUnicode_KIND(text) != PyUnicode_1BYTE_KIND or not text.isascii():
        raise ValueError("not an ASCII text")
    for n in range(length + 1):
        code = data[n] if n < length else 0x20
        if _ascii_alnum(code):
            if start < 0:
                start = n
                capitals = False
            capitals = capitals or 0x41 <= code <= 0x5A
            continue
        if start < 0:
            continue
        if capitals:
            lowered.assign(<const char*>data + start, n - start)
            for at in range(n - start):
                if 0x41 <= <unsigned char>lowered[at] <= 0x5A:
                    lowered[at] = lowered[at] + 0x20
            found.append(PyUnicode_FromKindAndData(PyUnicode_1BYTE_KIND, lowered.data(), n - start))
        else:
            found.append(text[start:n])
        start = -1
    return found


cdef inline bint _ascii_alnum(Py_UCS4 code) noexcept nogil:
    """``str.isalnum`` of an ASCII character: letters and digits only."""
    return 0x61 <= code <= 0x7A or 0x41 <= code <= 0x5A or 0x30 <= code <= 0x39


def has_invisible(str text):
    """Does ``text`` hold a character that shows nothing inside a word (``_invisible``; the regular expression
    ``content._INVISIBLE`` searched in one compiled pass)?"""
    cdef int kind = PyUnicode_KIND(text)
    cdef void* data = PyUnicode_DATA(text)
    cdef Py_ssize_t n
    if kind == PyUnicode_1BYTE_KIND:
        for n in range(PyUnicode_GET_LENGTH(text)):
            if PyUnicode_READ(kind, data, n) == 0x00AD:
                return True
        return False
    for n in range(PyUnicode_GET_LENGTH(text)):
        if _invisible(PyUnicode_READ(kind, data, n)):
            return True
    return False


def has_unspaced(str text):
    """Does ``text`` hold a character of a script written without spaces (``_unspaced``: Han, kana, Thai, Lao,
    Khmer, Myanmar)?"""
    cdef int kind = PyUnicode_KIND(text)
    cdef void* data = PyUnicode_DATA(text)
    cdef Py_ssize_t n
    if kind == PyUnicode_1BYTE_KIND:
        return False
    for n in range(PyUnicode_GET_LENGTH(text)):
        if _unspaced(PyUnicode_READ(kind, data, n)):
            return True
    return False


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


cdef struct Votes:  # SimHash's sums: per bit, the weight of the features whose hash has it set; all weights
    uint64_t bits[64]
    uint64_t total


cdef inline void _votes_clear(Votes* votes) noexcept nogil:
    memset(votes, 0, sizeof(Votes))


cdef inline void _vote(Votes* votes, uint64_t hash_, uint64_t weight) noexcept nogil:
    cdef int bit
    votes.total += weight
    for bit in range(64):  # no branch: the compiler vectorises it
        votes.bits[bit] += weight & (0 - ((hash_ >> bit) & 1))


cdef inline uint64_t _votes_result(Votes* votes) noexcept nogil:
    """Bit *i* set where the weights voting for it outweigh, or equal, those against (sums wrapping at 64 bits)."""
    cdef uint64_t result = 0
    cdef int bit
    for bit in range(64):
        if <int64_t>(2 * votes.bits[bit] - votes.total) >= 0:  # set minus clear
            result |= (<uint64_t>1) << bit
    return result


cdef class _Weigher:
    """A word's TF-IDF weight and its XXH3-64 hash (what SimHash hashes it to): the IDF of ``chinese_table()``
    for a word whose first character falls in one of ``ranges`` (pairs of first and last code points), of
    ``words_table()`` for the others.  A table is asked for when a word first needs it (jieba's loads with
    the first Chinese word)."""

    cdef vector[long] bounds
    cdef object words_table, chinese_table
    cdef IdfTable words, chinese

    def __cinit__(self, tuple ranges, words_table, chinese_table):
        for low, high in ranges:
            self.bounds.push_back(low)
            self.bounds.push_back(high)
        self.words_table, self.chinese_table = words_table, chinese_table

    cdef double weight(self, str word, object count, uint64_t* hash_) except? -1:
        cdef Py_ssize_t length
        cdef const char* data = PyUnicode_AsUTF8AndSize(word, &length)
        hash_[0] = XXH3_64bits(data, length)
        if _starts_in(word, self.bounds):
            if self.chinese is None:
                self.chinese = self.chinese_table()
            return count * self.chinese.idf(hash_[0])
        if self.words is None:
            self.words = self.words_table()
        return count * self.words.idf(hash_[0])


def tf_idf(dict counts, tuple ranges, words_table, chinese_table):
    """Word -> count x IDF (``_Weigher``)."""
    cdef dict weights = {}
    cdef _Weigher weigher = _Weigher(ranges, words_table, chinese_table)
    cdef uint64_t hash_
    for word, count in counts.items():
        weights[word] = weigher.weight(word, count, &hash_)
    return weights


def tf_idf_simhash(dict counts, tuple ranges, words_table, chinese_table, double scale):
    """``simhash_bits`` of ``tf_idf``'s weights, each word hashed once and no mapping of weights made: the same
    bits as ``simhash.simhash(tf_idf(counts, ...))`` (the sums are of integers, in any order); 0xFFFF... for no
    word, as ``simhash`` gives."""
    cdef _Weigher weigher = _Weigher(ranges, words_table, chinese_table)
    cdef Votes votes
    cdef uint64_t hash_
    cdef double weight
    _votes_clear(&votes)
    for word, count in counts.items():
        weight = weigher.weight(word, count, &hash_)
        _vote(&votes, hash_, <uint64_t><int64_t>nearbyint(weight * scale))
    return _votes_result(&votes) if counts else 0xFFFFFFFFFFFFFFFF


cdef inline bint _starts_in(str word, vector[long]& bounds):
    if not word:
        return False
    cdef long code = <long>(<Py_UCS4>word[0])
    cdef size_t r
    for r in range(0, bounds.size(), 2):
        if bounds[r] <= code <= bounds[r + 1]:
            return True
    return False


cdef class IdfTable:
    """IDF by word, held as the words' sorted XXH3-64 hashes beside their IDF: 16 bytes a word, where a
    dict of strings takes ~190 (a worker process holds both tables).  Words not in it get ``default``.

    A lookup starts where the hash lies: the hashes are spread evenly, so their top bits index the run
    of hashes that share them (``_starts``, ~8 hashes a run).  A binary search over the whole table
    touched ~18 cache lines a word, each a miss on a core that idled between two pages (a polite
    crawl's); the run is one or two.

    Stored as bytes (``to_bytes``; little-endian): the number of words and ``default``, then the
    hashes, then the IDF values."""

    cdef readonly array.array hashes  # uint64, sorted
    cdef readonly array.array values  # float64, the IDF of the word with the hash beside
    cdef readonly double default
    cdef const uint64_t[::1] _hashes  # the same, read in the compiled loop
    cdef const double[::1] _values
    cdef vector[uint32_t] _starts  # the run of hashes whose top bits are r: _hashes[_starts[r]:_starts[r + 1]]
    cdef int _shift  # a hash shifted right by this many bits is its run's number

    def __init__(self, array.array hashes, array.array values, double default):
        if hashes.typecode != "Q" or values.typecode != "d" or len(hashes) != len(values):
            raise ValueError("an IDF table is uint64 hashes beside as many float64 values")
        if len(hashes) >= 1 << 32:
            raise ValueError("an IDF table holds fewer than 2**32 words")
        self.hashes, self.values, self.default = hashes, values, default
        self._hashes, self._values = hashes, values
        self._index()

    cdef void _index(self):
        """Where each run starts: as many runs as make ~8 hashes a run (a power of two, 2 at least)."""
        cdef Py_ssize_t count = self._hashes.shape[0], n = 0
        cdef int bits = 1
        while bits < 32 and (count >> bits) > 8:
            bits += 1
        self._shift = 64 - bits
        cdef size_t runs = (<size_t>1) << bits, run
        self._starts.resize(runs + 1)
        for run in range(runs + 1):
            while n < count and (self._hashes[n] >> self._shift) < run:
                n += 1
            self._starts[run] = <uint32_t>n

    @classmethod
    def of(cls, dict table, double default):
        """The table of ``table`` (word -> IDF)."""
        words = list(table)
        hashes = xxh3_hashes(words)
        order = sorted(range(len(words)), key=hashes.__getitem__)
        sorted_hashes = _array("Q", [hashes[n] for n in order])
        if any(sorted_hashes[n] == sorted_hashes[n + 1] for n in range(len(order) - 1)):
            raise ValueError("two words of the IDF table share a hash")
        return cls(sorted_hashes, _array("d", [table[words[n]] for n in order]), default)

    @classmethod
    def from_bytes(cls, bytes data):
        count = int.from_bytes(data[:8], "little")
        (default,) = _array("d", data[8:16]) if sys.byteorder == "little" else _swapped("d", data[8:16])
        hashes = _array("Q", data[16 : 16 + 8 * count])
        values = _array("d", data[16 + 8 * count : 16 + 16 * count])
        if sys.byteorder != "little":
            hashes.byteswap()
            values.byteswap()
        return cls(hashes, values, default)

    def to_bytes(self):
        parts = [_array("Q", [len(self.hashes)]), _array("d", [self.default]), self.hashes, self.values]
        if sys.byteorder != "little":
            parts = [_array(part.typecode, part) for part in parts]
            for part in parts:
                part.byteswap()
        return b"".join(part.tobytes() for part in parts)

    def lookup(self, words):
        """The IDF of each word (a list of strings)."""
        hashes = xxh3_hashes(list(words))
        return [self.idf(hash_) for hash_ in hashes]

    cdef double idf(self, uint64_t hash_) noexcept:
        cdef size_t run = hash_ >> self._shift
        cdef Py_ssize_t n
        for n in range(self._starts[run], self._starts[run + 1]):
            if self._hashes[n] >= hash_:
                return self._values[n] if self._hashes[n] == hash_ else self.default
        return self.default


def _swapped(str typecode, bytes data):
    values = _array(typecode, data)
    values.byteswap()
    return values


def xxh3_hashes(list texts):
    """XXH3-64 of each text's UTF-8 bytes, as an ``array("Q")`` (``xxhash.xxh3_64_intdigest``)."""
    hashes = array.clone(_UINT64, len(texts), False)
    cdef uint64_t[::1] out = hashes
    cdef Py_ssize_t n, length
    cdef const char* data
    for n in range(len(texts)):
        data = PyUnicode_AsUTF8AndSize(texts[n], &length)
        out[n] = XXH3_64bits(data, length)
    return hashes


def shingle_hashes(list blocks, Py_ssize_t size):
    """XXH3-64 of every shingle of the blocks (lists of tokens): each run of ``size`` consecutive
    tokens within a block, joined by a space; a shorter block is one shingle (an empty one: ""), as an
    ``array("Q")``."""
    cdef Py_ssize_t total = 0, start, n, length
    cdef list block
    for block in blocks:
        total += max(1, len(block) - size + 1)
    hashes = array.clone(_UINT64, total, False)
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


cdef inline bint _unspaced(Py_UCS4 code) noexcept nogil:
    """Is ``code`` a character of a script written without spaces, each character a token of the surface
    (Han and its extensions, kana, Thai, Lao, Khmer, Myanmar)?"""
    return ((0x4E00 <= code <= 0x9FFF) or (0x3400 <= code <= 0x4DBF) or (0xF900 <= code <= 0xFAFF)
            or (0x20000 <= code <= 0x2EBEF) or (0x3040 <= code <= 0x30FF) or (0x0E00 <= code <= 0x0EFF)
            or (0x1780 <= code <= 0x17FF) or (0x1000 <= code <= 0x109F))


cdef inline uint64_t _mixed(uint64_t z) noexcept nogil:
    """SplitMix64's finalizer (Steele, Lea and Flood 2014): a bijection of 64-bit integers that spreads every
    input bit over the output, computed the same on every machine."""
    z = (z ^ (z >> 30)) * <uint64_t>0xBF58476D1CE4E5B9
    z = (z ^ (z >> 27)) * <uint64_t>0x94D049BB133111EB
    return z ^ (z >> 31)


cdef inline bint _invisible(Py_UCS4 code) noexcept nogil:
    """A character that shows nothing inside a word (``content._INVISIBLE``): soft hyphen, zero-width space and
    joiners, word joiner, BOM."""
    return code == 0x00AD or 0x200B <= code <= 0x200D or code == 0x2060 or code == 0xFEFF


def surface_shingle_hashes(list texts, Py_ssize_t size):
    """The hashes of every run of ``size`` consecutive surface tokens of ``texts`` (a page's visible texts, in
    order, read as one text with a space between two): the runs of letters and digits (ASCII letters lowered;
    characters that show nothing skipped), but each character of a script written without spaces alone (no
    segmentation).  A token's hash is FNV-1a over its code points, mixed (``_mixed``); a shingle's mixes its
    tokens' in order: arithmetic only, the same on every machine.  A text of fewer tokens is one shingle, none
    is none.  One pass, no Python string a token: the whole visible text of a page is read here (ASCII without
    a call into Unicode's tables: most of a page's characters)."""
    cdef int kind
    cdef void* data
    cdef Py_ssize_t n, at, count, length
    cdef Py_UCS4 code
    cdef uint64_t token = 0, shingle
    cdef bint inside = False, alone, word
    cdef vector[uint64_t] tokens
    cdef str text
    for text in texts:
        kind, data, length = PyUnicode_KIND(text), PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text)
        for n in range(length + 1):  # one past the end: the space between two texts
            code = PyUnicode_READ(kind, data, n) if n < length else 0x20
            if code < 0x80:
                if 0x41 <= code <= 0x5A:
                    code = <Py_UCS4>(<uint32_t>code + 0x20)
                alone = False
                word = 0x61 <= code <= 0x7A or 0x30 <= code <= 0x39
            elif _invisible(code):
                continue
            else:
                alone = _unspaced(code)
                word = not alone and Py_UNICODE_ISALNUM(code)
            if word:
                if not inside:
                    token = <uint64_t>0xCBF29CE484222325
                    inside = True
                token = (token ^ <uint64_t>code) * <uint64_t>0x100000001B3
                continue
            if inside:
                tokens.push_back(_mixed(token))
                inside = False
            if alone:
                tokens.push_back(_mixed((<uint64_t>0xCBF29CE484222325 ^ <uint64_t>code) * <uint64_t>0x100000001B3))
    count = 0 if tokens.empty() else max(1, <Py_ssize_t>tokens.size() - size + 1)
    hashes = array.clone(_UINT64, count, False)
    cdef uint64_t[::1] out = hashes
    for n in range(count):
        shingle = 0
        at = 0
        while at < size and n + at < <Py_ssize_t>tokens.size():
            shingle = _mixed(shingle ^ tokens[n + at])
            at += 1
        out[n] = shingle
    return hashes


def block_languages(list blocks, dict words, list ranges, int languages, int han, int kana, Py_ssize_t min_tokens):
    """For each block (a list of tokens): the number of the language it is written in, or -1.  ``ranges``:
    ``(low, high, number)`` of the scripts that name a language (a token is in the script of its first
    character); a block at least half of whose tokens are in one script is in it (Han with any kana: the
    kana's, ``kana``).  Else ``words`` (function word -> number): the language with the most, at least two and
    twice any other's.  ``languages``: how many numbers there are.  The rules of ``languages.block_language``,
    counted here: they run on every block of every page's own text."""
    cdef vector[Py_ssize_t] votes
    cdef list found = []
    cdef list block
    cdef Py_ssize_t n, best, second, count
    cdef Py_UCS4 first
    cdef object number
    cdef int low, high, script
    cdef vector[int] lows, highs, numbers
    cdef vector[bint] is_script
    is_script.resize(languages)
    for low, high, script in ranges:
        lows.push_back(low)
        highs.push_back(high)
        numbers.push_back(script)
        is_script[script] = True
    votes.resize(languages)
    for block in blocks:
        if len(block) < min_tokens:
            found.append(-1)
            continue
        for n in range(languages):
            votes[n] = 0
        for token in block:
            first = (<str>token)[0]
            if first >= 0x370:
                for n in range(<Py_ssize_t>lows.size()):
                    if lows[n] <= <int>first <= highs[n]:
                        votes[numbers[n]] += 1
                        break
            number = words.get(token)
            if number is not None:
                votes[<int>number] += 1
        best = -1
        for n in range(languages):  # scripts first
            if is_script[n] and 2 * votes[n] >= len(block) and (best < 0 or votes[n] > votes[best]):
                best = n
        if best >= 0:
            found.append(kana if best == han and votes[kana] else best)
            continue
        best, second = -1, 0
        for n in range(languages):
            if is_script[n]:
                continue
            count = votes[n]
            if best < 0 or count > votes[best]:
                if best >= 0:
                    second = max(second, votes[best])
                best = n
            else:
                second = max(second, count)
        found.append(best if best >= 0 and votes[best] >= 2 and votes[best] >= 2 * second else -1)
    return found


def distinct(const uint64_t[::1] hashes):
    """How many distinct values ``hashes`` holds."""
    cdef vector[uint64_t] values = vector[uint64_t](hashes.shape[0])
    cdef Py_ssize_t n
    for n in range(hashes.shape[0]):
        values[n] = hashes[n]
    sort(values.begin(), values.end())
    return unique(values.begin(), values.end()) - values.begin()


def sketch_bits(const uint64_t[::1] hashes, const int64_t[::1] probes, Py_ssize_t bins, int value_bits):
    """The bits of a sketch (see :mod:`pipelines.sketch`) of ``bins`` bins: per bin (the hash's top
    bits), the lowest bit of the least value (its low ``value_bits`` bits); an empty bin takes the
    bit of the first full one among its probes (``probes`` holds each bin's in turn, as many for
    every bin), else of the first full bin from its first probe on.  None when every bin is empty."""
    cdef Py_ssize_t per_bin = probes.shape[0] // bins, b, p, n
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
            for p in range(b * per_bin, (b + 1) * per_bin):
                if minima[probes[p]] != empty:
                    source = probes[p]
                    break
            if source < 0:  # the first full bin from the first probe on, around the end
                source = probes[b * per_bin]
                while minima[source] == empty:
                    source = (source + 1) % bins
        if minima[source] & 1:
            out[b // 8] |= 1 << (b % 8)
    return bytes(packed)


def simhash_bits(const uint64_t[::1] hashes, weights, double scale):
    """Charikar's SimHash (see :mod:`pipelines.simhash`): bit *i* is 1 where the weights of the
    features whose hash has bit *i* set outweigh, or equal, those whose hash has it clear.  Each
    weight (an iterable of floats, beside the hashes) is rounded to a whole multiple of 1/``scale``
    (to even on a tie, as ``numpy.rint``); the sums are of integers, wrapping at 64 bits."""
    cdef vector[int64_t] quantised
    for value in weights:
        quantised.push_back(<int64_t>nearbyint(<double>value * scale))
    if <Py_ssize_t>quantised.size() != hashes.shape[0]:
        raise ValueError("as many weights as hashes")
    cdef Votes votes
    cdef Py_ssize_t n
    _votes_clear(&votes)
    for n in range(hashes.shape[0]):
        _vote(&votes, hashes[n], <uint64_t>quantised[n])
    return _votes_result(&votes)


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


def is_utf8(const unsigned char[::1] data):
    """Are ``data`` well-formed UTF-8 (what ``bytes.decode("utf-8")`` accepts: no overlong form, no surrogate,
    nothing above U+10FFFF, no sequence cut short)?  Checked without making the text: a page's bytes are
    parsed as they are, and decoding them only to know cost ~2 % of the fingerprint.  ASCII is read eight
    bytes at a time."""
    cdef Py_ssize_t n = 0, length = data.shape[0]
    cdef unsigned char first, second
    cdef uint64_t word
    while n < length:
        if n + 8 <= length:
            memcpy(&word, &data[n], 8)
            if not (word & <uint64_t>0x8080808080808080):
                n += 8
                continue
        first = data[n]
        if first < 0x80:
            n += 1
            continue
        if first < 0xC2 or first > 0xF4:  # a continuation byte, an overlong lead, or beyond U+10FFFF
            return False
        if n + 1 >= length:
            return False
        second = data[n + 1]
        if first < 0xE0:  # two bytes
            if second & 0xC0 != 0x80:
                return False
            n += 2
            continue
        if first == 0xE0 and second < 0xA0 or first == 0xED and second > 0x9F:  # overlong, a surrogate
            return False
        if first == 0xF0 and second < 0x90 or first == 0xF4 and second > 0x8F:  # overlong, beyond U+10FFFF
            return False
        if second & 0xC0 != 0x80:
            return False
        if first < 0xF0:  # three bytes
            if n + 2 >= length or data[n + 2] & 0xC0 != 0x80:
                return False
            n += 3
            continue
        if n + 3 >= length or data[n + 2] & 0xC0 != 0x80 or data[n + 3] & 0xC0 != 0x80:  # four bytes
            return False
        n += 4
    return True


def has_visible_ascii(const unsigned char[::1] data):
    """Does ``data`` hold an ASCII character that is not whitespace (``!`` to ``~``)?  Then its text is not
    blank, whatever its encoding: an HTML page answers at its first byte."""
    cdef Py_ssize_t n
    for n in range(data.shape[0]):
        if 0x21 <= data[n] <= 0x7E:
            return True
    return False


def utf8_length(str text):
    """How many bytes ``text`` takes in UTF-8 (a lone surrogate: 3, as ``surrogatepass`` writes it),
    counted without encoding."""
    cdef Py_ssize_t n, length = PyUnicode_GET_LENGTH(text), total = 0
    cdef int kind = PyUnicode_KIND(text)
    cdef void* data = PyUnicode_DATA(text)
    cdef Py_UCS4 code
    for n in range(length):
        code = PyUnicode_READ(kind, data, n)
        total += 1 if code < 0x80 else 2 if code < 0x800 else 3 if code < 0x10000 else 4
    return total
