"""Content: which text is the page's own, Chinese and other scripts, short pages, real articles."""

from __future__ import annotations

import gzip
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench.quality.sets import wrap_in_form
from scrapy_simhash_dedup import Fingerprinter, hamming, simhash
from scrapy_simhash_dedup.fingerprint import content
from scrapy_simhash_dedup.fingerprint.content import PageText, content_features, content_simhash, words
from scrapy_simhash_dedup.fingerprint.document import load
from scrapy_simhash_dedup.fingerprint.sketch import link_share, similarity, visible_similarity
from scrapy_simhash_dedup.fingerprint.textloops import alnum_runs, ascii_tokens, has_invisible, has_unspaced
from scrapy_simhash_dedup.fingerprint.treewalk import (
    AD_HINTS,
    AD_NAMES,
    HID_ALONE,
    MAYBE_CONTENT_NAMES,
    NEGATIVE_NAMES,
    POSITIVE_NAMES,
    UNLIKELY_NAMES,
    Words,
    negative_name,
)
from scrapy_simhash_dedup.matching.policy import Policy

from .pages import CHINESE_ARTICLE, DATA, own_blocks, real_page, with_date_and_counters


def root(html: str | bytes):
    return load(html, 10**8).root


def own_text(html: str | bytes) -> str:
    return " ".join(" ".join(block) for block in own_blocks(root(html)))


def paragraphs(label: str, count: int = 3) -> str:
    """``count`` paragraphs of 12 distinct words each, every word tagged with ``label``."""
    return "".join("<p>" + " ".join(f"{label}{n}word{i}" for i in range(12)) + "</p>" for n in range(count))


def test_own_text_leaves_out_what_is_not_seen_links_and_furniture() -> None:
    html = (
        "<html><head><title>the title</title><style>p{color:red}</style><script>var secret=1</script></head><body>"
        "<nav>" + paragraphs("menu") + "</nav><!-- a comment --><noscript>enable javascript</noscript>"
        "<template>template text</template><div class='story'>"
        + paragraphs("story")
        + "<p>Visible words <a href='/x'>linked words</a> stay here with some more words around</p>"
        "<div id='comments'>" + paragraphs("reader") + "</div></div>"
        "<footer>" + paragraphs("legal") + "</footer></body></html>"
    )
    text = own_text(html)
    assert "story2word11" in text and "visible words linked words stay here" in text  # a link in prose is prose
    for left_out in ("color", "secret", "menu0word0", "comment", "javascript", "template", "reader", "legal"):
        assert left_out not in text


def test_a_sentence_keeps_its_links_in_place_and_a_row_of_links_leaves_them_out() -> None:
    sentence = (
        "<p>The <a href='/river'>river</a> rises in the <a href='/alps'>Alps</a> and flows through "
        "<a href='/lyon'>Lyon</a> to the <a href='/sea'>Mediterranean</a> past vineyards, old mills and towns.</p>"
    )
    related = "<p>See also: " + ", ".join(f"<a href='/r{n}'>related story {n}</a>" for n in range(6)) + "</p>"
    text = own_text(f"<html><body><article>{paragraphs('story')}{sentence}{related}</article></body></html>")
    assert "the river rises in the alps and flows through lyon to the mediterranean" in text
    assert "related" not in text


def test_unlinking_a_word_of_a_sentence_leaves_the_fingerprint_as_it_was() -> None:
    linked = (
        "<html><body><article>" + paragraphs("story") + "<p>The river rises in the <a href='/alps'>Alps</a> "
        "and flows through Lyon to the sea past vineyards and mills.</p></article></body></html>"
    )
    unlinked = linked.replace("<a href='/alps'>Alps</a>", "Alps")
    before, after = Fingerprinter().fingerprint(linked), Fingerprinter().fingerprint(unlinked)
    assert (before.content, before.structure) == (after.content, after.structure)
    # the sketch's texts are the same; only the page's share of link characters (one byte) moved
    assert similarity(before.sketch, after.sketch) == visible_similarity(before.sketch, after.sketch) == 1.0
    assert link_share(before.sketch) > link_share(after.sketch) == 0.0


@pytest.mark.parametrize(
    "named",
    [
        "class='advertisement'",
        "aria-label='Advertisement'",
        "id='ad-slot-3'",
        "data-ad-slot='123'",
        "class='sponsored-box'",
        "class='promo'",
        "role='ad'",
    ],
)
def test_an_element_named_as_an_ad_is_never_own_text_however_leniently_read(named: str) -> None:
    ad = f"<div {named}><p>Special offer buy these wonderful shoes today at the lowest price ever seen</p></div>"
    long_page = f"<html><body><article>{paragraphs('story')}{ad}</article></body></html>"
    stub = f"<html><body><article><p>A stub of a few words only.</p>{ad}</article></body></html>"  # read leniently
    for html in (long_page, stub):
        assert "shoes" not in own_text(html)
    assert "story0word0" in own_text(long_page)


def test_names_are_answered_the_same_after_a_crawl_has_met_more_of_them_than_are_remembered() -> None:
    """The walk remembers what ~32,000 names say (two generations): pages with 50,000 names never met again
    in between, the same page with an ad reads the same, the ad left out."""
    ad = "<div class='ad-slot'><p>Special offer buy these wonderful shoes today at the lowest price ever seen</p></div>"
    page = f"<html><body><article><div class='story-body'>{paragraphs('story')}</div>{ad}</article></body></html>"
    before = own_text(page)
    for part in range(5):
        names = "".join(f"<div class='name{part}-{n}' id='x{n}'>w</div>" for n in range(10_000))
        own_text(f"<html><body>{names}</body></html>")
        assert own_text(page) == before
    assert "story0word0" in before and "shoes" not in before


@pytest.mark.parametrize("name", ["class='download-box'", "class='header'", "id='load-more'", "class='adapted'"])
def test_names_that_merely_contain_ad_are_not_ads(name: str) -> None:
    page = f"<html><body><article><div {name}>{paragraphs('story')}</div></article></body></html>"
    assert "story0word0" in own_text(page)


def test_word_lists_find_what_their_regular_expressions_find() -> None:
    """``Words`` answers as ``re.search(words, text, re.IGNORECASE)`` on every class and id of real pages,
    in any case, and on names outside ASCII (where case folding maps ``ſ`` to ``s`` and ``K`` to ``k``);
    ``negative_name`` as Readability's negative pattern; every name ``AD_NAMES`` finds an ad in holds one
    of ``AD_HINTS``, the names it is searched in."""
    names = set()
    for path in sorted(DATA.glob("*.html.gz")):
        names.update(map(str, load(gzip.decompress(path.read_bytes()), 1 << 24).root.xpath("//@class | //@id")))
    assert len(names) > 500
    names |= {name.upper() for name in names} | {name.title() for name in names}
    names |= {
        "",
        "ſidebar",
        "MENU",
        "Header-Kontakt",
        "Cömment-list",
        "ad",
        "-AD-",
        "lead",
        "read",
        "main-ſponsor",
        "hid",
        "box hid",
        "HID box",
        "a hid b",
        "hid\n",
        "x hid\n",
        "hıd",
        "xhid",
        "hidden",
        "Hid-den",
    }
    for listed in (UNLIKELY_NAMES, MAYBE_CONTENT_NAMES, AD_HINTS, POSITIVE_NAMES, NEGATIVE_NAMES):
        pattern = re.compile(listed.pattern.pattern, re.IGNORECASE)
        found = {name for name in names if listed.search(name)}
        assert found == {name for name in names if pattern.search(name)}
        assert found and found != names
    negative = re.compile(f"{NEGATIVE_NAMES.pattern.pattern}|{HID_ALONE.pattern}", re.IGNORECASE)  # Readability's
    assert {name for name in names if negative_name(name)} == {name for name in names if negative.search(name)}
    ads = {name for name in names if AD_NAMES.search(name)}
    assert ads and all(AD_HINTS.search(name) for name in ads)
    with pytest.raises(ValueError):
        Words("a.b|c")


def test_blocks_split_at_block_elements_not_inline_ones() -> None:
    page = PageText.read(root("<html><body><p>one <b>two</b> three</p><div>four</div></body></html>"))
    assert [block.text for block in page.blocks] == ["one two three", "four"]


@pytest.mark.parametrize("hide", ["hidden", "aria-hidden='true'", "style='display: none'", "style='visibility:hidden'"])
def test_hidden_text_never_counts_even_when_the_visible_text_is_short(hide: str) -> None:
    html = (
        f"<html><body><p>Only a few words are shown on this page.</p>"
        f"<div {hide}><article>{paragraphs('hidden', 5)}</article></div></body></html>"
    )
    assert own_text(html) == ""
    assert "hidden" not in PageText.read(root(html)).visible_text()


def test_an_article_inside_a_page_wide_form_is_read() -> None:
    article = real_page("newspaper-syracuse.com1")
    assert own_text(wrap_in_form(article, "en+")).startswith(own_text(article)[:200])


def test_a_notice_outside_a_page_wide_form_does_not_make_articles_duplicates() -> None:
    first, second = (
        Fingerprinter().fingerprint(wrap_in_form(real_page(name), "en+"))
        for name in ("newspaper-syracuse.com1", "newspaper-syracuse.com2")
    )
    assert not first.short and not second.short
    assert hamming(first.content, second.content) > Policy().content_distance


@pytest.mark.parametrize("wrapper", ["nav", "aside", "header", "div class='post_header'"])
def test_the_main_content_is_read_whatever_furniture_surrounds_it(wrapper: str) -> None:
    tag = wrapper.split()[0]
    html = (
        "<html><body><div class='menu'>" + paragraphs("menu", 1) + "</div>"
        f"<{wrapper}><div class='article-body'>{paragraphs('story', 4)}</div></{tag}>"
        "<p>A short line of text below the main content of this page.</p></body></html>"
    )
    assert "story3word11" in own_text(html)


def test_furniture_inside_the_main_content_is_left_out() -> None:
    html = (
        "<html><body><article>" + paragraphs("story", 4) + "<aside>" + paragraphs("pullquote", 1) + "</aside>"
        "<div class='related-links'>" + paragraphs("related", 2) + "</div></article></body></html>"
    )
    text = own_text(html)
    assert "story3word11" in text and "pullquote" not in text and "related" not in text


def test_short_blocks_are_left_out_when_the_page_has_long_ones() -> None:
    long = " ".join(f"term{i}" for i in range(30))
    blocks = own_blocks(root(f"<html><body><p>Share this</p><p>{long}</p><p>Posted by admin</p></body></html>"))
    assert [" ".join(block) for block in blocks if block] == [long]


def test_words_drop_numbers_and_single_letters() -> None:
    assert list(words("On 2024-05-01, 1,234 readers saw a COVID-19 update")) == [
        "on",
        "readers",
        "saw",
        "covid",
        "update",
    ]


def test_words_are_split_where_the_regular_expression_split_them() -> None:
    r"""``alnum_runs`` keeps a character exactly where ``[^\W_]`` matches it, over every code point, and
    splits texts of every script, numbers, underscores and marks as ``re.findall`` does."""
    every = "".join(chr(code) for code in range(0x110000) if not 0xD800 <= code < 0xE000)
    kept = "".join(re.findall(r"[^\W_]", every))
    assert "".join(alnum_runs(every)) == kept and len(kept) > 100_000
    samples = [
        "",
        "_",
        "a_b c",
        "Ünïcödé wörds, 2024-05-01!",
        "\u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e",
        "x\u00b2 \u2460\u2461 \u0661\u0662",
        "emoji\U0001f600between",
        "tab\there\u00a0nbsp",
        kept[::997],
    ]
    for text in samples:
        assert alnum_runs(text) == re.findall(r"[^\W_]+", text), text


def test_ascii_texts_are_split_and_lowered_as_the_regular_expression_and_lower_do() -> None:
    """``ascii_tokens`` (one pass, a run lowered only when it has capitals) gives what ``alnum_runs(text.lower())``
    gives, over every ASCII character in runs of every shape; it refuses a text outside ASCII."""
    every = "".join(map(chr, range(128)))
    rng = random.Random(7)
    texts = ["", " ", "a", "Z", "ABC def", "x_Y-z9 ", "__", every, every[::-1]]
    texts += ["".join(rng.choice(every) for _ in range(rng.randrange(1, 60))) for _ in range(2000)]
    for text in texts:
        assert ascii_tokens(text) == re.findall(r"[^\W_]+", text.lower()), text
    with pytest.raises(ValueError):
        ascii_tokens("caf\u00e9")


def test_the_compiled_scans_find_what_the_regular_expressions_find() -> None:
    """``has_invisible`` and ``has_unspaced`` answer as ``_INVISIBLE`` and the class of Han and unspaced scripts
    (``_TOKEN``'s) do, over every code point, alone and inside other text."""
    unspaced = re.compile(f"[{content._HAN}{content._UNSPACED}]")
    for code in range(0x110000):
        if 0xD800 <= code < 0xE000:
            continue
        text = f"ab{chr(code)}c"
        assert has_invisible(text) == bool(content._INVISIBLE.search(text)), hex(code)
        assert has_unspaced(text) == bool(unspaced.search(text)), hex(code)


def test_the_content_simhash_is_the_simhash_of_the_content_features() -> None:
    """``content_simhash`` (one compiled pass) gives ``simhash(content_features(blocks))`` and the number of
    features, on English, Chinese, mixed and repeated words; no word gives what ``simhash`` gives no feature."""
    samples = [
        [
            ["a", "title"],
            ["the", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog", "again", "and", "again"],
        ],
        [["标题"], ["我们", "在", "这里", "测试", "中文", "分词", "中文"], ["english", "words", "too", "42"]],
        [[], ["x", "1", "22"]],
        [[], []],
    ]
    for blocks in samples:
        features = content_features(blocks)
        assert content_simhash(blocks) == (simhash(features), len(features))


def test_chinese_is_segmented_with_jieba() -> None:
    assert list(words("今天北京天气晴朗，市民纷纷走出家门")) == [
        "今天",
        "北京",
        "天气晴朗",
        "市民",
        "纷纷",
        "走出",
        "家门",
    ]


def test_mixed_page_has_chinese_and_english_words() -> None:
    assert list(words("Python 是一种广泛使用的编程语言 designed by Guido")) == [
        "python",
        "一种",
        "广泛",
        "使用",
        "编程语言",
        "designed",
        "by",
        "guido",
    ]


def test_common_words_weigh_less_than_rare_ones() -> None:
    features = content_features(
        [
            ["the", "the", "the", "parliament", "the", "the", "the", "parliament", "the", "the", "ok", "ok"],
        ]
    )
    assert features["parliament"] / 2 > features["the"] / 8


def test_chinese_idf_comes_from_jieba() -> None:
    import jieba.analyse

    features = content_features(own_blocks(root(CHINESE_ARTICLE)))
    jieba_idf = jieba.analyse.default_tfidf.idf_freq
    assert features["花粉"] == pytest.approx(jieba_idf["花粉"])
    assert features["市民"] == pytest.approx(3 * jieba_idf["市民"])  # three times in the text


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("newspaper-syracuse.com1", "newspaper-syracuse.com2"),
        ("newspaper-theatlanticcities.com1", "newspaper-theatlanticcities.com2"),
        ("gne-sina-1", "gne-sina-2"),
        ("gne-163-1", "gne-163-2"),
    ],
)
def test_different_articles_of_one_site_stay_apart(first: str, second: str) -> None:
    a, b = (Fingerprinter().fingerprint(real_page(name)) for name in (first, second))
    assert not a.short and not b.short
    assert hamming(a.content, b.content) > 3


@pytest.mark.parametrize("name", ["newspaper-syracuse.com1", "gne-sina-1"])
def test_changed_date_and_counters_stay_near(name: str) -> None:
    page = real_page(name)
    before = with_date_and_counters(page, "March 3, 2014", 1234, 56)
    after = with_date_and_counters(page, "April 4, 2015", 98765, 432)
    a, b = (Fingerprinter().fingerprint(html) for html in (before, after))
    assert hamming(a.content, b.content) <= 3


def test_a_page_with_too_little_own_text_is_fingerprinted_by_its_visible_words() -> None:
    page = "<html><head><title>Contact</title></head><body><nav><a href='/'>Home</a></nav><p>{}</p></body></html>"
    first, copy, other = (
        Fingerprinter().fingerprint(page.format(text))
        for text in ("Call us on weekdays", "Call us on weekdays", "Call us on weekends")
    )
    assert first.short and first.content is not None
    assert first.content == copy.content
    assert other.short and other.content != first.content


def test_a_page_without_any_visible_word_has_no_content_fingerprint() -> None:
    fingerprint = Fingerprinter().fingerprint("<html><body><img src='a.png'><script>var a = 1</script></body></html>")
    assert fingerprint.content is None and not fingerprint.short


def test_chinese_page_gets_a_content_fingerprint() -> None:
    fingerprint = Fingerprinter().fingerprint(CHINESE_ARTICLE)
    assert fingerprint.content is not None and not fingerprint.short


def test_a_crawl_without_chinese_pages_never_loads_the_chinese_dictionary_nor_its_idf_table() -> None:
    """The segmenter's dictionary (~30 MB in each worker process) and jieba's IDF table load with the
    first Chinese page (in a fresh process: this one has loaded them)."""
    script = """
import sys
from scrapy_simhash_dedup import Fingerprinter
from scrapy_simhash_dedup.fingerprint.content import _idf_table
from tests.pages import CHINESE_ARTICLE, real_page
fingerprinter = Fingerprinter()
fingerprinter.fingerprint(real_page("newspaper-syracuse.com1"))
print("rjieba" in sys.modules, _idf_table.cache_info().currsize)
fingerprinter.fingerprint(CHINESE_ARTICLE)
print("rjieba" in sys.modules, _idf_table.cache_info().currsize)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=Path(__file__).parents[1]
    )
    assert done.stdout.split() == ["False", "1", "True", "2"]


@pytest.mark.parametrize("invisible", ["\u00ad", "\u200b", "\u2060", "\ufeff"])
def test_characters_that_show_nothing_inside_words_are_read_as_nothing(invisible: str) -> None:
    """A hyphenating or re-saving tool adds soft hyphens and zero-width characters inside words: a reader
    sees the same words, and so does the fingerprint."""
    text = "The lighthouse keepers maintained extraordinary vigilance throughout winter storms, naïvely hopeful."
    hyphenated = text.replace("lighthouse", f"light{invisible}house").replace(
        "extraordinary", f"extra{invisible}ordi{invisible}nary"
    )
    assert words(hyphenated) == words(text)


def test_the_title_counts_three_times_in_the_content_features() -> None:
    title, body = ["lighthouse", "keepers"], ["lighthouse", "stands", "keepers", "lived"]
    features = content_features([title, body])
    alone = content_features([[], body])
    assert features["lighthouse"] == pytest.approx(alone["lighthouse"] * 4 / 1)
    assert features["stands"] == pytest.approx(alone["stands"])


def test_a_note_is_furniture_as_aria_defines_it() -> None:
    """role="note": "a section whose content is parenthetic or ancillary to the main content" (a stub
    notice, a hatnote): changing it leaves the own text as it was."""
    note = (
        "<div role='note' class='stub'><p>This article is a stub, and you can help the project by expanding it.</p>"
        "</div>"
    )
    text = own_text(f"<html><body><article>{paragraphs('story')}{note}</article></body></html>")
    assert "story2word11" in text and "stub" not in text
