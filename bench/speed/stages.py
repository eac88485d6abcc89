"""Where a fingerprint's CPU goes, stage by stage: a sampling profile of what a worker does with a page.

    python -m bench.speed.stages [--seconds 30] [--data ../shared/data]

For each language (the 200 English and 79 Chinese real pages of ``bench.speed.fingerprint``), one process times
lxml's parse of the pages to a tree and the fingerprint (``process_time``, the pages back to back, after a round
that loads the tables), then fingerprints them over and over for ``--seconds`` while py-spy samples it, native
frames included: libxml2's own work and the compiled walk's are told apart.  Each sample is charged to the stage
the fingerprint was in (the frame ``Fingerprinter.fingerprint`` called, named in ``STAGES``); the parse's samples
to the walk when one of its frames is the walk's (``treewalk.pyx``, ``readability.pxi``), else to libxml2.  A
stage's share of the samples times the fingerprint's CPU a page gives its microseconds a page, and those over
one lxml parse its multiple of the floor.  As in the crawl, the texts for the decision log are made
(``keep_text``).  py-spy is in ``requirements.txt``.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from bench.common import PROJECT, RESULTS_FOLDER, command_line
from bench.speed.fingerprint import sample

RESULTS = RESULTS_FOLDER / "speed" / "stages.json"

#: Runs under py-spy: reads page paths and seconds; prints the CPU per page of lxml's parse and of the fingerprint.
WORKER = """
import json, sys, time
import lxml.etree
from scrapy_simhash_dedup import Fingerprinter
from scrapy_simhash_dedup.fingerprint.document import _PARSER
paths, seconds = json.loads(sys.stdin.readline())
pages = [open(p, "rb").read() for p in paths]
fingerprinter = Fingerprinter(keep_text=True)
def timed(work):
    for html in pages:  # tables and caches loaded, as in a crawl that has run a while
        work(html)
    started = time.process_time()
    for _ in range(3):
        for html in pages:
            work(html)
    return 1000 * (time.process_time() - started) / (3 * len(pages))
parse_ms = timed(lambda html: lxml.etree.fromstring(html, parser=_PARSER))
fingerprint_ms = timed(fingerprinter.fingerprint)
print(json.dumps({"parse_ms": parse_ms, "fingerprint_ms": fingerprint_ms}), flush=True)
end = time.monotonic() + seconds
while time.monotonic() < end:
    for html in pages:
        fingerprinter.fingerprint(html)
"""

#: The frame ``Fingerprinter.fingerprint`` calls (or, for the sketch, the frame ``Fingerprinter._sketch`` calls)
#: -> the stage it is, in the order a page goes through them.
STAGES = {
    "prepared": "the bytes checked as UTF-8 (decoded when they are not)",
    "PageText.parse": "parse",  # split below: libxml2, the walk
    "PageText.own_blocks": "the own text: the main content found, its blocks split into words",
    "content_simhash": "content SimHash: word counts, TF-IDF, votes",
    "Fingerprinter._simhash": "structure SimHash",
    "shingle_hashes": "the own text's 3-grams",
    "languages": "languages",
    "language_bits": "languages",
    "PageText.name": "the page's name (title, heading, lead)",
    "name_hash": "the page's name (title, heading, lead)",
    "PageText.visible_shingles": "the visible text's 5-grams",
    "PageText.main_shingles": "the main content's 5-grams",
    "page_sketch": "the sketch's bits",
    "Fingerprinter._text": "the texts for the decision log (compressed)",
    "PageText.visible_text": "a short page's visible words",
    "tokens": "a short page's visible words",
    "dateless_hash": "a short page's visible words",
    "text_hash": "a short page's visible words",
}
LIBXML2 = "parse: libxml2's parser (the floor: any reader of the page pays it)"
WALK = "parse: the walk over the parser's events (blocks, names, structure)"
OTHER = "the rest (the fingerprint's own lines, its record)"


def function(frame: str) -> str:
    """A py-spy frame ``name (file:line)`` -> ``name``."""
    return re.sub(r" \(.*\)$", "", frame)


def stage_of(frames: list[str]) -> str | None:
    """The stage a sample's stack (outermost first) was in; None outside the fingerprint."""
    at = next((n for n, frame in enumerate(frames) if function(frame) == "Fingerprinter.fingerprint"), None)
    if at is None:
        return None
    below = frames[at + 1 :]
    if not below:
        return OTHER
    called = function(below[0])
    if called == "Fingerprinter._sketch" and len(below) > 1:
        called = function(below[1])
    stage = STAGES.get(called, OTHER)
    if stage != "parse":
        return stage
    walk = [
        frame
        for frame in below[1:]
        if ("treewalk.pyx" in frame or "readability.pxi" in frame) and function(frame) != "parse"
    ]  # (``treewalk.parse`` itself runs libxml2's parser)
    return WALK if walk else LIBXML2


def profile(paths: list[Path], seconds: float) -> dict:
    """One language's run: the CPU per page, and each stage's share of the samples."""
    with tempfile.TemporaryDirectory() as work:
        raw = Path(work) / "samples.txt"
        process = subprocess.Popen(
            [
                str(Path(sys.executable).with_name("py-spy")),
                "record",
                "--native",
                "--rate",
                "400",
                "--format",
                "raw",
                "--output",
                str(raw),
                "--",
                sys.executable,
                "-c",
                WORKER,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=PROJECT,
        )
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(json.dumps([[str(path) for path in paths], seconds]) + "\n")
        process.stdin.flush()
        line = process.stdout.readline()
        while not line.startswith("{"):  # (py-spy's own lines come first)
            line = process.stdout.readline()
        timing = json.loads(line)
        process.wait()
        samples: Counter[str] = Counter()
        for line in raw.read_text().splitlines():
            stack, _, count = line.rpartition(" ")
            if (stage := stage_of(stack.split(";"))) is not None:
                samples[stage] += int(count)
    total = sum(samples.values())
    stages = {
        stage: {
            "share": count / total,
            "us_per_page": 1000 * timing["fingerprint_ms"] * count / total,
            "x_parse": timing["fingerprint_ms"] * count / total / timing["parse_ms"],
        }
        for stage, count in samples.most_common()
    }
    return {**timing, "x_parse": timing["fingerprint_ms"] / timing["parse_ms"], "samples": total, "stages": stages}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=PROJECT.parent / "shared" / "data")
    parser.add_argument("--seconds", type=float, default=30.0, help="sampled, per language")
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args()
    results = {"command": command_line("bench.speed.stages"), "languages": {}}
    for language, paths in sample(args.data).items():
        found = results["languages"][language] = profile(paths, args.seconds)
        print(
            f"\n{language}: {len(paths)} pages; the fingerprint {found['fingerprint_ms']:.2f} ms a page, lxml's parse "
            f"to a tree {found['parse_ms']:.2f} ms: {found['x_parse']:.2f}x ({found['samples']} samples)\n"
        )
        print("| stage | share | us a page | x one lxml parse |\n|---|---|---|---|")
        for stage, figures in found["stages"].items():
            print(f"| {stage} | {figures['share']:.1%} | {figures['us_per_page']:.0f} | {figures['x_parse']:.2f} |")
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(results, indent=1) + "\n")
    print(f"\nwritten {args.results}; reproduce with: {results['command']}")


if __name__ == "__main__":
    main()
