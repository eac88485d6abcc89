"""What the filter writes to a crawl's log at Scrapy's default level, per thousand pages.

    python -m bench.speed.log_lines [--results bench/results/speed/log_lines.json]

The demo site (the Debian handbook in three languages, served on 127.0.0.1) is
crawled by the project's ``site`` spider with the ``scrapy`` command at
``LOG_LEVEL = "DEBUG"`` (Scrapy's default), twice with the same store
(``SIMHASH_DEDUP_PERSIST``): a first crawl, then a re-run that meets every page
again.  Counted in each log: the link guard's "link not followed" lines, the URL
rules' "request skipped" lines and the drop lines of pages dropped as the copy an
earlier run kept under the same URL, beside what the stats count of each
(``links_skipped``, ``requests_skipped``, ``pages_dropped/rerun``); then the
same with ``SIMHASH_DEDUP_DEBUG = True``, which logs each.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from bench.common import PROJECT, RESULTS_FOLDER, command_line
from crawler.local_site import serve_directory

SITE = PROJECT / "crawler" / "demo_site" / "debian-handbook-en-da-zh.tar.xz"
RESULTS = RESULTS_FOLDER / "speed" / "log_lines.json"


def crawl(base_url: str, store: Path, debug: bool) -> dict[str, Any]:
    """One ``scrapy crawl site`` at DEBUG: its responses, log lines and the filter's lines and counts."""
    settings = {
        "LOG_LEVEL": "DEBUG",
        "SIMHASH_DEDUP_PERSIST": True,
        "SIMHASH_DEDUP_RESET": False,
        "SIMHASH_DEDUP_PATH": store,
        "SIMHASH_DEDUP_DEBUG": debug,
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "scrapy",
            "crawl",
            "site",
            "-a",
            f"url={base_url}",
            *(part for name, value in settings.items() for part in ("-s", f"{name}={value}")),
        ],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        check=True,
    )
    log = done.stderr
    stats = {
        name: int(value) for name, value in re.findall(r"'(simhash_dedup/[\w/]+|response_received_count)': (\d+)", log)
    }
    reruns = log.count("Dropped: kept by an earlier run, met again")
    return {
        "responses": stats["response_received_count"],
        "log lines": len(log.splitlines()),
        "link not followed: lines / counted": [
            log.count("link not followed"),
            stats.get("simhash_dedup/links_skipped", 0),
        ],
        "request skipped: lines / counted": [
            log.count("request skipped"),
            stats.get("simhash_dedup/requests_skipped", 0),
        ],
        "re-run drops: lines / counted": [reruns, stats.get("simhash_dedup/pages_dropped/rerun", 0)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, default=RESULTS)
    arguments = parser.parse_args()
    results: dict[str, Any] = {"command": command_line("bench.speed.log_lines"), "runs": {}}
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(SITE) as archive:
            archive.extractall(tmp, filter="data")
        with serve_directory(Path(tmp) / "html") as base_url:
            for debug in (False, True):
                store = Path(tmp) / f"seen-{debug}.sqlite"
                for run in ("first crawl", "re-run"):
                    name = f"{run}, SIMHASH_DEDUP_DEBUG = {debug}"
                    results["runs"][name] = outcome = crawl(base_url, store, debug)
                    print(name, json.dumps(outcome))
    arguments.results.write_text(json.dumps(results, indent=1) + "\n")
    print(f"written {arguments.results}")


if __name__ == "__main__":
    main()
