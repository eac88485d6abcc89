"""Crawl scope against site scope: a crawler's memory as pages are seen, Redis on one node against a 3-master
cluster, and what 10^8 and 10^9 pages would take.

    python -m bench.scale.scope [--pages 1000000] [--sites 10000] [--active 100] [--checks 100000] [--rounds 2]

1. **A crawler's resident memory** (VmRSS) every 50,000 pages seen, ``--pages`` pages over ``--sites`` sites,
   ``--active`` sites crawled at a time (a window of sites, each site's pages in it, then the next window), one
   page in ten a near-duplicate of an earlier page of its site: the Redis store in crawl scope (a replica of
   every kept page) and in site scope (the replicas of the sites met, under ``SIMHASH_DEDUP_MEMORY_MB``'s
   default), and the SQLite store in site scope; each in a process of its own that imports Scrapy first (a
   crawler's base), interleaved over ``--rounds``.
2. **Check-and-adds per second and Redis CPU per check**: 2 client processes, ``--checks`` pages each over 1,000
   sites, site scope, against one redis-server and against a cluster of 3 masters (and 3 replicas), one after
   the other in each round; Redis's CPU is the sum over its nodes (INFO cpu), bytes per page the growth of
   ``used_memory`` over the pages each master holds.
3. **A projection** for 10^8 and 10^9 kept pages from the measured unit costs.

Starts its own redis-server processes on free ports; writes ``bench/results/scale/scope.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from bench.common import command_line

SAMPLE_EVERY = 50_000
SKETCHES = 1000  # real sketches (of 200 words each) the pages take theirs from: a copy takes its original's
NODE_MEMORY_GB = 64  # a node's memory for the projection: Redis data at most half of it (fork, fragmentation)
CRAWL_RATE = 10_000  # pages/s across all crawlers, for the projection's Redis CPU


def site_pages(pages: int, sites: int, active: int, seed: int = 1) -> Iterator[list[tuple[str, object]]]:
    """Batches of 100 pages as a crawl of ``active`` sites at a time meets them: each window of sites crawled
    to the end, pages of its sites interleaved; one page in ten a near-duplicate (2 content bits apart, the
    same sketch) of an earlier page of its site."""
    from scrapy_simhash_dedup.fingerprint.fingerprinter import Fingerprint
    from tests.pages import plain_sketch

    rng = np.random.default_rng(seed)
    pool = [plain_sketch(f"{seed}/{n}/{word}" for word in range(200)) for n in range(SKETCHES)]
    per_site = pages // sites
    for window in range(0, sites, active):
        count = per_site * min(active, sites - window)
        site = window + rng.permutation(np.repeat(np.arange(min(active, sites - window)), per_site))
        content = rng.integers(0, 2**64, size=count, dtype=np.uint64)
        structure = rng.integers(0, 2**64, size=count, dtype=np.uint64)
        sketches = rng.integers(0, SKETCHES, size=count)  # which of the pool's sketches
        copy = rng.random(count) < 0.1
        last: dict[int, int] = {}
        batch = []
        for n in range(count):
            s = int(site[n])
            if copy[n] and s in last:  # a near-duplicate of its site's last page
                earlier = last[s]
                content[n] = content[earlier] ^ np.uint64(0b101)
                sketches[n] = sketches[earlier]
            last[s] = n
            url = f"https://www.site{s:05d}.com/articles/{n:07d}.html"
            batch.append((url, Fingerprint(int(content[n]), int(structure[n]), sketch=pool[sketches[n]])))
            if len(batch) == 100:
                yield batch
                batch = []
        if batch:
            yield batch


def resident_mb() -> float:
    from scrapy_simhash_dedup.fingerprint.process_memory import resident_bytes

    return (resident_bytes() or 0) / 2**20


def memory_run(variant: str, url: str, folder: str, pages: int, sites: int, active: int) -> dict:
    """One crawler process: RSS every ``SAMPLE_EVERY`` pages of ``variant``'s store (run in a fresh process)."""
    import importlib

    for module in ("scrapy.crawler", "twisted.internet.reactor"):  # a crawler's base: Scrapy, Twisted, their imports
        importlib.import_module(module)

    from scrapy_simhash_dedup.crawl.settings import DedupSettings
    from scrapy_simhash_dedup.matching.scope import Scope
    from scrapy_simhash_dedup.stores.redis.connect import connect, redis_store
    from scrapy_simhash_dedup.stores.sqlite.store import SqliteStore

    scope = Scope.CRAWL if variant.endswith("crawl scope") else Scope.SITE
    settings = DedupSettings(scope=scope)
    base = resident_mb()
    if variant.startswith("sqlite"):
        store = SqliteStore(
            settings.policy, Path(folder) / f"{variant}.sqlite", "bench", 1000, 0, 0, scope, settings.memory_budget
        )
    else:
        store = redis_store(
            settings.policy,
            connect(url),
            f"bench:{variant.replace(', ', '-').replace(' ', '-')}",
            "bench",
            scope,
            settings.memory_budget,
        )
        store.open()
    samples, seen, kept, started = [], 0, 0, time.perf_counter()
    for batch in site_pages(pages, sites, active):
        if variant.startswith("sqlite"):
            matches = []
            for page in batch:
                matches.append(store.check_and_add(*page))
                if matches[-1] is None or not matches[-1].duplicate:
                    store.confirm(len(store) - 1)  # (its item got through)
        else:
            matches = store.check_and_add_many(batch)
        kept += sum(match is None or not match.duplicate for match in matches)
        seen += len(batch)
        if seen % SAMPLE_EVERY == 0:
            samples.append((seen, round(resident_mb(), 1)))
    seconds = time.perf_counter() - started
    store.close()
    return {
        "variant": variant,
        "base_mb": round(base, 1),
        "samples": samples,
        "pages_per_second": round(seen / seconds),
        "sites_held_at_end": len(store.matcher.sites)
        if variant.startswith("sqlite")
        else (len(store.sites) if scope is Scope.SITE else None),
    }


def check_client(url: str, seed: int, checks: int, barrier, results) -> None:
    """A crawler process in site scope: ``checks`` pages, 100 a site, timed once all are ready."""
    from scrapy_simhash_dedup.matching.policy import Policy
    from scrapy_simhash_dedup.matching.scope import Scope
    from scrapy_simhash_dedup.stores.redis.connect import connect, redis_store

    work = list(site_pages(checks, max(1, checks // 100), 100, seed=seed))  # 100 pages a site, 100 sites at a time
    store = redis_store(Policy(), connect(url), "bench:checks", "bench", Scope.SITE, 128 << 20)
    store.open()
    barrier.wait()
    started = time.perf_counter()
    for batch in work:
        store.check_and_add_many(batch)
    results.put(time.perf_counter() - started)
    store.close()


def redis_cpu(clients: list) -> float:
    return sum(cpu["used_cpu_user"] + cpu["used_cpu_sys"] for cpu in (client.info("cpu") for client in clients))


def check_rate(url: str, nodes: list, checks: int, round_: int) -> dict:
    """Check-and-adds per second of 2 crawler processes together, Redis's CPU µs per check over ``nodes``, and
    bytes per page on each master."""
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(2), context.Queue()
    for client in nodes:
        client.flushall()
    memory = {id(client): client.info("memory")["used_memory"] for client in nodes}
    cpu = redis_cpu(nodes)
    workers = [
        context.Process(target=check_client, args=(url, round_ * 10 + n, checks, barrier, results)) for n in range(2)
    ]
    for worker in workers:
        worker.start()
    seconds = max(results.get(timeout=3600) for _ in workers)
    for worker in workers:
        worker.join()
    cpu = redis_cpu(nodes) - cpu
    per_node = []
    for client in nodes:
        pages = sum(int(client.hget(key, "count") or 0) for key in client.scan_iter(match="bench:checks:*:meta"))
        if pages:
            per_node.append((pages, (client.info("memory")["used_memory"] - memory[id(client)]) / pages))
    return {
        "per_second": 2 * checks / seconds,
        "redis_cpu_us_per_check": cpu / (2 * checks) * 1e6,
        "pages_per_master": [pages for pages, _ in per_node],
        "bytes_per_page": sum(pages * size for pages, size in per_node) / sum(pages for pages, _ in per_node),
    }


def projection(
    crawl_bytes_per_page: float, base_mb: float, budget_mb: float, redis_bytes: float, cpu_us: float
) -> list[dict]:
    """Nodes, memory per node and crawler RSS at 10^8 and 10^9 kept pages, from the measured unit costs."""
    rows = []
    for pages in (10**8, 10**9):
        data_gb = pages * redis_bytes / 1e9
        masters = max(1, math.ceil(data_gb / (NODE_MEMORY_GB / 2)))
        rows.append(
            {
                "pages": pages,
                "redis_data_gb": round(data_gb),
                "masters": masters,
                "replicas": masters,
                "memory_per_node_gb": round(data_gb / masters, 1),
                "redis_cores_at_crawl_rate": round(CRAWL_RATE * cpu_us / 1e6, 2),
                "crawler_rss_gb": {
                    "crawl scope": round((base_mb * 2**20 + pages * crawl_bytes_per_page) / 1e9, 1),
                    "site scope": round((base_mb + budget_mb) * 2**20 / 1e9, 2),
                },
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=1_000_000)
    parser.add_argument("--sites", type=int, default=10_000)
    parser.add_argument("--active", type=int, default=100)
    parser.add_argument("--checks", type=int, default=100_000, help="pages per client, 2 clients")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("bench/results/scale/scope.json"))
    args = parser.parse_args()
    from scrapy_simhash_dedup.crawl.settings import DedupSettings
    from tests.redis_cluster import RedisCluster
    from tests.redis_server import RedisServer

    variants = ("redis, crawl scope", "redis, site scope", "sqlite, site scope")
    memory: dict[str, list[dict]] = {variant: [] for variant in variants}
    checks: dict[str, list[dict]] = {"1 node": [], "3-master cluster": []}
    with tempfile.TemporaryDirectory() as folder:
        server, cluster = RedisServer(Path(folder) / "single"), RedisCluster(Path(folder) / "cluster")
        server.start()
        cluster.start()
        try:
            single = [server.client()]
            masters = [cluster.node(port) for port in cluster.masters()]
            seeds = ",".join(f"redis://{host}:{port}" for host, port in cluster.seeds)
            for round_ in range(args.rounds):
                for variant in variants if round_ % 2 == 0 else variants[::-1]:
                    single[0].flushall()
                    done = subprocess.run(
                        [
                            sys.executable,
                            "-c",
                            "import json, sys; from bench.scale.scope import memory_run; "
                            "print(json.dumps(memory_run(*json.loads(sys.argv[1]))))",
                            json.dumps([variant, server.url, folder, args.pages, args.sites, args.active]),
                        ],
                        capture_output=True,
                        text=True,
                        check=True,
                    )
                    memory[variant].append(json.loads(done.stdout.splitlines()[-1]))
                    last = memory[variant][-1]
                    print(
                        f"round {round_}: {variant}: {last['samples'][-1][1]} MB RSS at {last['samples'][-1][0]:,} "
                        f"pages (base {last['base_mb']} MB), {last['pages_per_second']:,} pages/s",
                        flush=True,
                    )
                for name, url, nodes in (
                    (("1 node", server.url, single), ("3-master cluster", seeds, masters))
                    if round_ % 2 == 0
                    else (("3-master cluster", seeds, masters), ("1 node", server.url, single))
                ):
                    checks[name].append(check_rate(url, nodes, args.checks, round_))
                    print(
                        f"round {round_}: {name}: {checks[name][-1]['per_second']:,.0f} check-and-adds/s, Redis "
                        f"{checks[name][-1]['redis_cpu_us_per_check']:.1f} µs CPU per check, "
                        f"{checks[name][-1]['bytes_per_page']:.0f} bytes per page",
                        flush=True,
                    )
        finally:
            server.stop()
            cluster.stop()

    def median(rows: list[dict], field: str) -> float:
        return statistics.median(row[field] for row in rows)

    summary = {}
    for variant, runs in memory.items():
        at = [dict(run["samples"]) for run in runs]
        summary[variant] = {
            "base_mb": median(runs, "base_mb"),
            "pages_per_second": median(runs, "pages_per_second"),
            "rss_mb": {seen: statistics.median(sample[seen] for sample in at) for seen in at[0]},
        }
    print("\n| pages seen | " + " | ".join(f"{v}: RSS MB" for v in variants) + " |\n|---|" + "---|" * len(variants))
    for seen in list(summary[variants[0]]["rss_mb"])[1::4] + [args.pages]:
        print(f"| {seen:,} | " + " | ".join(f"{summary[v]['rss_mb'][seen]:.0f}" for v in variants) + " |")
    rates = {
        name: {field: median(rows, field) for field in ("per_second", "redis_cpu_us_per_check", "bytes_per_page")}
        for name, rows in checks.items()
    }
    print(
        "\n| Redis | check-and-adds/s (2 clients) | Redis CPU µs per check | bytes per page on a master |"
        "\n|---|---|---|---|"
    )
    for name, rate in rates.items():
        print(
            f"| {name} | {rate['per_second']:,.0f} | {rate['redis_cpu_us_per_check']:.1f} | "
            f"{rate['bytes_per_page']:.0f} |"
        )
    ratio = rates["3-master cluster"]["per_second"] / rates["1 node"]["per_second"]
    print(f"cluster / 1 node: {ratio:.2f}x check-and-adds per second (clients and nodes share 2 cores)")
    crawl = summary["redis, crawl scope"]
    grown = (crawl["rss_mb"][args.pages] - crawl["base_mb"]) * 2**20 / args.pages
    projected = projection(
        grown,
        summary["redis, site scope"]["base_mb"],
        DedupSettings().memory_mb,
        rates["3-master cluster"]["bytes_per_page"],
        rates["3-master cluster"]["redis_cpu_us_per_check"],
    )
    print(
        f"\nprojection ({NODE_MEMORY_GB} GB nodes holding at most half in data; Redis cores at {CRAWL_RATE:,} pages/s):"
    )
    print(
        "| kept pages | Redis data | masters (+ as many replicas) | data per node | Redis cores "
        "| crawler RSS, crawl scope | site scope |\n|---|---|---|---|---|---|---|"
    )
    for row in projected:
        print(
            f"| {row['pages']:.0e} | {row['redis_data_gb']} GB | {row['masters']} | {row['memory_per_node_gb']} GB | "
            f"{row['redis_cores_at_crawl_rate']} | {row['crawler_rss_gb']['crawl scope']} GB | "
            f"{row['crawler_rss_gb']['site scope']} GB |"
        )
    command = command_line("bench.scale.scope")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "pages": args.pages,
                "sites": args.sites,
                "active": args.active,
                "memory": memory,
                "summary": summary,
                "checks": checks,
                "rates": rates,
                "crawl_scope_bytes_per_page": round(grown, 1),
                "projection": projected,
                "command": command,
            },
            indent=1,
        )
    )
    print(f"written {args.out}; reproduce with: {command}")


if __name__ == "__main__":
    main()
