"""Canonical URLs and aliases: what a kept item is known by (from its declared canonical URL, its URL and the URL
rules), and every URL that names it, in the store, the export and the report."""

from __future__ import annotations

import csv
import dataclasses
import json
import logging
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import lxml.etree
import pytest
import redis
import scrapy

from bench.common import declared_in_html
from bench.quality.traps import crawl as crawl_site
from crawler.trap_site import CANONICAL_KINDS, serve_trap_site
from scrapy_simhash_dedup import Fingerprinter, cli
from scrapy_simhash_dedup.crawl.settings import DedupSettings
from scrapy_simhash_dedup.fingerprint.declared import declared_in_header
from scrapy_simhash_dedup.guards.canonical import CanonicalUrls, looks_canonical
from scrapy_simhash_dedup.guards.traps import RuleBook
from scrapy_simhash_dedup.matching.policy import Policy
from scrapy_simhash_dedup.report.aliases import AliasRow, alias_rows, canonical_names
from scrapy_simhash_dedup.report.log import load_log
from scrapy_simhash_dedup.report.render import render
from scrapy_simhash_dedup.stores.records import CANONICAL, DROPPED, RULE, Alias, Decision
from scrapy_simhash_dedup.stores.redis.keys import remove_redis_store
from scrapy_simhash_dedup.stores.redis.log import read_redis_aliases, read_redis_log
from scrapy_simhash_dedup.stores.sqlite.readers import read_aliases, read_log
from scrapy_simhash_dedup.stores.sqlite.store import SqliteStore

from .conftest import trap_articles
from .pages import real_page
from .test_pipeline import make_pipeline, process, run, stat

ADDON = {"ADDONS": {"scrapy_simhash_dedup.SimhashDedupAddon": 0}}
GUARDED = {"SIMHASH_DEDUP_SKIP_LINKS": True, "SIMHASH_DEDUP_URL_RULES": True, "SIMHASH_DEDUP_RULE_SUPPORT": 3}
ARTICLES = [
    real_page(name)
    for name in (
        "newspaper-syracuse.com1",
        "newspaper-syracuse.com2",
        "newspaper-theatlanticcities.com1",
        "newspaper-theatlanticcities.com2",
    )
]


def declaring(html: bytes, href: str) -> bytes:
    """The page with ``<link rel="canonical" href=...>`` in its head."""
    return html.replace(b"<head>", f'<head><link rel="canonical" href="{href}">'.encode(), 1)


def head(markup: str) -> lxml.etree._Element:
    return lxml.etree.fromstring(f"<html><head>{markup}</head><body><p>text</p></body></html>", lxml.etree.HTMLParser())


def test_the_declared_canonical_is_read_from_the_head_as_search_engines_read_it() -> None:
    assert declared_in_html(head('<link rel="canonical" href=" /a?b=1 ">')) == "/a?b=1"
    assert declared_in_html(head('<link rel="Canonical alternate" href="/a">')) == "/a"
    assert (
        declared_in_html(
            head('<link rel="alternate" href="/x"><link rel="canonical" href="/a"><link rel="canonical" href="/b">')
        )
        == "/a"
    ), "the first one"
    assert (
        declared_in_html(head('<base href="https://a.test/dir/"><link rel="canonical" href="page">'))
        == "https://a.test/dir/page"
    )
    assert declared_in_html(head('<link rel="canonical" href="">')) is None
    assert declared_in_html(head('<link rel="stylesheet" href="/s.css">')) is None
    body_only = lxml.etree.fromstring(
        '<html><body><link rel="canonical" href="/a"></body></html>', lxml.etree.HTMLParser()
    )
    assert declared_in_html(body_only) is None, "a canonical link in the body is not the page's"


def test_the_declared_canonical_is_read_from_link_headers() -> None:
    assert declared_in_header([b'<https://a.test/p>; rel="canonical"']) == "https://a.test/p"
    assert (
        declared_in_header([b"<https://a.test/x.css>; rel=preload, <https://a.test/p>; rel=canonical"])
        == "https://a.test/p"
    )
    assert declared_in_header([b'<https://a.test/p>; rel="alternate"; hreflang=de']) is None
    assert declared_in_header([b"garbage", b'<>; rel="canonical"']) is None


def test_a_believable_declared_canonical_names_the_page_and_others_do_not() -> None:
    names = CanonicalUrls(None)
    assert names.choose("https://a.test/story?ref=1", "/story") == ("https://a.test/story", "declared", False)
    assert names.choose("https://www.a.test/b", "https://a.test/b").url == "https://a.test/b", "www. aside"
    for declared in ("https://other.test/c", "javascript:void(0)", "mailto:x@a.test", "http://[::1"):
        assert names.choose("https://a.test/c", declared) == ("https://a.test/c", "doubted", False)
    assert names.choose("https://a.test/d", None) == ("https://a.test/d", "fetched", False)
    assert names.choose("http://[::1", "/x").url == "http://[::1", "a URL that cannot be parsed is its own name"


def test_a_canonical_that_many_pages_share_names_none_of_them_after_the_first() -> None:
    names = CanonicalUrls(None)
    assert names.choose("https://a.test/", "https://a.test/").url == "https://a.test/"
    for page in ("https://a.test/1", "https://a.test/2"):
        assert names.choose(page, "https://a.test/") == (page, "doubted", False), "the home page is kept apart"
    names = CanonicalUrls(None)
    names.choose("https://a.test/3", "/all")  # the first page cannot be told from a true one
    assert names.choose("https://a.test/4", "/all") == ("https://a.test/4", "doubted", False)


def test_trusted_url_rules_clean_a_canonical_that_echoes_a_variant_and_a_page_without_one() -> None:
    rules = RuleBook(support=2)
    names = CanonicalUrls(rules)
    assert names.choose("https://a.test/p?sid=1", "https://a.test/p?sid=1").url == "https://a.test/p?sid=1"
    rules.learn("https://a.test/p?sid=2", "https://a.test/p?sid=1")
    rules.learn("https://a.test/q?sid=2", "https://a.test/q?sid=1")
    assert names.choose("https://a.test/r/?sid=3&x=1", "https://a.test/r/?sid=3&x=1") == (
        "https://a.test/r/?x=1",
        "declared",
        True,
    )
    assert names.choose("https://a.test/s?x=1&sid=4", None) == ("https://a.test/s?x=1", "fetched", True)
    assert names.choose("https://a.test/t?sid=5", "/t") == ("https://a.test/t", "declared", False)


def test_a_canonical_is_doubted_by_what_the_rules_make_of_it() -> None:
    """A declared URL that the trusted rules clean into another kept page's URL names nothing."""
    rules = RuleBook(support=1)
    rules.learn("https://a.test/?sid=2", "https://a.test/?sid=1")
    names = CanonicalUrls(rules)
    assert names.choose("https://a.test/", None).url == "https://a.test/"
    assert names.choose("https://a.test/a", "https://a.test/?sid=7") == ("https://a.test/a", "doubted", False)
    assert names.choose("https://a.test/b?sid=3", "/b?sid=3") == ("https://a.test/b", "declared", True)
    assert names.choose("https://a.test/c", "/b?sid=4").source == "doubted", "the canonical URL of another kept page"


def test_a_broken_base_leaves_the_page_fingerprinted_and_its_canonical_relative() -> None:
    html = (
        b'<html><head><base href="http://[::1/"><link rel="canonical" href="/a"></head><body><p>'
        + b"word " * 60
        + b"</p></body></html>"
    )
    fingerprint = Fingerprinter().fingerprint(html, "https://a.test/x")
    assert fingerprint.problem is None and fingerprint.canonical == "/a"


def test_items_get_their_page_s_canonical_url_unless_the_spider_gave_one() -> None:
    pipeline = make_pipeline()
    kept = process(pipeline, {"url": "https://a.test/story?utm_source=x", "html": declaring(ARTICLES[0], "/story")})
    assert kept["canonical_url"] == "https://a.test/story"
    kept = process(pipeline, {"url": "https://a.test/other", "html": ARTICLES[1], "canonical_url": "https://a.test/o"})
    assert kept["canonical_url"] == "https://a.test/o"
    assert (stat(pipeline, "canonical/declared"), stat(pipeline, "canonical/fetched")) == (1, 1)
    assert "canonical_url" not in process(
        make_pipeline(SIMHASH_DEDUP_CANONICAL_FIELD=""), {"url": "https://a.test/", "html": ARTICLES[0]}
    )
    named = process(
        make_pipeline(SIMHASH_DEDUP_CANONICAL_FIELD="address"), {"url": "https://a.test/", "html": ARTICLES[0]}
    )
    assert named["address"] == "https://a.test/"


def test_an_item_class_without_the_field_is_kept_counted_and_told_about_once(caplog: pytest.LogCaptureFixture) -> None:
    class Narrow(scrapy.Item):
        url = scrapy.Field()
        html = scrapy.Field()

    @dataclasses.dataclass(frozen=True)
    class Frozen:
        url: str
        html: bytes
        canonical_url: str | None = None

    pipeline = make_pipeline()
    with caplog.at_level(logging.INFO, logger="scrapy_simhash_dedup.crawl.items"):
        for n, html in enumerate(ARTICLES[:2]):
            item = Narrow(url=f"https://a.test/{n}", html=html)
            assert process(pipeline, item) is item
        frozen = Frozen("https://a.test/2", ARTICLES[2])
        assert run(pipeline.process_item(frozen)) is frozen  # (``process`` would set its HTML field)
    assert stat(pipeline, "canonical_field_missing") == 3 and stat(pipeline, "items_kept") == 3
    told = [r for r in caplog.records if "canonical_field_missing" in r.getMessage()]
    assert len(told) == 1 and "SIMHASH_DEDUP_CANONICAL_FIELD" in told[0].getMessage()


def test_a_template_that_points_every_page_at_the_home_page_names_no_page_after_it(
    site: tuple[Path, str], crawl: Callable
) -> None:
    root, base_url = site
    (root / "index.html").write_bytes(
        declaring(
            b"<html><head><title>Home</title></head><body><h1>Welcome</h1>"
            b"<p>The articles of this site.</p></body></html>",
            "/index.html",
        )
    )
    for n, article in enumerate(ARTICLES):
        (root / f"{n}.html").write_bytes(declaring(article, "/index.html"))
    urls = [base_url + "index.html", *(f"{base_url}{n}.html" for n in range(len(ARTICLES)))]
    result = crawl(urls, ADDON, yield_html=False)
    assert result["kept"] == urls
    assert result["canonical"] == {url: url for url in urls}
    assert result["stats"]["simhash_dedup/canonical/doubted"] == len(ARTICLES)


def test_articles_met_first_under_trap_urls_carry_their_real_address(trap_site, crawl: Callable) -> None:
    """Articles reached only through session URLs, in a fixed order: each of the first three is met twice, which
    teaches the rule "sid does not change the page" (3 pairs); then one article of each kind of declared
    canonical is met under a session URL: the right one is taken as it is, one that echoes the session URL and
    a missing one give the URL cleaned by the rule."""
    base_url, site = trap_site
    kinds = {
        kind: next(n for n in range(3, len(site.articles)) if CANONICAL_KINDS[n % 10] == kind)
        for kind in ("right", "echo", "none")
    }
    first = [f"{base_url}/article/{n}?sid={sid}" for n in range(3) for sid in ("a", "b")]
    then = [f"{base_url}/article/{n}?sid=z" for n in kinds.values()]
    result = crawl(first + then, {**ADDON, "SIMHASH_DEDUP_RULE_SUPPORT": 3}, yield_html=False)
    assert result["kept"] == first[::2] + then
    assert result["stats"]["simhash_dedup/rules"] >= 1
    for url in result["kept"]:
        assert result["canonical"][url] == base_url + site.canonical_path(url.removeprefix(base_url)), url
    stats = result["stats"]
    assert (
        stats["simhash_dedup/canonical/cleaned"] == 2 and stats["simhash_dedup/canonical/declared"] == 3 + 2
    )  # the first three, the right one and the echo


def test_aliases_name_the_kept_page_through_rule_skips_and_carry_its_canonical_url() -> None:
    aliases = [
        Alias(1, "https://a.test/s", "https://a.test/s?sid=1", CANONICAL),
        Alias(2, "https://a.test/s?sid=2", "https://a.test/s?sid=1", "content"),
        Alias(3, "https://a.test/s?sid=3&x", "https://a.test/s?sid=2", RULE),
        Alias(4, "https://a.test/t?utm=1", "https://a.test/t", "exact_text"),
    ]
    assert alias_rows(aliases) == [
        AliasRow("https://a.test/s", "https://a.test/s", "https://a.test/s?sid=1", CANONICAL),
        AliasRow("https://a.test/s?sid=2", "https://a.test/s", "https://a.test/s?sid=1", "content"),
        AliasRow("https://a.test/s?sid=3&x", "https://a.test/s", "https://a.test/s?sid=1", RULE),
        AliasRow("https://a.test/t?utm=1", "https://a.test/t", "https://a.test/t", "exact_text"),
    ]
    looping = [
        Alias(1, "https://a.test/a", "https://a.test/b", RULE),
        Alias(2, "https://a.test/b", "https://a.test/a", RULE),
    ]
    assert len(alias_rows(looping)) == 2, "a loop of rule skips ends"
    kept_again = [
        Alias(1, "https://a.test/k", "https://a.test/j", "content"),  # k dropped by one crawl, kept by the next
        Alias(2, "https://a.test/d", "https://a.test/k", "content"),
    ]
    assert alias_rows(kept_again)[1].kept_url == "https://a.test/k", "a drop names the page it matched"


def test_a_store_names_no_page_it_never_wrote_and_the_log_keeps_older_drops(tmp_path: Path) -> None:
    store = SqliteStore(Policy(), tmp_path / "seen.sqlite", DedupSettings().scheme)
    fingerprinter = Fingerprinter()
    for n, html in enumerate(ARTICLES[:2]):
        store.check_and_add(f"https://a.test/{n}", fingerprinter.fingerprint(html))
    store.record(Alias(1, "https://a.test/0?copy", "https://a.test/0", "content"))
    store.record(Alias(2, "https://a.test/1?copy", "https://a.test/1", "content"))
    store.confirm(1)  # page 1's item got past every pipeline, page 0's never does
    store.close()
    assert [a.url for a in read_aliases(tmp_path / "seen.sqlite")] == ["https://a.test/1?copy"]
    older = Decision(0, DROPPED, "https://a.test/old", "https://a.test/1", "content", 1, None, 0.9, 0.65)
    log = load_log(str(tmp_path / "seen.sqlite"))
    log.decisions.append(older)
    assert [a.url for a in log.names()] == ["https://a.test/1?copy", "https://a.test/old"]


def _exported(arguments: list[str], path: Path) -> list[dict[str, str]]:
    assert cli.main([*arguments, "-o", str(path)]) == 0
    if path.suffix == ".csv":
        return list(csv.DictReader(path.open(encoding="utf-8")))
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def assert_aliases_name_the_crawl_s_kept_pages(
    rows: list[dict[str, str]], result: dict, dropped: set[str], base_url: str, site
) -> None:
    """Every alias names a kept page of the crawl's output under that page's canonical URL (the item's, or a
    better one for a page the crawl renamed as it learned the site), and the same page of the site; every
    dropped URL, rule skip and canonical URL is there (a URL once)."""
    kept = {url: name for (url, _), name in zip(result["kept"], result["canonical"])}
    reasons = Counter(row["reason"] for row in rows)
    stats = result["stats"]
    assert reasons[RULE] == stats["simhash_dedup/requests_skipped"] > 0
    assert len(dropped) == stats["simhash_dedup/pages_dropped"] and dropped <= {row["alias"] for row in rows}
    assert {name for url, name in kept.items() if name != url} <= {row["alias"] for row in rows} != set()
    assert len({row["alias"] for row in rows}) == len(rows)

    def page(url: str) -> str | None:
        return site.canonical_path(url.removeprefix(base_url))

    for row in rows:
        name = kept[row["kept_url"]]
        assert row["canonical"] == name or (
            looks_canonical(row["canonical"]) < looks_canonical(name) and page(row["canonical"]) == page(name)
        ), row
        assert page(row["alias"]) in (page(row["kept_url"]), None), row
    renamed = {row["kept_url"] for row in rows if row["canonical"] != kept[row["kept_url"]]}
    assert len(renamed) <= stats.get("simhash_dedup/canonical/renamed", 0)


def test_the_aliases_of_every_kept_page_are_in_the_store_the_export_and_the_report(trap_site, tmp_path) -> None:
    base_url, site = trap_site
    store = tmp_path / "seen.sqlite"
    result = crawl_site(base_url + "/", {**GUARDED, "SIMHASH_DEDUP_PATH": str(store)}, cap=2000)
    rows = _exported(["aliases", str(store)], tmp_path / "aliases.csv")
    dropped = {d.url for d in read_log(store)[0] if d.outcome == DROPPED}
    assert_aliases_name_the_crawl_s_kept_pages(rows, result, dropped, base_url, site)
    assert rows == _exported(["aliases", str(store)], tmp_path / "aliases.jsonl"), "CSV and JSON Lines agree"
    html = render(load_log(str(store)))
    assert "known as" in html and "skipped by URL rules" in html


def test_the_aliases_are_kept_in_redis(trap_site, redis_url, tmp_path) -> None:
    base_url, site = trap_site
    key = "aliases:simhash_dedup"
    remove_redis_store(redis.Redis.from_url(redis_url), key)
    result = crawl_site(
        base_url + "/", {**GUARDED, "SIMHASH_DEDUP_REDIS_URL": redis_url, "SIMHASH_DEDUP_REDIS_KEY": key}, cap=2000
    )
    client = redis.Redis.from_url(redis_url)
    assert read_redis_aliases(client, key)
    rows = _exported(["aliases", redis_url, "--key", key], tmp_path / "aliases.jsonl")
    dropped = {d.url for d in read_redis_log(client, key)[0] if d.outcome == DROPPED}
    assert_aliases_name_the_crawl_s_kept_pages(rows, result, dropped, base_url, site)


def test_a_page_the_output_does_not_hold_leaves_no_alias(trap_site, crawl: Callable, tmp_path) -> None:
    """A later pipeline drops the items of one page: the store never names it (as it never remembers it), neither
    by its canonical URL nor by the URL of a copy of it."""
    base_url, _ = trap_site
    store = tmp_path / "seen.sqlite"
    urls = [f"{base_url}/article/1?sid=z", f"{base_url}/article/1?sid=y", f"{base_url}/article/2?sid=z"]
    settings = {
        **ADDON,
        "SIMHASH_DEDUP_PATH": str(store),
        "TEST_DROP_AT": "article/1",
        "ITEM_PIPELINES": {"tests.crawl_runner.DropSomeItems": 400},
    }
    result = crawl(urls, settings, yield_html=False)
    assert result["kept"] == urls[2:] and [d["url"] for d in result["dropped"]] == urls[:2]
    assert [(a.url, a.kept_url, a.reason) for a in read_aliases(store)] == [
        (f"{base_url}/article/2", urls[2], CANONICAL)
    ]


def test_a_site_s_other_host_name_is_learned_and_its_pages_named_on_the_site_s_host() -> None:
    """Pages met under the site's IP address declare their canonical URLs on its name: the first is doubted
    ("another host"), the second makes the two hosts one site (2 observations), which renames the first and
    names the next ones at once, a page without a declaration included (on the site's host)."""
    names = CanonicalUrls(None, learning=True)
    assert names.choose("http://127.0.0.1:8080/a", "http://news.test:8080/a").source == "doubted"
    assert names.take_renamed() == []
    assert names.choose("http://127.0.0.1:8080/b", "http://news.test:8080/b") == (
        "http://news.test:8080/b",
        "declared",
        False,
    )
    assert names.take_renamed() == [("http://127.0.0.1:8080/a", "http://news.test:8080/a")]
    assert names.choose("http://127.0.0.1:8080/c", None).url == "http://news.test:8080/c"
    assert names.choose("http://elsewhere.test/d", "http://news.test:8080/d").source == "doubted", "no other host"


def test_two_hosts_that_keep_different_pages_at_one_address_are_never_one_site() -> None:
    names = CanonicalUrls(None, learning=True)
    names.choose("http://a.test/x", None)
    names.choose("http://b.test/x", None)  # a different page at the same address: the hosts differ
    for page in ("y", "z"):
        names.choose(f"http://a.test/{page}", f"http://b.test/{page}")
    assert names.choose("http://a.test/w", "http://b.test/w").source == "doubted"
    names = CanonicalUrls(None, learning=True)  # a drop of a page of one host as a copy of the other's: evidence
    names.choose("http://a.test/x", None)
    names.kept_page_dropped("http://b.test/x", "http://a.test/x")
    names.choose("http://a.test/y", None)
    names.kept_page_dropped("http://b.test/y", "http://a.test/y")
    assert names.choose("http://b.test/z", "http://a.test/z").url == "http://a.test/z"


def test_a_rule_trusted_later_renames_the_pages_kept_before_it() -> None:
    rules = RuleBook(support=2)
    names = CanonicalUrls(rules, learning=True)
    assert names.choose("https://a.test/p?sid=1", None).url == "https://a.test/p?sid=1"
    assert names.choose("https://a.test/q?sid=1", "https://a.test/q?sid=1").url == "https://a.test/q?sid=1"
    names.choose("https://a.test/other", None)
    trusted = rules.learn("https://a.test/p?sid=2", "https://a.test/p?sid=1") + rules.learn(
        "https://a.test/q?sid=2", "https://a.test/q?sid=1"
    )
    names.rules_trusted(trusted)
    assert sorted(names.take_renamed()) == [
        ("https://a.test/p?sid=1", "https://a.test/p"),
        ("https://a.test/q?sid=1", "https://a.test/q"),
    ]


def test_a_page_without_a_canonical_is_named_by_the_copy_that_looks_canonical() -> None:
    """An English page met first in the Danish folder, then its copy in the English one; a page met first with
    tracking parameters, then without: each is named by its better address, in any order of its copies."""
    names = CanonicalUrls(None, learning=True)
    names.choose("https://h.test/da-DK/apt.html", None, ["en"])
    names.kept_page_dropped("https://h.test/fr-FR/apt.html", "https://h.test/da-DK/apt.html")
    assert names.take_renamed() == []
    names.kept_page_dropped("https://h.test/en-US/apt.html", "https://h.test/da-DK/apt.html")
    assert names.take_renamed() == [("https://h.test/da-DK/apt.html", "https://h.test/en-US/apt.html")]
    names.choose("https://h.test/da-DK/intro.html", None, ["da/nb"])
    names.kept_page_dropped("https://h.test/en-US/intro.html", "https://h.test/da-DK/intro.html")
    assert names.take_renamed() == [], "a Danish page stays in the Danish folder"
    names.choose("https://h.test/story?utm_source=feed&id=4", None, ["en"])
    names.kept_page_dropped("https://h.test/story?id=4", "https://h.test/story?utm_source=feed&id=4")
    assert names.take_renamed() == [("https://h.test/story?utm_source=feed&id=4", "https://h.test/story?id=4")]
    declared = CanonicalUrls(None, learning=True)
    declared.choose("https://h.test/da-DK/x.html", "/da-DK/x.html", ["en"])
    declared.kept_page_dropped("https://h.test/en-US/x.html", "https://h.test/da-DK/x.html")
    assert declared.take_renamed() == [], "a believable declared canonical URL is the page's name"


def test_a_renamed_page_has_its_last_name_in_the_store_s_alias_table(tmp_path: Path) -> None:
    store = SqliteStore(Policy(), tmp_path / "s.sqlite", DedupSettings().scheme)
    store.record(Alias(1, "https://a.test/p?sid=1&x=1", "https://a.test/p?sid=1", CANONICAL))
    store.record(Alias(2, "https://a.test/p", "https://a.test/p?sid=1", "content"))
    store.record(Alias(3, "https://a.test/p", "https://a.test/p?sid=1", CANONICAL))  # renamed
    store.close()
    rows = alias_rows(read_aliases(tmp_path / "s.sqlite"))
    assert {row.alias: row.canonical for row in rows} == {
        "https://a.test/p?sid=1&x=1": "https://a.test/p",
        "https://a.test/p": "https://a.test/p",
    }


def test_a_crawl_of_a_site_with_a_second_host_name_exports_every_article_under_its_real_address(tmp_path) -> None:
    """The trap site served as ``localhost`` with ``127.0.0.1`` as its other name, where some links lead:
    the crawl learns the two hosts are one site; its items name most articles by their real address (on the
    site's host), and the alias table, where pages kept before it learned are renamed, every one."""
    with serve_trap_site(trap_articles(), alias_host=True) as (base_url, site):
        store = tmp_path / "seen.sqlite"
        # one request at a time: which name of a page is met first is the order of its links, not of the responses
        result = crawl_site(
            base_url + "/",
            {**GUARDED, "SIMHASH_DEDUP_PATH": str(store), "CONCURRENT_REQUESTS": 1},
            cap=2000,
            hosts=site.alias.removeprefix("http://"),
        )
    articles = [
        (url, base_url + path)
        for url, _ in result["kept"]
        if (path := site.canonical_path(url.split("/", 3)[3] and "/" + url.split("/", 3)[3])) is not None
        and path.startswith("/article/")
    ]
    names = load_log(str(store)).names()
    assert len(articles) == len(site.articles) and any("127.0.0.1" in alias.url for alias in names), (
        "pages were met under the other name (kept, or dropped as copies: which, the order of responses says)"
    )
    exported = canonical_names(names)
    assert all(exported.get(url, url) == real for url, real in articles), [
        (url, exported.get(url), real) for url, real in articles if exported.get(url, url) != real
    ]
    named = dict(zip((url for url, _ in result["kept"]), result["canonical"]))
    assert sum(named[url] == real for url, real in articles) > len(articles) / 2
    assert result["stats"]["simhash_dedup/canonical/renamed"] > 0
