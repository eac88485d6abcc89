"""Build ``pipelines/data/word_idf.tsv.gz``, the IDF table for non-Chinese words.

Source: the ``small`` word lists of wordfreq 3.1.1 (frozen upstream), top
``TOP_WORDS`` words of every language that separates words with spaces.  A
word's IDF is ``-ln(f)`` with ``f`` its highest frequency in any of those
languages, so the table does not depend on guessing a page's language (a
half-translated page scores its English words exactly like an English page).
Rounded to 0.01 so the table is byte-stable.  Rerun only together with a bump
of ``pipelines.fingerprint.SCHEME_VERSION``:

    pip install wordfreq==3.1.1 && python tools/build_idf.py
"""

from __future__ import annotations

import gzip
import math
from pathlib import Path

from wordfreq import available_languages, get_frequency_dict

TOP_WORDS = 5000
OUT = Path(__file__).resolve().parent.parent / "pipelines" / "data" / "word_idf.tsv.gz"
NOT_SPACED = {"zh", "ja"}  # Chinese goes through jieba; Japanese has no spaces


def main() -> None:
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


if __name__ == "__main__":
    main()
