"""``SIMHASH_DEDUP_SCOPE``: in "site" and "host" scope every store decides exactly as one filter per site (memory,
SQLite with sites let go and read back, Redis; batch mode), and a crawl of several sites keeps what crawls of
each site alone keep."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import pytest
from scrapy.settings import Settings

from crawler.local_site import serve_directory
from scrapy_simhash_dedup.crawl.settings import DedupSettings
from scrapy_simhash_dedup.fingerprint.fingerprinter import Fingerprint
from scrapy_simhash_dedup.matching.policy import Policy, dropped
from scrapy_simhash_dedup.matching.scope import Scope, site_key
from scrapy_simhash_dedup.stores.base import Store
from scrapy_simhash_dedup.stores.memory import MemoryStore
from scrapy_simhash_dedup.stores.redis.connect import connect, redis_store
from scrapy_simhash_dedup.stores.redis.keys import remove_redis_store
from scrapy_simhash_dedup.stores.sqlite.store import SqliteStore

from . import test_batch
from .test_persistence import ARTICLES, write_clusters
from .test_redis import clusters

PIPELINE = {"ITEM_PIPELINES": {"scrapy_simhash_dedup.SimhashDedupPipeline": 300}}
#: Hosts of four sites: two hosts of example.com, a registrable domain under a two-label suffix, an address.
HOSTS = ["a.example.com", "b.example.com", "example.org", "shop.example.co.uk", "www.example.co.uk", "127.0.0.1:8080"]


def test_a_site_is_the_registrable_domain_by_the_public_suffix_list() -> None:
    site = {
        url: site_key(url, Scope.SITE)
        for url in [
            "https://docs.python.org/3/",
            "https://WWW.Python.org:443/about",
            "http://news.bbc.co.uk/a",
            "https://alice.github.io/x",
            "https://bob.github.io/y",
            "http://127.0.0.1:8080/a",
            "http://localhost/",
            "http://[::1]:8000/",
            "http://[bad/",
        ]
    }
    assert site["https://docs.python.org/3/"] == site["https://WWW.Python.org:443/about"] == "python.org"
    assert site["http://news.bbc.co.uk/a"] == "bbc.co.uk"
    assert site["https://alice.github.io/x"] == "alice.github.io" != site["https://bob.github.io/y"]  # private suffix
    assert site["http://127.0.0.1:8080/a"] == "127.0.0.1" and site["http://localhost/"] == "localhost"
    assert site["http://[::1]:8000/"] == "::1" and site["http://[bad/"] == ""
    assert site_key("https://docs.python.org/3/", Scope.HOST) == "docs.python.org"
    assert site_key("https://docs.python.org/3/", Scope.CRAWL) == ""


def pages_over_sites(seed: int) -> list[tuple[str, Fingerprint]]:
    """Clusters of near-duplicates whose pages are spread over the hosts: in crawl scope one page per cluster
    is kept, in site scope one per cluster and site."""
    rng, pages = random.Random(seed), []
    for cluster in clusters(40, 6, seed):
        for url, page in cluster:
            pages.append((url.replace("https://example.com", "http://" + rng.choice(HOSTS)), page))
    rng.shuffle(pages)
    return pages


def kept_by(store: Store, pages: list[tuple[str, Fingerprint]], batch: int = 1) -> list[str]:
    kept = []
    for start in range(0, len(pages), batch):
        part = pages[start : start + batch]
        many = getattr(store, "check_and_add_many", None)
        matches = many(part) if many is not None and batch > 1 else [store.check_and_add(*page) for page in part]
        for (url, _), match in zip(part, matches):
            if not dropped(match):
                kept.append(url)
                if store.confirms:
                    store.confirm(len(store) - 1)
    return kept


def one_filter_per_site(pages: list[tuple[str, Fingerprint]], scope: Scope) -> set[str]:
    """What a memory store in crawl scope keeps of each site's pages alone, in their order."""
    kept: set[str] = set()
    for site in {site_key(url, scope) for url, _ in pages}:
        kept |= set(kept_by(MemoryStore(Policy()), [page for page in pages if site_key(page[0], scope) == site]))
    return kept


@pytest.mark.parametrize("scope", [Scope.SITE, Scope.HOST])
def test_memory_and_sqlite_stores_decide_as_one_filter_per_site(tmp_path: Path, scope: Scope) -> None:
    pages = pages_over_sites(1)
    expected = one_filter_per_site(pages, scope)
    assert len(set(kept_by(MemoryStore(Policy()), pages))) == 40 < len(expected)  # copies across sites exist
    assert set(kept_by(MemoryStore(Policy(), scope), pages)) == expected
    # SQLite: a budget far below the sites' size lets them go and reads them back; a second run goes on
    path, half = tmp_path / "store.sqlite", len(pages) // 2
    store = SqliteStore(Policy(), path, "test", commit_every=7, scope=scope, budget=20_000)
    kept = kept_by(store, pages[:half])
    store.close()
    store = SqliteStore(Policy(), path, "test", commit_every=7, scope=scope, budget=20_000)
    kept += kept_by(store, pages[half:])
    assert store.matcher.sites.dropped > 0 and store.matcher.sites.opened > len({site_key(u, scope) for u, _ in pages})
    store.close()
    assert set(kept) == expected and len(kept) == len(expected)


def test_a_sqlite_store_of_another_scope_is_moved_aside(tmp_path: Path) -> None:
    path, pages = tmp_path / "store.sqlite", pages_over_sites(2)
    store = SqliteStore(Policy(), path, "test")
    kept_by(store, pages)
    store.close()
    store = SqliteStore(Policy(), path, "test", scope=Scope.SITE)
    assert len(store) == 0 and list(tmp_path.glob("store.sqlite.*scope*.old")) == []
    assert [p.name for p in tmp_path.glob("store.sqlite.*.old")]  # the crawl-scope file, kept aside
    store.close()


def test_a_redis_store_in_site_scope_decides_as_one_filter_per_site(redis_url: str) -> None:
    pages = pages_over_sites(3)
    expected = one_filter_per_site(pages, Scope.SITE)
    store = redis_store(Policy(), connect(redis_url), "scope-single", "test", Scope.SITE, 20_000)
    store.open()
    assert set(kept_by(store, pages, batch=3)) == expected  # (a batch's sites are in use: never let go)
    assert store.sites.dropped > 0
    again = redis_store(Policy(), connect(redis_url), "scope-single", "test", Scope.SITE, None)
    assert all(dropped(match) for match in again.check_and_add_many(pages[:100]))  # every page is in Redis
    keys = {key.decode() for key in again.client.scan_iter(match="scope-single:*")}
    assert {
        "scope-single:{example.com}:meta",
        "scope-single:{example.org}:meta",
        "scope-single:{127.0.0.1}:meta",
        "scope-single:{example.co.uk}:meta",
    } <= keys


def test_a_redis_key_with_braces_is_refused_in_site_scope(redis_url: str) -> None:
    with pytest.raises(ValueError, match="holds braces"):
        redis_store(Policy(), connect(redis_url), "{crawl}:simhash_dedup", "test", Scope.SITE, None)


def test_settings_read_the_scope_and_the_memory_budget() -> None:
    read = DedupSettings.from_settings
    assert read(Settings()).scope is Scope.CRAWL and read(Settings()).memory_budget is None
    chosen = read(Settings({"SIMHASH_DEDUP_SCOPE": "site", "SIMHASH_DEDUP_MEMORY_MB": 64}))
    assert chosen.scope is Scope.SITE and chosen.memory_budget == 64 << 20
    with pytest.raises(ValueError, match="SIMHASH_DEDUP_SCOPE must be one of crawl, site, host; got 'domain'"):
        read(Settings({"SIMHASH_DEDUP_SCOPE": "domain"}))
    with pytest.raises(ValueError, match="SIMHASH_DEDUP_MEMORY_MB must be a number above 0"):
        read(Settings({"SIMHASH_DEDUP_MEMORY_MB": 0}))


def write_pages(path: Path, pages: list[tuple[str, str]]) -> Path:
    path.write_text("".join(json.dumps({"url": url, "html": html}) + "\n" for url, html in pages))
    return path


def dedup(*arguments: str | Path) -> set[str]:
    """``simhash-dedup dedup``'s kept URLs (written to the file after ``-o``)."""
    done = test_batch.dedup(*arguments)
    assert done.returncode == 0, done.stderr
    output = Path(arguments[list(arguments).index("-o") + 1])
    return {json.loads(line)["url"] for line in output.read_text().splitlines()}


def article_pages(tmp_path: Path) -> list[tuple[str, str]]:
    """The originals and their copies of ``write_clusters`` on three sites, sites interleaved."""
    write_clusters(tmp_path)
    names = [f"a{n}.html" for n in range(ARTICLES)] + [f"c{n}.html" for n in range(ARTICLES)]
    return [
        (f"http://{host}/{name}", (tmp_path / name).read_text())
        for name in names
        for host in ("news.example.com", "www.example.com", "example.org")
    ]


def test_batch_mode_in_site_scope_keeps_what_a_run_per_site_keeps(tmp_path: Path) -> None:
    pages = article_pages(tmp_path)
    every = write_pages(tmp_path / "all.jsonl", pages)
    crawl_scope = dedup(every, "-o", tmp_path / "crawl.jsonl")
    assert len(crawl_scope) == ARTICLES  # a page's copies on the other sites dropped
    per_site = set()
    for site in ("example.com", "example.org"):
        mine = write_pages(
            tmp_path / f"{site}.jsonl", [page for page in pages if site_key(page[0], Scope.SITE) == site]
        )
        per_site |= dedup(mine, "-o", tmp_path / f"{site}-kept.jsonl")
    for store in ([], ["--store", tmp_path / "site.sqlite", "--memory-mb", "0.01"]):
        assert dedup(every, "--scope", "site", *store, "-o", tmp_path / "site.jsonl") == per_site
    assert len(per_site) == 2 * ARTICLES and all("/a" in url for url in per_site)


def crawl_result(tmp_path: Path, name: str, urls: list[str], settings: dict) -> dict:
    """A real crawl of ``urls`` in order (one request at a time) through ``tests.crawl_runner``."""
    config, result = tmp_path / f"{name}.json", tmp_path / f"{name}-result.json"
    config.write_text(
        json.dumps({"urls": urls, "settings": {**PIPELINE, "CONCURRENT_REQUESTS": 1, **settings}, "yield_html": True})
    )
    done = subprocess.run(
        [sys.executable, "-m", "tests.crawl_runner", str(config), str(result)],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(result.read_text())


SITES = ("127.0.0.1", "127.0.0.2", "127.0.0.3")  # three loopback addresses: three sites


@pytest.mark.parametrize("backend", ["sqlite", "memory"])
def test_a_crawl_of_several_sites_keeps_what_a_crawl_of_each_site_keeps(tmp_path: Path, backend: str) -> None:
    root = tmp_path / "site"
    root.mkdir()
    names = write_clusters(root)
    with ExitStack() as served:
        bases = [served.enter_context(serve_directory(root, host)) for host in SITES]
        urls = [base + name for name in names for base in bases]  # the sites interleaved
        settings = {
            "SIMHASH_DEDUP_BACKEND": backend,
            "SIMHASH_DEDUP_SCOPE": "site",
            "SIMHASH_DEDUP_PATH": str(tmp_path / "site.sqlite"),
        }
        together = crawl_result(tmp_path, "together", urls, settings)
        alone = [
            crawl_result(
                tmp_path,
                f"alone-{n}",
                [url for url in urls if url.startswith(base)],
                {"SIMHASH_DEDUP_BACKEND": backend, "SIMHASH_DEDUP_PATH": str(tmp_path / f"{n}.sqlite")},
            )
            for n, base in enumerate(bases)
        ]
        crawl_scope = crawl_result(
            tmp_path,
            "crawl-scope",
            urls,
            {"SIMHASH_DEDUP_BACKEND": backend, "SIMHASH_DEDUP_PATH": str(tmp_path / "c.sqlite")},
        )
    assert sorted(together["kept"]) == sorted(url for result in alone for url in result["kept"])
    assert len(together["kept"]) == len(SITES) * ARTICLES and all("/a" in url for url in together["kept"])
    assert all(
        dropped["duplicate_of"].split("/")[2].split(":")[0] == dropped["url"].split("/")[2].split(":")[0]
        for dropped in together["dropped"]
    )  # each copy dropped for a page of its own site
    assert len(crawl_scope["kept"]) == ARTICLES  # crawl scope, as before: one page of each article in all


def test_idle_sites_keep_the_sites_in_use_and_the_pinned_ones() -> None:
    from scrapy_simhash_dedup.matching.scope import SitesInMemory

    opened: list[str] = []
    sites = SitesInMemory(
        lambda site: opened.append(site) or site, lambda held: 100, budget=250, pinned=lambda site: site == "p"
    )
    sites.hold(["p"])
    sites.hold(["a", "b", "c"])  # 400 bytes: over the budget, but all in use, and "p" pinned
    assert set(sites.held) == {"p", "a", "b", "c"}
    sites.hold(["d"])  # now a, b, c may go, oldest first, until 250 bytes hold
    assert list(sites.held) == ["p", "d"] or list(sites.held) == ["p", "c", "d"]
    assert sites.bytes <= 250 and sites.dropped >= 2
    sites.hold(["a"])  # met again: opened again
    assert opened.count("a") == 2


def test_a_sqlite_site_let_go_with_a_page_not_confirmed_reads_it_back(tmp_path: Path) -> None:
    """A kept page whose item is not through the pipelines yet is not in the file: its site, let go and read
    back, still holds it (its copy is dropped), and it is written once confirmed."""
    first, copy = clusters(1, 2, seed=9)[0]
    others = [
        (url.replace("https://example.com", f"http://site{n}.com"), page)
        for n, cluster in enumerate(clusters(60, 1, seed=10))
        for url, page in cluster
    ]
    store = SqliteStore(Policy(), tmp_path / "s.sqlite", "test", commit_every=1, scope=Scope.SITE, budget=20_000)
    assert store.check_and_add(*first) is None
    row = len(store) - 1
    kept_by(store, others)  # every other site confirmed and written; the first site let go
    assert "example.com" not in store.matcher.sites.held
    match = store.check_and_add(*copy)
    assert dropped(match) and match.url == first[0]
    store.confirm(row)
    store.close()
    again = SqliteStore(Policy(), tmp_path / "s.sqlite", "test", scope=Scope.SITE)
    assert dropped(again.check_and_add(*copy))
    again.close()


def test_a_reset_in_site_scope_is_not_undone_by_a_crawler_still_running(redis_url: str) -> None:
    """Another crawler's reset empties every site; a crawler that held a site's replica starts the site over
    rather than writing its replica back."""
    pages = pages_over_sites(6)
    running = redis_store(Policy(), connect(redis_url), "scope-reset", "test", Scope.SITE, None)
    kept_by(running, pages[:120], batch=20)
    remove_redis_store(connect(redis_url), "scope-reset")
    kept_by(running, pages[120:140], batch=20)
    counts = sum(
        int(connect(redis_url).hget(key, "count") or 0)
        for key in connect(redis_url).scan_iter(match="scope-reset:*:meta")
    )
    assert 0 < counts <= 20  # the pages checked after the reset only: no replica written back
    assert len(set(kept_by(MemoryStore(Policy(), Scope.SITE), pages[:120]))) > 20


def test_a_page_this_crawl_kept_is_not_taken_for_an_earlier_crawls_when_its_site_is_read_again(redis_url: str) -> None:
    earlier = redis_store(Policy(), connect(redis_url), "scope-remembered", "test", Scope.SITE, None)
    earlier.open()
    (old, old_copy), (new, new_copy) = clusters(2, 2, seed=11)
    assert earlier.check_and_add(*old) is None
    earlier.close()
    time.sleep(1.1)  # the server's clock counts seconds
    store = redis_store(Policy(), connect(redis_url), "scope-remembered", "test", Scope.SITE, 20_000)
    store.open()
    assert store.check_and_add(*new) is None
    kept_by(
        store,
        [
            (url.replace("https://example.com", f"http://s{n}.net"), page)
            for n, cluster in enumerate(clusters(40, 1, seed=12))
            for url, page in cluster
        ],
    )
    assert "example.com" not in store.sites.held  # let go, read again below
    assert store.check_and_add(*new_copy).remembered is False
    assert store.check_and_add(*old_copy).remembered is True
