"""CPU per page of the fingerprint, English and Chinese real pages, beside lxml's parse.

    python -m bench.speed.fingerprint [--rounds 5] [--against REF] [--data ../shared/data]

Each variant runs in a process of its own: this checkout's ``Fingerprinter``,
lxml's parse of the same bytes (the floor for anything that reads HTML), the
naive design (SimHash of the whole visible text's jieba TF-IDF top words, from
``bench/common.py``), and
with ``--against REF`` the ``Fingerprinter`` of another commit (checked out in
a temporary git worktree).  The rounds interleave the variants, in a shuffled order
each round (seeded), each round over every page; a page's figure is its median CPU time (``process_time``)
over the rounds.  Prints p50 / mean / p90 ms per page by language and the
ratios to lxml's parse and to the other commit.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.common import (
    PROJECT,
    command_line,
    language_of,
    news_test_pages,
    plugin_root,
    remove_tree,
    visible_text,
    worktree,
)

#: Runs in each variant's process: reads page paths, then one line per round; answers with CPU seconds per page.
WORKER = """
import json, sys, time
paths = json.loads(sys.stdin.readline())
pages = [open(p, "rb").read() for p in paths]
if sys.argv[1] == "naive":
    sys.path.insert(0, sys.argv[2])
    from bench.common import jieba_topn, visible_text
    def work(html):
        return jieba_topn(visible_text(html))
elif sys.argv[1] == "lxml":
    import lxml.html
    parser = lxml.html.HTMLParser(encoding="utf-8", remove_comments=True, remove_pis=True, huge_tree=True)
    def work(html):
        text = html.decode("utf-8", "replace").encode("utf-8")
        lxml.html.document_fromstring(text, parser=parser)
else:
    sys.path.insert(0, sys.argv[1])  # bench.common.plugin_root: scrapy_simhash_dedup is that checkout's plugin
    from scrapy_simhash_dedup import Fingerprinter
    assert sys.modules["scrapy_simhash_dedup"].__file__.startswith(sys.argv[1])
    fingerprinter = Fingerprinter()
    work = fingerprinter.fingerprint
for html in pages[:3]:  # tables, dictionaries and compiled code loaded before the clock starts
    work(html)
print("ready", flush=True)
for _ in sys.stdin:
    times = []
    for html in pages:
        start = time.process_time()
        work(html)
        times.append(time.process_time() - start)
    print(json.dumps(times), flush=True)
"""


def sample(data: Path) -> dict[str, list[Path]]:
    """English pages (newspaper's and goose3's) and Chinese ones (gne's and gerapy's), by language."""
    found: dict[str, list[Path]] = {"en": [], "zh": []}
    for path in news_test_pages(data):
        text = visible_text(path.read_bytes())
        if language_of(text) == "zh":
            found["zh"].append(path)
        elif text.isascii() or sum(ch.isascii() for ch in text) > 0.95 * len(text):
            found["en"].append(path)
    return found


class Variant:
    """One variant's worker process."""

    def __init__(self, name: str, target: str, paths: list[Path]) -> None:
        self.name = name
        self.process = subprocess.Popen(
            [sys.executable, "-c", WORKER, target, str(PROJECT)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=tempfile.gettempdir(),
        )
        self.process.stdin.write(json.dumps([str(p) for p in paths]) + "\n")
        self.process.stdin.flush()
        assert self.process.stdout.readline().strip() == "ready", f"{name} did not start"
        self.rounds: list[list[float]] = []

    def run_round(self) -> None:
        self.process.stdin.write("go\n")
        self.process.stdin.flush()
        self.rounds.append(json.loads(self.process.stdout.readline()))

    def per_page_ms(self) -> list[float]:
        return [1000 * statistics.median(times) for times in zip(*self.rounds)]

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()


def summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50": statistics.median(ordered),
        "mean": statistics.fmean(ordered),
        "p90": ordered[int(0.9 * (len(ordered) - 1))],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=PROJECT.parent / "shared" / "data")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--against", metavar="REF", help="also measure the fingerprint of this git commit")
    args = parser.parse_args()
    pages = sample(args.data)
    paths = pages["en"] + pages["zh"]
    targets = {"lxml parse": "lxml", "naive design": "naive", "this checkout": str(plugin_root(PROJECT))}
    tree = worktree(args.against) if args.against else None
    if tree:
        targets[f"at {args.against}"] = str(plugin_root(tree))
    try:
        variants = [Variant(name, target, paths) for name, target in targets.items()]
        for n in range(args.rounds):
            order = list(variants)
            random.Random(n).shuffle(order)  # no variant always runs after the same one (the naive design's
            for variant in order:  # jieba run leaves the caches cold for whichever follows it)
                variant.run_round()
        for variant in variants:
            variant.close()
    finally:
        if tree:
            remove_tree(tree)
    command = command_line("bench.speed.fingerprint")
    print(
        f"{len(pages['en'])} English and {len(pages['zh'])} Chinese pages, {args.rounds} interleaved rounds; "
        f"CPU ms per page (median of the rounds per page)\n"
    )
    print("| variant | language | p50 | mean | p90 | mean vs lxml parse |")
    print("|---|---|---|---|---|---|")
    results: dict[str, dict[str, dict[str, float]]] = {}
    for variant in variants:
        times = variant.per_page_ms()
        results[variant.name] = {}
        for language, count, offset in (("en", len(pages["en"]), 0), ("zh", len(pages["zh"]), len(pages["en"]))):
            results[variant.name][language] = summary(times[offset : offset + count])
    for name, by_language in results.items():
        for language, figures in by_language.items():
            ratio = figures["mean"] / results["lxml parse"][language]["mean"]
            print(
                f"| {name} | {language} | {figures['p50']:.2f} | {figures['mean']:.2f} | {figures['p90']:.2f} | "
                f"{ratio:.2f}x |"
            )
    for language in ("en", "zh"):
        ratio = results["naive design"][language]["mean"] / results["this checkout"][language]["mean"]
        print(f"\n{language}: the naive design's mean CPU per page is {ratio:.2f}x this checkout's")
    if tree:
        for language in ("en", "zh"):
            ratio = results["this checkout"][language]["mean"] / results[f"at {args.against}"][language]["mean"]
            print(f"\n{language}: this checkout's mean CPU per page is {ratio:.2f}x that at {args.against}")
    print(f"\nreproduce with: {command}")


if __name__ == "__main__":
    main()
