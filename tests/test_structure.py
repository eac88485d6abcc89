"""Structure features: depth decay, summing, deep trees, real templates; the walk's two event sources."""

from __future__ import annotations

import lxml.etree
import pytest

from scrapy_simhash_dedup import Fingerprinter, hamming
from scrapy_simhash_dedup.fingerprint import treewalk
from scrapy_simhash_dedup.fingerprint.document import load, prepared, tree
from tools.fingerprint_reference import shared_pages

from .pages import NESTING_TAGS, deeply_nested, real_page, shared_data, structure_features


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
    fp = {
        n: Fingerprinter().fingerprint(real_page(n)).structure
        for n in (
            "newspaper-syracuse.com1",
            "newspaper-syracuse.com2",
            "gne-sina-1",
            "newspaper-theatlanticcities.com1",
        )
    }
    assert hamming(fp["newspaper-syracuse.com1"], fp["newspaper-syracuse.com2"]) <= 3
    assert hamming(fp["newspaper-syracuse.com1"], fp["gne-sina-1"]) > 3
    assert hamming(fp["newspaper-syracuse.com1"], fp["newspaper-theatlanticcities.com1"]) > 3


def test_too_few_elements_gives_no_structure_fingerprint() -> None:
    assert Fingerprinter().fingerprint("<html><body><p>hi</p></body></html>").structure is None


def _reading(found: tuple | None) -> tuple | None:
    """Everything a walk gives, as plain values (blocks and nodes field by field)."""
    if found is None:
        return None
    title, blocks, nodes, structure, elements, text_chars, link_chars, canonical = found
    block_fields = ("text", "link_text", "prose", "own", "owner", "tag_furniture", "named_furniture", "ad", "leaf")
    node_fields = (
        "tag",
        "class_",
        "id_",
        "parent",
        "tag_furniture",
        "named_furniture",
        "ad",
        "chars",
        "link_chars",
        "end",
        "leaf",
    )
    return (
        title,
        [tuple(getattr(b, f) for f in block_fields) for b in blocks],
        [tuple(getattr(n, f) for f in node_fields) for n in nodes],
        structure,
        elements,
        text_chars,
        link_chars,
        canonical,
    )


def _both_readings(html: bytes | str, max_elements: int = 200_000) -> tuple[tuple | None, tuple | None]:
    """A page read from the parser's events and from the tree lxml builds of the same bytes."""
    utf8 = prepared(html, 1 << 30).utf8
    root = tree(utf8)
    from_tree = _reading(treewalk.read(root, 0.45, max_elements)) if root is not None else None
    return _reading(treewalk.parse(utf8, 0.45, max_elements)), from_tree


def test_the_parser_s_events_read_every_shared_page_as_its_tree_reads() -> None:
    """The fingerprint walks libxml2's events without building lxml's tree: the same title, blocks,
    elements, structure and canonical link as the walk of the tree, on every shared page."""
    assert treewalk.PARSER_LINKED
    pages = differ = 0
    for _, html in shared_pages(shared_data()):
        if prepared(html, 1 << 30).utf8 is None:
            continue
        pages += 1
        from_events, from_tree = _both_readings(html)
        if from_events != from_tree:
            differ += 1
    assert pages > 5_000
    assert differ == 0


@pytest.mark.parametrize(
    "html",
    [
        "<html><body><p>a</p></body></html><p>after the root</p><div>more</div>",  # a second root, never read
        "<!DOCTYPE html><html><head><title>t</title></head><body>x</body></html><p>b</p>",
        "just text, no element",  # implied html, body, p
        "<title>one</title><title>two</title><p>" + "word " * 40,  # the first title only
        "<p>a<!-- a comment -->b <?pi x?>c</p>",  # removed by the parser: one run of text
        "<html><head><base href='/b/'><link rel='canonical' href='c'></head><body><p>x</p></body></html>",
        "<div hidden>unseen<p>inside</p></div>tail <a href=x>link <b>bold</b></a> &amp; &#x41; &nosuch; end",
        "<p>" + "word " * 2_000 + "a NUL\x00 after the first 8 KB</p>",  # (before them: not HTML)
        "<table><tr><td>cell<td>cell</table><ul><li>one<li>two</ul><p>open <p>second",
        "<script>if (a < b) { document.write('<p>x</p>') }</script><style>p{}</style><textarea><b>raw</b></textarea>",
        "<svg><title>not the page's</title></svg><select><option>o</option></select><br><img alt=x>after",
        "<div " + " ".join(f"a{n}='{n}'" for n in range(500)) + " class='sidebar'><p>names</p></div>",
    ],
)
def test_the_parser_s_events_and_the_tree_agree_on_odd_markup(html: str) -> None:
    from_events, from_tree = _both_readings(html)
    assert from_events == from_tree


def test_the_parser_stops_where_the_walk_stops_at_its_element_limit() -> None:
    from_events, from_tree = _both_readings(deeply_nested(5_000), max_elements=1_000)
    assert from_events == from_tree
    assert from_events[4] == 1_001  # stopped after the limit: the page is too big to read


def test_without_libxml2_s_parser_in_lxml_a_page_is_read_through_the_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    html = real_page("newspaper-syracuse.com1")
    linked = Fingerprinter(keep_text=True).fingerprint(html)
    monkeypatch.setattr(treewalk, "PARSER_LINKED", False)
    assert Fingerprinter(keep_text=True).fingerprint(html) == linked
    assert Fingerprinter().fingerprint("<!-- nothing but a comment -->").problem == "empty_html"
