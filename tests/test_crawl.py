"""Real Scrapy crawls against a local HTTP server, end to end."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from .pages import SHARED_DATA, real_page, with_date_and_counters

PIPELINE_ONLY = {"ITEM_PIPELINES": {"pipelines.SimhashDedupPipeline": 300}}


def write_known_duplicates(root: Path) -> list[str]:
    """Pages with known duplicates; returns their paths in crawl order."""
    article = real_page("newspaper-syracuse.com1")
    pages = {
        "news/kwanzaa.html": with_date_and_counters(article, "December 26, 2013", 1204, 12),
        "news/other-article.html": real_page("newspaper-syracuse.com2"),
        "mirror/kwanzaa.html": with_date_and_counters(article, "December 26, 2013", 1204, 12),
        "news/kwanzaa-updated.html": with_date_and_counters(article, "December 27, 2013", 98311, 245),
        "zh/1.html": real_page("gne-sina-1"),
        "zh/2.html": real_page("gne-sina-2"),
        "zh/1-copy.html": real_page("gne-sina-1"),
        "zh/163-1.html": real_page("gne-163-1"),
        "zh/163-2.html": real_page("gne-163-2"),
    }
    for path, body in pages.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(body)
    return list(pages)


EXPECTED_DROPS = {
    "mirror/kwanzaa.html": "news/kwanzaa.html",  # byte-identical copy under another URL
    "news/kwanzaa-updated.html": "news/kwanzaa.html",  # changed date and counters
    "zh/1-copy.html": "zh/1.html",
}


def short(url: str, base_url: str) -> str:
    return url.removeprefix(base_url)


def assert_expected_drops(result: dict, paths: list[str], base_url: str) -> None:
    dropped = {short(d["url"], base_url): short(d["duplicate_of"], base_url) for d in result["dropped"]}
    assert dropped == EXPECTED_DROPS
    assert sorted(short(u, base_url) for u in result["kept"]) == sorted(set(paths) - set(EXPECTED_DROPS))
    stats = result["stats"]
    assert stats["simhash_dedup/checked"] == len(paths)
    assert stats["simhash_dedup/kept"] == len(paths) - len(EXPECTED_DROPS)
    assert stats["simhash_dedup/dropped"] == len(EXPECTED_DROPS)
    assert stats["item_dropped_reasons_count/SimhashDuplicate"] == len(EXPECTED_DROPS)
    assert "log_count/ERROR" not in stats, result["log"][-3000:]


def test_crawl_with_only_the_pipeline_enabled(site: tuple[Path, str], crawl: Callable) -> None:
    root, base_url = site
    paths = write_known_duplicates(root)
    result = crawl([base_url + p for p in paths], PIPELINE_ONLY)
    assert_expected_drops(result, paths, base_url)
    assert "<html" not in result["log"].lower()  # the drop log line carries no page
    assert "Dropped: near-duplicate of" in result["log"]


def test_crawl_with_the_addon_and_a_spider_that_yields_no_html(
    site: tuple[Path, str], crawl: Callable
) -> None:
    root, base_url = site
    paths = write_known_duplicates(root)
    result = crawl([base_url + p for p in paths], {"ADDONS": {"pipelines.SimhashDedupAddon": 0}}, yield_html=False)
    assert_expected_drops(result, paths, base_url)


def same_site_pairs() -> list[Path]:
    """Pages of every same-site pair of different articles in the shared sets."""
    newspaper = SHARED_DATA / "newspaper-test-pages" / "tests" / "data" / "html"
    pages = [
        page
        for first in sorted(newspaper.glob("*1.html"))
        if (second := first.with_name(first.name[:-6] + "2.html")).exists()
        for page in (first, second)
    ]
    pages += sorted((SHARED_DATA / "gne-chinese-news" / "tests").glob("*/*.html"))
    return [page for page in pages if f"{page.parent.name}/{page.name}" not in SAME_ARTICLE_TWICE]


#: Pairs in the shared sets that are one article saved twice, so duplicates by right.
SAME_ARTICLE_TWICE = {
    "html/coolhunting.com2.html",  # byte-identical to coolhunting.com1.html
    "thepaper/4.html",  # the same article as thepaper/2.html (same title and text)
}


@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="needs ../shared/data beside the project")
def test_crawl_keeps_every_different_article_of_the_shared_sets(
    site: tuple[Path, str], crawl: Callable
) -> None:
    root, base_url = site
    paths = []
    for page in same_site_pairs():
        path = f"{page.parent.name}/{page.name}"
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(page, root / path)
        paths.append(path)
    copy = "copies/" + paths[0].replace("/", "-")
    (root / "copies").mkdir()
    shutil.copyfile(root / paths[0], root / copy)
    result = crawl([base_url + p for p in [*paths, copy]], PIPELINE_ONLY)
    dropped = {short(d["url"], base_url): short(d["duplicate_of"], base_url) for d in result["dropped"]}
    assert dropped == {copy: paths[0]}
    assert len(result["kept"]) == len(paths)
