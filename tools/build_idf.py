"""Build ``pipelines/fingerprint/data/word_idf.tsv.gz``, the IDF table for non-Chinese words, and
``pipelines/fingerprint/data/idf_words.bin`` and ``idf_chinese.bin``, the two tables the fingerprint reads
(this one and jieba's).

Source: the ``small`` word lists of wordfreq 3.1.1 (frozen upstream), top
``TOP_WORDS`` words of every language that separates words with spaces.  A
word's IDF is ``-ln(f)`` with ``f`` its highest frequency in any of those
languages, so the table does not depend on guessing a page's language (a
half-translated page scores its English words exactly like an English page).
Rounded to 0.01 so the table is byte-stable.  Rerun only together with a bump
of ``scrapy_simhash_dedup.fingerprint.fingerprinter.SCHEME_VERSION``:

    pip install wordfreq==3.1.1 && python tools/build_idf.py

``python -m tools.build_idf arrays`` only rebuilds the ``.bin`` tables from
``word_idf.tsv.gz`` and jieba 0.42.1's ``analyse/idf.txt`` (a word table: its
words' xxh3-64 hashes, sorted, beside their IDF; unknown words get the rarest
known word's IDF, or for Chinese jieba's median as ``jieba.analyse`` does).
"""

from __future__ import annotations

import gzip
import importlib.resources
import math
import statistics
import sys
from pathlib import Path

from scrapy_simhash_dedup.fingerprint.textloops import IdfTable

TOP_WORDS = 5000
OUT = Path(__file__).resolve().parent.parent / "pipelines" / "fingerprint" / "data" / "word_idf.tsv.gz"
NOT_SPACED = {"zh", "ja"}  # Chinese goes through jieba; Japanese has no spaces


def main() -> None:
    if sys.argv[1:] != ["arrays"]:
        build_word_table()
    for name, table in idf_tables().items():
        table_path(name).write_bytes(table.to_bytes())
        print(f"-> {table_path(name)}")


def table_path(name: str) -> Path:
    return OUT.with_name(f"idf_{name}.bin")


def build_word_table() -> None:
    from wordfreq import available_languages, get_frequency_dict

    best: dict[str, float] = {}
    for lang in sorted(set(available_languages("small")) - NOT_SPACED):
        freqs = get_frequency_dict(lang, "small")
        for word, freq in sorted(freqs.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_WORDS]:
            if any(ch.isalpha() for ch in word) and freq > best.get(word, 0.0):
                best[word] = freq
    lines = [f"{word}\t{-math.log(freq):.2f}" for word, freq in sorted(best.items())]
    with gzip.GzipFile(OUT, "wb", mtime=0) as out:
        out.write(("\n".join(lines) + "\n").encode("utf-8"))
    print(f"{len(lines)} words -> {OUT}")


def idf_tables() -> dict[str, IdfTable]:
    """The tables the fingerprint reads, by name, from the word table and jieba's."""
    words = {}
    for line in gzip.decompress(OUT.read_bytes()).decode("utf-8").splitlines():
        word, _, value = line.partition("\t")
        words[word] = float(value)
    chinese = {}
    for line in (importlib.resources.files("jieba") / "analyse" / "idf.txt").read_text("utf-8").splitlines():
        word, _, value = line.partition(" ")
        if value:
            chinese[word] = float(value)
    return {
        "words": IdfTable.of(words, max(words.values())),
        "chinese": IdfTable.of(chinese, statistics.median(chinese.values())),
    }


if __name__ == "__main__":
    main()
