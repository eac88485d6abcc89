"""The shared Redis store: check-and-adds per second from 1 and 4 clients, and Redis memory per page.

    python -m bench.scale.redis [--stored 1000000] [--checks 5000] [--batch 1] [--content-distance 8]
                          [--kinds atomic check_then_insert sadd]

Starts its own redis-server on a free port of 127.0.0.1 (no persistence),
loads ``--stored`` kept pages through the store (random fingerprints, an
article's 66-byte sketch and a 45-character URL each), reads ``used_memory`` from INFO memory,
then times ``--checks`` check-and-adds of new pages per client, each client a
process with its own replica (loaded before the clock starts), all started
together.  Compared, over the same Redis and the same data:

- ``atomic``: ``RedisStore.check_and_add_many`` (replica query, then the Lua
  script that checks the log's tail and appends, atomically);
- ``check_then_insert``: the same replica query, then a plain append (id,
  record, page) with no check of what other clients added meanwhile: what a
  naive shared index does, and why two workers can keep the same page;
- ``sadd``: one SADD of a 40-hex-digit fingerprint, as scrapy-redis's
  duplicate filter does per request: exact duplicates only, the ceiling.

Also printed: the CPU time Redis spent per check (INFO cpu), which bounds
what one Redis server can take from any number of clients, and the clients'
own CPU time per check (on this machine they share its cores with Redis).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import tempfile
import time
from pathlib import Path

import numpy as np
import redis

from bench.common import command_line
from scrapy_simhash_dedup.fingerprint.fingerprinter import Fingerprint
from scrapy_simhash_dedup.fingerprint.sketch import SKETCH_BITS, SKETCH_BYTES, fixed_width
from scrapy_simhash_dedup.matching.policy import Match, Policy
from scrapy_simhash_dedup.stores.redis.keys import CHUNK, RECORD, pack_record
from scrapy_simhash_dedup.stores.redis.store import RedisStore
from tests.redis_server import RedisServer

KEY = "bench:simhash_dedup"
KINDS = ("atomic", "check_then_insert", "sadd")
SCHEME = "bench"


def pages(count: int, seed: int) -> list[tuple[str, Fingerprint]]:
    rng = np.random.default_rng(seed)
    content = rng.integers(0, 2**64, size=count, dtype=np.uint64).tolist()
    structure = rng.integers(0, 2**64, size=count, dtype=np.uint64).tolist()
    sketches = rng.integers(0, 256, size=(count, SKETCH_BITS // 8), dtype=np.uint8)
    size = (1000).to_bytes(2, "little")  # an article's 1,000 shingles: no weighted bits
    return [
        (
            f"https://www.example.com/news/2026/{seed:03d}-{n:09d}.html",
            Fingerprint(content[n], structure[n], sketch=sketches[n].tobytes() + size),
        )
        for n in range(count)
    ]


class CheckThenInsertStore(RedisStore):
    """The naive shared index: check the replica, then append without an atomic re-check."""

    def _check(self, batch: list[tuple[str, Fingerprint]]) -> list[Match | None]:
        results: list[Match | None] = [self.replica.matcher.find(url, page) for url, page in batch]
        for (url, page), match in zip(batch, results):
            if match is None:
                row = self.client.hincrby(self.replica.meta, "count", 1) - 1
                chunk, offset = divmod(row, CHUNK)
                pipe = self.client.pipeline(transaction=False)
                pipe.setrange(f"{self.key}:fp:{chunk}", offset * RECORD.itemsize, pack_record(page, url))
                pipe.setrange(f"{self.key}:sk:{chunk}", offset * SKETCH_BYTES, fixed_width(page.sketch))
                pipe.rpush(f"{self.key}:pages:{chunk}", url)
                pipe.execute()
        return results


def client(kind: str, url: str, seed: int, checks: int, batch: int, policy: Policy, barrier, results) -> None:
    """One crawler process: load the replica, wait for the others, time ``checks`` check-and-adds."""
    connection = redis.Redis.from_url(url)
    work = pages(checks, seed=100 + seed)
    store_class = CheckThenInsertStore if kind == "check_then_insert" else RedisStore
    store = store_class(policy, connection, KEY, SCHEME)
    if kind != "sadd":
        store.open()
        store.replica.matcher.find(*work[0])  # one query before the clock starts
    barrier.wait()
    started, cpu = time.perf_counter(), time.process_time()
    if kind == "sadd":
        for n in range(checks):
            connection.sadd(f"{KEY}:requests", f"{seed:08x}{n:032x}")
    else:
        for start in range(0, checks, batch):
            store.check_and_add_many(work[start : start + batch])
    results.put((time.perf_counter() - started, time.process_time() - cpu))


def redis_cpu_seconds(connection: redis.Redis) -> float:
    """CPU time the server has used (INFO cpu): what a check costs Redis, whatever the waiting."""
    cpu = connection.info("cpu")
    return cpu["used_cpu_user"] + cpu["used_cpu_sys"]


def run_clients(
    kind: str, url: str, count: int, checks: int, batch: int, policy: Policy, round_: int
) -> tuple[float, float]:
    """Check-and-adds per second of ``count`` clients together, and their CPU seconds per check."""
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(count), context.Queue()
    processes = [
        context.Process(target=client, args=(kind, url, round_ * 10 + n, checks, batch, policy, barrier, results))
        for n in range(count)
    ]
    for process in processes:
        process.start()
    timings = [results.get(timeout=3600) for _ in processes]
    for process in processes:
        process.join()
    seconds = max(wall for wall, _ in timings)
    return count * checks / seconds, sum(cpu for _, cpu in timings) / (count * checks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stored", type=int, default=1_000_000)
    parser.add_argument("--checks", type=int, default=5_000, help="check-and-adds per client")
    parser.add_argument("--batch", type=int, default=1, help="pages per call (the pipeline batches pending items)")
    parser.add_argument("--content-distance", type=int, default=Policy().content_distance)
    parser.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    parser.add_argument("--out", type=Path, default=Path("bench/results/scale/redis.json"))
    args = parser.parse_args()
    policy = Policy(content_distance=args.content_distance)
    with tempfile.TemporaryDirectory() as folder:
        server = RedisServer(Path(folder))
        server.start()
        try:
            connection = server.client()
            before = connection.info("memory")["used_memory"]
            loader = RedisStore(policy, connection, KEY, SCHEME)
            started = time.perf_counter()
            stored = pages(args.stored, seed=1)
            for start in range(0, len(stored), 100):
                loader.check_and_add_many(stored[start : start + 100])
            load_seconds = time.perf_counter() - started
            kept = int(connection.hget(f"{KEY}:meta", "count"))
            bytes_per_page = (connection.info("memory")["used_memory"] - before) / kept
            print(
                f"{kept:,} pages stored in {load_seconds:.0f} s; Redis used_memory {bytes_per_page:.1f} bytes/page",
                flush=True,
            )
            rows = []
            for round_, kind in enumerate(args.kinds):
                for count in (1, 4):
                    cpu = redis_cpu_seconds(connection)
                    rate, client_cpu = run_clients(
                        kind, server.url, count, args.checks, args.batch, policy, round_ * 2 + count
                    )
                    cpu = redis_cpu_seconds(connection) - cpu
                    row = {
                        "kind": kind,
                        "clients": count,
                        "per_second": round(rate),
                        "redis_cpu_us_per_check": round(cpu / (count * args.checks) * 1e6, 1),
                        "client_cpu_us_per_check": round(client_cpu * 1e6, 1),
                    }
                    rows.append(row)
                    print(json.dumps(row), flush=True)
        finally:
            server.stop()
    print(
        "\n| store | 1 client | 4 clients | CPU µs per check, 1 / 4 clients: Redis | clients |\n|---|---|---|---|---|"
    )
    for kind in args.kinds:
        one, four = (next(r for r in rows if r["kind"] == kind and r["clients"] == c) for c in (1, 4))
        print(
            f"| {kind} | {one['per_second']:,}/s | {four['per_second']:,}/s | "
            f"{one['redis_cpu_us_per_check']} / {four['redis_cpu_us_per_check']} | "
            f"{one['client_cpu_us_per_check']} / {four['client_cpu_us_per_check']} |"
        )
    if "atomic" in args.kinds:
        atomic4 = next(r for r in rows if r["kind"] == "atomic" and r["clients"] == 4)["per_second"]
        for kind in (k for k in args.kinds if k != "atomic"):
            other = next(r for r in rows if r["kind"] == kind and r["clients"] == 4)["per_second"]
            print(f"atomic / {kind} with 4 clients: {atomic4 / other:.2f}")
    command = command_line("bench.scale.redis")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "stored": kept,
                "load_seconds": round(load_seconds),
                "distance": args.content_distance,
                "batch": args.batch,
                "redis_bytes_per_page": round(bytes_per_page, 1),
                "rows": rows,
                "command": command,
            },
            indent=1,
        )
    )
    print(f"written {args.out}; reproduce with: {command}")


if __name__ == "__main__":
    main()
