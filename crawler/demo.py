"""``make demo``: crawl a bundled real site offline and summarise what was dropped.

The site is a subset of the Debian Administrator's Handbook (en-US, da-DK and
zh-CN; see ``demo_site/COPYRIGHT``).  Many da-DK and zh-CN pages are
unfinished translations, still mostly English: near-duplicates of their
en-US page under another URL.  Kept items go to ``demo-output/kept.jsonl``,
the report of what was dropped and why to ``demo-output/report.html``.

    python -m crawler.demo [--output demo-output]
"""

from __future__ import annotations

import argparse
import tarfile
import tempfile
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.crawler import Crawler, CrawlerProcess
from scrapy.utils.project import get_project_settings

from crawler.local_site import serve_directory

if TYPE_CHECKING:
    from scrapy_simhash_dedup.report import Log

SITE_ARCHIVE = Path(__file__).parent / "demo_site" / "debian-handbook-en-da-zh.tar.xz"
LOCAL_CRAWL = {  # a local server needs no politeness
    "ROBOTSTXT_OBEY": False,
    "DOWNLOAD_DELAY": 0,
    "CONCURRENT_REQUESTS": 1,  # one page at a time: the same pages are kept on every run
    "AUTOTHROTTLE_ENABLED": False,
    "LOG_LEVEL": "WARNING",
    "SIMHASH_DEDUP_RESET": True,  # every demo is a first crawl: forget the previous demo's pages
}


@contextmanager
def demo_crawl(store: Path | None = None, **settings: Any) -> Iterator[tuple[CrawlerProcess, Crawler, str]]:
    """The demo's site served on 127.0.0.1 and a crawler of the ``site`` spider made for it (``LOCAL_CRAWL``, then
    ``settings``; its store at ``store``, else beside the site in a temporary folder): the caller connects what it
    listens to, then ``process.crawl(crawler, url=base_url)`` and ``process.start()``."""
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(SITE_ARCHIVE) as archive:
            archive.extractall(tmp, filter="data")
        with serve_directory(Path(tmp) / "html") as base_url:
            crawl_settings = get_project_settings()
            path = str(store if store is not None else Path(tmp) / "seen.sqlite")
            crawl_settings.setdict({**LOCAL_CRAWL, "SIMHASH_DEDUP_PATH": path, **settings}, priority="cmdline")
            process = CrawlerProcess(crawl_settings)
            yield process, process.create_crawler("site"), base_url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, default=Path("demo-output"), help="where the demo writes")
    output = parser.parse_args().output
    output.mkdir(parents=True, exist_ok=True)
    dropped: list[tuple[str, Any]] = []

    def record_drop(item: Any, exception: Exception, **_: Any) -> None:
        dropped.append((item["url"], exception.match))

    # its own store, beside its output: a crawl of your site with the same spider never meets the demo's
    feeds = {str(output / "kept.jsonl"): {"format": "jsonlines", "overwrite": True}}
    with demo_crawl(output / "seen.sqlite", FEEDS=feeds) as (process, crawler, base_url):
        crawler.signals.connect(record_drop, signal=signals.item_dropped)
        process.crawl(crawler, url=base_url)
        process.start()
    print_summary(crawler.stats.get_stats(), dropped, base_url, output)
    from scrapy_simhash_dedup.report import load_log

    log = load_log(str(output / "seen.sqlite"))  # the store's log, read once for the names and the report
    print_renamed(log, base_url)
    write_demo_report(log, output)


def print_renamed(log: Log, base_url: str) -> None:
    """The kept pages the crawl named by a URL it met later: an untranslated copy met first (``da-DK/apt.html``,
    English) is known by its original's address once the original comes (``en-US/apt.html``, in its language's
    folder).  Its item went out under the first URL; the alias table holds the names."""
    from scrapy_simhash_dedup.report.aliases import canonical_names

    renamed = {kept: name for kept, name in canonical_names(log.aliases).items() if kept != name}
    if not renamed:
        return
    kept, name = next(iter(sorted(renamed.items())))
    print(
        f"\nrenamed:        {len(renamed)} kept pages are known by the address of their original, met after them,\n"
        f"  e.g. {kept.removeprefix(base_url)} by {name.removeprefix(base_url)}; "
        f"every name: simhash-dedup aliases {log.source}"
    )


def write_demo_report(log: Log, output: Path) -> None:
    """The report of the demo's crawl (its store's ``log``), and what to look at in it."""
    from scrapy_simhash_dedup.report import write_report

    report = write_report(log, output / "report.html")
    print(f"\nreport: {report.resolve()}")
    print("  open it in a browser: the counts, the histograms of distance and similarity (thresholds dashed),")
    print("  the clusters, and the pairs nearest the threshold first, each a side-by-side diff of the two texts.")
    print("  Look at the first pairs: drops whose texts differ in substance, or borderline keeps that are copies.")


def print_summary(stats: dict[str, Any], dropped: list[tuple[str, Any]], base_url: str, output: Path) -> None:
    def short(url: str) -> str:
        return url.removeprefix(base_url) or "/"

    print(f"\npages crawled:  {stats.get('response_received_count', 0)}")
    print(f"pages checked:  {stats.get('simhash_dedup/checked', 0)}")
    print(f"kept:           {stats.get('simhash_dedup/pages_kept', 0)}  -> {output / 'kept.jsonl'}")
    print(f"dropped:        {stats.get('simhash_dedup/pages_dropped', 0)}")
    for reason, count in sorted(Counter(match.reason for _, match in dropped).items()):
        print(f"  matched on {reason}: {count}")
    for key in sorted(stats):
        if key.startswith(("simhash_dedup/too_few", "simhash_dedup/no_html", "simhash_dedup/errors")):
            print(f"{key}: {stats[key]}")
    print("\ndropped page -> the kept page it duplicates (content distance, similarity, structure distance):")
    for url, match in sorted(dropped):
        similarity = "n/a" if match.similarity is None else f"{match.similarity:.2f}"
        print(
            f"  {short(url):45} -> {short(match.url):45} "
            f"({match.content_distance}, {similarity}, {match.structure_distance})"
        )


if __name__ == "__main__":
    main()
