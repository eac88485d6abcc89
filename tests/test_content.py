"""Content features: which text counts, Chinese and other scripts, real articles."""

from __future__ import annotations

import pytest

from pipelines import Fingerprinter, hamming
from pipelines.content import content_features, own_blocks, text_blocks, words
from pipelines.document import load

from .pages import CHINESE_ARTICLE, real_page, with_date_and_counters


def root(html: str | bytes):
    return load(html, 10**8).root


def test_hidden_text_and_chrome_are_not_content() -> None:
    html = (
        "<html><head><style>p{color:red}</style><script>var secret=1</script></head><body>"
        "<nav>Home News Sports</nav><!-- a comment --><noscript>enable javascript</noscript>"
        "<template>template text</template><p>Visible words <a href='/x'>linked words</a> stay"
        " here</p><footer>copyright footer</footer></body></html>"
    )
    text = " ".join(text_blocks(root(html)))
    assert "Visible words" in text and "stay" in text
    for hidden in ("color", "secret", "Home", "comment", "javascript", "template", "linked", "footer"):
        assert hidden not in text


def test_blocks_split_at_block_elements_not_inline_ones() -> None:
    blocks = text_blocks(root("<html><body><p>one <b>two</b> three</p><div>four</div></body></html>"))
    assert [" ".join(b.split()) for b in blocks] == ["one two three", "four"]


def test_words_drop_numbers_and_single_letters() -> None:
    assert list(words("On 2024-05-01, 1,234 readers saw a COVID-19 update")) == [
        "on", "readers", "saw", "covid", "update",
    ]


def test_chinese_is_segmented_with_jieba() -> None:
    assert list(words("今天北京天气晴朗，市民纷纷走出家门")) == [
        "今天", "北京", "天气晴朗", "市民", "纷纷", "走出", "家门",
    ]


def test_mixed_page_has_chinese_and_english_words() -> None:
    assert list(words("Python 是一种广泛使用的编程语言 designed by Guido")) == [
        "python", "一种", "广泛", "使用", "编程语言", "designed", "by", "guido",
    ]


def test_common_words_weigh_less_than_rare_ones() -> None:
    features = content_features(own_blocks(root(
        "<html><body><p>the the the parliament the the the parliament the the ok ok</p></body></html>"
    )))
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
    assert a.content is not None and b.content is not None
    assert hamming(a.content, b.content) > 3


@pytest.mark.parametrize("name", ["newspaper-syracuse.com1", "gne-sina-1"])
def test_changed_date_and_counters_stay_near(name: str) -> None:
    page = real_page(name)
    before = with_date_and_counters(page, "March 3, 2014", 1234, 56)
    after = with_date_and_counters(page, "April 4, 2015", 98765, 432)
    a, b = (Fingerprinter().fingerprint(html) for html in (before, after))
    assert hamming(a.content, b.content) <= 3


def test_too_few_words_gives_no_content_fingerprint() -> None:
    fingerprint = Fingerprinter().fingerprint("<html><body><p>just a few words here</p></body></html>")
    assert fingerprint.content is None


def test_chinese_page_gets_a_content_fingerprint() -> None:
    assert Fingerprinter().fingerprint(CHINESE_ARTICLE).content is not None


def test_furniture_named_by_class_id_or_role_is_not_content() -> None:
    html = (
        "<html><body><div class='article-body'><p>Main story text here</p></div>"
        "<div id='comments'><p>A reader comment</p></div><div class='sidebar'><p>Sidebar words</p></div>"
        "<div role='navigation'><p>Menu words</p></div><div hidden><p>Hidden words</p></div>"
        "<div style='display: none'><p>Invisible words</p></div></body></html>"
    )
    assert [" ".join(b.split()) for b in text_blocks(root(html))] == ["Main story text here"]


def test_when_furniture_holds_the_article_it_is_read_again() -> None:
    article = " ".join(f"word{i} appears in this long paragraph" for i in range(10))
    html = f"<html><body><div class='post_header'><p>{article}</p></div></body></html>"
    assert any("word9" in token for block in own_blocks(root(html)) for token in block)


def test_short_blocks_are_left_out_when_the_page_has_long_ones() -> None:
    long = " ".join(f"term{i}" for i in range(30))
    blocks = own_blocks(root(f"<html><body><p>Share this</p><p>{long}</p><p>Posted by admin</p></body></html>"))
    assert blocks == [long.split()]
