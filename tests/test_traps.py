"""Crawl traps: the links of near-duplicate pages and the URL rules, in real crawls of the trap site."""

from __future__ import annotations

import pytest
import redis

from bench.common import lost
from bench.quality.traps import crawl as crawl_site
from crawler.trap_site import TrapSite, serve_trap_site
from scrapy_simhash_dedup.stores.redis.keys import remove_redis_store
from scrapy_simhash_dedup.stores.redis.log import read_redis_rules
from scrapy_simhash_dedup.stores.sqlite.readers import read_rules

GUARDED = {"SIMHASH_DEDUP_SKIP_LINKS": True, "SIMHASH_DEDUP_URL_RULES": True, "SIMHASH_DEDUP_RULE_SUPPORT": 3}


def own_pages(base_url: str, site: TrapSite) -> list[tuple[str, str]]:
    return [(base_url + path, site.page(path)) for path in site.unique_paths()]


def test_the_links_of_near_duplicates_are_skipped_and_the_same_links_from_kept_pages_followed(trap_site, tmp_path):
    base_url, site = trap_site
    store = tmp_path / "seen.sqlite"
    unguarded = crawl_site(
        base_url + "/",
        {
            "SIMHASH_DEDUP_SKIP_LINKS": False,
            "SIMHASH_DEDUP_URL_RULES": False,
            "SIMHASH_DEDUP_PATH": str(tmp_path / "unguarded.sqlite"),
        },
        cap=400,
    )
    guarded = crawl_site(
        base_url + "/",
        {"SIMHASH_DEDUP_SKIP_LINKS": True, "SIMHASH_DEDUP_URL_RULES": False, "SIMHASH_DEDUP_PATH": str(store)},
        cap=400,
    )
    assert unguarded["stats"]["finish_reason"] == "closespider_pagecount", "without a guard the traps never end"
    assert guarded["stats"]["finish_reason"] == "finished"
    assert guarded["stats"]["downloader/request_count"] < unguarded["stats"]["downloader/request_count"] / 2
    assert lost(own_pages(base_url, site), guarded["kept"]) == []
    _, skips = read_rules(store)
    links = [skip for skip in skips if skip.kind == "link"]
    assert len(links) == guarded["stats"]["simhash_dedup/links_skipped"] > 0
    kept_urls = {url for url, _ in guarded["kept"]}
    assert not {skip.because for skip in links} & kept_urls, "only the links of dropped pages are skipped"
    assert not [skip for skip in links if skip.rule.endswith("; already requested")], "Scrapy's filter drops those"


def test_a_calendar_whose_months_are_in_the_path_and_named_apart_ends_on_its_own(tmp_path):
    """``/events/2026/01/``, "Events in January 2026": each empty month is kept (it names a month of its own), yet
    for the link guard it is the same page as the first empty month, so the calendar runs out of budget; a month
    with an event, which has content of its own, is another page and is kept."""
    from tests.conftest import trap_articles

    with serve_trap_site(trap_articles(), calendar="path") as (base_url, site):
        unguarded = crawl_site(
            base_url + "/",
            {
                "SIMHASH_DEDUP_SKIP_LINKS": False,
                "SIMHASH_DEDUP_URL_RULES": False,
                "SIMHASH_DEDUP_PATH": str(tmp_path / "unguarded.sqlite"),
            },
            cap=400,
        )
        guarded = crawl_site(
            base_url + "/",
            {
                "SIMHASH_DEDUP_SKIP_LINKS": True,
                "SIMHASH_DEDUP_URL_RULES": True,
                "SIMHASH_DEDUP_PATH": str(tmp_path / "seen.sqlite"),
            },
            cap=400,
        )
        own = own_pages(base_url, site)
    assert unguarded["stats"]["finish_reason"] == "closespider_pagecount", "without a guard the calendar never ends"
    assert guarded["stats"]["finish_reason"] == "finished"
    assert guarded["stats"]["downloader/request_count"] < unguarded["stats"]["downloader/request_count"] / 2
    assert lost(own, guarded["kept"]) == []
    assert guarded["stats"]["simhash_dedup/repeated_pages"] > 0
    months = [url for url, _ in guarded["kept"] if "/events/" in url]
    assert len(months) > 2, "empty months are kept: each names its own month"


def test_a_rule_is_learned_applied_and_kept_for_a_resumed_crawl(trap_site, tmp_path):
    base_url, site = trap_site
    job, store = tmp_path / "job", tmp_path / "job" / "seen.sqlite"
    paused = crawl_site(base_url + "/", {**GUARDED, "JOBDIR": str(job), "SIMHASH_DEDUP_PATH": str(store)}, cap=40)
    assert paused["stats"]["finish_reason"] == "closespider_pagecount"
    learned, _ = read_rules(store)
    resumed = crawl_site(base_url + "/", {**GUARDED, "JOBDIR": str(job), "SIMHASH_DEDUP_PATH": str(store)}, cap=2000)
    assert resumed["stats"]["finish_reason"] == "finished"
    rules, skips = read_rules(store)
    trusted = {(r.kind, r.name) for r in rules if r.refuted_by is None and r.support >= 3}
    assert ("param", "sid") in trusted
    support = {r.ident: r.support for r in rules}
    assert learned and all(support[r.ident] >= r.support for r in learned), "the resumed crawl went on from them"
    requests = [skip for skip in skips if skip.kind == "request"]
    assert requests and resumed["stats"].get("simhash_dedup/requests_skipped", 0) > 0
    assert all("does not change the page" in skip.rule or "=" in skip.rule for skip in requests)
    assert lost(own_pages(base_url, site), paused["kept"] + resumed["kept"]) == []


def test_a_rule_is_withdrawn_after_a_counterexample(trap_site, crawl, tmp_path):
    """The calendar's empty months teach "month does not change the page"; a month with an event, kept,
    refutes it."""
    base_url, _ = trap_site
    months = ["2026-01", "2026-02", "2026-03", "2026-04", "2026-06"]
    store = tmp_path / "seen.sqlite"
    result = crawl(
        [f"{base_url}/calendar?month={m}" for m in months],
        {**GUARDED, "ADDONS": {"scrapy_simhash_dedup.SimhashDedupAddon": 0}, "SIMHASH_DEDUP_PATH": str(store)},
    )
    assert len(result["dropped"]) == 3 and len(result["kept"]) == 2
    assert "URL rule trusted after 3 pairs" in result["log"] and "URL rule withdrawn" in result["log"]
    (month,) = [r for r in read_rules(store)[0] if r.name == "month"]
    assert (
        month.support == 3
        and month.refuted_by == f"{base_url}/calendar?month=2026-01 {base_url}/calendar?month=2026-06"
    )
    assert result["stats"]["simhash_dedup/rules"] == 0


def test_rules_and_skips_are_kept_in_redis(trap_site, redis_url):
    base_url, site = trap_site
    key = "traps:simhash_dedup"
    client = redis.Redis.from_url(redis_url)
    remove_redis_store(client, key)
    result = crawl_site(
        base_url + "/", {**GUARDED, "SIMHASH_DEDUP_REDIS_URL": redis_url, "SIMHASH_DEDUP_REDIS_KEY": key}, cap=2000
    )
    assert result["stats"]["finish_reason"] == "finished"
    assert lost(own_pages(base_url, site), result["kept"]) == []
    rules, skips = read_redis_rules(client, key)
    assert ("param", "sid") in {(r.kind, r.name) for r in rules if r.support >= 3 and r.refuted_by is None}
    assert {skip.kind for skip in skips} == {"link", "request"}
    assert len(skips) == (
        result["stats"]["simhash_dedup/links_skipped"] + result["stats"]["simhash_dedup/requests_skipped"]
    )


def test_the_report_lists_the_rules_and_what_was_not_followed(trap_site, tmp_path):
    from scrapy_simhash_dedup.report.log import load_log
    from scrapy_simhash_dedup.report.render import render

    base_url, _ = trap_site
    store = tmp_path / "seen.sqlite"
    crawl_site(base_url + "/", {**GUARDED, "SIMHASH_DEDUP_PATH": str(store)}, cap=2000)
    log = load_log(str(store))
    html = render(log)
    assert "<h2>URL rules</h2>" in html and "query parameter &#x27;sid&#x27; does not change the page" in html
    assert "trusted" in html and "withdrawn" in html  # "month" is refuted by the calendar's event months
    assert "<h2>Not followed</h2>" in html
    assert f"{sum(s.kind == 'link' for s in log.skips):,} links of near-duplicate pages" in html


@pytest.mark.parametrize("url", ["http://a.test:abc/x", "http://[::1/x", "http://a.test:99999/", "", "not a url"])
def test_a_url_that_cannot_be_parsed_never_raises_and_never_gets_a_rule(url):
    """An item's URL field can hold anything: the pipeline learns from it, the guards read it."""
    from scrapy_simhash_dedup.guards.traps import KnownUrls, LinkGuard, RuleBook, url_shape

    book = RuleBook(support=1)
    book.kept("http://a.test/x")
    known, guard = KnownUrls(book), LinkGuard(book, budget=1)
    known.add(url)
    guard.page_decided(url, duplicate=True)
    assert book.kept(url) == [] and known.find(url) in (None, url) and book.applying(url) == []
    assert guard.covered(url) is None  # no host ("", "not a url"): itself at most, left to Scrapy's filter
    url_shape(url)
    assert book.learn(url, "http://a.test/x") == book.learn("http://a.test/x?sid=1", url) == []
    assert book.trusted() == []


def test_requests_a_failing_callback_yielded_before_any_item_still_go_on():
    """As without the link guard: Scrapy schedules what a callback yielded before it raised."""
    import asyncio

    from scrapy import Request
    from scrapy.http import HtmlResponse
    from scrapy.utils.test import get_crawler

    from scrapy_simhash_dedup.crawl.middleware import SimhashDedupSpiderMiddleware
    from scrapy_simhash_dedup.crawl.pipeline import SimhashDedupPipeline

    async def callback():
        yield Request("https://a.test/next")
        raise RuntimeError("the spider's bug")

    async def run() -> tuple[list, Exception | None]:
        crawler = get_crawler(settings_dict={"SIMHASH_DEDUP_BACKEND": "memory", "SIMHASH_DEDUP_WORKERS": 0})
        middleware = SimhashDedupSpiderMiddleware.from_crawler(crawler)
        middleware.pipeline = SimhashDedupPipeline.from_crawler(crawler)  # the link guard on: requests are held
        out = []
        try:
            async for output in middleware.process_spider_output(HtmlResponse("https://a.test/"), callback()):
                out.append(output)
        except RuntimeError as error:
            return out, error
        return out, None

    out, error = asyncio.run(run())
    assert [request.url for request in out] == ["https://a.test/next"] and str(error) == "the spider's bug"


def test_a_url_shape_keeps_the_folders_and_the_parameter_names():
    from scrapy_simhash_dedup.guards.traps import url_shape

    assert (
        url_shape("http://a.test/cs-CZ/sect.apt.html")
        == url_shape("http://a.test/cs-CZ/index.html")
        == "a.test/cs-CZ/?"
    )
    assert url_shape("http://a.test/en-US/sect.apt.html") != url_shape("http://a.test/cs-CZ/sect.apt.html")
    assert (
        url_shape("http://a.test/calendar?month=2026-01")
        == url_shape("http://a.test/calendar?month=2031-12")
        == "a.test/?month"
    )
    assert url_shape("http://a.test/2024/05/story") == url_shape("http://a.test/2019/other") == "a.test/N/?"
    assert url_shape("http://a.test/mirror/mirror/mirror/a") == url_shape("http://a.test/mirror/a") == "a.test/mirror/?"
    assert url_shape("http://a.test/a?sid=1&b=2") == url_shape("http://a.test/b?b=3&sid=9") == "a.test/?b&sid"
    assert url_shape("http://www.a.test:8080/x;jsessionid=1/y") == "a.test:8080/x/?"


def test_a_shape_is_spent_by_near_duplicates_in_a_row_and_restored_by_a_unique_page():
    from scrapy_simhash_dedup.guards.traps import LinkGuard

    guard = LinkGuard(None, budget=3)
    months = [f"http://a.test/calendar?month=2026-{n:02d}" for n in range(1, 13)]
    for month in months[:2]:
        guard.page_decided(month, duplicate=True)
    assert guard.covered(months[5]) is None
    guard.page_decided(months[2], duplicate=True)
    assert guard.covered(months[5]) == "its URL shape a.test/?month led to 3 near-duplicates in a row"
    assert guard.covered(months[1]) is None, "already requested: Scrapy's duplicate filter drops it, not the guard"
    assert guard.covered(months[1] + "#top") is None
    guard.page_decided(months[3], duplicate=False)  # a month with an event
    assert guard.covered(months[5]) is None
    assert guard.covered("http://a.test/news/calendar?month=2026-05") is None  # another shape


def test_known_urls_are_found_again_through_the_rules_trusted_since():
    from scrapy_simhash_dedup.guards.traps import KnownUrls, RuleBook

    rules = RuleBook(support=2)
    known = KnownUrls(rules)
    known.add("http://a.test/article/1")
    assert known.find("http://a.test/article/1#top") == "http://a.test/article/1"
    assert known.find("http://a.test/article/1?sid=ab") is None
    rules.learn("http://a.test/article/2?sid=cd", "http://a.test/article/2")
    rules.learn("http://a.test/article/3?sid=ef", "http://a.test/article/3")  # "sid" trusted
    assert known.find("http://a.test/article/1?sid=ab") == "http://a.test/article/1"
    assert known.find("http://b.test/article/1?sid=ab") is None  # rules belong to their host
