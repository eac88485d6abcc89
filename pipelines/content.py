"""Content features: the page's visible words, weighted by count x IDF.

Chinese runs are segmented with jieba (its own dictionary, in a private
tokenizer so that words a project adds to the global jieba never change our
fingerprints) and weighted with jieba's IDF table.  Every other script is split
into words and weighted with ``data/word_idf.tsv.gz`` (wordfreq frequencies,
see ``tools/build_idf.py``).  One-character words and tokens without a letter
(dates, counters, prices) are not features.
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

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ebef"
_TOKEN = re.compile(f"([{_HAN}]+)|([^\\W_{_HAN}]+)")
_STARTS_HAN = re.compile(f"[{_HAN}]")


def text_blocks(root: lxml.html.HtmlElement) -> list[str]:
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
            if hidden_depth or tag in NOT_CONTENT_TAGS:
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


def words(text: str) -> Iterator[str]:
    """Normalised words of ``text``: jieba for Chinese runs, word split elsewhere."""
    text = unicodedata.normalize("NFKC", text).casefold()
    for match in _TOKEN.finditer(text):
        han, other = match.groups()
        if han:
            yield from (word for word in _segmenter().cut(han) if len(word) > 1)
        elif len(other) > 1 and not other.isdigit():
            yield other


def content_features(root: lxml.html.HtmlElement) -> dict[str, float]:
    """Word -> count x IDF over the page's own text.

    Only blocks of at least ``MIN_BLOCK_WORDS`` words count, so that menus,
    labels and bylines shared by every page of a site do not outweigh the
    article; pages made only of short blocks use them all.
    """
    blocks = [list(words(block)) for block in text_blocks(root)]
    counts = Counter(word for block in blocks if len(block) >= MIN_BLOCK_WORDS for word in block)
    if len(counts) < MIN_OWN_WORDS:
        counts = Counter(word for block in blocks for word in block)
    return {word: count * idf(word) for word, count in counts.items()}


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
