"""The two commands as a user runs them, start-up included: ``simhash-dedup spark`` (local mode, 2 cores) beside
``simhash-dedup dedup`` (2 worker processes), pages/s at two input sizes; and Spark's without its start-up (the
job's phases, from its ``run.json``: Java, Spark and the Python workers already started).

    python -m bench.speed.spark_command [--copies 10] [--rounds 3]

Inputs, WARC.gz: the 5,092 shared pages; and those pages with ``--copies - 1`` re-crawls of them, each page of a
re-crawl under a new URL with one sentence of its own added (a near-duplicate, not a byte copy).  Each command
runs in its own process, variants interleaved, ``--rounds`` times; medians and ratios.  Spark's runs use a class
archive saved by a first run that is not counted (``scrapy_simhash_dedup.spark.jvm``; that first run is reported
apart).  Written to ``bench/results/speed/spark_command.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import RESULTS_FOLDER, command_line, write_warc
from tools.fingerprint_reference import DATA, shared_pages

RESULTS = RESULTS_FOLDER / "speed" / "spark_command.json"


def archive(path: Path, copies: int, data: Path) -> int:
    """The shared pages, ``copies`` times (the first as they are, the rest edited); how many pages."""
    pages = [
        (f"https://shared.test/{n}/{name.replace('!', '/')}", body) for n, (name, body) in enumerate(shared_pages(data))
    ]

    def records():
        for copy in range(copies):
            for n, (url, body) in enumerate(pages):
                if copy:
                    url, body = (
                        f"{url}?crawl={copy}",
                        body.replace(b"</body>", f"<p>Seen again in crawl {copy}, page {n}.</p></body>".encode(), 1),
                    )
                yield url, body, "text/html"

    write_warc(path, records())
    return len(pages) * copies


def timed(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{command}: {done.stderr[-2000:]}")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--copies", type=int, default=10, help="the larger input: the shared pages this many times")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--data", type=Path, default=DATA)
    options = parser.parse_args()
    tool = str(Path(sys.executable).parent / "simhash-dedup")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "XDG_CACHE_HOME": str(Path(tmp) / "cache")}  # this run's class archive only
        out = Path(tmp) / "out"
        variants = {
            "spark, local[2]": lambda warc: [tool, "spark", str(warc), "-o", str(out), "--master", "local[2]"],
            "dedup, 2 workers": lambda warc: [
                tool,
                "dedup",
                "--no-progress",
                "--workers",
                "2",
                str(warc),
                "-o",
                str(out / "kept.jsonl"),
            ],
        }
        first_run = None
        for copies in (1, options.copies):
            warc = Path(tmp) / f"pages-{copies}.warc.gz"
            pages = archive(warc, copies, options.data)
            seconds: dict[str, list[float]] = {name: [] for name in variants}
            job: list[float] = []  # Spark's job alone (its phases)
            for _ in range(options.rounds + (first_run is None)):
                for name, command in variants.items():
                    shutil.rmtree(out, ignore_errors=True)
                    if name.startswith("dedup"):
                        out.mkdir()
                    elapsed = timed(command(warc), env)
                    if first_run is None and name.startswith("spark"):  # writes the class archive: apart
                        first_run = elapsed
                        continue
                    seconds[name].append(elapsed)
                    if name.startswith("spark"):
                        job.append(sum(json.loads((out / "run.json").read_text())["seconds"].values()))
            rates = {name: pages / statistics.median(values) for name, values in seconds.items()}
            rows.append(
                {
                    "pages": pages,
                    "seconds": seconds,
                    "pages_per_second": rates,
                    "spark_over_dedup": rates["spark, local[2]"] / rates["dedup, 2 workers"],
                    "job_seconds": job,
                    "job_pages_per_second": pages / statistics.median(job),
                }
            )
            print(json.dumps(rows[-1]), file=sys.stderr)
    print(
        f"\nmedians of {options.rounds} interleaved rounds, each command in its own process, start-up included "
        f"(Spark's first run, which saves Java's classes: {first_run:.1f} s, not counted)\n"
    )
    print(
        "| pages | spark, local[2] | its job without start-up | dedup, 2 workers | spark / dedup |\n"
        "|---|---|---|---|---|"
    )
    for row in rows:
        rates = row["pages_per_second"]
        print(
            f"| {row['pages']:,} | {rates['spark, local[2]']:,.0f} pages/s | "
            f"{row['job_pages_per_second']:,.0f} pages/s | "
            f"{rates['dedup, 2 workers']:,.0f} pages/s | {row['spark_over_dedup']:.2f}x |"
        )
    command = command_line("bench.speed.spark_command")
    print(f"\nreproduce with: {command}")
    RESULTS.write_text(
        json.dumps(
            {"rows": rows, "rounds": options.rounds, "first_spark_run_seconds": first_run, "command": command}, indent=1
        )
    )


if __name__ == "__main__":
    main()
