"""The pipeline through a real Crawler: decisions, modes, item types, settings, bad input."""

from __future__ import annotations

import dataclasses
import logging
import random
import re
from collections.abc import Callable, Coroutine
from typing import Any

import attrs
import pytest
import scrapy
from itemadapter import ItemAdapter
from scrapy.exceptions import NotConfigured
from scrapy.utils.test import get_crawler
from twisted.internet.defer import Deferred, succeed
from twisted.internet.task import Clock

from bench.speed.hostile import PAGES as HOSTILE
from scrapy_simhash_dedup import Fingerprinter, SimhashDedupPipeline, SimhashDuplicate, hamming
from scrapy_simhash_dedup.crawl.settings import StartRefused
from scrapy_simhash_dedup.fingerprint.content import PageText
from scrapy_simhash_dedup.fingerprint.document import decode, load
from scrapy_simhash_dedup.fingerprint.fingerprinter import Fingerprint
from scrapy_simhash_dedup.fingerprint.sketch import similarity, sketch_size
from scrapy_simhash_dedup.fingerprint.textloops import has_visible_ascii, is_utf8, utf8_length
from scrapy_simhash_dedup.matching.policy import SMALL_TEXT_SHINGLES, THIN_NAMED_SIMILARITY, Policy
from scrapy_simhash_dedup.workers.pool import RecentPages

from .pages import (
    CHINESE_ARTICLE,
    PNG_BYTES,
    REWORDED_SEUSS,
    author_stubs,
    deeply_nested,
    own_blocks,
    real_page,
    with_date_and_counters,
)

ARTICLE = real_page("newspaper-syracuse.com1")
OTHER_ARTICLE = real_page("newspaper-syracuse.com2")
#: An article whose own text is evidence enough on its own (not a short text on a page of links, whose copy in
#: another layout is kept: ``policy.thin``).
LONG_ARTICLE = real_page("newspaper-theatlanticcities.com1")


def make_pipeline(**settings: Any) -> SimhashDedupPipeline:
    """A pipeline that fingerprints in the calling thread, so that ``run`` can step it (crawls use workers),
    with the memory store (the stores have tests of their own)."""
    settings = {"SIMHASH_DEDUP_WORKERS": 0, "SIMHASH_DEDUP_BACKEND": "memory", **settings}
    return SimhashDedupPipeline.from_crawler(get_crawler(settings_dict=settings))


def run(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Run ``process_item`` to its end, asserting it never awaits.

    No await between the lookup and the insert is what keeps two
    near-duplicates from one response from both being kept.
    """
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    raise AssertionError("process_item awaited: lookup and insert are not atomic")


def process(pipeline: SimhashDedupPipeline, item: Any) -> Any:
    """One item of a page of its own: its HTML a fresh object, as each response's ``response.text`` is (the
    items of one page share theirs)."""
    adapter = ItemAdapter(item)
    for field in ("html", pipeline.settings.html_field):
        if isinstance(adapter.get(field), (str, bytes)):
            adapter[field] = fresh(adapter[field])
    return run(pipeline.process_item(item))


def fresh(html: str | bytes) -> str | bytes:
    """An equal object that is not ``html``."""
    return bytes(bytearray(html)) if isinstance(html, bytes) else "".join([html[:1], html[1:]])


def stat(pipeline: SimhashDedupPipeline, name: str) -> int | None:
    pipeline.filter.counts.hand_over()  # (a crawl hands them over every second and at the end)
    return pipeline.crawler.stats.get_value(f"simhash_dedup/{name}")


def test_exact_copy_is_dropped_naming_the_earlier_page() -> None:
    pipeline = make_pipeline()
    assert process(pipeline, {"url": "https://a.test/1", "html": ARTICLE})
    with pytest.raises(SimhashDuplicate) as dropped:
        process(pipeline, {"url": "https://a.test/copy", "html": ARTICLE})
    message = str(dropped.value)
    assert "https://a.test/1" in message and "https://a.test/copy" in message
    assert "content distance 0" in message and "similarity 1.00" in message
    assert "structure distance 0" in message
    assert dropped.value.match.reason == "content"  # the default mode
    assert dropped.value.log_level == "INFO"
    assert (stat(pipeline, "checked"), stat(pipeline, "items_kept"), stat(pipeline, "items_dropped")) == (2, 1, 1)
    assert stat(pipeline, "items_dropped/content") == 1


def test_dropped_item_loses_its_html_so_the_drop_log_line_stays_short() -> None:
    pipeline = make_pipeline()
    process(pipeline, {"url": "https://a.test/1", "html": ARTICLE})
    copy = {"url": "https://a.test/copy", "html": ARTICLE}
    with pytest.raises(SimhashDuplicate):
        process(pipeline, copy)
    assert "html" not in copy


def test_near_duplicate_is_dropped_and_other_article_kept() -> None:
    pipeline = make_pipeline()
    process(pipeline, {"url": "u1", "html": with_date_and_counters(ARTICLE, "May 1, 2020", 10, 1)})
    process(pipeline, {"url": "u2", "html": OTHER_ARTICLE})
    with pytest.raises(SimhashDuplicate):
        process(pipeline, {"url": "u3", "html": with_date_and_counters(ARTICLE, "June 9, 2021", 5321, 77)})
    assert stat(pipeline, "items_kept") == 2


def same_text_other_template(html: bytes) -> str:
    """The page's own text laid out in a table under its title and heading: same content (and name), other
    structure."""
    root = load(html, 10**8).root
    _, *blocks = own_blocks(root)
    heading = PageText.parse(html, 0.45, 10**6).name().split("\n")[1]
    rows = "".join(f"<tr><th>{n}</th><td><span>{' '.join(block)}</span></td></tr>" for n, block in enumerate(blocks))
    return (
        f"<html><head><meta charset='utf-8'><title>{root.findtext('.//title')}</title></head>"
        f"<body><h1>{heading}</h1><table>{rows}</table></body></html>"
    )


RELAID = same_text_other_template(LONG_ARTICLE)


def test_mode_both_needs_content_and_structure_of_the_same_page() -> None:
    pipeline = make_pipeline(SIMHASH_DEDUP_MODE="both", SIMHASH_DEDUP_STRUCTURE_DISTANCE=0)
    process(pipeline, {"url": "a", "html": ARTICLE})
    process(pipeline, {"url": "b", "html": OTHER_ARTICLE})  # same template, other text
    process(pipeline, {"url": "long", "html": LONG_ARTICLE})
    assert process(pipeline, {"url": "c", "html": RELAID})  # same text, other structure
    assert stat(pipeline, "items_kept") == 4


def test_mode_content_ignores_structure() -> None:
    pipeline = make_pipeline(SIMHASH_DEDUP_MODE="content", SIMHASH_DEDUP_STRUCTURE_DISTANCE=0)
    process(pipeline, {"url": "a", "html": LONG_ARTICLE})
    with pytest.raises(SimhashDuplicate) as dropped:
        process(pipeline, {"url": "c", "html": RELAID})
    assert dropped.value.match.reason == "content"
    assert stat(pipeline, "items_dropped/content") == 1


def test_mode_structure_drops_same_template() -> None:
    pipeline = make_pipeline(SIMHASH_DEDUP_MODE="structure")
    process(pipeline, {"url": "a", "html": ARTICLE})
    with pytest.raises(SimhashDuplicate) as dropped:
        process(pipeline, {"url": "b", "html": OTHER_ARTICLE})
    assert dropped.value.match.reason == "structure"


def test_mode_either_drops_on_content_or_structure() -> None:
    pipeline = make_pipeline(SIMHASH_DEDUP_MODE="either", SIMHASH_DEDUP_STRUCTURE_DISTANCE=0)
    process(pipeline, {"url": "a", "html": ARTICLE})
    process(pipeline, {"url": "long", "html": LONG_ARTICLE})
    with pytest.raises(SimhashDuplicate) as on_content:
        process(pipeline, {"url": "c", "html": RELAID})
    with pytest.raises(SimhashDuplicate) as on_structure:
        process(pipeline, {"url": "b", "html": OTHER_ARTICLE})
    assert (on_content.value.match.reason, on_structure.value.match.reason) == ("content", "structure")


def test_distance_setting_is_honoured() -> None:
    """Within the content distance at any similarity (the check off), and not one bit further: the article is
    too long to be compared further (``Policy.search_distance``: small texts only)."""
    article = real_page("newspaper-theatlanticcities.com1")
    added = b"<p>" + b" ".join(b"extra%d words" % i for i in range(100)) + b"</p>"
    edited = article.replace(b"<p>Isolation has left", added + b"<p>Isolation has left", 1)
    first, second = (Fingerprinter().fingerprint(html) for html in (article, edited))
    distance = hamming(first.content, second.content)
    assert distance > 0 and min(map(sketch_size, (first.sketch, second.sketch))) >= SMALL_TEXT_SHINGLES
    for allowed, dropped in ((distance - 1, False), (distance, True)):
        settings = {"SIMHASH_DEDUP_CONTENT_DISTANCE": allowed, "SIMHASH_DEDUP_MIN_SIMILARITY": -1}
        assert second_is_dropped(settings, article, edited) == dropped


def second_is_dropped(settings: dict[str, Any], first: bytes, second: bytes) -> bool:
    pipeline = make_pipeline(SIMHASH_DEDUP_MODE="content", **settings)
    process(pipeline, {"url": "a", "html": first})
    try:
        process(pipeline, {"url": "b", "html": second})
    except SimhashDuplicate:
        return True
    return False


def test_min_similarity_setting_checks_content_candidates() -> None:
    """Two pages within the content distance are only duplicates if their sketches agree on ``min_similarity``."""
    article = real_page("newspaper-theatlanticcities.com1")  # its own text is no thin evidence: compared alone
    added = b"<p>" + b" ".join(b"extra%d words" % i for i in range(100)) + b"</p>"
    edited = article.replace(b"<p>Isolation has left", added + b"<p>Isolation has left", 1)
    first, second = (Fingerprinter().fingerprint(html) for html in (article, edited))
    agreement = similarity(first.sketch, second.sketch)
    assert agreement < 1.0
    for required, dropped in ((agreement + 0.01, False), (agreement, True)):
        distance = hamming(first.content, second.content)
        policy = Policy(content_distance=64, min_similarity=required)
        assert policy.evidence(distance, first.sketch, second.sketch) == (agreement, required)
        settings = {"SIMHASH_DEDUP_CONTENT_DISTANCE": 64, "SIMHASH_DEDUP_MIN_SIMILARITY": required}
        assert second_is_dropped(settings, article, edited) == dropped


def test_a_short_text_reworded_is_its_copy_only_under_the_same_name() -> None:
    """One reworded sentence of this 65-shingle article leaves its shingles under ``min_similarity``: under the same
    name, with what the page shows still the same, it is the article reworded (a thin own text named the same needs
    ``THIN_NAMED_SIMILARITY``); under another title, a sibling page of the template whose one sentence differs, it
    is kept (a borderline keep)."""
    reworded = ARTICLE.replace(
        b"children at the Beauchamp Branch Library read Kwanzaa stories and make related crafts",
        b"at the Beauchamp Branch Library kids heard stories about Kwanzaa and made crafts",
    )
    assert reworded != ARTICLE
    first, second = (Fingerprinter().fingerprint(html) for html in (ARTICLE, reworded))
    assert THIN_NAMED_SIMILARITY <= similarity(first.sketch, second.sketch) < Policy().min_similarity
    sibling = re.sub(
        rb"<title>[^<]*</title>", b"<title>Kwanzaa crafts at the Beauchamp Branch Library</title>", reworded, count=1
    )
    assert sibling != reworded
    pipeline = make_pipeline()
    process(pipeline, {"url": "a", "html": ARTICLE})
    assert process(pipeline, {"url": "b", "html": sibling})
    assert (stat(pipeline, "pages_kept"), stat(pipeline, "borderline")) == (2, 1)
    with pytest.raises(SimhashDuplicate, match="near-duplicate of a"):
        process(pipeline, {"url": "c", "html": reworded})


def test_items_without_html_pass_through_counted() -> None:
    pipeline = make_pipeline()
    item = {"url": "https://a.test/no-html", "title": "x"}
    assert process(pipeline, item) is item
    assert process(pipeline, {"url": "y", "html": None})
    assert stat(pipeline, "no_html") == 2
    assert stat(pipeline, "checked") is None


class ScrapyItem(scrapy.Item):
    url = scrapy.Field()
    html = scrapy.Field()
    simhash_content = scrapy.Field()
    simhash_structure = scrapy.Field()


@dataclasses.dataclass
class DataclassItem:
    url: str
    html: str | bytes | None
    simhash_content: str | None = None
    simhash_structure: str | None = None


@attrs.define
class AttrsItem:
    url: str
    html: str | bytes | None
    simhash_content: str | None = None
    simhash_structure: str | None = None


@pytest.mark.parametrize(
    "item_type",
    [dict, ScrapyItem, lambda **kw: DataclassItem(**kw), lambda **kw: AttrsItem(**kw)],
    ids=["dict", "scrapy.Item", "dataclass", "attrs"],
)
def test_every_item_type(item_type: Any) -> None:
    pipeline = make_pipeline(SIMHASH_DEDUP_FINGERPRINT_FIELDS=True, SIMHASH_DEDUP_REMOVE_HTML=True)
    kept = process(pipeline, item_type(url="a", html=ARTICLE))
    fingerprint = Fingerprinter().fingerprint(ARTICLE)
    adapter = ItemAdapter(kept)
    assert adapter["simhash_content"] == f"{fingerprint.content:016x}"
    assert adapter["simhash_structure"] == f"{fingerprint.structure:016x}"
    assert adapter.get("html") is None
    with pytest.raises(SimhashDuplicate):
        process(pipeline, item_type(url="b", html=ARTICLE))


def test_fingerprint_fields_on_an_item_that_cannot_take_them_keep_the_item() -> None:
    class Narrow(scrapy.Item):
        url = scrapy.Field()
        html = scrapy.Field()

    @dataclasses.dataclass(frozen=True)
    class Frozen:
        url: str
        html: bytes
        simhash_content: str | None = None
        simhash_structure: str | None = None

    pipeline = make_pipeline(SIMHASH_DEDUP_FINGERPRINT_FIELDS=True)
    item = Narrow(url="a", html=ARTICLE)
    assert process(pipeline, item) is item
    frozen = Frozen("b", OTHER_ARTICLE)
    assert process_as_is(pipeline, frozen) is frozen  # its fields cannot be set: kept as it is, never lost
    assert stat(pipeline, "item_field_errors") == 2
    assert stat(pipeline, "items_kept") == 2


def test_custom_html_and_url_fields() -> None:
    pipeline = make_pipeline(SIMHASH_DEDUP_HTML_FIELD="body", SIMHASH_DEDUP_URL_FIELD="link")
    process(pipeline, {"link": "first", "body": ARTICLE})
    with pytest.raises(SimhashDuplicate, match="near-duplicate of first"):
        process(pipeline, {"link": "second", "body": ARTICLE})


def test_disabled_pipeline_is_not_configured() -> None:
    with pytest.raises(NotConfigured):
        make_pipeline(SIMHASH_DEDUP_ENABLED=False)


@pytest.mark.parametrize(
    "settings",
    [
        {"SIMHASH_DEDUP_MODE": "sometimes"},
        {"SIMHASH_DEDUP_CONTENT_DISTANCE": 65},
        {"SIMHASH_DEDUP_CONTENT_DISTANCE": "abc"},
        {"SIMHASH_DEDUP_STRUCTURE_DISTANCE": -1},
        {"SIMHASH_DEDUP_STRUCTURE_DECAY": 0},
        {"SIMHASH_DEDUP_MIN_SIMILARITY": 1.5},
        {"SIMHASH_DEDUP_MIN_SIMILARITY": "high"},
        {"SIMHASH_DEDUP_MIN_FEATURES": 0},
        {"SIMHASH_DEDUP_MAX_HTML_BYTES": -1},
        {"SIMHASH_DEDUP_MAX_HTML_BYTES": 2.5},
        {"SIMHASH_DEDUP_COMMIT_EVERY": 0},
        {"SIMHASH_DEDUP_WORKERS": -1},
        {"SIMHASH_DEDUP_WORKERS": True},
        {"SIMHASH_DEDUP_DROP_LOG_LEVEL": "LOUD"},
        {"SIMHASH_DEDUP_REMOVE_HTML": "maybe"},
        {"SIMHASH_DEDUP_PERSIST": "sometimes"},
        {"SIMHASH_DEDUP_HTML_FIELD": ""},
        {"SIMHASH_DEDUP_URL_FIELD": 3},
        {"SIMHASH_DEDUP_REDIS_TIMEOUT": 0},
        {"SIMHASH_DEDUP_EXPIRE_DAYS": -1},
    ],
)
def test_wrong_settings_fail_at_start_naming_the_setting(settings: dict[str, Any]) -> None:
    with pytest.raises(StartRefused, match=next(iter(settings))):
        make_pipeline(**settings)


def test_settings_given_as_text_are_read() -> None:
    """``scrapy crawl -s NAME=VALUE`` gives strings."""
    pipeline = make_pipeline(
        SIMHASH_DEDUP_CONTENT_DISTANCE="5",
        SIMHASH_DEDUP_MIN_SIMILARITY="0.7",
        SIMHASH_DEDUP_REMOVE_HTML="1",
        SIMHASH_DEDUP_DROP_LOG_LEVEL="debug",
        SIMHASH_DEDUP_WORKERS="0",
    )
    assert (pipeline.settings.policy.content_distance, pipeline.settings.policy.min_similarity) == (5, 0.7)
    assert (pipeline.settings.remove_html, pipeline.settings.drop_log_level, pipeline.settings.workers) == (
        True,
        "DEBUG",
        0,
    )


def test_drop_log_level_setting() -> None:
    pipeline = make_pipeline(SIMHASH_DEDUP_DROP_LOG_LEVEL="DEBUG")
    process(pipeline, {"url": "a", "html": ARTICLE})
    with pytest.raises(SimhashDuplicate) as dropped:
        process(pipeline, {"url": "b", "html": ARTICLE})
    assert dropped.value.log_level == "DEBUG"


def gbk_article() -> bytes:
    return CHINESE_ARTICLE.encode("gbk")


@pytest.mark.parametrize(
    ("html", "outcome"),
    [
        ("", "empty_html"),
        (b"", "empty_html"),
        ("   \n ", "empty_html"),
        (PNG_BYTES, "not_html"),
        (12345, "not_html"),
        (b"<html>" + b"x" * (20 * 1024 * 1024) + b"</html>", "too_large"),
        (HOSTILE["17.8 MB Chinese str"](), "too_large"),  # 6.4 M characters: under the limit counted in characters
        (HOSTILE["7.5 MB Chinese str"](), "too_much_text"),
        (HOSTILE["1,000,000 empty elements"](), "too_many_elements"),
        (HOSTILE["2,000,000 one-letter paragraphs"](), "too_many_elements"),
        ("<html><body><img src='a.png'><br></body></html>", "too_few_features/content"),
    ],
    ids=[
        "empty str",
        "empty bytes",
        "blank",
        "png",
        "not text",
        "20 MB",
        "17.8 MB str",
        "1 M Han characters",
        "1 M elements",
        "2 M paragraphs",
        "no visible word",
    ],
)
def test_bad_input_is_kept_and_counted(html: Any, outcome: str, caplog: pytest.LogCaptureFixture) -> None:
    pipeline = make_pipeline()
    with caplog.at_level(logging.INFO, logger="scrapy_simhash_dedup"):
        for n in range(2):
            item = {"url": f"https://a.test/{n}", "html": html}
            assert process(pipeline, item) is item
    assert stat(pipeline, outcome) == stat(pipeline, "checked") >= 1  # pages: b"", "" and 12345 are one object
    assert stat(pipeline, "items_kept") == 2
    assert sum(outcome in record.getMessage() for record in caplog.records) == 1  # logged once


def test_the_bounds_on_work_are_settings() -> None:
    """A page under the default bounds goes over lowered ones (and is kept, counted, never compared)."""
    pipeline = make_pipeline(SIMHASH_DEDUP_MAX_ELEMENTS=20)
    process(pipeline, {"url": "a", "html": ARTICLE})
    assert stat(pipeline, "too_many_elements") == 1
    pipeline = make_pipeline(SIMHASH_DEDUP_MAX_TEXT_CHARS=100)
    process(pipeline, {"url": "a", "html": ARTICLE})
    process(pipeline, {"url": "b", "html": ARTICLE})
    assert (stat(pipeline, "too_much_text"), stat(pipeline, "items_kept"), stat(pipeline, "items_dropped")) == (
        2,
        2,
        None,
    )
    pipeline = make_pipeline(SIMHASH_DEDUP_MAX_HTML_BYTES=len(ARTICLE) - 1)
    process(pipeline, {"url": "a", "html": ARTICLE})
    assert stat(pipeline, "too_large") == 1


def test_a_string_is_measured_in_utf8_bytes_without_encoding() -> None:
    texts = ["", "abc", "é" * 5, "中文" * 3, "\U0001f600", "a\udc80b", ARTICLE.decode(), CHINESE_ARTICLE]
    assert [utf8_length(text) for text in texts] == [len(text.encode("utf-8", "surrogatepass")) for text in texts]


def _decodes(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def test_utf8_is_checked_as_python_decodes_it() -> None:
    """``is_utf8`` accepts exactly what ``bytes.decode("utf-8")`` does: every sequence of one and two bytes,
    every three-byte one after a lead byte, every lead of four bytes with each second byte and continuations at
    their edges, and random texts cut, spliced and corrupted at every offset around the eight-byte ASCII steps."""
    edges = [
        0x00,
        0x7F,
        0x80,
        0x8F,
        0x90,
        0x9F,
        0xA0,
        0xBF,
        0xC0,
        0xC1,
        0xC2,
        0xDF,
        0xE0,
        0xED,
        0xEF,
        0xF0,
        0xF4,
        0xF5,
        0xFF,
    ]
    samples = [bytes([a]) for a in range(256)] + [bytes([a, b]) for a in range(256) for b in range(256)]
    samples += [bytes([a, b, c]) for a in range(0xC0, 0x100) for b in range(256) for c in edges]
    samples += [bytes([a, b, c, d]) for a in range(0xF0, 0xF8) for b in range(256) for c in edges for d in edges]
    rng = random.Random(5)
    text = "ASCII words, é, ñ, 中文, 😀, \u0800 \uffff \U0010ffff " * 3
    for _ in range(3000):
        data = bytearray(text.encode()[rng.randrange(0, 40) :])
        for _ in range(rng.randrange(0, 3)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        samples.append(bytes(data[: rng.randrange(len(data) + 1)]))
    for data in samples:
        assert is_utf8(data) == _decodes(data), data
    assert is_utf8(b"") and not is_utf8("\ud800".encode("utf-8", "surrogatepass"))


def test_a_page_is_blank_only_when_its_text_is() -> None:
    """An ASCII character that is not whitespace makes a text that is not blank (``has_visible_ascii``); bytes
    without one are decoded and asked."""
    for data in (b"", b" \t\n", b"\x1c\x1f", "\u3000\xa0".encode(), b" <p>", b"x", "中".encode(), b"\x7f"):
        assert has_visible_ascii(data) == any(0x21 <= byte <= 0x7E for byte in data)
        if has_visible_ascii(data):
            assert not data.decode("utf-8").isspace()
    assert Fingerprinter().fingerprint("\u3000 \xa0".encode()).problem == "empty_html"
    assert Fingerprinter().fingerprint(b"\x1c\x1d").problem == "empty_html"


def test_100000_nested_divs_are_kept() -> None:
    pipeline = make_pipeline()
    item = {"url": "deep", "html": deeply_nested(100_000)}
    assert process(pipeline, item) is item
    assert stat(pipeline, "items_kept") == 1
    assert stat(pipeline, "errors") is None


UNDECLARED = {  # text, and the legacy encoding a page holding it comes in without a charset
    "fr": ("Voilà, à la carte: un café crème, des crêpes à emporter. Où est la gare? Déjà vu, cœur. ", "cp1252"),
    "es": ("El niño comió piña y jamón en la montaña; ¿qué pasó después? ¡Olé! ", "latin-1"),
    "de": ("Grüße aus München: schöne Äpfel, süße Brötchen und heißer Kaffee für die Straße. ", "latin-1"),
    "en": ("It’s “quoted” — don’t stop… a café for 20€. ", "cp1252"),
    "pl": ("Zażółć gęślą jaźń, źdźbło trawy i łódź na jeziorze. ", "cp1250"),
    "cs": ("Příliš žluťoučký kůň úpěl ďábelské ódy. ", "cp1250"),
    "ru": ("Съешь же ещё этих мягких французских булок, да выпей чаю. ", "cp1251"),
}


@pytest.mark.parametrize("language", list(UNDECLARED))
def test_undeclared_legacy_bytes_are_decoded_as_written(language: str) -> None:
    """Western pages (latin-1, cp1252) read as windows-1252, as browsers do, not as the Central European
    encodings a guesser picks for short texts; Central European and Cyrillic pages stay as guessed."""
    text, encoding = UNDECLARED[language]
    page = f"<html><body><p>{text * 5}</p></body></html>"
    assert decode(page.encode(encoding)) == page


def test_utf16_with_a_byte_order_mark_and_a_url_with_a_lone_surrogate_are_read() -> None:
    """Neither is ``not_html`` nor ``empty_html``: both give the page's own fingerprint."""
    fingerprinter = Fingerprinter()
    text = ARTICLE.decode()
    expected = fingerprinter.fingerprint(text)
    assert expected.content is not None
    for data in (text.encode("utf-16"), b"\xfe\xff" + text.encode("utf-16-be"), text.encode("utf-32")):
        assert fingerprinter.fingerprint(data) == expected
    assert fingerprinter.fingerprint(text, "https://a.test/\udc80page") == expected


def test_gbk_bytes_without_charset_are_decoded_as_chinese() -> None:
    assert b"charset" not in gbk_article()
    alone = make_pipeline()
    assert process(alone, {"url": "gbk", "html": gbk_article()})
    assert (stat(alone, "checked"), stat(alone, "items_kept"), stat(alone, "errors")) == (1, 1, None)
    pipeline = make_pipeline()
    process(pipeline, {"url": "utf8", "html": CHINESE_ARTICLE})
    with pytest.raises(SimhashDuplicate, match="content distance 0"):
        process(pipeline, {"url": "gbk", "html": gbk_article()})


def test_short_pages_are_duplicates_only_when_they_show_the_same_words() -> None:
    page = "<html><head><title>Notice</title></head><body><nav><a href='/'>Home</a></nav><p>{}</p></body></html>"
    for mode in ("content", "either"):  # "both" also needs the structure, which these tiny pages lack
        pipeline = make_pipeline(SIMHASH_DEDUP_MODE=mode)
        process(pipeline, {"url": "a", "html": page.format("The office is closed on Monday.")})
        process(pipeline, {"url": "b", "html": page.format("The office is closed on Tuesday.")})
        with pytest.raises(SimhashDuplicate, match="matched on exact_text: content distance 0,"):
            process(pipeline, {"url": "c", "html": page.format("The office is  closed on Monday.").encode()})
        assert (
            stat(pipeline, "short_text"),
            stat(pipeline, "items_kept"),
            stat(pipeline, "items_dropped/exact_text"),
        ) == (3, 2, 1)


#: A stub: a title and two sentences, under the short-page line (30 distinct words) with own text.
STUB = (
    "<html><head><title>Harbour lighthouse</title></head><body><article>"
    "<p>The harbour lighthouse stands on a granite ledge at the northern entrance of the bay.</p>"
    "<p>Its keepers lived in a cottage beside the tower until the lamp was automated in {}.{}</p>"
    "</article></body></html>"
)


def test_a_page_just_under_the_short_line_and_its_copy_with_a_few_words_more_meet() -> None:
    """The line between short and long texts is drawn on the pair: the stub (short) and its copy with one
    sentence more (over the line) are compared as any two pages are, by SimHash and sketch."""
    stub, longer = STUB.format(1962, ""), STUB.format(1962, " Visitors may climb the stairs every summer weekend.")
    assert Fingerprinter().fingerprint(stub).short and not Fingerprinter().fingerprint(longer).short
    for first, second in ((stub, longer), (longer, stub)):
        pipeline = make_pipeline()
        process(pipeline, {"url": "first", "html": first})
        with pytest.raises(SimhashDuplicate, match="matched on content"):
            process(pipeline, {"url": "second", "html": second})


def test_two_short_pages_with_own_text_are_duplicates_only_when_their_words_are() -> None:
    pipeline = make_pipeline()
    process(pipeline, {"url": "a", "html": STUB.format(1962, "")})
    assert process(pipeline, {"url": "b", "html": STUB.format(1963, "")})  # one number: another page
    with pytest.raises(SimhashDuplicate, match="matched on exact_text: content distance 0, similarity 1.00"):
        process(pipeline, {"url": "c", "html": STUB.format(1962, "").replace("<article>", "<article class='x'>")})
    assert (stat(pipeline, "short_text"), stat(pipeline, "items_kept"), stat(pipeline, "items_dropped/exact_text")) == (
        3,
        2,
        1,
    )


def test_small_texts_are_compared_a_few_bits_further_at_the_same_similarity() -> None:
    policy = Policy()
    small, large = (
        Fingerprinter().fingerprint(html).sketch for html in (STUB.format(1962, ""), real_page("gne-sina-1"))
    )
    assert sketch_size(small) < SMALL_TEXT_SHINGLES <= sketch_size(large)
    assert policy.evidence(policy.content_distance, small, small) == (1.0, policy.min_similarity)
    assert policy.evidence(policy.search_distance, small, small) == (1.0, policy.min_similarity)
    assert policy.evidence(policy.search_distance + 1, small, small) is None
    assert policy.evidence(policy.content_distance + 1, small, large) is None  # one text is not small


def test_the_stubs_of_one_template_stay_apart_and_a_reworded_stub_is_kept() -> None:
    """Six real author stubs of quotes.toscrape.com (three sentences on one template) are kept; a byte-identical
    copy of one is dropped; one with a sentence reworded is kept too (its shingles agree on less than
    ``min_similarity``: no rule for small texts lowers it, for such rules dropped sibling pages of real
    templated sites)."""
    stubs = author_stubs()
    pipeline = make_pipeline()
    for name, html in stubs.items():
        assert process(pipeline, {"url": name, "html": html})
    with pytest.raises(SimhashDuplicate, match="near-duplicate of Dr. Seuss"):
        process(pipeline, {"url": "copy", "html": stubs["Dr. Seuss"]})
    assert process(pipeline, {"url": "reworded", "html": stubs["Dr. Seuss"].replace(*REWORDED_SEUSS)})
    assert (stat(pipeline, "pages_kept"), stat(pipeline, "pages_dropped")) == (len(stubs) + 1, 1)


def test_a_short_page_never_matches_a_page_with_own_text() -> None:
    pipeline = make_pipeline(SIMHASH_DEDUP_CONTENT_DISTANCE=64, SIMHASH_DEDUP_MIN_SIMILARITY=-1)
    process(pipeline, {"url": "article", "html": ARTICLE})
    assert process(pipeline, {"url": "short", "html": "<html><body><p>Only a few words here.</p></body></html>"})
    assert stat(pipeline, "items_kept") == 2


def test_pages_with_too_few_features_are_never_duplicates_of_each_other() -> None:
    for mode in ("both", "content", "structure", "either"):
        pipeline = make_pipeline(SIMHASH_DEDUP_MODE=mode)
        for n, text in enumerate(["Hello there", "Something else entirely", "页面", ""]):
            process(pipeline, {"url": str(n), "html": f"<html><body><p>{text}</p></body></html>"})
        assert stat(pipeline, "items_kept") == 4
        assert stat(pipeline, "items_dropped") is None


def test_an_internal_error_keeps_the_item(monkeypatch: pytest.MonkeyPatch) -> None:
    pipeline = make_pipeline()

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("bug")

    monkeypatch.setattr(pipeline.filter.fingerprinter, "fingerprint", broken)
    item = {"url": "a", "html": ARTICLE}
    assert process(pipeline, item) is item
    assert (stat(pipeline, "errors"), stat(pipeline, "items_kept")) == (1, 1)


def test_a_byte_identical_page_is_not_fingerprinted_again_and_gets_the_same_decision(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pipeline = make_pipeline()
    fingerprinted = []
    fingerprint = pipeline.filter.fingerprinter.fingerprint
    monkeypatch.setattr(
        pipeline.filter.fingerprinter,
        "fingerprint",
        lambda html, url="", content_type=None: fingerprinted.append(url) or fingerprint(html, url),
    )
    process(pipeline, {"url": "a", "html": ARTICLE})
    for url in ("a?sid=1", "a?sid=2"):
        with pytest.raises(SimhashDuplicate):
            process(pipeline, {"url": url, "html": ARTICLE})
    for url, html in (("b", ARTICLE.decode()), ("c", ARTICLE + b" ")):  # as text, one byte more: fingerprinted
        with pytest.raises(SimhashDuplicate):
            process(pipeline, {"url": url, "html": html})
    assert process(pipeline, {"url": "d", "html": OTHER_ARTICLE})
    assert fingerprinted == ["a", "b", "c", "d"]
    assert (stat(pipeline, "same_html"), stat(pipeline, "items_dropped"), stat(pipeline, "items_kept")) == (2, 4, 2)


def test_the_counts_reach_the_crawl_s_stats_every_second_and_at_the_end() -> None:
    pipeline = make_pipeline()
    clock = Clock()
    pipeline.filter.counts.start(clock)
    process(pipeline, {"url": "https://a.test/1", "html": ARTICLE})
    assert pipeline.crawler.stats.get_value("simhash_dedup/checked") is None  # counted, not handed over yet
    assert pipeline.filter.counts.get("checked") == 1
    clock.advance(1.0)
    assert pipeline.crawler.stats.get_value("simhash_dedup/checked") == 1
    process(pipeline, {"url": "https://a.test/2", "html": OTHER_ARTICLE})
    pipeline.filter.counts.stop()
    assert pipeline.crawler.stats.get_value("simhash_dedup/checked") == 2


def test_remembered_pages_are_bounded() -> None:
    recent = RecentPages(size=2)

    def fingerprint(html: str) -> Callable[[], Deferred[Fingerprint]]:
        return lambda: succeed(Fingerprint(len(html), 2))

    def result(answer: Deferred) -> Any:
        found = []
        answer.addCallback(found.append)
        return found[0]

    pages = [f"<p>{n}</p>" for n in range(3)]
    for html in [*pages, pages[2], pages[0]]:
        result(recent.fingerprint(recent.key(html), fingerprint(html)))
    assert result(recent.fingerprint(recent.key(pages[1]), fingerprint(pages[1]))) == (Fingerprint(8, 2), False)
    assert result(recent.fingerprint(recent.key(pages[0]), fingerprint(pages[0])))[1]
    assert recent.key("<p>0</p>") != recent.key(b"<p>0</p>")  # text and bytes never share a key


def test_several_items_of_one_page_follow_its_verdict_whatever_comes_between_them() -> None:
    """The item route: items whose HTML field holds the same object (``response.text``) are one page."""
    pipeline = make_pipeline()
    page, copy, other = fresh(ARTICLE), fresh(ARTICLE), fresh(OTHER_ARTICLE)
    assert process_as_is(pipeline, {"url": "https://a.test/1", "row": 0, "html": page})
    with pytest.raises(SimhashDuplicate):
        process_as_is(pipeline, {"url": "https://a.test/copy", "row": 0, "html": copy})
    assert process_as_is(pipeline, {"url": "https://a.test/2", "row": 0, "html": other})
    assert process_as_is(pipeline, {"url": "https://a.test/1", "row": 1, "html": page})  # after other pages' items
    with pytest.raises(SimhashDuplicate):
        process_as_is(pipeline, {"url": "https://a.test/copy", "row": 1, "html": copy})
    assert process_as_is(pipeline, {"url": "https://a.test/2", "row": 1, "html": other})
    assert (stat(pipeline, "checked"), stat(pipeline, "pages_kept"), stat(pipeline, "pages_dropped")) == (3, 2, 1)
    assert (stat(pipeline, "items_kept"), stat(pipeline, "items_dropped")) == (4, 2)


def process_as_is(pipeline: SimhashDedupPipeline, item: Any) -> Any:
    return run(pipeline.process_item(item))


def test_rows_are_deduplicated_by_their_own_html_in_an_item_field() -> None:
    """Row-level deduplication (the recipe of docs/setup.md): each item carries its row's own HTML, and the filter
    reads that field.  A row is short, so it is a duplicate only of a row showing exactly the same words:
    a row repeated on the next listing page is dropped, a row whose price changed is kept."""
    pipeline = make_pipeline(SIMHASH_DEDUP_HTML_FIELD="row_html")

    def row(page: int, product: str, price: str) -> dict[str, str]:
        return {
            "url": f"https://shop.test/list?page={page}",
            "product": product,
            "row_html": f"<li><a href='/p/{product}'>{product} wireless mouse, black</a> <b>{price} EUR</b></li>",
        }

    for item in (row(1, "M100", "12.90"), row(1, "M200", "19.90"), row(1, "M300", "24.90")):
        assert process_as_is(pipeline, item)
    kept = []
    for item in (row(2, "M200", "19.90"), row(2, "M300", "22.90"), row(2, "M400", "29.90")):
        try:
            kept.append(process_as_is(pipeline, item)["product"])
        except SimhashDuplicate as error:
            assert error.match.reason == "exact_text"
    assert kept == ["M300", "M400"]
