"""Canonical URLs: what a kept item is known by, from its declared canonical URL, its URL and the URL rules."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import lxml.etree
import pytest
import scrapy

from crawler.trap_site import CANONICAL_KINDS
from pipelines.canonical import CanonicalUrls, declared_in_header, declared_in_html
from pipelines.urlrules import RuleBook

from .pages import real_page
from .test_pipeline import make_pipeline, process, stat

ADDON = {"ADDONS": {"pipelines.SimhashDedupAddon": 0}}
ARTICLES = [real_page(name) for name in ("newspaper-syracuse.com1", "newspaper-syracuse.com2",
                                         "newspaper-theatlanticcities.com1", "newspaper-theatlanticcities.com2")]


def declaring(html: bytes, href: str) -> bytes:
    """The page with ``<link rel="canonical" href=...>`` in its head."""
    return html.replace(b"<head>", f'<head><link rel="canonical" href="{href}">'.encode(), 1)


def head(markup: str) -> lxml.etree._Element:
    return lxml.etree.fromstring(f"<html><head>{markup}</head><body><p>text</p></body></html>",
                                 lxml.etree.HTMLParser())


def test_the_declared_canonical_is_read_from_the_head_as_search_engines_read_it() -> None:
    assert declared_in_html(head('<link rel="canonical" href=" /a?b=1 ">')) == "/a?b=1"
    assert declared_in_html(head('<link rel="Canonical alternate" href="/a">')) == "/a"
    assert declared_in_html(head('<link rel="alternate" href="/x"><link rel="canonical" href="/a">'
                                 '<link rel="canonical" href="/b">')) == "/a", "the first one"
    assert declared_in_html(head('<base href="https://a.test/dir/"><link rel="canonical" href="page">')) \
        == "https://a.test/dir/page"
    assert declared_in_html(head('<link rel="canonical" href="">')) is None
    assert declared_in_html(head('<link rel="stylesheet" href="/s.css">')) is None
    body_only = lxml.etree.fromstring('<html><body><link rel="canonical" href="/a"></body></html>',
                                      lxml.etree.HTMLParser())
    assert declared_in_html(body_only) is None, "a canonical link in the body is not the page's"


def test_the_declared_canonical_is_read_from_link_headers() -> None:
    assert declared_in_header([b'<https://a.test/p>; rel="canonical"']) == "https://a.test/p"
    assert declared_in_header([b'<https://a.test/x.css>; rel=preload, <https://a.test/p>; rel=canonical']) \
        == "https://a.test/p"
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
    assert names.choose("https://a.test/r/?sid=3&x=1", "https://a.test/r/?sid=3&x=1") \
        == ("https://a.test/r/?x=1", "declared", True)
    assert names.choose("https://a.test/s?x=1&sid=4", None) == ("https://a.test/s?x=1", "fetched", True)
    assert names.choose("https://a.test/t?sid=5", "/t") == ("https://a.test/t", "declared", False)


def test_items_get_their_page_s_canonical_url_unless_the_spider_gave_one() -> None:
    pipeline = make_pipeline()
    kept = process(pipeline, {"url": "https://a.test/story?utm_source=x", "html": declaring(ARTICLES[0], "/story")})
    assert kept["canonical_url"] == "https://a.test/story"
    kept = process(pipeline, {"url": "https://a.test/other", "html": ARTICLES[1], "canonical_url": "https://a.test/o"})
    assert kept["canonical_url"] == "https://a.test/o"
    assert (stat(pipeline, "canonical/declared"), stat(pipeline, "canonical/fetched")) == (1, 1)
    assert "canonical_url" not in process(make_pipeline(SIMHASH_DEDUP_CANONICAL_FIELD=""),
                                          {"url": "https://a.test/", "html": ARTICLES[0]})
    named = process(make_pipeline(SIMHASH_DEDUP_CANONICAL_FIELD="address"), {"url": "https://a.test/", "html": ARTICLES[0]})
    assert named["address"] == "https://a.test/"


def test_an_item_class_without_the_field_is_kept_counted_and_told_about_once(caplog: pytest.LogCaptureFixture) -> None:
    class Narrow(scrapy.Item):
        url = scrapy.Field()
        html = scrapy.Field()

    pipeline = make_pipeline()
    with caplog.at_level(logging.INFO, logger="pipelines.pipeline"):
        for n, html in enumerate(ARTICLES[:2]):
            item = Narrow(url=f"https://a.test/{n}", html=html)
            assert process(pipeline, item) is item
    assert stat(pipeline, "canonical_field_missing") == 2 and stat(pipeline, "kept") == 2
    told = [r for r in caplog.records if "canonical_field_missing" in r.getMessage()]
    assert len(told) == 1 and "SIMHASH_DEDUP_CANONICAL_FIELD" in told[0].getMessage()


def test_a_template_that_points_every_page_at_the_home_page_names_no_page_after_it(
    site: tuple[Path, str], crawl: Callable
) -> None:
    root, base_url = site
    (root / "index.html").write_bytes(declaring(b"<html><head><title>Home</title></head><body><h1>Welcome</h1>"
                                                b"<p>The articles of this site.</p></body></html>", "/index.html"))
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
    kinds = {kind: next(n for n in range(3, len(site.articles)) if CANONICAL_KINDS[n % 10] == kind)
             for kind in ("right", "echo", "none")}
    first = [f"{base_url}/article/{n}?sid={sid}" for n in range(3) for sid in ("a", "b")]
    then = [f"{base_url}/article/{n}?sid=z" for n in kinds.values()]
    result = crawl(first + then, {**ADDON, "SIMHASH_DEDUP_RULE_SUPPORT": 3}, yield_html=False)
    assert result["kept"] == first[::2] + then
    assert result["stats"]["simhash_dedup/rules"] >= 1
    for url in result["kept"]:
        assert result["canonical"][url] == base_url + site.canonical_path(url.removeprefix(base_url)), url
    stats = result["stats"]
    assert stats["simhash_dedup/canonical/cleaned"] == 2 and stats["simhash_dedup/canonical/declared"] == 3 + 2  # the first three, the right one and the echo
