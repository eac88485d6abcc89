"""Structure features: depth decay, summing, deep trees, real templates."""

from __future__ import annotations

import pytest

from pipelines import Fingerprinter, hamming
from pipelines.document import load
from pipelines.structure import structure_features

import lxml.etree

from .pages import NESTING_TAGS, deeply_nested, real_page


def features(html: str, decay: float = 0.45) -> dict[str, float]:
    return structure_features(load(html, 10**8).root, decay)


def test_each_level_weighs_decay_times_its_parent() -> None:
    got = features("<html><body><div><p>x</p></div></body></html>")
    assert got["html"] == 1.0
    assert got["body"] == pytest.approx(0.45)
    assert got["div"] == pytest.approx(0.45**2)
    assert got["p"] == pytest.approx(0.45**3)
    assert got["div>p"] == pytest.approx(0.45**3)


def test_occurrences_are_summed() -> None:
    got = features("<html><body><ul><li>a</li><li>b</li><li>c</li></ul></body></html>")
    assert got["li"] == pytest.approx(3 * 0.45**3)
    assert got["ul>li"] == pytest.approx(3 * 0.45**3)


def test_decay_is_a_parameter() -> None:
    assert features("<html><body><p>x</p></body></html>", decay=0.6)["p"] == pytest.approx(0.36)


def test_100000_nested_elements_parse_and_fingerprint() -> None:
    fingerprint = Fingerprinter().fingerprint(deeply_nested(100_000))
    assert fingerprint.problem is None
    assert fingerprint.structure is not None


def test_the_walk_is_iterative_at_any_depth() -> None:
    """libxml2 stops nesting at 2048, so build a deeper tree by hand: 20x Python's recursion limit.

    (Building it is quadratic in lxml, hence not 100,000 here.)
    """
    depth = 20_000
    root = element = lxml.etree.Element("html")
    for level in range(depth):
        element = lxml.etree.SubElement(element, NESTING_TAGS[level % len(NESTING_TAGS)])
    got = structure_features(root)
    assert got["html"] == 1.0
    assert sum(got[tag] for tag in NESTING_TAGS) == pytest.approx(sum(0.45**d for d in range(1, depth + 1)))


def test_same_template_is_near_and_other_sites_are_far() -> None:
    fp = {n: Fingerprinter().fingerprint(real_page(n)).structure for n in (
        "newspaper-syracuse.com1", "newspaper-syracuse.com2", "gne-sina-1", "newspaper-theatlanticcities.com1",
    )}
    assert hamming(fp["newspaper-syracuse.com1"], fp["newspaper-syracuse.com2"]) <= 3
    assert hamming(fp["newspaper-syracuse.com1"], fp["gne-sina-1"]) > 3
    assert hamming(fp["newspaper-syracuse.com1"], fp["newspaper-theatlanticcities.com1"]) > 3


def test_too_few_elements_gives_no_structure_fingerprint() -> None:
    assert Fingerprinter().fingerprint("<html><body><p>hi</p></body></html>").structure is None
