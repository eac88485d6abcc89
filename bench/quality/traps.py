"""Requests spent on crawl traps: a crawl without the guard, with the link guard, and with links and URL rules.

    python -m bench.quality.traps [--articles 60] [--cap 3000] [--data ../shared/data]

Five sites on 127.0.0.1, each crawled by the project's ``site`` spider (every
page's links within the site) in three variants, one crawl at a time:

- the trap site (``crawler/trap_site.py``): ``--articles`` articles of real
  shared pages behind an endless calendar, session ids, sort and view
  parameters, print views, a mirrored path and tracking parameters;
- the same site with its calendar's month in the path and named in each
  month's title (``/events/2026/01/``, "Events in January 2026");
- the same site with ``--alias-articles`` articles and a second host name
  that serves the same pages, where some links lead;
- the demo site (the Debian handbook in three languages), which has no traps;
- the whole Debian handbook of ``--data`` (26 language folders): no traps,
  but language index pages that are near-duplicates of each other while
  their links lead into their own folders, where some pages are unique.

Crawls go breadth-first (Scrapy's advice for broad crawls) and stop on their
own or at ``--cap`` pages (an endless trap never ends without a guard).  For each: requests made, pages kept,
whether the crawl ended on its own, unique pages lost: pages of the site's own (the trap
site's unique pages; on the sites without traps, the pages the unguarded crawl kept)
of which no kept page of the variant is a near-duplicate, by the pipeline's
own decision; and how many kept pages carry their true canonical URL
(``canonical_url``): on the trap sites, their articles' real addresses; on the
handbook, a page's copy in its own language's folder (an untranslated page
met in another folder); else the canonical URL the page declares, else its
own URL; on the items as the crawl gave them, and as ``simhash-dedup aliases``
exports them after the crawl (pages renamed as the crawl learned the site).
Results go to ``bench/results/quality/traps.json``.
"""

from __future__ import annotations

import argparse
import functools
import json
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

from bench.common import PROJECT, RESULTS_FOLDER, command_line, declared_in_html, lost
from crawler.local_site import serve_directory
from crawler.trap_site import TrapSite, articles_from_html, serve_trap_site
from scrapy_simhash_dedup.fingerprint.document import load
from scrapy_simhash_dedup.fingerprint.fingerprinter import DEFAULT_MAX_BYTES, Fingerprinter
from scrapy_simhash_dedup.fingerprint.sketch import written_in
from scrapy_simhash_dedup.guards.canonical import LANGUAGE_CODES
from scrapy_simhash_dedup.guards.traps import host_key, split
from scrapy_simhash_dedup.report.aliases import canonical_names
from scrapy_simhash_dedup.report.log import load_log
from tools.fingerprint_reference import DATA, shared_pages

RESULTS = RESULTS_FOLDER / "quality" / "traps.json"
DEMO_SITE = PROJECT / "crawler" / "demo_site" / "debian-handbook-en-da-zh.tar.xz"
BREADTH_FIRST = {  # Scrapy's advice for broad crawls: without it, no guard dives into a trap and never comes back
    "DEPTH_PRIORITY": 1,
    "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
    "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
}
VARIANTS = {
    "no guard": {"SIMHASH_DEDUP_SKIP_LINKS": False, "SIMHASH_DEDUP_URL_RULES": False},
    "link guard": {"SIMHASH_DEDUP_SKIP_LINKS": True, "SIMHASH_DEDUP_URL_RULES": False},
    "links and rules": {"SIMHASH_DEDUP_SKIP_LINKS": True, "SIMHASH_DEDUP_URL_RULES": True},
}


def crawl(url: str, settings: dict[str, Any], cap: int, hosts: str = "") -> dict[str, Any]:
    """One crawl of the ``site`` spider in its own process (``hosts``: the site's other names, followed too): its
    stats and kept pages (url, html)."""
    with tempfile.TemporaryDirectory() as tmp:
        result = Path(tmp) / "result.json"
        config = {
            "url": url,
            "cap": cap,
            "hosts": hosts,
            "settings": {"SIMHASH_DEDUP_PATH": str(Path(tmp) / "seen.sqlite"), **settings},
        }
        subprocess.run(
            [sys.executable, "-m", "bench.quality.traps", "--one", json.dumps(config), str(result)],
            check=True,
            cwd=PROJECT,
        )
        return json.loads(result.read_text())


def crawl_here(config: dict[str, Any], result: Path) -> None:
    import warnings

    from scrapy import signals
    from scrapy.crawler import CrawlerProcess
    from scrapy.exceptions import ScrapyDeprecationWarning
    from scrapy.utils.project import get_project_settings

    from crawler.demo import LOCAL_CRAWL

    warnings.filterwarnings("error", category=ScrapyDeprecationWarning)  # as in the tests
    settings = get_project_settings()
    settings.setdict(
        {
            **LOCAL_CRAWL,
            "CONCURRENT_REQUESTS": 8,
            "CLOSESPIDER_PAGECOUNT": config["cap"],
            **BREADTH_FIRST,
            "ADDONS": {"scrapy_simhash_dedup.SimhashDedupAddon": 0},
            "SIMHASH_DEDUP_RESET": False,  # the demo's setting; a resumed crawl here goes on from its store
            "LOG_LEVEL": "ERROR",
            **config["settings"],
        },
        priority="cmdline",
    )
    kept: list[tuple[str, str]] = []
    canonical: list[str | None] = []  # the kept items' canonical URLs
    process = CrawlerProcess(settings)
    crawler = process.create_crawler("site")

    def on_scraped(item: Any, response: Any, **_: Any) -> None:  # a named function: signals hold weak references
        kept.append((item["url"], response.text))
        canonical.append(item.get("canonical_url"))

    crawler.signals.connect(on_scraped, signal=signals.item_scraped)
    process.crawl(crawler, url=config["url"], hosts=config.get("hosts", ""))
    process.start()
    stats = crawler.stats.get_stats()
    settings = config["settings"]
    store = settings.get("SIMHASH_DEDUP_REDIS_URL") or settings["SIMHASH_DEDUP_PATH"]
    exported = canonical_names(load_log(store, settings.get("SIMHASH_DEDUP_REDIS_KEY", "simhash_dedup")).names())
    result.write_text(
        json.dumps(
            {
                "stats": {k: v for k, v in stats.items() if isinstance(v, (int, float, str))},
                "kept": kept,
                "canonical": canonical,
                "exported": [exported.get(url, url) for url, _ in kept],
            },
            default=str,
        )
    )


def declared_or_own(url: str, html: str) -> str:
    """What a kept page of a site without traps should be known by: the canonical URL it declares on its own host,
    else its URL."""
    root = load(html, DEFAULT_MAX_BYTES).root
    declared = urljoin(url, declared_in_html(root) or "") if root is not None else url
    return declared if host_key(declared) == host_key(url) else url


def in_its_language_folder(root: Path, base_url: str, url: str, html: str) -> str | None:
    """What a kept page of a site in language folders (``root``/``en-US``/...) should be known by: its copy in
    the folder of the language its text is written in, when the page is in another folder and that copy exists
    (an untranslated page); else what it declares, or its URL.  None (not counted) when its language has several
    folders and the page is in none of them."""
    folder, _, rest = url.removeprefix(base_url).lstrip("/").partition("/")
    written = written_in(Fingerprinter().fingerprint(html, url).sketch)
    if len(written) != 1 or not rest:
        return declared_or_own(url, html)
    own = [
        path.name
        for path in root.iterdir()
        if LANGUAGE_CODES.get(path.name[:2].lower()) == written[0] and (path / rest).is_file()
    ]
    if folder in own or not own:
        return declared_or_own(url, html)
    return f"{base_url.rstrip('/')}/{own[0]}/{rest}" if len(own) == 1 else None


def named_right(
    kept: list[tuple[str, str]], canonical: list[str | None], truth: Callable[[str, str], str | None]
) -> tuple[int, int]:
    """Of the kept pages ``truth`` knows the canonical URL of, how many carry it (``canonical_url``), and how many
    there are."""
    known = [(name, truth(url, html)) for (url, html), name in zip(kept, canonical)]
    known = [(name, true) for name, true in known if true is not None]
    return sum(name == true for name, true in known), len(known)


def run_site(
    name: str,
    url: str,
    own_pages: list[tuple[str, str]] | None,
    cap: int,
    truth: Callable[[str, str], str | None] = declared_or_own,
    hosts: str = "",
) -> list[dict[str, Any]]:
    """Every variant's crawl of one site; ``truth``: a kept page's true canonical URL (None: not counted)."""
    rows = []
    for variant, settings in VARIANTS.items():
        outcome = crawl(url, settings, cap, hosts)
        stats = outcome["stats"]
        if own_pages is None:  # a site without traps: its own pages are those the unguarded crawl kept
            own_pages = outcome["kept"]
        right, counted = named_right(outcome["kept"], outcome["canonical"], truth)
        exported_right, _ = named_right(outcome["kept"], outcome["exported"], truth)
        rows.append(
            {
                "site": name,
                "variant": variant,
                "requests": stats.get("downloader/request_count", 0),
                "kept": stats.get("simhash_dedup/items_kept", 0),
                "ended on its own": stats.get("finish_reason") == "finished",
                "unique lost": len(lost(own_pages, outcome["kept"])),
                "links skipped": stats.get("simhash_dedup/links_skipped", 0),
                "requests skipped": stats.get("simhash_dedup/requests_skipped", 0),
                "rules": stats.get("simhash_dedup/rules", 0),
                "true canonical": f"{right} of {counted}",
                "true canonical, exported": f"{exported_right} of {counted}",
                "renamed": stats.get("simhash_dedup/canonical/renamed", 0),
            }
        )
        print(json.dumps(rows[-1]), file=sys.stderr)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--articles", type=int, default=60)
    parser.add_argument("--alias-articles", type=int, default=300, help="articles of the trap site with an alias host")
    parser.add_argument("--cap", type=int, default=3000, help="pages after which a crawl is stopped")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--one", nargs=2, help=argparse.SUPPRESS)  # a crawl in this process (see crawl())
    options = parser.parse_args()
    if options.one:
        crawl_here(json.loads(options.one[0]), Path(options.one[1]))
        return
    articles = articles_from_html(
        (body for _, body in shared_pages(options.data)), max(options.articles, options.alias_articles)
    )
    rows = []
    for name, count, alias_host, calendar in (
        ("trap site", options.articles, False, "query"),
        ("trap site, calendar in path", options.articles, False, "path"),
        ("trap site, alias host", options.alias_articles, True, "query"),
    ):
        with serve_trap_site(articles[:count], alias_host, calendar) as (base_url, site):
            own = [(base_url + path, site.page(path)) for path in site.unique_paths()]

            def article_address(url: str, _: str, base_url: str = base_url, site: TrapSite = site) -> str | None:
                """The trap site's articles, by their real address (on the site's own host)."""
                parts = split(url)
                path = site.canonical_path(parts._replace(scheme="", netloc="").geturl())
                return base_url + path if path is not None and path.startswith("/article/") else None

            rows += run_site(
                name,
                base_url + "/",
                own,
                options.cap,
                article_address,
                hosts=split(site.alias).netloc if site.alias else "",
            )
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(DEMO_SITE) as archive:
            archive.extractall(tmp, filter="data")
        with serve_directory(Path(tmp) / "html") as base_url:
            rows += run_site(
                "demo site",
                base_url,
                None,
                cap=0,  # no trap: no cap
                truth=functools.partial(in_its_language_folder, Path(tmp) / "html", base_url),
            )
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(next((options.data / "debian-handbook-site").glob("*.tar.xz"))) as archive:
            archive.extractall(tmp, filter="data")
        with serve_directory(Path(tmp) / "html") as base_url:
            rows += run_site(
                "handbook, 26 languages",
                base_url,
                None,
                cap=0,
                truth=functools.partial(in_its_language_folder, Path(tmp) / "html", base_url),
            )
    columns = list(rows[0])
    print("| " + " | ".join(columns) + " |\n|" + "---|" * len(columns))
    for row in rows:
        print(
            "| "
            + " | ".join(f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else str(v) for v in row.values())
            + " |"
        )
    base = {row["site"]: row["requests"] for row in rows if row["variant"] == "no guard"}
    for row in rows:
        if row["variant"] != "no guard":
            row["fewer requests"] = 1 - row["requests"] / base[row["site"]]
            print(f"{row['site']}, {row['variant']}: {row['fewer requests']:.0%} fewer requests than no guard")
    command = command_line("bench.quality.traps")
    print(f"\nreproduce with: {command}")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(
        json.dumps({"rows": rows, "articles": len(articles), "cap": options.cap, "command": command}, indent=1)
    )


if __name__ == "__main__":
    main()
