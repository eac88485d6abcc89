"""The modules of the package a page's trip through the crawl process crosses (#61's map): the demo's crawl
(``make demo``'s site, 385 pages) in this process under ``sys.setprofile``, every call into a module of
``scrapy_simhash_dedup`` counted (compiled modules by their functions' ``__module__``).  A module called at
least once a page on average is on the page's trip; the rest run at start and close.  The worker processes are
not traced (their modules: ``fingerprint/``).  Seconds: ~1 minute.

    python -m bench.speed.trip [--against-root DIR] [--out bench/results/speed/trip.json]

``--against-root`` puts a folder first on ``sys.path`` whose ``scrapy_simhash_dedup`` is another checkout's
package (a symbolic link to its ``pipelines/``, compiled), to count an earlier layout the same way.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from collections import Counter
from pathlib import Path

PACKAGE = "scrapy_simhash_dedup"
RESULTS = Path(__file__).resolve().parents[1] / "results" / "speed" / "trip.json"


def count_calls(calls: Counter[str]):
    def profile(frame, event, arg):
        if event == "call":
            module = frame.f_globals.get("__name__", "")
        elif event == "c_call":
            module = getattr(arg, "__module__", None) or ""
        else:
            return
        if module.startswith(PACKAGE):
            calls[module] += 1

    return profile


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against-root", type=Path, help="a folder whose scrapy_simhash_dedup is used instead")
    parser.add_argument(
        "--out", type=Path, help=f"write the counts here (JSON; default, without --against-root: {RESULTS})"
    )
    options = parser.parse_args()
    out = options.out or (None if options.against_root else RESULTS)
    if options.against_root:
        sys.path.insert(0, str(options.against_root))
    from crawler.demo import demo_crawl

    calls: Counter[str] = Counter()
    with demo_crawl() as (process, crawler, base_url):
        process.crawl(crawler, url=base_url)
        threading.setprofile(count_calls(calls))
        sys.setprofile(count_calls(calls))
        process.start()
        sys.setprofile(None)
        threading.setprofile(None)
    pages = crawler.stats.get_value("simhash_dedup/checked") or 1
    per_page = {module: round(n / pages, 1) for module, n in sorted(calls.items()) if n >= pages}
    print(f"{PACKAGE} from {sys.modules[PACKAGE].__file__}; {pages} pages checked")
    print(f"modules called at least once a page: {len(per_page)} of {len(calls)} called")
    for module, n in per_page.items():
        print(f"  {module[len(PACKAGE) + 1 :]:40} {n:8.1f} calls a page")
    if out is not None:
        command = " ".join(["python -m bench.speed.trip", *sys.argv[1:]])
        summary = {"command": command, "pages": pages, "modules_a_page": len(per_page), "per_page": per_page}
        out.write_text(json.dumps(summary, indent=1) + "\n")


if __name__ == "__main__":
    main()
