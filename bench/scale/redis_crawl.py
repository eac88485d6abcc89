"""Crawlers on Redis as users run them: what an outage and a kill cost, with and without the filter.

    python -m bench.scale.redis_crawl [--tries 3] [--data ../shared/data]

The Debian handbook of ``--data`` (3,302 pages in 26 languages) is served on
127.0.0.1 and crawled by a new user's project (``tests/user_project.py``:
every link followed, items ``{url, title}``), with the add-on and the Redis
store on a redis-server of its own (not persistent, as many are run):

- **outage**: one crawler (Scrapy's scheduler); Redis is stopped once the
  crawl has exported ``--outage-after`` items, and started again, empty, 5 s
  later.  Against the same crawl without an outage: near-duplicate pages kept
  (kept pages a page kept before them is a near-duplicate of, by the
  pipeline's own decision).
- **kill**: two crawlers with scrapy-redis's scheduler, seeded through the
  spider's start-URLs key; one is killed with SIGKILL once it has exported
  ``--kill-after`` items, and started again.  Pages lost: the site's pages
  (every page a crawl without the filter fetches) whose content is in no
  output: neither exported, nor dropped as a near-duplicate of a page
  exported, nor a near-duplicate of a page exported (by the pipeline's own
  decision); the same kill without the filter
  (``SIMHASH_DEDUP_ENABLED = False``) beside it.  The documented caveat (docs/usage/redis.md) (pages in Redis
  whose items are in no output) is counted apart.

Each variant runs ``--tries`` times, interleaved.  Results go to
``bench/results/scale/redis_crawl.json``.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench.common import RESULTS_FOLDER, command_line, lost
from crawler.local_site import serve_directory
from scrapy_simhash_dedup.fingerprint.fingerprinter import Fingerprinter, comparable
from scrapy_simhash_dedup.matching.policy import Policy, dropped
from scrapy_simhash_dedup.stores.memory import MemoryStore
from tests.redis_server import RedisServer
from tests.user_project import REDIS_SPIDER, SCRAPY_REDIS_SETTINGS, environment, make_project, scrapy_command
from tools.fingerprint_reference import DATA

RESULTS = RESULTS_FOLDER / "scale" / "redis_crawl.json"
DROPPED = re.compile(r"Dropped: near-duplicate of (\S+) \(.*?\): (\S+)")
REDIS_STORE = """
ADDONS = {{"scrapy_simhash_dedup.SimhashDedupAddon": 0}}
SIMHASH_DEDUP_REDIS_URL = "{redis_url}"
SIMHASH_DEDUP_REDIS_TIMEOUT = 1
"""


def exported(path: Path) -> list[str]:
    """The URLs of the items a crawl wrote (a killed crawl's last line may be cut off)."""
    if not path.exists():
        return []
    return [json.loads(line)["url"] for line in path.read_text().splitlines() if line.endswith("}")]


def wait_for_items(path: Path, count: int, process: subprocess.Popen) -> None:
    while len(exported(path)) < count and process.poll() is None:
        time.sleep(0.05)


def pages_of(urls: list[str]) -> list[tuple[str, bytes]]:
    """The HTML of each URL, fetched again from the local server."""
    return [(url, urllib.request.urlopen(url).read()) for url in urls]


def near_duplicates_kept(pages: list[tuple[str, bytes]]) -> int:
    """Kept pages a page kept before them (in their order) is a near-duplicate of."""
    fingerprinter, store, count = Fingerprinter(), MemoryStore(Policy()), 0
    for url, html in pages:
        fingerprint = fingerprinter.fingerprint(html, url)
        count += comparable(fingerprint) and dropped(store.check_and_add(url, fingerprint))
    return count


def outage(base_url: str, work: Path, with_outage: bool, after: int) -> dict[str, Any]:
    server = RedisServer(work / "redis")
    server.start()
    project = make_project(work / "project", REDIS_STORE.format(redis_url=server.url))
    output = project / "out.jsonl"
    crawl = subprocess.Popen(
        scrapy_command("crawl", "site", "-a", f"url={base_url}", "-O", "out.jsonl"),
        cwd=project,
        env=environment(),
        stderr=subprocess.DEVNULL,
    )
    try:
        if with_outage:
            wait_for_items(output, after, crawl)
            server.stop()
            time.sleep(5)
            server.start()  # not persistent: empty
        crawl.wait(timeout=1200)
    finally:
        server.stop()
    urls = exported(output)
    return {"kept": len(urls), "near-duplicates kept": near_duplicates_kept(pages_of(urls))}


def kill(base_url: str, work: Path, with_filter: bool, after: int | None, site: set[str]) -> dict[str, Any]:
    """Two scrapy-redis crawlers, the first killed once it exported ``after`` items (None: no kill)."""
    server = RedisServer(work / "redis")
    server.start()
    client = server.client()
    client.lpush("site:start_urls", base_url)
    project = make_project(work / "project", SCRAPY_REDIS_SETTINGS.format(redis_url=server.url), spider=REDIS_SPIDER)
    switch = [] if with_filter else ["-s", "SIMHASH_DEDUP_ENABLED=False"]
    outputs = [project / f"out-{n}.jsonl" for n in range(3)]
    logs = [project / f"log-{n}.txt" for n in range(3)]

    def start(n: int) -> subprocess.Popen:
        with logs[n].open("w") as log:
            return subprocess.Popen(
                scrapy_command("crawl", "site", "-O", outputs[n].name, *switch),
                cwd=project,
                env=environment(),
                stderr=log,
            )

    crawlers = [start(0), start(1)]
    try:
        if after is not None:
            wait_for_items(outputs[0], after, crawlers[0])
            crawlers[0].send_signal(signal.SIGKILL)
            crawlers[0].wait()
            crawlers.append(start(2))
        for crawler in crawlers:
            crawler.wait(timeout=1200)
        logged = [
            url.decode()
            for chunk in sorted(client.keys("site:simhash_dedup:pages:*"))
            for url in client.lrange(chunk, 0, -1)
        ]
    finally:
        server.stop()
    urls = {url for output in outputs for url in exported(output)}
    drops = {url: kept for log in logs if log.exists() for kept, url in DROPPED.findall(log.read_text())}
    unfinished = [url for url in site - urls if drops.get(url) not in urls]
    return {
        "exported": len(urls),
        "lost": len(lost(pages_of(unfinished), pages_of(sorted(urls)))),
        "in Redis, in no output": len(set(logged) - urls),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tries", type=int, default=3)
    parser.add_argument("--outage-after", type=int, default=600, help="items exported before Redis stops")
    parser.add_argument("--kill-after", type=int, default=450, help="items the killed crawler exports first")
    parser.add_argument("--scenarios", nargs="+", choices=("outage", "kill"), default=["outage", "kill"])
    parser.add_argument("--data", type=Path, default=DATA)
    options = parser.parse_args()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(next((options.data / "debian-handbook-site").glob("*.tar.xz"))) as archive:
            archive.extractall(tmp, filter="data")
        with serve_directory(Path(tmp) / "html") as base_url:
            kill(base_url, Path(tmp) / "reference", False, None, set())  # every page, no kill, no filter
            site = {url for n in range(2) for url in exported(Path(tmp) / "reference" / "project" / f"out-{n}.jsonl")}
            print(f"the site has {len(site):,} pages", file=sys.stderr)
            for attempt in range(options.tries):
                for scenario, variant in (
                    ("outage", "no outage"),
                    ("outage", "Redis restarted empty"),
                    ("kill", "without the filter"),
                    ("kill", "with the filter"),
                    ("kill", "with the filter, no kill"),
                ):
                    if scenario not in options.scenarios:
                        continue
                    work = Path(tmp) / f"{scenario}-{variant}-{attempt}".replace(" ", "-")
                    if scenario == "outage":
                        row = outage(base_url, work, variant != "no outage", options.outage_after)
                    else:
                        row = kill(
                            base_url,
                            work,
                            variant.startswith("with the filter"),
                            None if variant.endswith("no kill") else options.kill_after,
                            site,
                        )
                    rows.append({"scenario": scenario, "variant": variant, "try": attempt, **row})
                    print(json.dumps(rows[-1]), file=sys.stderr)
    print(
        "\n| scenario | variant | tries | "
        + " | ".join(("kept", "near-duplicates kept", "exported", "lost", "in Redis, in no output"))
        + " |\n|"
        + "---|" * 8
    )
    for scenario, variant in dict.fromkeys((row["scenario"], row["variant"]) for row in rows):
        group = [row for row in rows if (row["scenario"], row["variant"]) == (scenario, variant)]
        cells = [
            " / ".join(str(row[column]) for row in group) if column in group[0] else ""
            for column in ("kept", "near-duplicates kept", "exported", "lost", "in Redis, in no output")
        ]
        print(f"| {scenario} | {variant} | {len(group)} | " + " | ".join(cells) + " |")
    command = command_line("bench.scale.redis_crawl")
    print(f"\nreproduce with: {command}")
    RESULTS.write_text(
        json.dumps(
            {
                "rows": rows,
                "site pages": len(site),
                "medians": {
                    f"{r['scenario']}, {r['variant']}": statistics.median(
                        x["lost" if r["scenario"] == "kill" else "near-duplicates kept"]
                        for x in rows
                        if (x["scenario"], x["variant"]) == (r["scenario"], r["variant"])
                    )
                    for r in rows
                },
                "command": command,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
