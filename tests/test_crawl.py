"""Real Scrapy crawls against a local HTTP server, end to end."""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from bench.quality.sets import extraction_set_pages, site_groups, wrap_in_form

from .pages import real_page, shared_data, with_date_and_counters

PIPELINE_ONLY = {"ITEM_PIPELINES": {"scrapy_simhash_dedup.SimhashDedupPipeline": 300}}


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
    assert stats["simhash_dedup/items_kept"] == len(paths) - len(EXPECTED_DROPS)
    assert stats["simhash_dedup/items_dropped"] == len(EXPECTED_DROPS)
    assert stats["item_dropped_reasons_count/SimhashDuplicate"] == len(EXPECTED_DROPS)
    assert "log_count/ERROR" not in stats, result["log"][-3000:]


def test_a_dropped_item_leaves_no_reference_cycle_holding_its_response(site: tuple[Path, str], crawl: Callable) -> None:
    """Scrapy keeps a drop's exception in the frame that logged it, and the exception's traceback keeps that
    frame: each dropped item and its response (the page's HTML) waited for the garbage collector, whose full
    collections then cost the crawl ~0.15 ms a page.  The filter's drops carry no traceback out."""
    root, base_url = site
    paths = write_known_duplicates(root)
    result = crawl(
        [base_url + p for p in paths], {"ADDONS": {"scrapy_simhash_dedup.SimhashDedupAddon": 0}}, keep_garbage=True
    )
    assert_expected_drops(result, paths, base_url)
    assert not {"SimhashDuplicate", "HtmlResponse", "traceback"} & set(result["garbage"])


def test_the_objects_a_crawl_starts_with_are_frozen_out_of_full_collections_unless_told_not_to(
    site: tuple[Path, str], crawl: Callable, tmp_path: Path
) -> None:
    """Full garbage collections walk every object Scrapy and the filter loaded: by default they are frozen at
    spider open, skipped until the crawl closes, then the collector has them back; with SIMHASH_DEDUP_GC_FREEZE
    off the filter leaves the collector alone."""
    root, base_url = site
    paths = write_known_duplicates(root)
    urls = [base_url + p for p in paths]
    frozen = crawl(urls, {"ADDONS": {"scrapy_simhash_dedup.SimhashDedupAddon": 0}})
    assert_expected_drops(frozen, paths, base_url)
    # (frozen objects that are freed, by reference counting, leave the frozen generation: fewer as the crawl goes)
    assert 10_000 < frozen["frozen"]["during"] <= frozen["stats"]["simhash_dedup/gc_frozen"]  # Scrapy's own, at least
    assert frozen["frozen"]["after"] == 0
    not_frozen = crawl(
        urls,
        {
            "ADDONS": {"scrapy_simhash_dedup.SimhashDedupAddon": 0},
            "SIMHASH_DEDUP_GC_FREEZE": False,
            "SIMHASH_DEDUP_PATH": str(tmp_path / "not-frozen.sqlite"),
        },
    )
    assert_expected_drops(not_frozen, paths, base_url)
    assert not_frozen["frozen"] == {"during": 0, "after": 0}
    assert "simhash_dedup/gc_frozen" not in not_frozen["stats"]


def test_crawl_with_only_the_pipeline_enabled(site: tuple[Path, str], crawl: Callable) -> None:
    root, base_url = site
    paths = write_known_duplicates(root)
    result = crawl([base_url + p for p in paths], PIPELINE_ONLY)
    assert_expected_drops(result, paths, base_url)
    assert "<html" not in result["log"].lower()  # the drop log line carries no page
    assert "Dropped: near-duplicate of" in result["log"]


def test_crawl_with_the_addon_and_a_spider_that_yields_no_html(site: tuple[Path, str], crawl: Callable) -> None:
    root, base_url = site
    paths = write_known_duplicates(root)
    result = crawl(
        [base_url + p for p in paths], {"ADDONS": {"scrapy_simhash_dedup.SimhashDedupAddon": 0}}, yield_html=False
    )
    assert_expected_drops(result, paths, base_url)


def test_the_addon_puts_only_the_canonical_url_in_items_so_exports_and_logs_hold_what_the_spider_yielded(
    site: tuple[Path, str], crawl: Callable, tmp_path: Path
) -> None:
    """At Scrapy's default DEBUG level, with a feed: the page reaches the filter from the response, so
    no item gets an HTML field (none in the export, none in the "Scraped from" lines); a kept item gets its
    canonical URL, here its own (the pages declare none, the site has no URL rules)."""
    root, base_url = site
    paths = write_known_duplicates(root)
    feed = tmp_path / "items.jsonl"
    settings = {
        "ADDONS": {"scrapy_simhash_dedup.SimhashDedupAddon": 0},
        "LOG_LEVEL": "DEBUG",
        "FEEDS": {str(feed): {"format": "jsonlines"}},
    }
    result = crawl([base_url + p for p in paths], settings, yield_html=False)
    assert_expected_drops(result, paths, base_url)
    exported = [json.loads(line) for line in feed.read_text().splitlines()]
    assert len(exported) == len(result["kept"]) > 0
    assert all(set(item) == {"url", "canonical_url"} and item["canonical_url"] == item["url"] for item in exported)
    assert "<html" not in result["log"].lower()


@pytest.mark.parametrize("route", ["item field", "add-on", "add-on without link guard"])
@pytest.mark.parametrize("backend", ["sqlite", "memory"])
def test_every_item_of_a_page_follows_the_page_s_verdict(
    site: tuple[Path, str], crawl: Callable, route: str, backend: str
) -> None:
    """Every page yields 3 items (``url``, ``url#1``, ``url#2``: the rows of a listing), all pages requested
    at once so that items of different pages reach the pipeline interleaved.  A page is decided once; its
    3 items are all kept or all dropped with the same reason."""
    root, base_url = site
    paths = write_known_duplicates(root)
    settings = {
        **(PIPELINE_ONLY if route == "item field" else {"ADDONS": {"scrapy_simhash_dedup.SimhashDedupAddon": 0}}),
        "SIMHASH_DEDUP_BACKEND": backend,
        "SIMHASH_DEDUP_SKIP_LINKS": route != "add-on without link guard",
    }
    result = crawl(
        [base_url + p for p in paths], settings, yield_html=route == "item field", repeat=3, all_at_once=True
    )
    kept = Counter(url.split("#")[0] for url in result["kept"])
    dropped: dict[str, set[tuple[str, str]]] = {}
    for drop in result["dropped"]:
        dropped.setdefault(drop["url"].split("#")[0], set()).add((drop["duplicate_of"], drop["reason"]))
    assert set(kept.values()) == {3} and len(kept) == len(paths) - len(EXPECTED_DROPS)
    assert len(result["dropped"]) == 3 * len(EXPECTED_DROPS) and all(len(why) == 1 for why in dropped.values())
    assert not kept.keys() & dropped.keys()
    stats = result["stats"]
    assert (stats["simhash_dedup/pages_kept"], stats["simhash_dedup/pages_dropped"]) == (len(kept), len(dropped))
    assert stats["simhash_dedup/checked"] == len(paths)


def same_site_pairs() -> list[Path]:
    """Pages of every same-site pair of different articles in the shared sets."""
    return [
        path
        for _, _, group in site_groups(shared_data())
        for path in group
        if f"{path.parent.name}/{path.name}" not in SAME_ARTICLE_TWICE
    ]


#: Pairs in the shared sets that are one article saved twice, so duplicates by right.
SAME_ARTICLE_TWICE = {
    "html/coolhunting.com2.html",  # byte-identical to coolhunting.com1.html
    "thepaper/4.html",  # the same article as thepaper/2.html (same title and text)
}


@pytest.mark.heavy
def test_crawl_keeps_every_different_article_of_the_shared_sets(site: tuple[Path, str], crawl: Callable) -> None:
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


#: Readability's hand-made fixtures that reuse one sample article (003-metadata-preferred's) under their own titles
#: ("RTL Test", "Base URL test"...): one body, several names.
SAMPLE_ARTICLE_FIXTURES = [
    "004-metadata-space-separated-properties",
    "base-url",
    "base-url-base-element",
    "base-url-base-element-relative",
    "basic-tags-cleaning",
    "comment-inside-script-parsing",
    "embedded-videos",
    "metadata-content-missing",
    "normalize-spaces",
    "parsely-metadata",
    "remove-extra-brs",
    "remove-extra-paragraphs",
    "remove-script-tags",
    "replace-brs",
    "replace-font-tags",
    "rtl-1",
    "rtl-2",
    "rtl-3",
    "rtl-4",
    "social-buttons",
    "style-tags-removal",
    "svg-parsing",
    "title-and-h1-discrepancy",
    "title-en-dash",
]
#: Those of them that name the sample article as 003-metadata-preferred does (or not at all), and the one saved
#: three times under one name.
SAMPLE_ARTICLE_SAME_NAME = {
    "004-metadata-space-separated-properties": "003-metadata-preferred",
    "metadata-content-missing": "003-metadata-preferred",
    "parsely-metadata": "003-metadata-preferred",
    "rtl-2": "rtl-1",
    "rtl-3": "rtl-1",
    "rtl-4": "rtl-1",
}
#: Pages of those sets that are one page saved twice: the later one is a duplicate by right.
SAVED_TWICE = {
    "html/coolhunting.com2.html": "html/coolhunting.com1.html",  # byte-identical
    "thepaper/4.html": "thepaper/2.html",  # the same article
    "lifehacker-working/source.html": "lifehacker-post-comment-load/source.html",  # the same article
    "missing-paragraphs/source.html": "hidden-nodes/source.html",  # a fixture and its variant
    "content/test_articlebody_itemprop.html": "content/test_articlebody_attribute.html",  # goose3's copies
    "content/test_articlebody_tag.html": "content/test_articlebody_attribute.html",
    "content/test_bbc_chinese.html": "html/chinese_article.html",
    "content/test_businessWeek4.html": "content/test_businessWeek1.html",
    "content/test_cnn_arabic.html": "html/arabic_article.html",
    "content/test_gizmodo2.html": "content/test_gizmodo1.html",
    "content/test_gizmodo3.html": "content/test_gizmodo1.html",
    "content/test_marketplace.html": "content/test_get_canonical_url.html",
}


def serve(root: Path, pages: dict[str, bytes]) -> list[str]:
    """Write ``pages`` (path -> body) under ``root``; returns their paths in order."""
    for path, body in pages.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(body)
    return list(pages)


@pytest.mark.heavy
def test_an_exact_copy_of_every_shared_page_is_dropped_and_no_original(site: tuple[Path, str], crawl: Callable) -> None:
    """398 real pages, then a byte-identical copy of each under another URL (short pages too).  Of the fixtures of
    one sample article under many names, those named alike are dropped, the others only where nearly all their text
    agrees (``policy.NAMED_APART_SIMILARITY``), and never as a copy of another page."""
    root, base_url = site
    originals = {f"{page.parent.name}/{page.name}": page.read_bytes() for page in extraction_set_pages(shared_data())}
    assert len(originals) == 398
    paths = serve(root, originals) + serve(root, {f"copies/{path}": body for path, body in originals.items()})
    result = crawl([base_url + path for path in paths], PIPELINE_ONLY)
    dropped = {short(d["url"], base_url): short(d["duplicate_of"], base_url) for d in result["dropped"]}
    originals_dropped = {path: kept for path, kept in dropped.items() if not path.startswith("copies/")}
    fixtures = {f"{name}/source.html" for name in ("003-metadata-preferred", *SAMPLE_ARTICLE_FIXTURES)}
    assert {path: kept for path, kept in originals_dropped.items() if path not in fixtures} == SAVED_TWICE
    assert {originals_dropped[path] for path in fixtures & set(originals_dropped)} <= fixtures
    assert {
        f"{name}/source.html": f"{kept}/source.html" for name, kept in SAMPLE_ARTICLE_SAME_NAME.items()
    }.items() <= originals_dropped.items()
    uncomparable = {"html/google_meta_refresh.html", "html/readwrite.com1.html"}  # no visible word at all
    assert {path for path in dropped if path.startswith("copies/")} == {
        f"copies/{path}" for path in originals if path not in uncomparable
    }
    assert result["stats"]["simhash_dedup/short_text"] >= 2 * 10  # short pages and their copies were compared


@pytest.mark.heavy
def test_sites_built_inside_one_form_keep_every_article(site: tuple[Path, str], crawl: Callable) -> None:
    """Every page re-templated as ASP.NET does: the body inside one <form>, a 40-word notice outside it."""
    root, base_url = site
    pages = {
        f"{page.parent.name}/{page.name}": wrap_in_form(page.read_bytes(), language)
        for _, language, group in site_groups(shared_data())
        for page in group
    }
    paths = serve(root, pages) + serve(root, {f"copies/{path}": body for path, body in pages.items()})
    result = crawl([base_url + path for path in paths], PIPELINE_ONLY)
    dropped = {short(d["url"], base_url): short(d["duplicate_of"], base_url) for d in result["dropped"]}
    same_article = {"html/coolhunting.com2.html": "html/coolhunting.com1.html", "thepaper/4.html": "thepaper/2.html"}
    assert {path: kept for path, kept in dropped.items() if not path.startswith("copies/")} == same_article
    assert {path for path in dropped if path.startswith("copies/")} == {f"copies/{path}" for path in pages}


def test_hidden_text_never_gets_another_page_dropped(site: tuple[Path, str], crawl: Callable) -> None:
    """Pages that show a few words and hold an article's text hidden, then the article itself."""
    root, base_url = site
    victim = real_page("newspaper-theatlanticcities.com1")
    body = victim[victim.index(b"<body") : victim.rindex(b"</body>")]
    body = body[body.index(b">") + 1 :]
    shown = "<p>Welcome to our page about travel, penguins and health, with news every single day of the week.</p>"
    pages = {
        f"hidden/{n}.html": f"<html><body>{shown}<div {hide}>".encode() + body + b"</div></body></html>"
        for n, hide in enumerate(["hidden", 'aria-hidden="true"', 'style="display: none"'])
    }
    paths = serve(root, pages | {"article.html": victim})
    result = crawl([base_url + path for path in paths], PIPELINE_ONLY)
    assert sorted(short(url, base_url) for url in result["kept"]) == sorted(["hidden/0.html", "article.html"])
    assert {short(d["url"], base_url) for d in result["dropped"]} == {"hidden/1.html", "hidden/2.html"}


def test_a_crawl_says_what_it_kept_and_dropped_and_warns_of_a_site_dropped_as_near_duplicates(
    site: tuple[Path, str], crawls: Callable
) -> None:
    """At its close a crawl logs its pages kept and dropped by rule; a site of which more than half the compared
    pages were dropped as near-duplicates (a word changed in each: not copies of a kept page's text) gets one
    WARNING that names it and the report; copies of one page under many addresses do not."""
    root, base_url = site
    article = real_page("newspaper-theatlanticcities.com1")
    (root / "article.html").write_bytes(article)
    for n in range(24):
        (root / f"near-{n}.html").write_bytes(article.replace(b"Isolation has left", b"Isolation %d has left" % n, 1))
        (root / f"copy-{n}.html").write_bytes(article)
    near = [f"{base_url}article.html", *(f"{base_url}near-{n}.html" for n in range(24))]
    copies = [f"{base_url}article.html", *(f"{base_url}copy-{n}.html" for n in range(24))]
    results, log = crawls(
        [
            {
                "urls": urls,
                "yield_html": False,
                "spider_name": name,
                "settings": {"ADDONS": {"scrapy_simhash_dedup.SimhashDedupAddon": 0}},
            }
            for name, urls in (("near", near), ("copies", copies))
        ]
    )
    assert [len(result["kept"]) for result in results] == [1, 1]
    assert log.count("simhash_dedup: 1 pages kept, 24 dropped as near-duplicates (content 24)") == 2
    warnings = [line for line in log.splitlines() if "WARNING" in line and "simhash_dedup" in line]
    assert len(warnings) == 1, warnings
    assert "96 % of the pages of 127.0.0.1 (24 of 25) were dropped as near-duplicates" in warnings[0]
    assert "simhash-dedup report" in warnings[0] and "seen-0.sqlite" in warnings[0]


def test_a_page_fetched_again_at_its_url_is_not_called_a_near_duplicate_of_itself(
    site: tuple[Path, str], crawl: Callable
) -> None:
    """A start URL that a page links to is fetched again (Scrapy's start requests skip its duplicate filter; here
    the spider asks for it twice): its items, passed on the first time, are dropped as fetched again, logged once
    as Scrapy's duplicate filter logs (the rest counted in ``pages_dropped/refetched``), never as a near-duplicate
    of itself; its links are not "not followed"; the other drops are as without it."""
    root, base_url = site
    paths = write_known_duplicates(root)
    first = base_url + paths[0]
    urls = [base_url + p for p in paths] + [first, first]
    result = crawl(urls, {"ADDONS": {"scrapy_simhash_dedup.SimhashDedupAddon": 0}, "LOG_LEVEL": "DEBUG"})
    stats = result["stats"]
    assert stats["simhash_dedup/pages_dropped/refetched"] == 2
    assert stats["simhash_dedup/pages_dropped"] == len(EXPECTED_DROPS) + 2
    others = {
        short(d["url"], base_url): short(d["duplicate_of"], base_url) for d in result["dropped"] if d["url"] != first
    }
    assert others == EXPECTED_DROPS
    log = result["log"]
    assert not re.search(rf"near-duplicate of {re.escape(first)} \([^)]*\): {re.escape(first)}", log)
    said = re.findall(
        rf"fetched again, its items were passed on at its first fetch in this crawl: {re.escape(first)}.*", log
    )
    assert len(said) == 1 and "no more such drops will be shown" in said[0], said
    assert "link not followed" not in log and "simhash_dedup/links_skipped" not in stats


def test_a_request_says_not_to_filter_its_page_or_never_to_drop_it(
    site: tuple[Path, str], crawl: Callable, tmp_path: Path
) -> None:
    """``Request.meta``: ``simhash_dedup = False`` lets a page's items through as they are, neither compared nor
    remembered; ``simhash_dedup_never_drop = True`` compares the page but keeps it, counted, and logged as a
    borderline keep with the reason ``never_dropped`` (what the report shows). The other pages are decided as
    without them."""
    from scrapy_simhash_dedup.report import load_log

    root, base_url = site
    paths = write_known_duplicates(root)
    urls = [base_url + p for p in paths]
    mirror, zh_copy = base_url + "mirror/kwanzaa.html", base_url + "zh/1-copy.html"
    result = crawl(
        urls,
        {"ADDONS": {"scrapy_simhash_dedup.SimhashDedupAddon": 0}},
        meta={mirror: {"simhash_dedup_never_drop": True}, zh_copy: {"simhash_dedup": False}},
    )
    stats = result["stats"]
    dropped = {short(d["url"], base_url): short(d["duplicate_of"], base_url) for d in result["dropped"]}
    assert dropped == {"news/kwanzaa-updated.html": "news/kwanzaa.html"}
    assert {mirror, zh_copy} <= set(result["kept"])
    assert stats["simhash_dedup/never_dropped"] == 1 and stats["simhash_dedup/not_filtered"] == 1
    assert stats["simhash_dedup/checked"] == len(paths) - 1  # the page not filtered is not checked
    never = [d for d in load_log(str(tmp_path / "seen.sqlite")).decisions if d.url == mirror]
    assert [(d.outcome, d.reason, d.kept_url) for d in never] == [("borderline", "never_dropped", urls[0])]


def test_dedup_reads_scrapy_s_http_cache_and_keeps_what_the_crawl_kept(
    site: tuple[Path, str], crawl: Callable, tmp_path: Path
) -> None:
    """A real crawl with Scrapy's HTTP cache on (filesystem storage, gzipped) writes its responses; ``simhash-dedup
    dedup HTTPCACHE_DIR`` reads them in the order they were fetched (never unpickling the cache's pickles) and keeps
    the pages the crawl kept."""
    import subprocess
    import sys

    root, base_url = site
    paths = write_known_duplicates(root)
    cache = tmp_path / "httpcache"
    settings = {"HTTPCACHE_ENABLED": True, "HTTPCACHE_DIR": str(cache), "HTTPCACHE_GZIP": True}
    result = crawl([base_url + p for p in paths], {"ADDONS": {"scrapy_simhash_dedup.SimhashDedupAddon": 0}, **settings})
    assert_expected_drops(result, paths, base_url)
    assert list(cache.rglob("pickled_meta")), "the crawl wrote its cache"
    for pickled in cache.rglob("pickled_meta"):  # never read: a pickle can run code
        pickled.write_bytes(b"not a pickle")
    kept = tmp_path / "kept.jsonl"
    command = Path(sys.executable).parent / "simhash-dedup"
    done = subprocess.run(
        [str(command), "dedup", str(cache), "-o", str(kept), "--no-progress"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert sorted(json.loads(line)["url"] for line in kept.read_text().splitlines()) == sorted(result["kept"])
