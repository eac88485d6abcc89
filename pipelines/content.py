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

#: Elements whose text a reader never sees.
HIDDEN_TAGS = frozenset({"script", "style", "noscript", "template", "svg", "math"})

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ebef"
_TOKEN = re.compile(f"([{_HAN}]+)|([^\\W_{_HAN}]+)")
_STARTS_HAN = re.compile(f"[{_HAN}]")


def visible_text(root: lxml.html.HtmlElement) -> str:
    """The text a reader sees, pieces joined by spaces (iterative: any depth)."""
    parts: list[str] = []
    hidden_depth = 0
    for event, element in lxml.etree.iterwalk(root, events=("start", "end")):
        if event == "start":
            if hidden_depth or element.tag in HIDDEN_TAGS:
                hidden_depth += 1
            elif element.text:
                parts.append(element.text)
            continue
        if hidden_depth:
            hidden_depth -= 1
        if not hidden_depth and element.tail and element is not root:
            parts.append(element.tail)
    return " ".join(parts)


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
    """Word -> count x IDF over the page's visible text."""
    counts = Counter(words(visible_text(root)))
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
