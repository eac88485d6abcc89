"""A real crawl with and without the filter: pages/s, CPU, reactor lag and memory, side by side.

    python -m bench.speed.crawl [--rounds 3] [--pages 450] [--modes polite saturated] [--variants ...]
                                [--against REF] [--feed] [--results FILE]

Builds a site from real pages of ``../shared/data`` (``--pages`` distinct
news pages, each also served under three more URLs: an exact copy, a copy
with other dates and counters in a byline, a copy with an ad block, so 3 in
4 pages are near-duplicates; an index page links them all), serves it with
nginx on 127.0.0.1 (a free port; installed from Debian's packages when
missing), and crawls it in two modes:

- ``polite``: one host, one request at a time, 20 ms between requests (``DOWNLOAD_DELAY``): the
  filter must cost no pages/s here, only CPU and memory;
- ``saturated``: 32 concurrent requests, no delay: the crawl process is one busy core.

Each crawl runs in a process of its own, the modes and variants interleaved in every round:

- ``no filter``: no item pipeline;
- ``defaults``: the add-on at its defaults (SQLite store, a worker process per core but one);
- ``defaults, GC not frozen``: ``SIMHASH_DEDUP_GC_FREEZE = False`` (the objects that exist when the spider opens
  are then walked by Python's full garbage collections; the default from #62 on freezes them);
- ``no filter, frozen GC``: no filter, but those objects frozen as the filter freezes them
  (``scrapy_simhash_dedup.crawl.gcfreeze``):
  what the filter costs a crawl that freezes them itself;
- ``memory backend``: ``SIMHASH_DEDUP_BACKEND = "memory"``;
- ``no review texts``: ``SIMHASH_DEDUP_REVIEW_TEXTS = 0`` (decisions logged without the pages' texts);
- ``no decision log``: ``SIMHASH_DEDUP_LOG_SIZE = 0`` and ``SIMHASH_DEDUP_REVIEW_TEXTS = 0`` (no text leaves
  the worker); ``check only``: also no link guard nor URL rules: what the crawl process pays beyond the check;
- ``on the reactor``: ``SIMHASH_DEDUP_WORKERS = 0``, fingerprints on the reactor thread (as before the workers);
- ``2 workers``: ``SIMHASH_DEDUP_WORKERS = 2`` (the default is the cores but one);
- ``naive``: a naive SimHash pipeline: the whole visible text, jieba TF-IDF top words, on the reactor thread;
- ``pass-through pipeline``: an item pipeline whose ``async def process_item`` returns the item: what any item
  pipeline costs Scrapy (``no filter`` has none);
- ``hand-over floor``: no filter, only the filter's own shape: each response's body handed to a worker process
  over a socket at its first item, and its items held in an item pipeline until a 16-byte answer comes back (the
  worker sleeps ``FLOOR_ANSWER_SECONDS``, a fingerprint's time, without CPU): the least the filter's crawl process
  pays for a verdict made elsewhere;
- ``hold-response floor``: the same hand-over from a downloader middleware, which holds the response until the
  answer comes; the spider and its items then run without waiting;
- ``working hand-over floor``: the hand-over floor whose worker fingerprints each page
  (``Fingerprinter.fingerprint``) before it answers, as the filter's workers do: the floor with a fingerprint
  running beside the crawl process, sharing the machine's caches and memory with it;
- ``no filter, 16 items`` and ``defaults, 16 items``: ``CONCURRENT_ITEMS = 16`` (Scrapy's default is 100).

Per crawl: pages/s (responses over the time from the engine's start to the
spider's idle), CPU per page in that window (start-up left out, printed
apart as seconds per crawl), of the crawl process and of its worker
processes separately, what the crawl process's cyclic garbage collector
took of it (all its collections, and the full ones), the pages the workers fingerprinted (those not
known by identical HTML) and the workers' CPU per fingerprinted page beside
``Fingerprinter.fingerprint``'s own cost in one process on the same pages
at the crawl's pace (``fingerprint in one process``, measured in the same
rounds: back to back for the saturated crawl, 20 ms apart for the polite
one, since a core that idles between pages runs them ~1.3x dearer), the
reactor's lag (a call scheduled every 10 ms: how late it ran; p50, p99, max),
and the peak memory of the crawl plus its workers (sampled every 0.2 s by
this script, not in the crawl): resident (RSS, summed over the processes,
so pages they share, such as libraries, count once per process) and
proportional (PSS: shared pages divided among the processes that map them,
the memory the crawl really takes).  Prints every round and the medians with their ratios to ``no
filter`` (or to ``--baseline``: ``"no filter, frozen GC"`` compares the filter with a crawl that
freezes its start-up objects itself); writes ``bench/results/speed/crawl.json`` (or ``--results``).

``--against REF``: the filter's variants also run with the plugin of another
commit (a temporary git worktree, this script and ``bench/common.py`` copied into it), as
``<variant> at REF``, in the same rounds.

``--feed``: every variant also exports its items (URL and HTML) to a JSON
Lines file, as a crawl that stores its pages does (``FEEDS``); the figures go
to ``bench/results/speed/crawl-feed.json`` (not kept in the repository: see ``bench/README.md``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import (
    MODES,
    PROJECT,
    RESULTS_FOLDER,
    VARIANTS,
    Nginx,
    against_tree,
    build_site,
    command_line,
    crawl,
    plugin_environment,
    real_pages,
    remove_tree,
)

RESULTS = RESULTS_FOLDER / "speed" / "crawl.json"

#: Not a crawl: ``Fingerprinter.fingerprint`` called in one process on the pages the workers fingerprint.
IN_PROCESS = "fingerprint in one process"


def memory_mb(pid: int | str = "self") -> tuple[float, float]:
    """Resident memory of a process, and its proportional share (PSS: pages shared with other
    processes, such as libraries, divided among them); (0, 0) once it has ended."""
    try:
        rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0.0, 0.0
    return tuple(int(rollup.split(f"\n{name}:")[1].split()[0]) / 1024 for name in ("Rss", "Pss"))


def fingerprinted_pages(site: Path) -> list[Path]:
    """The site's pages a crawl fingerprints: every page but the exact copies (known by identical HTML)."""
    return sorted(path for path in (site / "p").glob("*.html") if not path.stem.endswith("-1"))


def fingerprint_in_one_process(site: Path) -> dict[str, Any]:
    """``Fingerprinter.fingerprint``'s CPU per page, called in this process on the pages a crawl's workers
    fingerprint (the bytes nginx serves, as ``text/html``), after one page to load its tables: at each
    mode's pace, the pages back to back (saturated) or the polite crawl's delay apart (an idle core is a
    cold one: the same calls 20 ms apart cost ~1.3x the CPU)."""
    from scrapy_simhash_dedup.fingerprint.fingerprinter import Fingerprinter

    fingerprinter = Fingerprinter(keep_text=True)  # as at the crawl's defaults: the decision log shows texts
    pages = [(path.read_bytes(), f"http://127.0.0.1/p/{path.name}") for path in fingerprinted_pages(site)]
    for body, url in pages[:: max(1, len(pages) // 20)]:  # the tables (the Chinese ones too) loaded
        fingerprinter.fingerprint(body, url, "text/html")
    per_page = {}
    for mode, settings in MODES.items():
        cpu = 0.0
        for body, url in pages:
            time.sleep(settings["DOWNLOAD_DELAY"])
            started = time.process_time()
            fingerprinter.fingerprint(body, url, "text/html")
            cpu += time.process_time() - started
        per_page[mode] = 1000 * cpu / len(pages)
    return {"variant": IN_PROCESS, "pages": len(pages), "ms_per_page": per_page}


# -- the rounds -------------------------------------------------------------------------------------


def run_variant(variant: str, mode: str, url: str, work: Path, feed: bool, tree: Path = PROJECT) -> dict[str, Any]:
    """Run one crawl (or the in-process fingerprint) in a process of its own; its figures, with the peak
    memory of the process and its children (the workers), sampled from here every 0.2 s: reading a
    process's memory map costs CPU, which the crawl must not be charged."""
    out, errors = work / "result.json", work / "stderr.txt"
    command = (
        ["--in-process", str(work / "site")]
        if variant == IN_PROCESS
        else ["--one", variant, "--mode", mode, "--url", url, *(["--feed"] if feed else [])]
    )
    with errors.open("w") as stderr:
        # another commit's plugin under the plugin's name, for the crawl and its workers (bench.common.plugin_root)
        process = subprocess.Popen(
            [sys.executable, "-m", "bench.speed.crawl", *command, "--work", str(work), "--out", str(out)],
            cwd=tree,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env=plugin_environment(tree),
        )
        peak = [0.0, 0.0]
        peak_pss = {"crawl": 0.0, "workers": 0.0}  # each part's own peak (they need not peak together)
        while process.poll() is None:
            pids = [process.pid, *children(process.pid)]
            sample = [memory_mb(pid) for pid in pids]
            peak = [max(peak[which], sum(s[which] for s in sample)) for which in (0, 1)]
            peak_pss["crawl"] = max(peak_pss["crawl"], sample[0][1])
            peak_pss["workers"] = max(peak_pss["workers"], sum(s[1] for s in sample[1:]))
            time.sleep(0.2)
    if process.returncode:
        raise RuntimeError(f"{variant} failed:\n{errors.read_text()[-3000:]}")
    return {
        **json.loads(out.read_text()),
        "rss_mb_max": peak[0],
        "pss_mb_max": peak[1],
        "pss_mb_max_crawl": peak_pss["crawl"],
        "pss_mb_max_workers": peak_pss["workers"],
    }


def children(pid: int) -> list[int]:
    """The processes ``pid`` started (a crawl's fingerprint workers)."""
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def columns(baseline: str) -> str:
    return (
        f"| variant | pages/s | x {baseline} | CPU ms/page: crawl process + workers (vs {baseline}) "
        f"| CPU added ÷ {baseline}'s: all (crawl process) "
        "| of which the crawl process's garbage collector: all (full) | workers: ms per fingerprinted page "
        "(x in one process) | start-up CPU s | reactor lag p50 / p99 / max ms "
        f"| PSS MB peak (vs {baseline}) | RSS MB peak | kept / dropped |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|"
    )


def compared(result: dict[str, Any], baseline: dict[str, Any], in_process: float) -> dict[str, Any]:
    """A variant's crawl beside the crawl without the filter and the fingerprint in one process, of the same
    round: this machine's speed drifts between rounds, so only figures of one round are compared."""
    per_fingerprint = result.get("worker_ms_per_fingerprinted")
    return {
        "ratio": result["pages_per_s"] / baseline["pages_per_s"],
        "crawl_ms_added": result["cpu_ms_per_page_crawl"] - baseline["cpu_ms_per_page_crawl"],
        "workers_vs_in_process": per_fingerprint / in_process if per_fingerprint else None,
        "pss_mb_added": result["pss_mb_max"] - baseline["pss_mb_max"],
        # what the bars read: the CPU added a page as a multiple of the baseline's own, all of it and the
        # crawl process's part; the memory added, in the crawl process and in the workers
        "cpu_added_vs_own": (result["cpu_ms_per_page"] - baseline["cpu_ms_per_page"]) / baseline["cpu_ms_per_page"],
        "crawl_added_vs_own": (result["cpu_ms_per_page_crawl"] - baseline["cpu_ms_per_page_crawl"])
        / baseline["cpu_ms_per_page"],
        "crawl_pss_mb_added": result.get("pss_mb_max_crawl", 0.0) - baseline.get("pss_mb_max_crawl", 0.0),
        "workers_pss_mb": result.get("pss_mb_max_workers", 0.0),
    }


def row(name: str, result: dict[str, Any]) -> str:
    lag = result["lag_ms"]
    per_fingerprint = result.get("worker_ms_per_fingerprinted")
    workers = f"{per_fingerprint:.2f} ({result['workers_vs_in_process']:.2f}x)" if per_fingerprint else "-"
    return (
        f"| {name} | {result['pages_per_s']:.1f} | {result['ratio']:.2f} | {result['cpu_ms_per_page_crawl']:.2f} + "
        f"{result['cpu_ms_per_page_workers']:.2f} = {result['cpu_ms_per_page']:.2f} "
        f"({result['crawl_ms_added']:+.2f} + {result['cpu_ms_per_page_workers']:.2f}) | "
        f"{result['cpu_added_vs_own']:.2f} ({result['crawl_added_vs_own']:.2f}) | "
        f"{result['all_gc_ms_per_page']:.2f} ({result['full_gc_ms_per_page']:.2f}) | {workers} | "
        f"{result['startup_cpu_s']:.2f} | {lag['p50']:.1f} / {lag['p99']:.1f} / {lag['max']:.0f} | "
        f"{result['pss_mb_max']:.0f} ({result['pss_mb_added']:+.0f}: "
        f"crawl process {result['crawl_pss_mb_added']:+.0f}, "
        f"workers {result['workers_pss_mb']:.0f}) | "
        f"{result['rss_mb_max']:.0f} | {result['items']:.0f} / {result['dropped']:.0f} |"
    )


def median_result(rounds: list[dict[str, Any]], mode: str, variant: str, baseline: str) -> dict[str, Any]:
    """Medians over the rounds; what compares a variant with another (the ratios, the CPU and memory added) is
    the median of each round's comparison, not a comparison of medians."""
    med = statistics.median
    results = [r[mode][variant] for r in rounds]
    comparisons = [compared(r[mode][variant], r[mode][baseline], r["in_process_ms"][mode]) for r in rounds]
    return {
        **{
            key: med(r[key] for r in results)
            for key in (
                "pages_per_s",
                "cpu_ms_per_page",
                "cpu_ms_per_page_crawl",
                "cpu_ms_per_page_workers",
                "startup_cpu_s",
                "fingerprinted",
                "rss_mb_max",
                "pss_mb_max",
                "pss_mb_max_crawl",
                "pss_mb_max_workers",
                "items",
                "dropped",
                "all_gc_ms_per_page",
                "full_gc_ms_per_page",
            )
        },
        **{key: median_of_present([c[key] for c in comparisons]) for key in comparisons[0]},
        "worker_ms_per_fingerprinted": median_of_present([r.get("worker_ms_per_fingerprinted") for r in results]),
        "lag_ms": {key: med(r["lag_ms"][key] for r in results) for key in ("p50", "p99", "max")},
    }


def median_of_present(values: list[float | None]) -> float | None:
    """The median of the values measured (None: not measured, as a crawl without workers' figures)."""
    present = [value for value in values if value is not None]
    return statistics.median(present) if present else None


def print_round(title: str, results: dict[str, dict[str, Any]], baseline: str) -> None:
    print(f"{title}\n\n{columns(baseline)}")
    for variant, result in results.items():
        print(row(variant, result))
    print(flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=PROJECT.parent / "shared" / "data")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pages", type=int, default=450, help="distinct real pages (each served under 4 URLs)")
    parser.add_argument(
        "--pages-from",
        type=Path,
        metavar="FOLDER",
        help="the real pages from this folder's HTML files instead of the news pages of --data (for instance "
        "/usr/share/doc/python3.11/html, from Debian's python3.11-doc: link-dense documentation pages)",
    )
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    parser.add_argument("--variants", nargs="+", default=["no filter", "defaults"], choices=list(VARIANTS))
    parser.add_argument("--feed", action="store_true", help="every variant exports its items to JSON Lines")
    parser.add_argument(
        "--results",
        type=Path,
        help="where the figures go (default: bench/results/speed/crawl.json, crawl-feed.json with --feed)",
    )
    parser.add_argument("--against", metavar="REF", help="the filter's variants also with the plugin of this commit")
    parser.add_argument(
        "--baseline",
        default="no filter",
        choices=list(VARIANTS),
        help="the variant the others are compared with (run too)",
    )
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--mode", help=argparse.SUPPRESS)
    parser.add_argument("--in-process", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--no-lag-probe", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--follow-all", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:  # one crawl, in this process
        args.out.write_text(
            json.dumps(
                crawl(
                    args.one,
                    args.mode,
                    args.url,
                    args.work,
                    args.feed,
                    lag_probe=not args.no_lag_probe,
                    follow_all=args.follow_all,
                )
            )
        )
        return
    if args.in_process:
        args.out.write_text(json.dumps(fingerprint_in_one_process(args.in_process)))
        return
    baseline = args.baseline
    variants = list(dict.fromkeys(["no filter", baseline, *args.variants]))
    trees = dict.fromkeys(variants, PROJECT)
    if args.against:
        tree = against_tree(args.against)
        for variant in variants[1:]:
            trees[f"{variant} at {args.against}"] = tree
        variants = list(trees)
    runs = [(IN_PROCESS, "")] + [(variant, mode) for mode in args.modes for variant in variants]
    shuffle = random.Random(29)
    with tempfile.TemporaryDirectory(prefix="bench-crawl-") as temp:
        work = Path(temp)
        site = work / "site"
        site.mkdir()
        total_pages = build_site(site, real_pages(args.data, args.pages, args.pages_from))
        server = Nginx(site, work)
        print(
            f"site: {args.pages} distinct real pages{f' from {args.pages_from}' if args.pages_from else ''} "
            f"under {total_pages - 1} URLs and an index, served by nginx at "
            f"{server.url}; {args.rounds} rounds, modes and variants in a shuffled order each round\n",
            flush=True,
        )
        rounds: list[dict[str, Any]] = []
        try:
            for n in range(args.rounds):
                order = shuffle.sample(runs, len(runs))
                results = {
                    (variant, mode): run_variant(
                        variant.split(" at ")[0], mode, server.url, work, args.feed, trees.get(variant, PROJECT)
                    )
                    for variant, mode in order
                }
                in_process = results[(IN_PROCESS, "")]["ms_per_page"]
                rounds.append(
                    {
                        "in_process_ms": in_process,
                        **{mode: {variant: results[(variant, mode)] for variant in variants} for mode in args.modes},
                    }
                )
                for mode in args.modes:
                    this_round = rounds[-1][mode]
                    print_round(
                        f"round {n + 1}, {mode} (Fingerprinter.fingerprint in one process, at this "
                        f"crawl's pace: {in_process[mode]:.2f} ms a page)",
                        {
                            variant: {**result, **compared(result, this_round[baseline], in_process[mode])}
                            for variant, result in this_round.items()
                        },
                        baseline,
                    )
        finally:
            server.stop()
            if args.against:
                remove_tree(tree)
    in_process = {mode: statistics.median(r["in_process_ms"][mode] for r in rounds) for mode in args.modes}
    medians: dict[str, Any] = {"in_process_ms": in_process}
    for mode in args.modes:
        medians[mode] = {variant: median_result(rounds, mode, variant, baseline) for variant in variants}
        print_round(
            f"{mode}: medians of {args.rounds} rounds (every x and every figure vs {baseline}: the median "
            f"of the rounds' own; Fingerprinter.fingerprint in one process, at this crawl's pace: "
            f"{in_process[mode]:.2f} ms a page)",
            medians[mode],
            baseline,
        )
    command = command_line("bench.speed.crawl")
    written = args.results or (RESULTS.with_name("crawl-feed.json") if args.feed else RESULTS)
    written.write_text(
        json.dumps(
            {
                "command": command,
                "cores": os.cpu_count(),
                "pages": total_pages,
                "baseline": baseline,
                "rounds": rounds,
                "medians": medians,
            },
            indent=1,
        )
    )
    print(f"written {written}; reproduce with: {command}")


if __name__ == "__main__":
    main()
