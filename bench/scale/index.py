"""Index speed and memory: ours against the ``simhash`` package's index and numpy brute force.

    python -m bench.scale.index [--sizes 1000000 10000000] [--distance 3] [--out bench/results/scale/index.json]

Each measurement runs in a fresh process so that its resident memory (RSS
growth while building) is its own.  Adds are one call per fingerprint, as the
pipeline makes them; queries are 20,000 lookups, timed one by one.  "planted"
data holds a near-duplicate (1..k bits away) of every tenth fingerprint and
queries them; "random" queries random fingerprints.  Last, a store of the
largest size is written and reopened (``SqliteStore``), timed.  The layout is
the one the index chooses for itself as it grows.
"""

from __future__ import annotations

import argparse
import json
import logging
import multiprocessing
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.common import command_line

QUERIES = 20_000


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def dataset(size: int, distance: int, planted: bool, seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    fingerprints = rng.integers(0, 2**64, size=size, dtype=np.uint64)
    if not planted:
        return fingerprints, rng.integers(0, 2**64, size=QUERIES, dtype=np.uint64)
    flips = np.zeros(size // 10, dtype=np.uint64)
    for _ in range(max(1, distance)):
        flips |= np.uint64(1) << rng.integers(0, 64, size=len(flips)).astype(np.uint64)
    fingerprints[1::10][: len(flips)] = fingerprints[0::10][: len(flips)] ^ flips
    return fingerprints, fingerprints[0::10][:QUERIES]


def measure(kind: str, size: int, distance: int, planted: bool) -> dict:
    """Build one index of ``size`` fingerprints and time adds and queries (run in a child process)."""
    from simhash import Simhash
    from simhash import SimhashIndex as PackageIndex

    from scrapy_simhash_dedup.matching.index import SimhashIndex

    fingerprints, queries = dataset(size, distance, planted)
    values, query_values = fingerprints.tolist(), queries.tolist()
    before = rss_bytes()  # after the imports, the compiled code and the data: only the index counts
    started = time.perf_counter()
    if kind == "ours":
        index = SimhashIndex(distance)
        for key, value in enumerate(values):
            index.add(key, value)
        lookup = index.query
    elif kind == "simhash_package":
        logging.getLogger("simhash").setLevel(logging.ERROR)  # it warns about every big bucket
        index = PackageIndex([], k=distance)
        for key, value in enumerate(values):
            index.add(str(key), Simhash(value))
        lookup = lambda q: index.get_near_dups(Simhash(q))  # noqa: E731 (one line per design, read as a table)
    else:  # numpy brute force
        stored = fingerprints.copy()
        lookup = lambda q: np.flatnonzero(np.bitwise_count(stored ^ np.uint64(q)) <= distance)  # noqa: E731
    build_seconds = time.perf_counter() - started
    memory = rss_bytes() - before
    latencies = []
    found = 0
    for query in query_values[: QUERIES if kind != "numpy_brute_force" or size <= 1_000_000 else 2_000]:
        t = time.perf_counter()
        found += len(lookup(query)) > 0
        latencies.append(time.perf_counter() - t)
    micro = np.array(latencies) * 1e6
    return {
        "index": kind,
        "size": size,
        "distance": distance,
        "data": "planted" if planted else "random",
        "adds_per_second": round(size / build_seconds) if kind != "numpy_brute_force" else None,
        "query_p50_us": round(float(np.percentile(micro, 50)), 1),
        "query_p99_us": round(float(np.percentile(micro, 99)), 1),
        "rss_bytes_per_fingerprint": round(memory / size, 1),
        "queries_with_a_match": found / len(latencies),
    }


def reopen(size: int) -> dict:
    """Write a store of ``size`` kept pages, then time opening it again (run in a child process)."""
    from scrapy_simhash_dedup.fingerprint.fingerprinter import Fingerprint
    from scrapy_simhash_dedup.matching.policy import Policy
    from scrapy_simhash_dedup.stores.sqlite.store import SqliteStore

    rng = np.random.default_rng(3)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "store.sqlite"
        store = SqliteStore(Policy(), path, scheme="bench", commit_every=100_000)
        content = rng.integers(0, 2**64, size=size, dtype=np.uint64).tolist()
        structure = rng.integers(0, 2**64, size=size, dtype=np.uint64).tolist()
        sketch = bytes(64)
        started = time.perf_counter()
        for n in range(size):  # rows as the pipeline adds and confirms them
            store.check_and_add(f"https://example.com/page/{n}", Fingerprint(content[n], structure[n], sketch=sketch))
            store.confirm(n)
        store.close()
        write_seconds = time.perf_counter() - started
        started = time.perf_counter()
        reopened = SqliteStore(Policy(), path, scheme="bench")
        seconds = time.perf_counter() - started
        assert len(reopened) == size
        reopened.close()
        return {
            "size": size,
            "write_seconds": round(write_seconds, 1),
            "reopen_seconds": round(seconds, 2),
            "file_bytes_per_page": round(path.stat().st_size / size, 1),
        }


def in_child(function, *args):
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(function, args)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--distance", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("bench/results/scale/index.json"))
    args = parser.parse_args()
    rows = []
    for size in args.sizes:
        for planted in (False, True):
            kinds = ["ours", "numpy_brute_force"] + (["simhash_package"] if size <= 1_000_000 else [])
            for kind in kinds:
                row = in_child(measure, kind, size, args.distance, planted)
                rows.append(row)
                print(json.dumps(row), flush=True)
    print("\n| index | size | data | adds/s | query p50 µs | query p99 µs | RSS bytes / fingerprint |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        adds = "" if r["adds_per_second"] is None else f"{r['adds_per_second']:,}"
        print(
            f"| {r['index']} | {r['size']:,} | {r['data']} | {adds} | {r['query_p50_us']} | "
            f"{r['query_p99_us']} | {r['rss_bytes_per_fingerprint']} |"
        )
    ratios = []
    for r in rows:
        if r["index"] != "ours":
            ours = next(o for o in rows if o["index"] == "ours" and o["size"] == r["size"] and o["data"] == r["data"])
            ratio = {
                "against": r["index"],
                "size": r["size"],
                "data": r["data"],
                "query_p50_times_faster": round(r["query_p50_us"] / ours["query_p50_us"], 1),
                "memory_times_less": round(
                    r["rss_bytes_per_fingerprint"] / max(0.1, ours["rss_bytes_per_fingerprint"]), 1
                ),
            }
            ratios.append(ratio)
            print(
                f"ours vs {r['index']} at {r['size']:,} ({r['data']}): "
                f"queries {ratio['query_p50_times_faster']}x faster, "
                f"{ratio['memory_times_less']}x less memory"
            )
    store = in_child(reopen, max(args.sizes))
    print(
        f"\nstore of {store['size']:,} pages: written in {store['write_seconds']} s, reopened in "
        f"{store['reopen_seconds']} s, {store['file_bytes_per_page']} bytes per page on disk"
    )
    command = command_line("bench.scale.index")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"rows": rows, "ratios": ratios, "store": store, "command": command}, indent=1))
    print(f"written {args.out}; reproduce with: {command}")


if __name__ == "__main__":
    main()
