"""The two places the filter reaches into Scrapy's private attributes (Scrapy has no public route to them),
checked in a real crawl, so that a Scrapy release that changes them fails here, loudly, rather than silently
ending "a kill never leaves a page remembered whose item is not in the output" or the add-on's page route."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path


def test_the_feed_exports_files_and_the_filters_pipeline_are_where_the_filter_looks(
        site: tuple[Path, str], crawl: Callable, tmp_path: Path) -> None:
    root, base_url = site
    for name, words in (("a", "apples and pears "), ("b", "rivers and hills "), ("c", "trains and boats ")):
        (root / f"{name}.html").write_text(f"<html><body><h1>{name}</h1><p>{words * 50}</p></body></html>")
    settings = {"ADDONS": {"scrapy_simhash_dedup.SimhashDedupAddon": 0},
                "ITEM_PIPELINES": {"tests.crawl_runner.RecordScrapyRoutes": 100},
                "FEEDS": {str(tmp_path / "items.jsonl"): {"format": "jsonlines"},
                          str(tmp_path / "items.csv"): {"format": "csv"}}}
    result = crawl([f"{base_url}{name}.html" for name in "abc"], settings, yield_html=False)
    # the files open at the first item's export: the last item sees them
    assert result["stats"]["test/feed_streams"] >= 2, "one file per feed (Scrapy's FeedExporter slots)"
    assert result["stats"]["test/pipeline_found"] is True, "engine.scraper.itemproc.middlewares"
