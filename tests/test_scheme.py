"""The fingerprint scheme holds still: every shared page keeps its recorded fingerprint, and the
Chinese segmenter cuts every shared Han run as jieba does.

A faster fingerprint must compute the same thing; when a change is meant to
move fingerprints, ``SCHEME_VERSION`` goes up, ``bench/quality/detection.py`` is run
again and the reference is written anew (``python -m tools.fingerprint_reference write``).
"""

from __future__ import annotations

import gzip
import json
import re
import unicodedata

import jieba
import pytest

from scrapy_simhash_dedup import SCHEME_VERSION
from scrapy_simhash_dedup.fingerprint.content import _HAN, PageText, tokens
from scrapy_simhash_dedup.fingerprint.document import load
from scrapy_simhash_dedup.fingerprint.textloops import IdfTable
from tools.fingerprint_reference import REFERENCE, digests, shared_pages

from .pages import shared_data


@pytest.mark.slow
def test_every_shared_page_keeps_the_fingerprint_recorded_for_the_scheme() -> None:
    reference = json.loads(gzip.decompress(REFERENCE.read_bytes()))
    assert reference["scheme"] == SCHEME_VERSION
    found = digests(shared_data())
    assert found.keys() == reference["pages"].keys()
    assert [name for name, digest in found.items() if digest != reference["pages"][name]] == []


@pytest.mark.slow
def test_chinese_is_segmented_as_jieba_segments_it() -> None:
    runs: set[str] = set()
    han_run = re.compile(f"[{_HAN}]+")
    for _, html in shared_pages(shared_data()):
        root = load(html, 1 << 30).root
        if root is not None:
            text = unicodedata.normalize("NFKC", PageText.read(root).visible_text()).casefold()
            runs.update(han_run.findall(text))
    assert len(runs) > 50_000  # the Chinese pages of gne, gerapy and the Debian reference
    jieba_tokenizer = jieba.Tokenizer()
    assert [run for run in sorted(runs) if tokens(run) != list(jieba_tokenizer.cut(run))] == []


def test_the_idf_tables_are_built_from_the_word_table_and_jieba() -> None:
    """``pipelines/fingerprint/data/idf_*.bin`` are what ``tools/build_idf.py`` makes of its sources today."""
    from tools.build_idf import idf_tables, table_path

    built = idf_tables()
    assert sorted(built) == ["chinese", "words"]
    for name, table in built.items():
        assert table_path(name).read_bytes() == table.to_bytes(), name
        shipped = IdfTable.from_bytes(table_path(name).read_bytes())
        assert (shipped.hashes, shipped.values, shipped.default) == (table.hashes, table.values, table.default)


def test_an_idf_table_finds_each_of_its_words_and_no_other() -> None:
    """The lookup starts where a word's hash should lie and widens from there: every word of a table
    gets its own IDF, every other word the default, at any size."""
    for size in (1, 2, 17, 1_000, 100_000):
        table = {f"word{n}": float(n) for n in range(size)}
        idf = IdfTable.of(table, -1.0)
        assert idf.lookup(list(table)) == list(table.values())
        assert set(idf.lookup([f"other{n}" for n in range(2_000)])) == {-1.0}
    assert IdfTable.of({}, -1.0).lookup(["word"]) == [-1.0]
