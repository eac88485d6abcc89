"""Batch mode's speed: ``simhash-dedup dedup`` over a WARC.gz of real pages, with 1 and 2 worker
processes, beside the rate of fingerprinting alone; and the two WARC readers, FastWARC and warcio.

    python -m bench.speed.batch [--pages 2500] [--rounds 3] [--data ../shared/data]

The WARC.gz is built from the first ``--pages`` shared HTML pages (one response record each, gzip
member per record).  Variants run interleaved, ``--rounds`` times; medians and ratios are printed and
written to ``bench/results/speed/batch.json``.
"""

from __future__ import annotations

import argparse
import io
import json
import multiprocessing
import statistics
import tempfile
import time
from itertools import islice
from pathlib import Path

from bench.common import RESULTS_FOLDER, command_line, write_warc
from scrapy_simhash_dedup.batch import dedup, read_inputs
from scrapy_simhash_dedup.crawl.settings import DedupSettings
from scrapy_simhash_dedup.fingerprint.fingerprinter import Fingerprinter
from scrapy_simhash_dedup.stores.memory import MemoryStore
from tools.fingerprint_reference import DATA, shared_pages

RESULTS = RESULTS_FOLDER / "speed" / "batch.json"


def read_fastwarc(path: Path) -> int:
    """The HTML records as batch mode's reading process reads them (decoded later, in the workers)."""
    return sum(1 for page in read_inputs([path]) if page.html)


def read_warcio(path: Path) -> int:
    """The same records through warcio."""
    from warcio.archiveiterator import ArchiveIterator

    from scrapy_simhash_dedup.batch.sources import HTML_TYPES

    pages = 0
    with path.open("rb") as stream:
        for record in ArchiveIterator(stream):
            if record.rec_type != "response":
                continue
            content_type = record.http_headers.get_header("Content-Type") or ""
            if content_type.split(";")[0].strip().lower() in HTML_TYPES:
                record.rec_headers.get_header("WARC-Target-URI")
                record.content_stream().read()
                pages += 1
    return pages


def fingerprint_only(path: Path) -> float:
    """Fingerprinting alone (decoding included), in this process: the pages as read, no decisions."""
    fingerprinter = Fingerprinter()
    pages = list(read_inputs([path]))
    started = time.process_time()
    for page in pages:
        fingerprinter.fingerprint(page.html, page.url, page.content_type)
    return time.process_time() - started


def fingerprint_split(path: Path, processes: int) -> float:
    """Wall time of ``processes`` independent processes fingerprinting a share of the pages each (read
    beforehand, no reader, no decisions): what the machine's cores give this work in parallel."""
    pages = [(page.html, page.url, page.content_type) for page in read_inputs([path])]
    context = multiprocessing.get_context("fork")
    shares = [context.Process(target=_fingerprint_all, args=(pages[n::processes],)) for n in range(processes)]
    started = time.perf_counter()
    for share in shares:
        share.start()
    for share in shares:
        share.join()
    return time.perf_counter() - started


def _fingerprint_all(pages: list[tuple[bytes, str, str | None]]) -> None:
    fingerprinter = Fingerprinter()
    for html, url, content_type in pages:
        fingerprinter.fingerprint(html, url, content_type)


def run_dedup(path: Path, workers: int) -> int:
    counts = dedup([path], DedupSettings(), MemoryStore(DedupSettings().policy), kept=io.StringIO(), workers=workers)
    return sum(counts.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=2500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--data", type=Path, default=DATA)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "pages.warc.gz"
        write_warc(
            archive,
            (
                (f"https://shared.test/{n}/{name.replace('!', '/')}", body, "text/html")
                for n, (name, body) in enumerate(islice(shared_pages(options.data), options.pages))
            ),
        )
        size = archive.stat().st_size
        seconds: dict[str, list[float]] = {}
        pages = 0
        for _ in range(options.rounds):
            for name, run in (
                ("read: FastWARC", lambda: read_fastwarc(archive)),
                ("read: warcio", lambda: read_warcio(archive)),
                ("dedup, 1 worker", lambda: run_dedup(archive, 1)),
                ("dedup, 2 workers", lambda: run_dedup(archive, 2)),
            ):
                started = time.perf_counter()
                pages = run()
                seconds.setdefault(name, []).append(time.perf_counter() - started)
            seconds.setdefault("fingerprint only (CPU, 1 core)", []).append(fingerprint_only(archive))
            for name, processes in (
                ("fingerprint only, 1 process", 1),
                ("fingerprint only, 2 independent processes", 2),
            ):
                seconds.setdefault(name, []).append(fingerprint_split(archive, processes))
    rates = {name: pages / statistics.median(values) for name, values in seconds.items()}
    print(f"{pages:,} pages, WARC.gz of {size / 1e6:.1f} MB, median of {options.rounds} interleaved rounds\n")
    print("| variant | pages/s |\n|---|---|")
    for name, rate in rates.items():
        print(f"| {name} | {rate:,.0f} |")
    ratios = {
        "FastWARC / warcio": rates["read: FastWARC"] / rates["read: warcio"],
        "dedup 2 workers / 1 worker": rates["dedup, 2 workers"] / rates["dedup, 1 worker"],
        "dedup 2 workers / fingerprint only": rates["dedup, 2 workers"] / rates["fingerprint only (CPU, 1 core)"],
        "fingerprint only, 2 / 1 independent processes (the machine's ceiling)": rates[
            "fingerprint only, 2 independent processes"
        ]
        / rates["fingerprint only, 1 process"],
    }
    print()
    for name, ratio in ratios.items():
        print(f"{name}: {ratio:.2f}x")
    command = command_line("bench.speed.batch")
    print(f"\nreproduce with: {command}")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "pages": pages,
                "warc_bytes": size,
                "rounds": options.rounds,
                "pages_per_second": rates,
                "ratios": ratios,
                "command": command,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
