"""The sketch: estimates of Jaccard similarity (the own text's, the visible text's), the page's name and its link
share, 141 bytes."""

from __future__ import annotations

import random

import pytest

from scrapy_simhash_dedup import Fingerprinter
from scrapy_simhash_dedup.fingerprint.content import PageText
from scrapy_simhash_dedup.fingerprint.document import load
from scrapy_simhash_dedup.fingerprint.sketch import (
    SKETCH_BITS,
    SKETCH_BYTES,
    fixed_width,
    from_fixed_width,
    link_share,
    own_share,
    same_name,
    similarity,
    sketch_size,
    visible_similarity,
)

from .pages import real_page, shingle_sketch


def shingle_set(n: int, offset: int = 0) -> list[str]:
    return [f"shingle {i}" for i in range(offset, offset + n)]


def test_identical_sets_are_similar_1() -> None:
    assert similarity(shingle_sketch(shingle_set(300)), shingle_sketch(shingle_set(300))) == 1.0


def test_size_and_order_independence() -> None:
    words = shingle_set(500)
    shuffled = words[:]
    random.Random(1).shuffle(shuffled)
    assert len(shingle_sketch(words)) == SKETCH_BITS // 8 + 2  # the bits, then the set's size
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


def test_a_page_s_sketch_holds_its_own_text_its_name_its_visible_text_and_its_link_share() -> None:
    """Each part as the page gives it: the own text's shingles a part of the visible text's, the name from the
    title and the first heading, the share of characters in links; a fixed-width store gives back what it was
    given."""
    html = real_page("newspaper-theatlanticcities.com1")
    sketch = Fingerprinter().fingerprint(html).sketch
    text = PageText.read(load(html, 1 << 30).root)
    assert len(sketch) == SKETCH_BYTES
    assert 0 < own_share(sketch) < 1 and sketch_size(sketch) > 100
    assert link_share(sketch) == pytest.approx(text.link_share(), abs=1 / 255) and 0 < link_share(sketch) < 1
    assert text.name().splitlines()[0] == "tourism to antarctica could be making penguins sick"  # not the site's
    retitled = Fingerprinter().fingerprint(html.replace(b"<title>", b"<title>Another ", 1)).sketch
    assert not same_name(sketch, retitled) and similarity(sketch, retitled) > 0.9
    elsewhere = Fingerprinter().fingerprint(html.replace(b"- CityLab</title>", b"| The Daily Planet</title>", 1)).sketch
    assert same_name(sketch, elsewhere), "the same article under another site's name is named as it was"
    no_name = (
        Fingerprinter()
        .fingerprint(b"<html><body><p>" + b" ".join(b"word%d" % n for n in range(80)) + b"</p></body></html>")
        .sketch
    )
    assert same_name(sketch, no_name)  # a page without title or heading says nothing against it
    other = Fingerprinter().fingerprint(real_page("newspaper-theatlanticcities.com2")).sketch
    assert visible_similarity(sketch, other) > similarity(sketch, other)  # the site's furniture is shared
    for stored in (sketch, None):
        assert len(fixed_width(stored)) == SKETCH_BYTES and from_fixed_width(fixed_width(stored)) == stored
