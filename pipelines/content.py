"""Content: the page's own text, as weighted words (for SimHash) and shingles (for the sketch).

The page's own text is its paragraph-like blocks of at least
``MIN_BLOCK_WORDS`` words, leaving out what a reader never sees (scripts,
hidden elements), the site's chrome (nav, header, footer, aside, forms,
elements whose class, id or role says menu, sidebar, comments, related,
sponsor... as Mozilla Readability decides) and link text, which is what
menus and related-article lists are made of.

Chinese runs are segmented with jieba (its own dictionary, in a private
tokenizer so that words a project adds to the global jieba never change our
fingerprints) and weighted with jieba's IDF table; kana, Thai and other
scripts without spaces become character bigrams.  Every other script is split
into words and weighted with ``data/word_idf.tsv.gz`` (wordfreq frequencies,
see ``tools/build_idf.py``).  One-character words and numbers (dates,
counters, prices) are not SimHash features; shingles keep every token.
"""

from __future__ import annotations

import functools
import gzip
import importlib.resources
import logging
import re
import statistics
import unicodedata
from collections import Counter
from collections.abc import Iterator

import jieba
import lxml.etree
import lxml.html

#: Elements whose text is not the page's own content: never shown (script,
#: style...), or the site's chrome (navigation, header, footer, asides, forms)
#: and links, which are what navigation and related-article lists are made of.
NOT_CONTENT_TAGS = frozenset({
    "script", "style", "noscript", "template", "svg", "math",
    "nav", "header", "footer", "aside", "form", "select", "button", "a",
})

#: Class or id of page furniture, and the exceptions (Mozilla Readability's lists).
UNLIKELY_NAMES = re.compile(
    r"-ad-|ai2html|banner|breadcrumbs|combx|comment|community|cover-wrap|disqus|extra|footer|gdpr"
    r"|header|legends|menu|related|remark|replies|rss|shoutbox|sidebar|skyscraper|social|sponsor"
    r"|supplemental|ad-break|agegate|pagination|pager|popup|yom-remote",
    re.IGNORECASE,
)
MAYBE_CONTENT_NAMES = re.compile(r"and|article|body|column|content|main|mathjax|shadow", re.IGNORECASE)
UNLIKELY_ROLES = frozenset({"menu", "menubar", "complementary", "navigation", "alert", "alertdialog", "dialog"})
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)

#: Elements that start a new block of text (the rest are inline).
BLOCK_TAGS = frozenset({
    "html", "body", "title", "div", "p", "li", "ul", "ol", "dl", "dt", "dd", "table", "tr",
    "td", "th", "h1", "h2", "h3", "h4", "h5", "h6", "section", "article", "main",
    "blockquote", "pre", "figure", "figcaption", "br", "hr", "center",
})
#: Blocks with fewer words than this are page furniture (labels, menus, bylines).
MIN_BLOCK_WORDS = 8
#: Pages whose long blocks hold fewer distinct words fall back to all their blocks.
MIN_OWN_WORDS = 20
#: Tokens per shingle in the sketch.
SHINGLE_SIZE = 3

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ebef"
#: Scripts written without spaces that jieba does not segment: kana, Thai, Lao, Khmer, Myanmar.
_UNSPACED = "\u3040-\u30ff\u0e00-\u0eff\u1780-\u17ff\u1000-\u109f"
_TOKEN = re.compile(f"([{_HAN}]+)|([{_UNSPACED}]+)|([^\\W_{_HAN}{_UNSPACED}]+)")
_STARTS_HAN = re.compile(f"[{_HAN}]")


def text_blocks(root: lxml.html.HtmlElement, skip_furniture: bool = True) -> list[str]:
    """The page's own text as blocks: one string per paragraph-like element.

    Walks the tree iteratively (any depth); text under ``NOT_CONTENT_TAGS`` is
    left out, inline elements do not split a block.
    """
    blocks: list[str] = []
    current: list[str] = []

    def flush() -> None:
        if current:
            blocks.append(" ".join(current))
            current.clear()

    hidden_depth = 0
    for event, element in lxml.etree.iterwalk(root, events=("start", "end")):
        tag = element.tag
        if event == "start":
            if hidden_depth or tag in NOT_CONTENT_TAGS or (skip_furniture and _is_furniture(element)):
                hidden_depth += 1
                continue
            if tag in BLOCK_TAGS:
                flush()
            if element.text:
                current.append(element.text)
            continue
        if hidden_depth:
            hidden_depth -= 1
            if hidden_depth:
                continue
        elif tag in BLOCK_TAGS:
            flush()
        if element.tail and element is not root:
            current.append(element.tail)
    flush()
    return blocks


def _is_furniture(element: lxml.html.HtmlElement) -> bool:
    """Hidden, or named as menu, sidebar, comments... (never body, never the main column)."""
    attrib = element.attrib
    if not attrib or element.tag == "body":
        return False
    if "hidden" in attrib or attrib.get("aria-hidden") == "true" or attrib.get("role") in UNLIKELY_ROLES:
        return True
    if _HIDDEN_STYLE.search(attrib.get("style", "")):
        return True
    names = f"{attrib.get('class', '')} {attrib.get('id', '')}"
    return bool(UNLIKELY_NAMES.search(names)) and not MAYBE_CONTENT_NAMES.search(names)


def tokens(text: str) -> list[str]:
    """Normalised tokens of ``text``: jieba for Chinese runs, word split elsewhere."""
    text = unicodedata.normalize("NFKC", text).casefold()
    found: list[str] = []
    for match in _TOKEN.finditer(text):
        han, unspaced, other = match.groups()
        if han:
            found.extend(_segmenter().cut(han))
        elif unspaced:  # character bigrams stand in for words
            found.extend(unspaced[i : i + 2] for i in range(max(1, len(unspaced) - 1)))
        else:
            found.append(other)
    return found


def is_word(token: str) -> bool:
    """Words are the SimHash features: not one character, not a number."""
    return len(token) > 1 and not token.isdigit()


def words(text: str) -> list[str]:
    return [token for token in tokens(text) if is_word(token)]


def own_blocks(root: lxml.html.HtmlElement) -> list[list[str]]:
    """The tokens of the page's own blocks: those of at least ``MIN_BLOCK_WORDS`` words.

    Menus, labels and bylines shared by every page of a site would otherwise
    outweigh the article.  Like Readability, when too little is left the page
    is read again keeping elements named as furniture (some sites wrap the
    article in a "header"), and then keeping short blocks too.
    """
    blocks: list[list[str]] = []
    for skip_furniture in (True, False):
        blocks = [tokens(block) for block in text_blocks(root, skip_furniture)]
        own = [block for block in blocks if sum(map(is_word, block)) >= MIN_BLOCK_WORDS]
        if len({token for block in own for token in block if is_word(token)}) >= MIN_OWN_WORDS:
            return own
    return blocks


def content_features(blocks: list[list[str]]) -> dict[str, float]:
    """Word -> count x IDF."""
    counts = Counter(token for block in blocks for token in block if is_word(token))
    return {word: count * idf(word) for word, count in counts.items()}


def shingles(blocks: list[list[str]], size: int = SHINGLE_SIZE) -> Iterator[str]:
    """Every run of ``size`` consecutive tokens within a block (a shorter block is one shingle)."""
    for block in blocks:
        for start in range(max(1, len(block) - size + 1)):
            yield " ".join(block[start : start + size])


def idf(word: str) -> float:
    """IDF from jieba's table for Chinese words, from the word table otherwise.

    Unknown words get a fixed default: jieba's median for Chinese (as
    ``jieba.analyse`` does), the rarest known word's IDF for other words.
    """
    if _STARTS_HAN.match(word):
        table, default = _chinese_idf()
    else:
        table, default = _word_idf()
    return table.get(word, default)


@functools.cache
def _segmenter() -> jieba.Tokenizer:
    jieba.setLogLevel(logging.INFO)  # its DEBUG lines on stderr say only "dictionary loaded"
    tokenizer = jieba.Tokenizer()
    tokenizer.initialize()
    return tokenizer


@functools.cache
def _chinese_idf() -> tuple[dict[str, float], float]:
    text = (importlib.resources.files("jieba") / "analyse" / "idf.txt").read_text("utf-8")
    table = {}
    for line in text.splitlines():
        word, _, value = line.partition(" ")
        if value:
            table[word] = float(value)
    return table, statistics.median(table.values())


@functools.cache
def _word_idf() -> tuple[dict[str, float], float]:
    raw = (importlib.resources.files("pipelines") / "data" / "word_idf.tsv.gz").read_bytes()
    table = {}
    for line in gzip.decompress(raw).decode("utf-8").splitlines():
        word, _, value = line.partition("\t")
        table[word] = float(value)
    return table, max(table.values())
