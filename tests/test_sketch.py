"""The shingle sketch: an estimate of Jaccard similarity, 66 bytes; a small text's weighted bits, 64 more."""

from __future__ import annotations

import random

import pytest

from pipelines import Fingerprinter
from pipelines.simhash import feature_hashes
from pipelines.sketch import (SKETCH_BYTES, SMALL_SKETCH_BYTES, SMALL_TEXT_SHINGLES, fixed_width, from_fixed_width,
                              shingle_sketch, similarity, sketch_size, weighted_bits, weighted_similarity)

from .pages import author_stubs, real_page


def shingle_set(n: int, offset: int = 0) -> list[str]:
    return [f"shingle {i}" for i in range(offset, offset + n)]


def test_identical_sets_are_similar_1() -> None:
    assert similarity(shingle_sketch(shingle_set(300)), shingle_sketch(shingle_set(300))) == 1.0


def test_size_and_order_independence() -> None:
    words = shingle_set(500)
    shuffled = words[:]
    random.Random(1).shuffle(shuffled)
    assert len(shingle_sketch(words)) == SKETCH_BYTES
    assert shingle_sketch(words) == shingle_sketch(shuffled + words[:10])


@pytest.mark.parametrize("overlap", [0.0, 0.3, 0.6, 0.9])
def test_estimate_is_near_the_true_jaccard(overlap: float) -> None:
    n = 2000
    shared = int(n * overlap)
    a = shingle_set(n)
    b = shingle_set(n, offset=n - shared)
    jaccard = shared / (2 * n - shared)
    assert similarity(shingle_sketch(a), shingle_sketch(b)) == pytest.approx(jaccard, abs=0.12)


def test_small_sets_still_give_a_sketch() -> None:
    a, b = shingle_sketch(shingle_set(5)), shingle_sketch(shingle_set(5, offset=100))
    assert similarity(a, a) == 1.0
    assert similarity(a, b) < 0.5


def test_weighted_bits_estimate_the_weighted_jaccard_similarity() -> None:
    """Sum of minima over sum of maxima of the weights, within the sketch's error (about ±0.05 at 512 bits)."""
    rng = random.Random(2)
    a = {f"word{n}": rng.uniform(0.5, 4.0) for n in range(120)}
    b = {word: weight * rng.choice((1.0, 1.0, 0.5)) for word, weight in list(a.items())[:100]}
    b |= {f"other{n}": 1.0 for n in range(10)}
    words = a.keys() | b.keys()
    truth = sum(min(a.get(w, 0), b.get(w, 0)) for w in words) / sum(max(a.get(w, 0), b.get(w, 0)) for w in words)
    bits = lambda weights: weighted_bits(feature_hashes(weights), weights.values())  # noqa: E731
    assert abs(similarity(bits(a), bits(b)) - truth) < 0.1
    assert bits(a) == bits(dict(reversed(a.items())))  # the order of the words does not matter


def test_only_small_texts_carry_weighted_bits_and_a_fixed_width_store_gives_back_what_it_was_given() -> None:
    small = Fingerprinter().fingerprint(author_stubs()["Dr. Seuss"]).sketch
    large = Fingerprinter().fingerprint(real_page("newspaper-theatlanticcities.com1")).sketch
    assert (len(small), len(large)) == (SMALL_SKETCH_BYTES, SKETCH_BYTES)
    assert sketch_size(small) < SMALL_TEXT_SHINGLES <= sketch_size(large)
    assert weighted_similarity(small, small) == 1.0 and weighted_similarity(small, large) is None
    for sketch in (small, large, None):
        assert len(fixed_width(sketch)) == SMALL_SKETCH_BYTES and from_fixed_width(fixed_width(sketch)) == sketch
