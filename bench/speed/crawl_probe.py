"""Where the crawl process's CPU for the filter goes, entry point by entry point, in a real crawl.

    python -m bench.speed.crawl_probe [--rounds 3] [--pages 150] [--mode polite|saturated] [--results FILE]

``bench/speed/crawl.py`` measures the crawl process as a whole, and ``bench/speed/crawl_instructions.py`` counts its
instructions in a saturated crawl, where caches are warm.  In a polite crawl the filter's code runs once a
page between Scrapy's, with cold caches, and costs several times its warm figure; profilers, which
measure wall time and add their own per-call cost, mislead at that grain.  This script wraps the filter's
own methods with a thread-CPU clock (``time.thread_time_ns``: the reactor thread's CPU, none of the
workers'), crawls ``bench.common``'s site with the add-on's defaults, and prints, per crawled page:

- the entry points, the calls Scrapy, Twisted or the workers' answers make into the filter (their CPU
  counted once, where it is first entered: they add up to what the probe sees of the filter);
- the parts inside them (inclusive, so they overlap their entry point).

Each round is a crawl in a process of its own; medians over the rounds.  The wrappers cost ~1 us a call,
charged to the part that makes the call: read the parts' order and size, not their last microsecond.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.common import PROJECT, RESULTS_FOLDER, Nginx, build_site, command_line, crawl, real_pages

RESULTS = RESULTS_FOLDER / "speed" / "crawl_probe.json"

#: What the reactor calls into the filter: (module, class, method).
ENTRY_POINTS = [
    # a response's first item: the hand-out
    ("scrapy_simhash_dedup.crawl.filter", "PageFilter", "decide_response"),
    # a worker's answer: the page decided
    ("scrapy_simhash_dedup.workers.connection", "FingerprintWorker", "dataReceived"),
    ("scrapy_simhash_dedup.crawl.filter", "PageFilter", "assign"),
    ("scrapy_simhash_dedup.crawl.items", "AssignedItems", "take"),
    ("scrapy_simhash_dedup.crawl.items", "ItemVerdicts", "apply"),
    ("scrapy_simhash_dedup.crawl.items", "WriteConfirmation", "_item_passed"),
    ("scrapy_simhash_dedup.crawl.items", "WriteConfirmation", "_item_lost"),
    ("scrapy_simhash_dedup.crawl.filter", "PageFilter", "follows"),
    ("scrapy_simhash_dedup.crawl.stats", "Counts", "hand_over"),
]
#: Parts inside the entry points.
PARTS = [
    ("scrapy_simhash_dedup.workers.pool", "RecentPages", "key"),
    ("scrapy_simhash_dedup.workers.pool", "FingerprintPool", "fingerprint"),
    ("scrapy_simhash_dedup.workers.connection", "FingerprintWorker", "send"),
    ("scrapy_simhash_dedup.crawl.decisions", "DecisionQueue", "_fingerprinted"),
    ("scrapy_simhash_dedup.crawl.decisions", "DecisionQueue", "_decide"),
    ("scrapy_simhash_dedup.stores.sqlite.store", "SqliteStore", "check_and_add"),
    ("scrapy_simhash_dedup.matching.matcher", "Matcher", "find"),
    ("scrapy_simhash_dedup.matching.matcher", "Matcher", "add"),
    ("scrapy_simhash_dedup.crawl.decisions", "DecisionEffects", "settle"),
    ("scrapy_simhash_dedup.crawl.decisions", "DecisionEffects", "_decided"),
    ("scrapy_simhash_dedup.guards.traps", "LinkGuard", "page_decided"),
    ("scrapy_simhash_dedup.guards.traps", "KnownUrls", "add"),
    ("scrapy_simhash_dedup.crawl.decisions", "DecisionEffects", "_learn"),
    ("scrapy_simhash_dedup.stores.records", "DecisionLogEntries", "decision"),
    ("scrapy_simhash_dedup.stores.sqlite.store", "SqliteStore", "record"),
    ("scrapy_simhash_dedup.crawl.decisions", "DecisionEffects", "_named"),
    ("scrapy_simhash_dedup.crawl.items", "PageDecision", "settle"),
    ("scrapy_simhash_dedup.crawl.stats", "Counts", "add"),
    ("scrapy_simhash_dedup.crawl.stats", "CrawlSummary", "add"),
    ("scrapy_simhash_dedup.guards.traps", "RuleBook", "learn"),
    ("scrapy_simhash_dedup.guards.traps", "RuleBook", "kept"),
    ("scrapy_simhash_dedup.guards.traps", "RepeatedPages", "repeats"),
    ("scrapy_simhash_dedup.guards.traps", "LinkGuard", "followed"),
    ("scrapy_simhash_dedup.guards.traps", "LinkGuard", "covered"),
    ("scrapy_simhash_dedup.guards.canonical", "CanonicalUrls", "choose"),
    ("scrapy_simhash_dedup.guards.canonical", "CanonicalUrls", "kept_page_dropped"),
    ("scrapy_simhash_dedup.stores.sqlite.store", "SqliteStore", "confirm"),
    ("scrapy_simhash_dedup.stores.sqlite.store", "SqliteStore", "flush"),
]


class Probe:
    """Thread-CPU nanoseconds and calls per wrapped method; an entry point's CPU is counted only when no
    other entry point is running (``_depth``)."""

    def __init__(self) -> None:
        self.spent: defaultdict[str, int] = defaultdict(int)
        self.calls: defaultdict[str, int] = defaultdict(int)
        self._depth = 0

    def wrap(self, module: str, cls: str, method: str, entry: bool) -> None:
        import importlib

        owner = getattr(importlib.import_module(module), cls)
        original = owner.__dict__[method]  # KeyError: the method moved, and this probe must follow it
        label = f"{cls}.{method}"
        is_static = isinstance(original, staticmethod)
        function = original.__func__ if is_static else original
        probe = self

        @functools.wraps(function)
        def timed(*args: Any, **kwargs: Any) -> Any:
            counted = not entry or probe._depth == 0
            probe._depth += entry
            started = time.thread_time_ns()
            try:
                return function(*args, **kwargs)
            finally:
                if counted:
                    probe.spent[label] += time.thread_time_ns() - started
                    probe.calls[label] += 1
                probe._depth -= entry

        setattr(owner, method, staticmethod(timed) if is_static else timed)


def probed_crawl(url: str, mode: str) -> dict[str, Any]:
    """One crawl with the add-on's defaults, every entry point and part wrapped: microseconds and calls per page."""
    probe = Probe()
    for module, cls, method in ENTRY_POINTS:
        probe.wrap(module, cls, method, entry=True)
    for module, cls, method in PARTS:
        probe.wrap(module, cls, method, entry=False)
    with tempfile.TemporaryDirectory(prefix="bench-probe-") as work:
        result = crawl("defaults", mode, url, Path(work), lag_probe=False)
    pages = result["pages"]
    return {
        "pages": pages,
        "crawl_ms_per_page": result["cpu_ms_per_page_crawl"],
        "us_per_page": {label: spent / pages / 1000 for label, spent in probe.spent.items()},
        "calls_per_page": {label: calls / pages for label, calls in probe.calls.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=PROJECT.parent / "shared" / "data")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pages", type=int, default=150, help="distinct real pages (each served under 4 URLs)")
    parser.add_argument("--mode", default="polite", choices=["polite", "saturated"])
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        args.out.write_text(json.dumps(probed_crawl(args.one, args.mode)))
        return
    rounds = []
    with tempfile.TemporaryDirectory(prefix="bench-probe-") as temp:
        work = Path(temp)
        (work / "site").mkdir()
        build_site(work / "site", real_pages(args.data, args.pages))
        server = Nginx(work / "site", work)
        try:
            for n in range(args.rounds):
                out = work / "round.json"
                subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "bench.speed.crawl_probe",
                        "--one",
                        server.url,
                        "--mode",
                        args.mode,
                        "--out",
                        str(out),
                    ],
                    cwd=PROJECT,
                    check=True,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                rounds.append(json.loads(out.read_text()))
                print(
                    f"round {n + 1}: {rounds[-1]['pages']} pages, the crawl process "
                    f"{rounds[-1]['crawl_ms_per_page']:.2f} ms a page",
                    flush=True,
                )
        finally:
            server.stop()
    report(args, rounds)


def report(args: argparse.Namespace, rounds: list[dict[str, Any]]) -> None:
    med = statistics.median
    labels = {f"{cls}.{method}" for _, cls, method in ENTRY_POINTS + PARTS}
    us = {label: med(r["us_per_page"].get(label, 0.0) for r in rounds) for label in labels}
    calls = {label: med(r["calls_per_page"].get(label, 0.0) for r in rounds) for label in labels}
    command = command_line("bench.speed.crawl_probe")
    entries = [f"{cls}.{method}" for _, cls, method in ENTRY_POINTS]
    print(
        f"\n{args.mode} crawl, defaults; the crawl process {med(r['crawl_ms_per_page'] for r in rounds):.2f} ms a "
        f"page (medians of {len(rounds)} rounds); thread CPU, us a crawled page\n"
    )
    for title, group in (
        ("entry points (exclusive of each other)", entries),
        ("parts (inclusive)", [f"{cls}.{method}" for _, cls, method in PARTS]),
    ):
        print(f"| {title} | us a page | calls a page | us a call |\n|---|---|---|---|")
        for label in sorted(group, key=us.get, reverse=True):
            per_call = us[label] / calls[label] if calls[label] else 0.0
            print(f"| {label} | {us[label]:.1f} | {calls[label]:.2f} | {per_call:.1f} |")
        if group is entries:
            print(f"| **all entry points** | **{sum(us[label] for label in entries):.1f}** | | |")
        print()
    args.results.write_text(
        json.dumps({"command": command, "rounds": rounds, "us_per_page": us, "calls_per_page": calls}, indent=1)
    )
    print(f"written {args.results}; reproduce with: {command}")


if __name__ == "__main__":
    main()
