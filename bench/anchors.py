"""The approaches ``bench/quality.py`` compares against, run on the same pages.

- ``simhash_package``: the popular ``simhash`` package (1e0ng, 2.1.2) with its
  defaults (character 4-grams of the lower-cased text, md5), on the page's
  whole visible text.  Under numpy 2 it raises OverflowError on some texts:
  those pages get no fingerprint (counted as crashes).
- ``jieba_topn``: yanyiwu/simhash's recipe: jieba keywords (no one-character
  words, no stop words) weighted count x IDF, the top N = max(5, min(200,
  bytes / 120)), over the whole visible text.
- ``exact``: a hash of the whitespace-normalised visible text (distance 0 or 64).
"""

from __future__ import annotations

import functools

import jieba.analyse
import lxml.etree
import lxml.html
import xxhash
from simhash import Simhash

from scrapy_simhash_dedup.fingerprint.document import decode, load
from scrapy_simhash_dedup.fingerprint.simhash import simhash

ANCHORS = ("simhash_package", "jieba_topn", "exact")


_HTML_PARSER = lxml.html.HTMLParser(encoding="utf-8", remove_comments=True, remove_pis=True, huge_tree=True)


def html_tree(html: str | bytes) -> lxml.html.HtmlElement | None:
    """The page as an ``lxml.html`` tree (for editing pages), decoded as the filter decodes it;
    ``None`` where the filter finds no tree."""
    if load(html, 1 << 30).root is None:
        return None
    text = decode(html) if isinstance(html, bytes) else html
    return lxml.html.document_fromstring(text.encode("utf-8", "replace"), parser=_HTML_PARSER)


def visible_text(html: str | bytes) -> str:
    """The whole visible text (scripts and styles left out), as naive dedup tools take it."""
    root = html_tree(html)
    if root is None:
        return ""
    lxml.etree.strip_elements(root, "script", "style", "noscript", "template", with_tail=False)
    return " ".join(root.itertext())


def language_of(text: str) -> str:
    """'zh' when most letters of ``text`` are Chinese, else 'en+' (English and other spaced languages)."""
    han = sum("\u4e00" <= ch <= "\u9fff" for ch in text)
    return "zh" if han > 0.3 * max(1, sum(ch.isalpha() for ch in text)) else "en+"


def anchor_fingerprints(text: str) -> dict[str, int | None]:
    return {
        "simhash_package": _simhash_package(text),
        "jieba_topn": _jieba_topn(text),
        "exact": xxhash.xxh3_64_intdigest(" ".join(text.split()).encode()) if text.strip() else None,
    }


def _simhash_package(text: str) -> int | None:
    try:
        return Simhash(text).value
    except OverflowError:
        return None


@functools.cache
def _keywords() -> jieba.analyse.TFIDF:
    return jieba.analyse.TFIDF()


def _jieba_topn(text: str) -> int | None:
    top_n = max(5, min(200, len(text.encode("utf-8")) // 120))
    tags = _keywords().extract_tags(text, topK=top_n, withWeight=True)
    return simhash(dict(tags)) if tags else None
