"""The shared Redis store, against real redis-server processes: decisions, races, outages."""

from __future__ import annotations

import json
import multiprocessing
import random
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import redis

from scrapy_simhash_dedup import Fingerprinter
from scrapy_simhash_dedup.fingerprint.fingerprinter import Fingerprint
from scrapy_simhash_dedup.fingerprint.sketch import has_own_text
from scrapy_simhash_dedup.matching.indexloops import near_any
from scrapy_simhash_dedup.matching.matcher import fingerprint_rows
from scrapy_simhash_dedup.matching.policy import Mode, Policy
from scrapy_simhash_dedup.stores.errors import StoreUnavailable
from scrapy_simhash_dedup.stores.memory import MemoryStore
from scrapy_simhash_dedup.stores.redis.availability import RETRY_SECONDS
from scrapy_simhash_dedup.stores.redis.keys import LOST_URL, remove_redis_store
from scrapy_simhash_dedup.stores.redis.store import MAX_BATCH, MAX_PAIRS, RedisStore

from .pages import plain_sketch, real_page, with_date_and_counters
from .redis_server import RedisServer, free_port
from .test_persistence import (
    ARTICLES,
    crawl_to_end,
    start_crawl,
    wait_for_kept,
    write_clusters,
)

SCHEME = "test-scheme"
PIPELINE = {"ITEM_PIPELINES": {"scrapy_simhash_dedup.SimhashDedupPipeline": 300}}


def clusters(count: int, size: int, seed: int) -> list[list[tuple[str, Fingerprint]]]:
    """``count`` clusters of ``size`` pages, each within 3 content bits (and 1 structure bit) of its
    centre, with the centre's sketch: every two pages of a cluster are near-duplicates, no two
    clusters are."""
    rng, pick = np.random.default_rng(seed), random.Random(seed)
    result = []
    for c in range(count):
        content, structure = (int(v) for v in rng.integers(0, 2**64, size=2, dtype=np.uint64))
        sketch = plain_sketch(f"{seed}/{c}/{n}" for n in range(200))
        pages = []
        for n in range(size):
            flips = sum(1 << b for b in pick.sample(range(64), pick.randint(0, 3)))
            pages.append(
                (
                    f"https://example.com/{seed}/{c}/{n}",
                    Fingerprint(content ^ flips, structure ^ (n & 1), sketch=sketch),
                )
            )
        result.append(pages)
    return result


def mixed_pages(seed: int) -> list[tuple[str, Fingerprint]]:
    """Clusters shuffled together, with pages lacking a part or a sketch, and short pages: equal
    ones, and ones a bit away from each other or from a cluster's page."""
    cluster_pages = [page for cluster in clusters(40, 4, seed) for page in cluster]
    pages = list(cluster_pages)
    pages += [(f"https://example.com/lone/{n}", Fingerprint(None, 12345 + n, sketch=None)) for n in range(5)]
    pages += [
        (f"https://example.com/nostructure/{n}", Fingerprint(999 << n, None, sketch=plain_sketch(["nostructure"])))
        for n in range(5)
    ]
    for n, (_, near) in enumerate(cluster_pages[:24:4]):
        short = Fingerprint(near.content ^ (n % 2), near.structure, sketch=near.sketch, short=True)
        pages += [(f"https://example.com/short/{n}/{copy}", short) for copy in range(2)]
    random.Random(seed).shuffle(pages)
    return pages


def new_store(url: str, key: str, policy: Policy = Policy(), expire_seconds: int = 0) -> RedisStore:
    return RedisStore(policy, redis.Redis.from_url(url), key, SCHEME, expire_seconds)


@pytest.mark.parametrize("mode", list(Mode))
def test_same_decisions_as_the_memory_store(redis_url: str, mode: Mode) -> None:
    policy = Policy(mode=mode)
    pages = mixed_pages(seed=3)
    memory = MemoryStore(policy)
    expected = [memory.check_and_add(url, page) is None for url, page in pages]
    key = f"same-decisions-{mode.value}"
    remove_redis_store(redis.Redis.from_url(redis_url), key)
    one, two = new_store(redis_url, key, policy), new_store(redis_url, key, policy)
    kept = []
    for start in range(0, len(pages), 7):  # two processes' worth of stores, batches and single checks
        batch = pages[start : start + 7]
        store = one if start % 2 else two
        if start % 3:
            kept += [match is None for match in store.check_and_add_many(batch)]
        else:
            kept += [store.check_and_add(url, page) is None for url, page in batch]
    assert kept == expected
    assert 0 < sum(kept) < len(pages)


def test_a_match_names_the_kept_page(redis_url: str) -> None:
    ((original, copy),) = clusters(1, 2, seed=5)
    store = new_store(redis_url, "names")
    remove_redis_store(store.client, "names")
    assert store.check_and_add(*original) is None
    for checker in (store, new_store(redis_url, "names")):  # through the script, then through a replica
        match = checker.check_and_add(*copy)
        assert match is not None and match.url == original[0] and match.reason == "content"
        assert match.similarity == 1.0 and match.content_distance is not None


def test_sketches_come_back_from_redis_as_they_went_in(redis_url: str) -> None:
    """A short article and its copy with a byline of figures (thin own text: their visible texts are compared
    as well) and two equal pages without own text (a sketch without own part: matched on their exact words) are
    matched through the script and through a replica that read them from Redis, as in memory."""
    article = real_page("newspaper-syracuse.com1")
    menu = "<html><body><ul><li><a href='/a'>Home</a></li><li><a href='/b'>About us</a></li></ul></body></html>"
    pairs = [
        (
            Fingerprinter().fingerprint(article),
            Fingerprinter().fingerprint(with_date_and_counters(article, "December 26, 2013", 1204, 12)),
        ),
        (Fingerprinter().fingerprint(menu), Fingerprinter().fingerprint(menu.replace("<ul>", "<ul class='x'>"))),
    ]
    assert not has_own_text(pairs[1][0].sketch) and pairs[1][0].sketch is not None and pairs[1][0].short
    memory, store = MemoryStore(Policy()), new_store(redis_url, "sketches")
    remove_redis_store(store.client, "sketches")
    for n, (original, _) in enumerate(pairs):
        assert memory.check_and_add(f"https://example.com/{n}", original) is None
        assert store.check_and_add(f"https://example.com/{n}", original) is None
    expected = [memory.check_and_add(f"https://example.com/{n}/copy", copy) for n, (_, copy) in enumerate(pairs)]
    assert [match.reason for match in expected] == ["content", "exact_text"] and expected[0].similarity < 1
    for checker in (store, new_store(redis_url, "sketches")):  # the script's reply, then a replica's read
        found = [checker.check_and_add(f"https://example.com/{n}/copy", copy) for n, (_, copy) in enumerate(pairs)]
        assert [replace(match, remembered=False) for match in found] == expected  # (the replica read them at open)


def race_worker(url: str, seed: int, repetitions: int, barrier, results) -> None:
    """One crawler process: the same clusters as the others, in its own order, one page at a time."""
    kept = []
    for repetition in range(repetitions):
        pages = [page for cluster in clusters(25, 4, seed=repetition) for page in cluster]
        random.Random(seed * 1000 + repetition).shuffle(pages)
        store = new_store(url, f"race-{repetition}")
        barrier.wait()
        kept.append([page_url for page_url, page in pages if store.check_and_add(page_url, page) is None])
        store.close()
    results.put((seed, kept))


def test_race_keeps_exactly_one_page_per_cluster(redis_url: str) -> None:
    processes, repetitions = 4, 20
    client = redis.Redis.from_url(redis_url)
    for repetition in range(repetitions):
        remove_redis_store(client, f"race-{repetition}")
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(processes), context.Queue()
    workers = [
        context.Process(target=race_worker, args=(redis_url, seed, repetitions, barrier, results))
        for seed in range(processes)
    ]
    for worker in workers:
        worker.start()
    kept_by_worker = dict(results.get(timeout=300) for _ in workers)
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    for repetition in range(repetitions):
        kept = [url for seed in range(processes) for url in kept_by_worker[seed][repetition]]
        per_cluster = {}
        for url in kept:
            cluster = url.rsplit("/", 1)[0]
            per_cluster[cluster] = per_cluster.get(cluster, 0) + 1
        assert len(per_cluster) == 25 and set(per_cluster.values()) == {1}, (repetition, per_cluster)


def test_pages_count_as_seen_for_the_expiry_only(redis_url: str) -> None:
    ((first, second, third),) = clusters(1, 3, seed=8)
    writer, reader = new_store(redis_url, "expiry", expire_seconds=1), new_store(redis_url, "expiry", expire_seconds=1)
    remove_redis_store(writer.client, "expiry")
    assert writer.check_and_add(*first) is None
    assert reader.check_and_add(*second) is not None  # within the expiry (its replica now holds `first`)
    time.sleep(2.2)  # Redis' clock has seconds: more than one second later
    assert reader.check_and_add(*third) is None  # `first` expired, in the replica as in the script
    assert writer.check_and_add(*first) is not None  # `third` is fresh


def test_a_store_reset_elsewhere_is_reloaded(redis_url: str) -> None:
    """A reset (on another process) leaves a mark: the replica is not written back, it is reloaded at the
    next page sent to Redis."""
    (original, copy), (other,) = clusters(1, 2, seed=11)[0], clusters(1, 1, seed=12)[0]
    store = new_store(redis_url, "recreated")
    remove_redis_store(store.client, "recreated")
    assert store.check_and_add(*original) is None
    remove_redis_store(store.client, "recreated")  # SIMHASH_DEDUP_RESET elsewhere
    assert store.check_and_add(*other) is None  # sent: the store is found new, the replica reloaded
    assert store.client.hget("recreated:meta", "count") == b"1"
    assert store.check_and_add(*copy) is None  # the old replica is not trusted
    assert store.check_and_add(*original) is not None


def test_a_store_redis_lost_is_written_back_by_one_replica(redis_url: str) -> None:
    """Redis restarted without its data: the first process to notice writes its replica back (fingerprints,
    sketches, the URLs it met), the others reload it; no page kept before is forgotten."""
    pages = clusters(6, 2, seed=13)
    first, second, late = new_store(redis_url, "lost"), new_store(redis_url, "lost"), new_store(redis_url, "lost")
    remove_redis_store(first.client, "lost")
    for original, _ in pages[:4]:
        assert first.check_and_add(*original) is None
    assert second.check_and_add(*pages[4][0]) is None  # its replica: the five originals
    second.client.flushall()  # a restart without persistence
    assert second.check_and_add(*pages[5][0]) is None  # sent: the store is gone, written back, then added to
    assert second.client.hget("lost:meta", "count") == b"6"
    assert first.check_and_add(*clusters(1, 1, seed=14)[0][0]) is None  # its write-back loses: it reloads
    assert first.client.hget("lost:meta", "count") == b"7"
    for checker in (first, second, late):
        for _, copy in pages:
            match = checker.check_and_add(*copy)
            assert match is not None and match.duplicate
    assert second.check_and_add(*pages[4][1]).url == pages[4][0][0]  # the URL its writer knew
    assert late.check_and_add(*pages[0][1]).url in (pages[0][0][0], LOST_URL)


def test_another_fingerprint_scheme_is_refused(redis_url: str) -> None:
    store = new_store(redis_url, "scheme")
    remove_redis_store(store.client, "scheme")
    store.open()
    other = RedisStore(Policy(), redis.Redis.from_url(redis_url), "scheme", "another-scheme")
    with pytest.raises(ValueError, match="SIMHASH_DEDUP_REDIS_KEY"):
        other.open()


def test_unreachable_redis_raises_store_unavailable() -> None:
    store = RedisStore(Policy(), redis.Redis(port=free_port(), socket_connect_timeout=1), "down", SCHEME)
    ((page,),) = clusters(1, 1, seed=1)
    with pytest.raises(StoreUnavailable):
        store.check_and_add(*page)
    with pytest.raises(StoreUnavailable, match="retrying soon"):  # no new connection attempt at once
        store.check_and_add(*page)


# -- real crawls ------------------------------------------------------------------------------


def test_crawls_share_the_redis_store(site: tuple[Path, str], tmp_path: Path, redis_url: str) -> None:
    root, base_url = site
    paths = write_clusters(root)
    urls = [base_url + p for p in paths]
    settings = {**PIPELINE, "SIMHASH_DEDUP_REDIS_URL": redis_url, "SIMHASH_DEDUP_REDIS_KEY": "crawl:%(spider)s"}
    first = crawl_to_end(tmp_path, urls, {**settings, "SIMHASH_DEDUP_RESET": True})
    assert len(first["kept"]) == ARTICLES and len(first["dropped"]) == ARTICLES
    assert redis.Redis.from_url(redis_url).hget("crawl:in_order:meta", "count") == str(ARTICLES).encode()
    second = crawl_to_end(tmp_path, urls[::-1], settings)  # another process, another order
    assert second["kept"] == []
    assert second["stats"]["simhash_dedup/remembered"] == ARTICLES


def test_every_item_of_a_page_follows_its_verdict(site: tuple[Path, str], tmp_path: Path, redis_url: str) -> None:
    """Each page yields 5 items at once (the rows of a listing): the page is checked once against Redis,
    all 5 items of a kept page are kept, all 5 of a near-duplicate page dropped."""
    root, base_url = site
    urls = [base_url + p for p in write_clusters(root)]  # the originals, then their copies
    settings = {
        **PIPELINE,
        "SIMHASH_DEDUP_REDIS_URL": redis_url,
        "SIMHASH_DEDUP_REDIS_KEY": "together",
        "SIMHASH_DEDUP_RESET": True,
    }
    result = crawl_to_end(tmp_path, urls, settings, repeat=5)
    items = [f"{url}#{n}" if n else url for url in urls for n in range(5)]
    assert sorted(result["kept"]) == sorted(items[: 5 * ARTICLES])
    assert sorted(d["url"] for d in result["dropped"]) == sorted(items[5 * ARTICLES :])
    stats = result["stats"]
    assert (stats["simhash_dedup/pages_kept"], stats["simhash_dedup/pages_dropped"]) == (ARTICLES, ARTICLES)
    assert (stats["simhash_dedup/items_kept"], stats["simhash_dedup/items_dropped"]) == (5 * ARTICLES, 5 * ARTICLES)
    assert stats["simhash_dedup/checked"] == 2 * ARTICLES


@pytest.mark.parametrize("fail_mode", ["open", "closed"])
def test_redis_down_fail_open_and_fail_closed(site: tuple[Path, str], tmp_path: Path, fail_mode: str) -> None:
    root, base_url = site
    urls = [base_url + p for p in write_clusters(root)]
    server = RedisServer(tmp_path / "redis")  # never started: the port is closed
    settings = {
        **PIPELINE,
        "SIMHASH_DEDUP_REDIS_URL": server.url,
        "SIMHASH_DEDUP_FAIL_MODE": fail_mode,
        "SIMHASH_DEDUP_REDIS_TIMEOUT": 1,
    }
    process = start_crawl(tmp_path, urls, settings)
    _, log = process.communicate(timeout=120)
    assert process.returncode == 0, log[-3000:]
    result = json.loads((tmp_path / "result.json").read_text())
    stats = result["stats"]
    assert "Traceback" not in log
    if fail_mode == "open":  # every page checked against the pages this crawler kept meanwhile
        assert sorted(Path(url).name for url in result["kept"]) == sorted(f"a{n}.html" for n in range(ARTICLES))
        assert sorted(Path(d["duplicate_of"]).name for d in result["dropped"]) == sorted(
            f"a{n}.html" for n in range(ARTICLES)
        )
        assert stats["finish_reason"] == "finished"
        assert stats["simhash_dedup/checked_locally"] == len(urls)
        assert stats["simhash_dedup/store_errors"] >= len(urls)  # the open, then every page
        assert log.count("the Redis store is unreachable") == 1  # logged once per outage
    else:
        assert [d for d in result["dropped"] if not d.get("unchecked")] == []  # never a drop without a check
        assert stats["finish_reason"] == "simhash_dedup_store_unavailable"
        assert result["kept"] == []  # no item passes unchecked
        assert stats.get("simhash_dedup/dropped_unchecked", 0) == len(result["dropped"])
        assert stats["simhash_dedup/store_errors"] >= 1
        assert "closing the spider" in log


def test_fail_closed_lets_no_unchecked_item_through_when_redis_dies_mid_crawl(
    site: tuple[Path, str], tmp_path: Path
) -> None:
    """Redis stops with items in flight (each page yields 5 items at once): every item after is
    dropped as unchecked, named in the log and counted; none reaches the output unchecked."""
    root, base_url = site
    urls = [base_url + p for p in write_clusters(root)]
    server = RedisServer(tmp_path / "redis")
    server.start()
    try:
        settings = {
            **PIPELINE,
            "SIMHASH_DEDUP_REDIS_URL": server.url,
            "SIMHASH_DEDUP_REDIS_TIMEOUT": 1,
            "SIMHASH_DEDUP_FAIL_MODE": "closed",
            "DOWNLOAD_DELAY": 0.2,
            "CONCURRENT_REQUESTS": 1,
        }
        process = start_crawl(tmp_path, urls, settings, repeat=5)
        wait_for_kept(tmp_path, 3 * 5)  # three pages kept
        server.stop()
        _, log = process.communicate(timeout=120)
        assert process.returncode == 0, log[-3000:]
    finally:
        server.stop()
    result = json.loads((tmp_path / "result.json").read_text())
    stats = result["stats"]
    assert stats["finish_reason"] == "simhash_dedup_store_unavailable"
    assert "Traceback" not in log
    kept_pages = Counter(url.split("#")[0] for url in result["kept"])
    assert len(kept_pages) >= 3 and set(kept_pages.values()) == {5}  # every item of a page checked and kept
    unchecked = [d["url"] for d in result["dropped"] if d.get("unchecked")]
    assert not kept_pages.keys() & {url.split("#")[0] for url in unchecked}
    assert unchecked and stats["simhash_dedup/dropped_unchecked"] == len(unchecked)
    assert all(
        f"not checked: the store is unreachable and SIMHASH_DEDUP_FAIL_MODE is 'closed': {url.split('#')[0]}" in log
        for url in unchecked
    )  # the page's URL


@pytest.mark.parametrize("outage", ["restarted with its data", "restarted empty", "down to the end"])
def test_a_redis_outage_in_the_middle_of_a_crawl_lets_no_copy_through(
    site: tuple[Path, str], tmp_path: Path, outage: str
) -> None:
    """Redis stops after three originals are kept.  Meanwhile pages are checked against the crawler's
    replica and the pages it kept since; a Redis back without its data gets the replica written back.
    Every original is kept, every copy dropped, and a Redis that answers again holds every original."""
    root, base_url = site
    urls = [base_url + p for p in write_clusters(root)]  # originals, then their copies
    server = RedisServer(tmp_path / "redis", durable=outage == "restarted with its data")
    server.start()
    try:
        settings = {
            **PIPELINE,
            "SIMHASH_DEDUP_REDIS_URL": server.url,
            "SIMHASH_DEDUP_REDIS_TIMEOUT": 1,
            "SIMHASH_DEDUP_REDIS_KEY": "outage",
            "DOWNLOAD_DELAY": 0.3,
            "CONCURRENT_REQUESTS": 1,
        }
        process = start_crawl(tmp_path, urls, settings)
        wait_for_kept(tmp_path, 3)
        server.stop()
        time.sleep(1.5)
        if outage != "down to the end":
            server.start()
        _, log = process.communicate(timeout=120)
        assert process.returncode == 0, log[-3000:]
        count = server.client().hget("outage:meta", "count") if outage != "down to the end" else None
    finally:
        server.stop()
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["stats"]["finish_reason"] == "finished"
    assert "Traceback" not in log
    assert sorted(Path(u).name for u in result["kept"]) == sorted(f"a{n}.html" for n in range(ARTICLES))
    assert sorted(Path(d["duplicate_of"]).name for d in result["dropped"]) == sorted(
        f"a{n}.html" for n in range(ARTICLES)
    )
    assert result["stats"]["simhash_dedup/checked_locally"] >= 1
    if count is not None:
        assert int(count) == ARTICLES
    assert ("wrote back the" in log) == (outage == "restarted empty")


def test_a_batch_of_near_duplicates_keeps_one(redis_url: str) -> None:
    cluster, other = clusters(2, 5, seed=21)
    store = new_store(redis_url, "batch")
    remove_redis_store(store.client, "batch")
    kept = [match is None for match in store.check_and_add_many(cluster + other)]
    assert kept == [True, False, False, False, False] * 2


def test_a_batch_longer_than_a_script_call_decides_as_the_memory_store(redis_url: str) -> None:
    pages = mixed_pages(seed=4)
    assert len(pages) > MAX_BATCH  # split into script calls, the later ones with earlier pages kept
    memory = MemoryStore(Policy())
    expected = [memory.check_and_add(url, page) is None for url, page in pages]
    store = new_store(redis_url, "long-batch")
    remove_redis_store(store.client, "long-batch")
    assert [match is None for match in store.check_and_add_many(pages)] == expected


@pytest.mark.parametrize("behind", [20, MAX_PAIRS // 10 + 50])
def test_a_replica_behind_finds_the_pages_kept_meanwhile(redis_url: str, behind: int) -> None:
    """Another process kept ``behind`` pages since this one's last read, one of them near a page
    it sends: with few pairs the script finds it; with more than ``MAX_PAIRS`` the worker does."""
    (centre, copy), *others = clusters(behind + 9, 2, seed=behind)
    others = [pages[0] for pages in others]
    early, late = new_store(redis_url, f"behind-{behind}"), new_store(redis_url, f"behind-{behind}")
    remove_redis_store(early.client, f"behind-{behind}")
    early.open()
    assert late.check_and_add_many([centre] + others[: behind - 1]) == [None] * behind
    batch = [copy] + others[behind - 1 :]  # 10 pages: one copy of a page kept meanwhile, 9 new
    matches = early.check_and_add_many(batch)
    assert matches[0] is not None and matches[0].url == centre[0]
    assert matches[1:] == [None] * 9
    assert len(early) == len(late) + 9 == behind + 9


def near(a: Fingerprint, b: Fingerprint, limits: list[int]) -> bool:
    """Within the limit (-1: not compared) on a part both pages have: ``near_any``'s rule, pair by pair."""
    parts = ((a.content, b.content, limits[0]), (a.structure, b.structure, limits[1]))
    return any(x is not None and y is not None and (x ^ y).bit_count() <= limit for x, y, limit in parts)


def test_near_any_agrees_with_pairwise_distances() -> None:
    rng = np.random.default_rng(8)
    base = [int(v) for v in rng.integers(0, 2**64, size=6, dtype=np.uint64)]
    pages = [  # near pairs, far pages, and pages lacking a part
        Fingerprint(base[n % 3] ^ (1 << n) ^ (n % 2 << 40), base[3 + n % 3] ^ (3 << n) if n != 4 else None)
        for n in range(12)
    ]
    pages += [Fingerprint(None, base[3]), Fingerprint(base[0] ^ 0xFFFF, None), pages[1]]  # the last: a copy
    rows, first = fingerprint_rows(pages), fingerprint_rows(pages[:5])
    for limits in ([3, -1], [-1, 2], [2, 3], [0, 0]):
        earlier = [any(near(page, other, limits) for other in pages[:n]) for n, page in enumerate(pages)]
        assert near_any(*rows, *rows, np.array(limits), True).tolist() == earlier
        assert near_any(*rows, *first, np.array(limits), False).tolist() == [
            any(near(page, other, limits) for other in pages[:5]) for page in pages
        ]
        assert any(earlier)


def test_pages_kept_during_an_outage_are_added_when_redis_is_back(tmp_path: Path) -> None:
    (first,), (original, copy) = clusters(1, 1, seed=31)[0], clusters(1, 2, seed=32)[0]
    server = RedisServer(tmp_path / "redis", durable=True)
    server.start()
    try:
        store = RedisStore(Policy(), redis.Redis.from_url(server.url, socket_timeout=1), "outage", SCHEME)
        assert store.check_and_add(*first) is None
        server.stop()
        with pytest.raises(StoreUnavailable):
            store.check_and_add(*original)  # the pipeline keeps it unchecked
        server.start()
        time.sleep(RETRY_SECONDS + 0.1)
        match = store.check_and_add(*copy)
        assert match is not None and match.url == original[0]
    finally:
        server.stop()


def test_settings_pick_the_backend() -> None:
    from scrapy.settings import Settings

    from scrapy_simhash_dedup.crawl.settings import DedupSettings

    def read(**values: object) -> DedupSettings:
        return DedupSettings.from_settings(Settings(values))

    assert read().backend == read(SIMHASH_DEDUP_PERSIST=True).backend == "sqlite"
    assert read(SIMHASH_DEDUP_BACKEND="memory").backend == "memory"
    assert read(SIMHASH_DEDUP_REDIS_URL="redis://a:1").backend == "redis"
    scrapy_redis = read(SIMHASH_DEDUP_BACKEND="redis", REDIS_URL="redis://b:2/3")
    assert (scrapy_redis.backend, scrapy_redis.redis_url) == ("redis", "redis://b:2/3")
    assert read(SIMHASH_DEDUP_BACKEND="redis").redis_url == "redis://localhost:6379"
    with pytest.raises(ValueError, match="SIMHASH_DEDUP_FAIL_MODE"):
        read(SIMHASH_DEDUP_FAIL_MODE="sometimes")
    with pytest.raises(ValueError, match="SIMHASH_DEDUP_BACKEND"):
        read(SIMHASH_DEDUP_BACKEND="mongodb")


def test_a_store_of_an_earlier_layout_stops_the_crawl_with_one_line(
    site: tuple[Path, str], tmp_path: Path, redis_url: str
) -> None:
    """A store written by a version whose keys differ (before the sketches got a string of their own):
    one ERROR line naming the key and the way out, no traceback, no item."""
    from scrapy_simhash_dedup.crawl.settings import DedupSettings
    from scrapy_simhash_dedup.crawl.storage import CLOSE_REASON

    root, base_url = site
    urls = [base_url + p for p in write_clusters(root)]
    client = redis.Redis.from_url(redis_url)
    remove_redis_store(client, "old")
    client.hset("old:meta", mapping={"epoch": "e", "count": 0, "scheme": DedupSettings().scheme})  # no layout
    process = start_crawl(
        tmp_path, urls, {**PIPELINE, "SIMHASH_DEDUP_REDIS_URL": redis_url, "SIMHASH_DEDUP_REDIS_KEY": "old"}
    )
    _, log = process.communicate(timeout=120)
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["stats"]["finish_reason"] == CLOSE_REASON and result["kept"] == [] and "Traceback" not in log
    errors = [line for line in log.splitlines() if " ERROR: " in line]
    assert len(errors) == 1 and "The Redis store old holds fingerprints of scheme" in errors[0]
    assert "Use another SIMHASH_DEDUP_REDIS_KEY, or SIMHASH_DEDUP_RESET to empty it" in errors[0]
