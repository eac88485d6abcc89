"""The crawl process's work with and without the filter, counted in instructions: a figure that a
shared host's noise does not move.

    python -m bench.speed.crawl_instructions [--pages 50 150] [--variants "no filter" defaults ...] [--follow-all]
                                             [--against REF] [--results FILE]

``bench/speed/crawl.py`` measures CPU milliseconds, which drift by up to a millisecond a page from one
round to the next on a shared host, and differ 2.5x from one host to another.  This script runs the
same crawl (``bench.common``'s site and crawl, saturated mode, its reactor-lag probe off) under valgrind's
callgrind, which counts the instructions the crawl process executes (the fingerprint workers run
natively and are not counted), on sites of two sizes: the difference between the two counts,
divided by the difference in responses, is the crawl process's work per response (a page), its
start-up left out.  Printed per variant: millions of instructions a response, what a variant adds
to the crawl without the filter, and that as a share of the crawl's own (Scrapy's) work.

``--follow-all``: the spider also follows every link of every page on the site's host, as a
``CrawlSpider`` does (most of those links lead to pages that do not exist: a response is then a
page or a 404); ``bench/results/speed/crawl_instructions-follow-all.json``.

Instructions are not time: the filter's code, met once a page between Scrapy's, runs with colder
caches than Scrapy's loops (one of its store checks takes ~12 us back to back and ~30-80 us in a
crawl), and a page's hand-over to a worker costs kernel time, which callgrind does not see.  So
the share of CPU time (``bench/speed/crawl.py``) is the larger; this one says whether the filter's own
work grew or shrank, without the noise.  Counts repeat to about 0.05 M instructions a response (the
workers' timing still decides a few paths, such as whether a page's verdict is ready when its item
comes).  Installs valgrind from Debian's packages when missing.

``--against REF``: the filter's variants also run with the plugin of another commit (built in a worktree,
put first on the path under the plugin's name: ``bench.common.plugin_root``), as ``bench/speed/crawl.py --against``
does.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.common import (
    PROJECT,
    RESULTS_FOLDER,
    VARIANTS,
    Nginx,
    against_tree,
    build_site,
    command_line,
    debian_command,
    plugin_environment,
    real_pages,
    remove_tree,
)

RESULTS = RESULTS_FOLDER / "speed" / "crawl_instructions.json"


def counted_crawl(variant: str, url: str, work: Path, follow_all: bool, tree: Path = PROJECT) -> tuple[int, int]:
    """Crawl the site at ``url`` once with ``variant``'s settings under callgrind (the plugin of the checkout
    ``tree``): the responses, and the instructions the crawl process executed."""
    counts, out = work / "callgrind.out", work / "result.json"
    command = [
        debian_command("valgrind", "valgrind"),
        "--tool=callgrind",
        "--trace-children=no",
        f"--callgrind-out-file={counts}",
        sys.executable,
        "-m",
        "bench.speed.crawl",
        "--one",
        variant,
        "--mode",
        "saturated",
        "--url",
        url,
        "--work",
        str(work),
        "--out",
        str(out),
        "--no-lag-probe",
        *(["--follow-all"] if follow_all else []),
    ]
    done = subprocess.run(
        command, cwd=tree, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=plugin_environment(tree)
    )
    if done.returncode:
        raise RuntimeError(f"{variant} failed:\n{done.stderr[-3000:]}")
    total = re.search(r"^(?:totals|summary): (\d+)", counts.read_text(), re.MULTILINE)
    return json.loads(out.read_text())["pages"], int(total.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=PROJECT.parent / "shared" / "data")
    parser.add_argument("--pages", type=int, nargs=2, default=[50, 150], help="the two sites' distinct pages")
    parser.add_argument("--variants", nargs="+", default=["no filter", "defaults"], choices=list(VARIANTS))
    parser.add_argument("--follow-all", action="store_true", help="the spider follows every link of every page")
    parser.add_argument("--against", metavar="REF", help="the filter's variants also with the plugin of this commit")
    parser.add_argument(
        "--results",
        type=Path,
        help="where the figures go (default: bench/results/speed/"
        "crawl_instructions.json, crawl_instructions-follow-all.json with --follow-all)",
    )
    args = parser.parse_args()
    variants = ["no filter", *(v for v in args.variants if v != "no filter")]
    trees = dict.fromkeys(variants, PROJECT)
    if args.against:
        tree = against_tree(args.against)
        trees.update({f"{variant} at {args.against}": tree for variant in variants[1:]})
    per_response: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-instructions-") as temp:
        servers = []
        try:
            for size in args.pages:
                site = Path(temp) / f"{size}" / "site"
                site.mkdir(parents=True)
                build_site(site, real_pages(args.data, size))
                servers.append(Nginx(site, site.parent))
            for variant, tree in trees.items():
                (small, small_count), (large, large_count) = (
                    counted_crawl(variant.split(" at ")[0], server.url, Path(temp), args.follow_all, tree)
                    for server in servers
                )
                per_response[variant] = (large_count - small_count) / (large - small)
                print(
                    f"{variant}: {small} responses {small_count:,} instructions, {large} responses {large_count:,}: "
                    f"{per_response[variant] / 1e6:.2f} M a response",
                    flush=True,
                )
        finally:
            for server in servers:
                server.stop()
            if args.against:
                remove_tree(tree)
    own = per_response["no filter"]
    print("\n| variant | M instructions a response, crawl process | above no filter | share of the crawl's own |")
    print("|---|---|---|---|")
    for variant, count in per_response.items():
        print(f"| {variant} | {count / 1e6:.2f} | {(count - own) / 1e6:+.2f} | {(count - own) / own:.1%} |")
    command = command_line("bench.speed.crawl_instructions")
    written = args.results or (RESULTS.with_name("crawl_instructions-follow-all.json") if args.follow_all else RESULTS)
    written.write_text(json.dumps({"command": command, "pages": args.pages, "per_response": per_response}, indent=1))
    print(f"\nwritten {written}; reproduce with: {command}")


if __name__ == "__main__":
    main()
