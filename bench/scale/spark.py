"""The Spark job's speed beside ``simhash-dedup dedup``, its unit costs, and what 10^8 and 10^9 pages cost.

    python -m bench.scale.spark [--pages 5092] [--rounds 3] [--shard-sizes 100000,1000000,4000000]

1. Pages/s over the same WARC.gz of the shared pages: the Spark job in local mode with 2 cores (one
   session, its first run reported apart: the JVM warms up) and ``dedup`` with 2 worker processes,
   interleaved, ``--rounds`` times; medians and their ratio.
2. Unit costs, measured: fingerprint CPU per page and candidate-stage CPU per page (the executors'
   accumulators), shuffle bytes per page (Spark's own stage metrics), the rounds of joins the
   candidate graph needs when none of it is decided on the driver, the bytes a page takes in a
   shard (pickled, as shipped to a task) and in a shard's store (memory), and the cost of one query
   in a shard of each of ``--shard-sizes`` pages (random fingerprints, real queries).
3. From them, per archive size and shard size: core-hours (fingerprints, candidates), bytes
   shuffled and shipped, and a task's memory.  Printed, and written to ``bench/results/scale/spark.json``.
"""

from __future__ import annotations

import argparse
import io
import json
import pickle
import shutil
import statistics
import tempfile
import time
import urllib.request
from itertools import islice
from pathlib import Path

import numpy as np

from bench.common import RESULTS_FOLDER, command_line, write_warc
from scrapy_simhash_dedup.batch import dedup
from scrapy_simhash_dedup.batch.sources import read_inputs
from scrapy_simhash_dedup.crawl.settings import DedupSettings
from scrapy_simhash_dedup.fingerprint.fingerprinter import Fingerprinter
from scrapy_simhash_dedup.spark import JobOptions, Jvm, run, session
from scrapy_simhash_dedup.spark.candidates import fingerprint_of
from scrapy_simhash_dedup.stores.memory import MemoryStore
from tools.fingerprint_reference import DATA, shared_pages

RESULTS = RESULTS_FOLDER / "scale" / "spark.json"
ARCHIVES = (10**8, 10**9)
QUERIES = 2_000


def run_dedup(archive: Path) -> int:
    counts = dedup([archive], DedupSettings(), MemoryStore(DedupSettings().policy), io.StringIO(), workers=2)
    return sum(counts.values())


def run_spark(spark, archive: Path, folder: Path, options: JobOptions = JobOptions()):
    shutil.rmtree(folder, ignore_errors=True)
    return run(spark, [archive], folder, DedupSettings(), options)


def shuffle_bytes(spark, since_stage: int) -> tuple[int, int]:
    """Bytes written to shuffles by the stages from ``since_stage`` on, and the next stage's id."""
    context = spark.sparkContext
    url = f"{context.uiWebUrl}/api/v1/applications/{context.applicationId}/stages?status=complete"
    stages = json.load(urllib.request.urlopen(url))
    written = sum(stage["shuffleWriteBytes"] for stage in stages if stage["stageId"] >= since_stage)
    return written, max((stage["stageId"] for stage in stages), default=-1) + 1


def nodes_of(archive: Path) -> list:
    fingerprinter = Fingerprinter()
    nodes = []
    for rank, page in enumerate(read_inputs([archive])):
        fingerprint = fingerprinter.fingerprint(page.html, page.url, page.content_type)
        if fingerprint.content is not None:
            nodes.append(
                (rank, page.url, fingerprint.content, fingerprint.structure, fingerprint.short, fingerprint.sketch)
            )
    return nodes


def rss_bytes() -> int:
    return int(Path("/proc/self/statm").read_text().split()[1]) * 4096


def query_cost(size: int, queries: list, template: tuple) -> tuple[float, float, float]:
    """Seconds per query of a shard of ``size`` pages (random fingerprints, the template's sketch and
    URL length), the shard store's bytes per page (resident memory), and its build's CPU seconds per
    page (each task builds the store of its earlier shard)."""
    rng = np.random.default_rng(size)
    before = rss_bytes()
    store = MemoryStore(DedupSettings().policy)
    fingerprints = rng.integers(0, 2**63, size=(size, 2), dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    present = np.zeros((size, 3), dtype=bool)
    present[:, :2] = True
    url, sketch = template[1], template[5]
    urls, sketches = [url + str(n) for n in range(size)], [bytes(sketch) for _ in range(size)]
    built = time.process_time()
    store.load(urls, fingerprints, present, sketches)
    build = (time.process_time() - built) / size
    per_page = (rss_bytes() - before) / size
    started = time.process_time()
    for node in queries:
        list(store.matches(fingerprint_of(node)))
    return (time.process_time() - started) / len(queries), per_page, build


def projection(units: dict, shard_sizes: list[int], cost: dict[int, tuple[float, float, float]]) -> list[dict]:
    rows = []
    for pages in ARCHIVES:
        for shard in shard_sizes:
            shards = -(-pages // shard)
            query, memory, build = cost[shard]
            tasks = shards * (shards + 1) // 2
            queries_per_page = (shards + 1) / 2  # a page asks every shard up to its own
            rows.append(
                {
                    "pages": pages,
                    "shard_pages": shard,
                    "shards": shards,
                    "tasks": tasks,
                    "fingerprint_core_hours": pages * units["fingerprint_cpu_per_page"] / 3600,
                    "candidate_core_hours": (
                        pages * (queries_per_page * query + units["candidate_cpu_per_page"]) + tasks * shard * build
                    )
                    / 3600,
                    "shuffle_bytes": pages * units["shuffle_bytes_per_page"],
                    "shard_bytes_shipped": pages
                    * (shards + 1)
                    * units["node_bytes"],  # a shard goes to shards + 1 tasks
                    "task_memory_bytes": shard * memory * 2,  # the store of one shard and the later shard's pages
                }
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=5092)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--shard-sizes", default="100000,1000000,4000000")
    options = parser.parse_args()
    shard_sizes = [int(size) for size in options.shard_sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "pages.warc.gz"
        write_warc(
            archive,
            (
                (f"https://shared.test/{n}/{name.replace('!', '/')}", body, "text/html")
                for n, (name, body) in enumerate(islice(shared_pages(options.data), options.pages))
            ),
        )
        started = time.perf_counter()
        spark = session(cores=2, jvm=Jvm("local[2]", ui=True))  # its REST API gives the stages' shuffle bytes
        start_seconds = time.perf_counter() - started
        started = time.perf_counter()
        first = run_spark(spark, archive, Path(tmp) / "out")
        cold_seconds = time.perf_counter() - started
        pages = first.work["pages"]
        seconds: dict[str, list[float]] = {"spark job, local[2]": [], "dedup, 2 workers": []}
        cpu, shuffled, stage = [], [], shuffle_bytes(spark, 0)[1]
        for _ in range(options.rounds):
            started = time.perf_counter()
            result = run_spark(spark, archive, Path(tmp) / "out")
            seconds["spark job, local[2]"].append(time.perf_counter() - started)
            written, stage = shuffle_bytes(spark, stage)
            shuffled.append(written)
            cpu.append(result.cpu)
            started = time.perf_counter()
            run_dedup(archive)
            seconds["dedup, 2 workers"].append(time.perf_counter() - started)
        at_scale = run_spark(spark, archive, Path(tmp) / "rounds", JobOptions(shard_pages=1_000, driver_pairs=0))
        spark.stop()
        nodes = nodes_of(archive)
    rates = {name: pages / statistics.median(values) for name, values in seconds.items()}
    ratio = rates["spark job, local[2]"] / rates["dedup, 2 workers"]
    units = {
        "fingerprint_cpu_per_page": statistics.median(c["fingerprint"] for c in cpu) / result.work["fingerprinted"],
        "candidate_cpu_per_page": statistics.median(c["candidates"] for c in cpu) / result.work["compared"],
        "shuffle_bytes_per_page": statistics.median(shuffled) / pages,
        "node_bytes": len(pickle.dumps(nodes, protocol=pickle.HIGHEST_PROTOCOL)) / len(nodes),
        "candidate_pairs_per_page": result.work["candidate_pairs"] / result.work["compared"],
        "rounds_without_driver": at_scale.work["rounds"],
    }
    rng = np.random.default_rng(0)
    queries = [nodes[i] for i in rng.choice(len(nodes), size=min(QUERIES, len(nodes)), replace=False)]
    cost = {size: query_cost(size, queries, nodes[0]) for size in shard_sizes}
    rows = projection(units, shard_sizes, cost)

    print(
        f"{pages:,} pages, median of {options.rounds} interleaved rounds (Spark session start {start_seconds:.1f} s, "
        f"its first run {cold_seconds:.1f} s, not counted)\n"
    )
    print("| variant | pages/s |\n|---|---|")
    for name, rate in rates.items():
        print(f"| {name} | {rate:,.0f} |")
    print(f"\nspark / dedup: {ratio:.2f}x")
    print(f"phases of the last run (s): {result.seconds}")
    print("\n| unit cost | measured |\n|---|---|")
    print(f"| fingerprint CPU per page | {units['fingerprint_cpu_per_page'] * 1e3:.2f} ms |")
    print(
        f"| candidate-stage CPU per page (one shard of {result.work['compared']:,}) | "
        f"{units['candidate_cpu_per_page'] * 1e3:.3f} ms |"
    )
    print(f"| shuffle bytes per page | {units['shuffle_bytes_per_page']:,.0f} |")
    print(f"| a page in a shard, pickled | {units['node_bytes']:,.0f} bytes |")
    print(f"| candidate pairs per page | {units['candidate_pairs_per_page']:.2f} |")
    print(f"| rounds of joins, none on the driver | {units['rounds_without_driver']} |")
    for size, (query, memory, build) in cost.items():
        print(
            f"| a query in a shard of {size:,} pages | {query * 1e6:,.0f} µs (the shard: {memory:,.0f} bytes a page "
            f"in memory, built in {build * 1e6:.1f} µs a page) |"
        )
    print(
        "\n| pages | shard | shards | tasks | fingerprints (core-h) | candidates (core-h) | shuffled | shards shipped "
        "| a task's memory |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['pages']:.0e} | {row['shard_pages']:,} | {row['shards']:,} | {row['tasks']:,} | "
            f"{row['fingerprint_core_hours']:,.0f} | {row['candidate_core_hours']:,.0f} | "
            f"{row['shuffle_bytes'] / 1e12:.1f} TB | "
            f"{row['shard_bytes_shipped'] / 1e12:,.1f} TB | {row['task_memory_bytes'] / 1e9:.1f} GB |"
        )
    command = command_line("bench.scale.spark")
    print(f"\nreproduce with: {command}")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "pages": pages,
                "rounds": options.rounds,
                "pages_per_second": rates,
                "spark_over_dedup": ratio,
                "seconds": seconds,
                "session_start_seconds": start_seconds,
                "first_run_seconds": cold_seconds,
                "phases_of_last_run": result.seconds,
                "work": result.work,
                "units": units,
                "query_seconds_and_bytes_per_page": {str(size): value for size, value in cost.items()},
                "projection": rows,
                "command": command,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
