"""The Redis store in "site" scope on a real Redis Cluster (3 masters, 3 replicas, started by the tests): crawlers
share it as they share one server, a race keeps one page per cluster of near-duplicates, and a master killed or
restarted empty mid-crawl is handled as a single server's outage is."""

from __future__ import annotations

import json
import multiprocessing
import random
import time
from contextlib import ExitStack
from pathlib import Path

import pytest

from crawler.local_site import serve_directory
from scrapy_simhash_dedup.matching.policy import Policy
from scrapy_simhash_dedup.matching.scope import Scope, site_key
from scrapy_simhash_dedup.stores.errors import CheckedLocally
from scrapy_simhash_dedup.stores.redis.availability import RETRY_SECONDS
from scrapy_simhash_dedup.stores.redis.connect import connect, redis_store
from scrapy_simhash_dedup.stores.redis.sites import site_prefix

from .redis_cluster import RedisCluster
from .test_persistence import ARTICLES, start_crawl, wait_for_kept, write_clusters
from .test_redis import clusters
from .test_scope import HOSTS, PIPELINE, SITES, kept_by, one_filter_per_site, pages_over_sites


def seeds(cluster: RedisCluster) -> str:
    """``SIMHASH_DEDUP_REDIS_URL`` naming every node: the client finds the cluster whichever node is down."""
    return ",".join(f"redis://{host}:{port}" for host, port in cluster.seeds)


def site_settings(cluster: RedisCluster, key: str, **more: object) -> dict:
    return {
        **PIPELINE,
        "SIMHASH_DEDUP_REDIS_URL": seeds(cluster),
        "SIMHASH_DEDUP_SCOPE": "site",
        "SIMHASH_DEDUP_REDIS_KEY": key,
        "SIMHASH_DEDUP_REDIS_TIMEOUT": 1,
        **more,
    }


def test_a_store_per_site_spreads_over_the_masters_and_decides_as_one_filter_per_site(redis_cluster) -> None:
    pages = pages_over_sites(4)
    store = redis_store(Policy(), connect(redis_cluster.url), "spread", "test", Scope.SITE, 20_000)
    store.open()
    assert set(kept_by(store, pages, batch=25)) == one_filter_per_site(pages, Scope.SITE)
    masters = {
        redis_cluster.master_of(f"{site_prefix('spread', site_key('http://' + host, Scope.SITE))}:meta")
        for host in HOSTS
    }
    assert len(masters) >= 2  # the four sites' keys on more than one node


def test_crawl_scope_on_a_cluster_is_refused_at_start_in_one_line(redis_cluster, crawl) -> None:
    result = crawl(["data:,nothing"], {**PIPELINE, "SIMHASH_DEDUP_REDIS_URL": redis_cluster.url})
    errors = [line for line in result["log"].splitlines() if "ERROR" in line and "simhash_dedup" in line]
    assert len(errors) == 1 and "is a Redis Cluster" in errors[0] and "SIMHASH_DEDUP_SCOPE = 'site'" in errors[0]
    assert "Traceback" not in result["log"] and not result["kept"]


def race_worker(url: str, seed: int, barrier, results) -> None:
    """One crawler process: the clusters over several sites, in its own order, a page at a time."""
    pages = pages_over_sites(5)
    random.Random(seed).shuffle(pages)
    store = redis_store(Policy(), connect(url), "race", "test", Scope.SITE, None)
    barrier.wait()
    results.put((seed, [page_url for page_url, page in pages if store.check_and_add(page_url, page) is None]))
    store.close()


def test_the_race_keeps_exactly_one_page_per_cluster_and_site(redis_cluster) -> None:
    processes = 4
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(processes), context.Queue()
    workers = [
        context.Process(target=race_worker, args=(seeds(redis_cluster), seed, barrier, results))
        for seed in range(processes)
    ]
    for worker in workers:
        worker.start()
    kept = [url for _ in workers for url in results.get(timeout=300)[1]]
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    per_cluster_and_site: dict[tuple[str, str], int] = {}
    for url in kept:
        key = (url.rsplit("/", 1)[0].split("/", 3)[3], site_key(url, Scope.SITE))
        per_cluster_and_site[key] = per_cluster_and_site.get(key, 0) + 1
    expected = {(url.rsplit("/", 1)[0].split("/", 3)[3], site_key(url, Scope.SITE)) for url, _ in pages_over_sites(5)}
    assert set(per_cluster_and_site) == expected and set(per_cluster_and_site.values()) == {1}


def serve_sites(stack: ExitStack, root: Path) -> list[str]:
    return [stack.enter_context(serve_directory(root, host)) for host in SITES]


def test_two_crawlers_over_several_sites_keep_exactly_what_one_keeps(redis_cluster, tmp_path: Path) -> None:
    root = tmp_path / "site"
    root.mkdir()
    names = write_clusters(root)
    with ExitStack() as stack:
        bases = serve_sites(stack, root)
        urls = [base + name for name in names for base in bases]
        one = tmp_path / "one"
        one.mkdir()
        _, log = start_crawl(one, urls, site_settings(redis_cluster, "one")).communicate(timeout=300)
        assert "Traceback" not in log
        kept_by_one = json.loads((one / "result.json").read_text())["kept"]
        kept_by_two = {}
        for key, orders in (("two", (urls, urls)), ("two-orders", (urls, urls[::-1]))):
            runs = []
            for n, order in enumerate(orders):  # both crawlers over every site
                folder = tmp_path / f"{key}-{n}"
                folder.mkdir()
                runs.append((folder, start_crawl(folder, order, site_settings(redis_cluster, key))))
            for _, process in runs:
                _, log = process.communicate(timeout=300)
                assert process.returncode == 0 and "Traceback" not in log, log[-3000:]
            kept_by_two[key] = [
                url for folder, _ in runs for url in json.loads((folder / "result.json").read_text())["kept"]
            ]
    assert len(kept_by_one) == len(SITES) * ARTICLES and all("/a" in url for url in kept_by_one)
    assert sorted(kept_by_two["two"]) == sorted(kept_by_one)  # each original kept once, by one of the two
    # in opposite orders, one crawler meets copies first: still one page of each article on each site
    assert sorted((url.split("/")[2], url.rsplit("/", 1)[1][1:]) for url in kept_by_two["two-orders"]) == sorted(
        (url.split("/")[2], url.rsplit("/", 1)[1][1:]) for url in kept_by_one
    )


def cluster_count(cluster: RedisCluster, key: str) -> int:
    """Pages in the sites' logs of the store ``key``."""
    client = cluster.client()
    try:
        return sum(int(client.hget(f"{site_prefix(key, site)}:meta", "count") or 0) for site in SITES)
    finally:
        client.close()


@pytest.mark.parametrize("fault", ["killed, its replica promoted", "restarted empty before a failover"])
def test_a_master_lost_mid_crawl_loses_no_kept_page_and_lets_no_copy_through(
    redis_cluster, tmp_path: Path, fault: str
) -> None:
    """Three sites, originals then their copies, one request at a time; after three originals are kept, the
    master holding the first site is killed (and its replica promoted), or restarted empty at once (it comes
    back as the master, empty: the crawler writes its replica of the site back).  Every original is kept,
    every copy dropped, and the cluster ends holding every original."""
    root = tmp_path / "site"
    root.mkdir()
    names = write_clusters(root)
    key = f"fault-{'kill' if fault.startswith('killed') else 'empty'}"
    with ExitStack() as stack:
        bases = serve_sites(stack, root)
        urls = [base + name for name in names for base in bases]
        process = start_crawl(
            tmp_path, urls, site_settings(redis_cluster, key, DOWNLOAD_DELAY=0.2, CONCURRENT_REQUESTS=1)
        )
        wait_for_kept(tmp_path, 3)
        master = redis_cluster.master_of(f"{site_prefix(key, SITES[0])}:meta")
        redis_cluster.kill(master)
        if fault.startswith("killed"):
            redis_cluster.wait_promoted(master)
        else:
            redis_cluster.restart(master, empty=True)
        _, log = process.communicate(timeout=300)
        if fault.startswith("killed"):
            redis_cluster.restart(master)  # back, as a replica of the promoted node, for the next tests
    assert process.returncode == 0, log[-3000:]
    result = json.loads((tmp_path / "result.json").read_text())
    assert "Traceback" not in log
    assert sorted(result["kept"]) == sorted(base + f"a{n}.html" for base in bases for n in range(ARTICLES))
    assert len(result["dropped"]) == len(SITES) * ARTICLES  # no copy let through
    assert cluster_count(redis_cluster, key) == len(SITES) * ARTICLES
    if fault.startswith("restarted"):
        assert "wrote back the" in log
    print(fault, {name: value for name, value in result["stats"].items() if "locally" in name or "unchecked" in name})


def pages_on_masters(cluster: RedisCluster, key: str, seed: int) -> tuple[list, set[int]]:
    """Unique pages over many sites (a page each), and the masters their sites' keys lie on."""
    pages = [
        (url.replace("https://example.com", f"http://site{n}.com"), page)
        for n, cluster_pages in enumerate(clusters(60, 1, seed))
        for url, page in cluster_pages
    ]
    masters = {cluster.master_of(f"{site_prefix(key, site_key(url, Scope.SITE))}:meta") for url, _ in pages}
    return pages, masters


def test_a_master_without_the_script_gets_it_and_the_others_pages_of_the_round_stay_kept(redis_cluster) -> None:
    """Scripts are not replicated: a promoted replica lacks it.  Flushed on one master, its calls of a round
    fail while the other masters keep their pages: those are not checked again (they would be copies of
    themselves), the script is loaded, and every page is kept once."""
    pages, masters = pages_on_masters(redis_cluster, "noscript", seed=13)
    assert len(masters) == 3
    store = redis_store(Policy(), connect(redis_cluster.url), "noscript", "test", Scope.SITE, None)
    store.open()
    assert store.check_and_add_many(pages[:30]) == [None] * 30  # the script loaded on every master
    redis_cluster.node(sorted(masters)[0]).script_flush()
    assert store.check_and_add_many(pages[30:]) == [None] * 30
    fresh = redis_store(Policy(), connect(redis_cluster.url), "noscript", "test", Scope.SITE, None)
    assert all(match is not None and match.duplicate for match in fresh.check_and_add_many(pages))


def replica_of(cluster: RedisCluster, master: int) -> int:
    """The port of ``master``'s replica: the node whose master is ``master``'s id (``CLUSTER SLOTS`` names it)."""
    with cluster.node(master) as node:
        ids = {int(port): ident.decode() for _, _, (_, port, ident, *_), *_ in node.execute_command("CLUSTER SLOTS")}
    return next(port for port, _, of in cluster.nodes_view() if of == ids[master])


def test_a_batch_over_a_lost_master_keeps_what_the_live_ones_decided_and_writes_the_rest_back(redis_cluster) -> None:
    """A master and its replica both killed: the batch's pages on the other masters are decided there, those on
    the lost one checked locally (none dropped as a copy of itself); the two nodes back empty, the crawler writes
    its replicas of their sites back and adds the pages kept meanwhile: every page is in the cluster."""
    pages, masters = pages_on_masters(redis_cluster, "partial", seed=14)
    store = redis_store(Policy(), connect(seeds(redis_cluster)), "partial", "test", Scope.SITE, None)
    store.open()
    assert store.check_and_add_many(pages[:20]) == [None] * 20
    lost = sorted(masters)[0]
    replica = replica_of(redis_cluster, lost)
    redis_cluster.kill(replica)
    redis_cluster.kill(lost)
    try:
        with pytest.raises(CheckedLocally) as checked:
            store.check_and_add_many(pages[20:40])
        assert checked.value.matches == [None] * 20  # unique pages: none dropped as a copy of itself
        decided_there = [
            url
            for url, _ in pages[20:40]
            if redis_cluster.master_of(f"{site_prefix('partial', site_key(url, Scope.SITE))}:meta") != lost
        ]
        assert decided_there  # (the other masters' pages of the batch are in Redis already)
    finally:
        redis_cluster.restart(lost)
        redis_cluster.restart(replica)
    time.sleep(RETRY_SECONDS)
    assert store.check_and_add_many(pages[40:]) == [None] * 20
    fresh = redis_store(Policy(), connect(seeds(redis_cluster)), "partial", "test", Scope.SITE, None)
    missing = [
        (n, url, redis_cluster.master_of(f"{site_prefix('partial', site_key(url, Scope.SITE))}:meta") == lost)
        for n, ((url, _), match) in enumerate(zip(pages, fresh.check_and_add_many(pages)))
        if match is None or not match.duplicate
    ]
    assert not missing


def test_fail_closed_stops_the_crawl_when_a_site_s_master_and_replica_are_lost(redis_cluster, tmp_path: Path) -> None:
    """A site whose slots have no node left: its items are dropped as unchecked and the spider closes, as
    with a single server down; no item reaches the output unchecked."""
    root = tmp_path / "site"
    root.mkdir()
    names = write_clusters(root)
    key = "fail-closed"
    with ExitStack() as stack:
        bases = serve_sites(stack, root)
        urls = [base + name for name in names for base in bases]
        process = start_crawl(
            tmp_path,
            urls,
            site_settings(
                redis_cluster, key, SIMHASH_DEDUP_FAIL_MODE="closed", DOWNLOAD_DELAY=0.2, CONCURRENT_REQUESTS=1
            ),
        )
        wait_for_kept(tmp_path, 3)
        master = redis_cluster.master_of(f"{site_prefix(key, SITES[0])}:meta")
        replica = replica_of(redis_cluster, master)
        redis_cluster.kill(replica)
        redis_cluster.kill(master)
        try:
            _, log = process.communicate(timeout=300)
        finally:
            redis_cluster.restart(master)
            redis_cluster.restart(replica)
    assert process.returncode == 0, log[-3000:]
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["stats"]["finish_reason"] == "simhash_dedup_store_unavailable" and "Traceback" not in log
    unchecked = [dropped["url"] for dropped in result["dropped"] if dropped.get("unchecked")]
    assert unchecked and not set(unchecked) & set(result["kept"])
    assert all("/a" in url for url in result["kept"])  # every item kept was checked: no copy among them
