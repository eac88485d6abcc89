"""Real and synthetic pages for the tests."""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import lxml.etree

DATA = Path(__file__).parent / "data"
#: ``../shared/data`` beside the project (present in CI), for the tests over whole shared sets;
#: ``SIMHASH_DEDUP_SHARED_DATA`` points elsewhere.
SHARED_DATA = Path(
    os.environ.get("SIMHASH_DEDUP_SHARED_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data"
)


def shared_data() -> Path:
    """``SHARED_DATA``, or the calling test skipped, saying why: the data sets are not the project's to ship (an
    sdist's tests run without them); a checkout's CI has them beside it."""
    if not SHARED_DATA.is_dir():
        import pytest

        pytest.skip(f"needs the shared data sets at {SHARED_DATA} (../shared/data beside the project)")
    return SHARED_DATA


def real_page(name: str) -> bytes:
    """A page from ``tests/data`` (see its README), as the bytes a server sends."""
    return gzip.decompress((DATA / f"{name}.html.gz").read_bytes())


def author_stubs() -> dict[str, bytes]:
    """quotes.toscrape.com's pages of six real authors, each describing its author in three sentences (a
    stub), by name (``tests/data/quotes-authors.json``)."""
    from bench.quality.sets import author_page  # here: the bench's modules import numpy, which workers never do

    authors = json.loads((DATA / "quotes-authors.json").read_text(encoding="utf-8"))
    return {author["name"]: author_page(author, author["description"]) for author in authors}


#: One sentence of Dr. Seuss's stub as an editor rewords it: its shingles change more than ``min_similarity`` allows.
REWORDED_SEUSS = (
    b"He graduated Dartmouth College in 1925, and proceeded on to Oxford University with the intent of "
    b"acquiring a doctorate in literature.",
    b"In 1925 he graduated Dartmouth College and proceeded to Oxford University to study for a "
    b"doctorate in literature.",
)


def plain_sketch(shingles: Iterable[str]) -> bytes:
    """The sketch of a page whose own text is all it shows and all its main content (the same shingles thrice),
    with no name and no link."""
    from scrapy_simhash_dedup.fingerprint.sketch import page_sketch
    from scrapy_simhash_dedup.fingerprint.textloops import xxh3_hashes

    hashes = xxh3_hashes(list(shingles))
    return page_sketch(hashes, 0, 0, hashes, 0.0, False, 1.0, hashes)


def shingle_sketch(shingles: Iterable[str]) -> bytes:
    """The bits and set size of a set of shingles (duplicates do not matter): a sketch's own-text part."""
    from scrapy_simhash_dedup.fingerprint.sketch import hashes_sketch
    from scrapy_simhash_dedup.fingerprint.textloops import xxh3_hashes

    return hashes_sketch(xxh3_hashes(list(shingles)))


def structure_features(root: lxml.etree._Element, decay: float = 0.45) -> dict[str, float]:
    """Feature -> summed weight over the tree rooted at ``root`` (depth 0), as the fingerprint's walk sums them
    (``structure.DEFAULT_DECAY``: 0.45)."""
    from scrapy_simhash_dedup.fingerprint import treewalk

    return treewalk.read(root, decay)[3]


def with_date_and_counters(html: bytes, date: str, views: int, comments: int) -> bytes:
    """The page with a byline of changing figures after its first heading, as news sites show."""
    assert b"</h1>" in html
    byline = f'<p class="meta">Updated {date} | {views:,} views | {comments} comments</p>'
    return html.replace(b"</h1>", b"</h1>" + byline.encode(), 1)


NESTING_TAGS = (
    "div",
    "section",
    "article",
    "span",
    "em",
    "blockquote",
    "strong",
    "b",
    "i",
    "u",
    "small",
    "mark",
    "cite",
    "q",
    "abbr",
    "code",
)


def deeply_nested(depth: int) -> str:
    """``depth`` elements each inside the previous one, cycling through a few tags."""
    tags = [NESTING_TAGS[i % len(NESTING_TAGS)] for i in range(depth)]
    opening = "".join(f"<{tag}>" for tag in tags)
    closing = "".join(f"</{tag}>" for tag in reversed(tags))
    return f"<html><body>{opening}deep{closing}</body></html>"


PNG_BYTES = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00"
    b"\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00"
    b"\x00\x00IEND\xaeB`\x82"
)

CHINESE_ARTICLE = (
    "<html><head><title>新闻</title></head><body><h1>北京今日天气晴朗</h1>"
    "<p>今天北京天气晴朗，最高气温二十五度，市民纷纷走出家门，到公园散步游玩，享受美好的春光。</p>"
    "<p>气象部门预计，未来三天本市仍以晴好天气为主，早晚温差较大，请市民注意适时增减衣物。</p>"
    "<p>专家提醒，春季花粉较多，过敏体质的市民外出时应做好防护，避免长时间在户外停留。</p>"
    "<p>此外，本周末部分景区将迎来客流高峰，交通管理部门建议游客错峰出行，优先选择地铁和公交。</p>"
    "<p>据了解，今年春季全市新增绿地面积超过两百公顷，多个社区公园陆续建成开放，受到居民欢迎。</p>"
    "</body></html>"
)


def own_blocks(root: Any) -> list[list[str]]:
    """The tokens of the page's own text, block by block (see ``PageText.own_blocks``)."""
    from scrapy_simhash_dedup.fingerprint.content import PageText

    return PageText.read(root).own_blocks()
