"""Bad input through real crawls, by every route a page reaches the filter: never a crash, never a stall, never
a silent drop.  Each page is kept, counted by its outcome, and the first of each kind logged."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from bench.speed.hostile import PAGES as HOSTILE

from .pages import CHINESE_ARTICLE, PNG_BYTES, deeply_nested, real_page
from .user_project import make_project, scrapy

#: A crawl that takes longer than this over a few small pages has stalled.
STALLED = 120
ADDON = {"ADDONS": {"scrapy_simhash_dedup.SimhashDedupAddon": 0}}
PIPELINE = {"ITEM_PIPELINES": {"scrapy_simhash_dedup.SimhashDedupPipeline": 300}}
#: How a page reaches the filter: the add-on (the response's body and Content-Type), or an item field holding
#: ``response.text`` or ``response.body``.
ROUTES = {
    "add-on": (ADDON, {"yield_html": False}),
    "item str": (PIPELINE, {"html_as": "text"}),
    "item bytes": (PIPELINE, {"html_as": "bytes"}),
}


def two_page_site(root: Path) -> None:
    """An index with one paragraph and a link to a page of 0 bytes (a ``200 OK`` with an empty body)."""
    (root / "index.html").write_text(
        "<html><head><title>Index</title></head><body><p>One paragraph of text, "
        "and a link.</p><a href='empty.html'>empty</a></body></html>"
    )
    (root / "empty.html").write_bytes(b"")


def test_a_site_with_an_empty_page_crawled_as_a_new_user_would_finishes(site: tuple[Path, str], tmp_path: Path) -> None:
    """``scrapy startproject``'s layout, the README's add-on line, a spider that follows every link: the crawl
    ends with both pages' items, the empty one counted (it once hung for ever, the reactor writing nothing)."""
    root, base_url = site
    two_page_site(root)
    project = make_project(tmp_path / "project")
    done = scrapy(project, "crawl", "site", "-a", f"url={base_url}index.html", "-O", "items.jsonl", timeout=STALLED)
    assert done.returncode == 0, done.stderr[-3000:]
    items = [json.loads(line) for line in (project / "items.jsonl").read_text().splitlines()]
    assert sorted(item["url"] for item in items) == [f"{base_url}empty.html", f"{base_url}index.html"]
    assert re.search(r"'simhash_dedup/empty_html': 1,", done.stderr)
    assert "Spider closed (finished)" in done.stderr


@pytest.mark.parametrize("backend", ["sqlite", "memory", "redis"])
def test_an_empty_page_is_kept_and_counted_by_every_route_and_any_number_of_workers(
    site: tuple[Path, str], crawls: Callable, backend: str, request: pytest.FixtureRequest
) -> None:
    """The add-on, an item field holding ``str`` or ``bytes``; no worker, one, two: 9 crawls at once."""
    root, base_url = site
    two_page_site(root)
    urls = [f"{base_url}index.html", f"{base_url}empty.html"]
    store = {"SIMHASH_DEDUP_BACKEND": backend}
    if backend == "redis":
        store |= {"SIMHASH_DEDUP_REDIS_URL": request.getfixturevalue("redis_url"), "SIMHASH_DEDUP_RESET": True}
    configs = [
        {
            "urls": urls,
            "settings": {**route_settings, **store, "SIMHASH_DEDUP_WORKERS": workers},
            "spider_name": f"{route.replace(' ', '_')}-{workers}",
            **options,
        }
        for route, (route_settings, options) in ROUTES.items()
        for workers in (0, 1, 2)
    ]
    results, log = crawls(configs, timeout=STALLED)
    for config, result in zip(configs, results):
        name = config["spider_name"]
        assert sorted(result["kept"]) == sorted(urls), name
        assert result["dropped"] == [], name
        stats = result["stats"]
        assert (
            stats["simhash_dedup/checked"],
            stats["simhash_dedup/empty_html"],
            stats["simhash_dedup/items_kept"],
        ) == (
            2,
            1,
            2,
        ), name
        assert "simhash_dedup/errors" not in stats and stats["finish_reason"] == "finished", name
    assert "Traceback" not in log, log[-3000:]


#: Pages a crawl meets that cannot be compared, served as a site serves them (``.html`` is ``text/html``,
#: without a charset), and the outcome each is kept and counted as (None: fingerprinted, kept as a page).
BAD_PAGES: dict[str, tuple[bytes, str | None]] = {
    "empty.html": (b"", "empty_html"),
    "blank.html": (b"  \r\n\t  \n", "empty_html"),
    "image.png": (PNG_BYTES, "not_html"),
    "png-named-html.html": (PNG_BYTES, "not_html"),
    "twenty-mb.html": (b"<html><body><p>" + b"x" * (20 << 20) + b"</p></body></html>", "too_large"),
    "million-elements.html": (HOSTILE["1,000,000 empty elements"](), "too_many_elements"),
    "two-million-paragraphs.html": (HOSTILE["2,000,000 one-letter paragraphs"](), "too_many_elements"),
    "deep.html": (deeply_nested(100_000).encode(), None),
    "no-visible-word.html": (b"<html><body><img src='a.png'><br></body></html>", "too_few_features/content"),
    "gbk-undeclared.html": (CHINESE_ARTICLE.encode("gbk"), None),
    "utf16-bom.html": (real_page("newspaper-syracuse.com1").decode().encode("utf-16"), None),
    "cut-in-the-middle.html": (real_page("newspaper-syracuse.com2")[:20_000], None),
    "tags-only-half-open.html": (b"<html><body><div><p><table><tr><td><span" * 2_000, "too_few_features/content"),
    "undecodable.html": (bytes(range(1, 256)) * 400, None),
}


@pytest.mark.slow
def test_bad_pages_through_the_addon_are_kept_counted_and_logged_once(site: tuple[Path, str], crawls: Callable) -> None:
    """Every bad page as a real crawl meets it through the add-on (the response's body), with no worker, one
    and two: every page kept, each outcome counted as its pages and logged once a crawl."""
    root, base_url = site
    for name, (body, _) in BAD_PAGES.items():
        (root / name).write_bytes(body)
    urls = [base_url + name for name in BAD_PAGES]
    configs = [
        {
            "urls": urls,
            "yield_html": False,
            "spider_name": f"bad-{workers}",
            "settings": {**ADDON, "SIMHASH_DEDUP_WORKERS": workers, "SIMHASH_DEDUP_BACKEND": "memory"},
        }
        for workers in (0, 1, 2)
    ]
    results, log = crawls(configs, timeout=STALLED)
    expected: dict[str, int] = {}
    for _, outcome in BAD_PAGES.values():
        if outcome is not None:
            expected[outcome] = expected.get(outcome, 0) + 1
    for config, result in zip(configs, results):
        name = config["spider_name"]
        assert sorted(result["kept"]) == sorted(urls), name
        stats = result["stats"]
        assert {outcome: stats.get(f"simhash_dedup/{outcome}") for outcome in expected} == expected, name
        assert stats["simhash_dedup/checked"] == stats["simhash_dedup/pages_kept"] == len(urls), name
        assert "simhash_dedup/errors" not in stats and stats["finish_reason"] == "finished", name
    for outcome in expected:  # the first page of each kind is logged, once a crawl
        assert log.count(f"simhash_dedup: {outcome} for ") == len(configs), outcome
    assert "Traceback" not in log, log[-3000:]
