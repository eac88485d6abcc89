"""The shingle sketch: an estimate of Jaccard similarity, 64 bytes."""

from __future__ import annotations

import random

import pytest

from pipelines.sketch import SKETCH_BYTES, shingle_sketch, similarity


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
