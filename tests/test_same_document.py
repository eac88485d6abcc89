"""The same document, whatever the witness: a page met again at its address is judged as its re-crawl (its name and
what it shows), not as a stranger; another document at the same address is kept.  Decided alike by the crawl's
pipeline, ``simhash-dedup dedup`` and the Spark job."""

from __future__ import annotations

import io
import json
import random

import lxml.html
import pytest

from bench.anchors import html_tree
from bench.real_sites import replaced_sentence
from scrapy_simhash_dedup import SimhashDuplicate
from scrapy_simhash_dedup.batch import dedup
from scrapy_simhash_dedup.batch.sources import write_warc
from scrapy_simhash_dedup.crawl.settings import DedupSettings
from scrapy_simhash_dedup.matching.policy import ADDRESS, SAME_ADDRESS_VISIBLE_SIMILARITY
from scrapy_simhash_dedup.stores.memory import MemoryStore

from .pages import real_page
from .test_pipeline import make_pipeline, process, stat

#: A generated API page whose own text is one short description (pandas' reference, ``tests/data``).
API_PAGE = "pandas-doc-ExtensionDtype.empty"


def edited(html: bytes) -> bytes:
    """The page with one sentence of its description replaced, as a site changes between two crawls."""
    root = html_tree(html)
    replaced_sentence(root, random.Random(1))
    return lxml.html.tostring(root, encoding="utf-8")


def test_a_templated_page_recrawled_at_its_address_with_a_sentence_changed_is_the_same_document() -> None:
    """Its own text is one sentence or two: a sentence changed is most of it, too little alone to call the pages
    one document; met at its own address, what it names and shows decides."""
    page = real_page(API_PAGE)
    pipeline = make_pipeline()
    assert process(pipeline, {"url": "https://docs.example/empty.html", "html": page})
    assert process(pipeline, {"url": "https://docs.example/other.html", "html": edited(page)}), \
        "at another address, the edited page is a stranger: its own text alone decides, and keeps it"
    with pytest.raises(SimhashDuplicate, match="near-duplicate of https://docs.example/empty.html") as raised:
        process(pipeline, {"url": "https://docs.example/empty.html#top", "html": edited(page)})
    match = raised.value.match
    assert match.reason == ADDRESS and match.similarity_needed == SAME_ADDRESS_VISIBLE_SIMILARITY
    assert stat(pipeline, "items_dropped/address") == 1


def test_another_document_at_the_same_address_is_kept() -> None:
    """A home page whose stories changed, an address given to another article: what it shows is another page's."""
    pipeline = make_pipeline()
    assert process(pipeline, {"url": "https://news.example/", "html": real_page("newspaper-syracuse.com1")})
    assert process(pipeline, {"url": "https://news.example/", "html": real_page("newspaper-syracuse.com2")})
    assert stat(pipeline, "pages_kept") == 2


def test_dedup_and_spark_decide_a_recrawl_as_the_crawl_does(tmp_path) -> None:
    page = real_page(API_PAGE)
    records = [("https://docs.example/empty.html", page), ("https://docs.example/empty.html", edited(page)),
               ("https://news.example/", real_page("newspaper-syracuse.com1")),
               ("https://news.example/", real_page("newspaper-syracuse.com2"))]
    archive = tmp_path / "pages.warc.gz"
    write_warc(archive, [(url, html, "text/html") for url, html in records])
    kept = io.StringIO()
    dedup([archive], DedupSettings(), MemoryStore(DedupSettings().policy), kept, workers=0)
    expected = [0, 2, 3]
    assert [json.loads(line)["url"] for line in kept.getvalue().splitlines()] == [records[n][0] for n in expected]

    from scrapy_simhash_dedup.spark import run, session

    spark = session(cores=2)
    try:
        run(spark, [archive], tmp_path / "out", DedupSettings())
    finally:
        spark.stop()
    import pyarrow.dataset

    rows = sorted(pyarrow.dataset.dataset(tmp_path / "out" / "kept", format="parquet").to_table().to_pylist(),
                  key=lambda row: row["order"])
    assert [row["url"] for row in rows] == [records[n][0] for n in expected]
    decisions = pyarrow.dataset.dataset(tmp_path / "out" / "decisions", format="parquet").to_table().to_pylist()
    assert [row["reason"] for row in decisions if row["outcome"] == "dropped"] == [ADDRESS]
