"""A real crawl with and without the filter: pages/s, CPU, reactor lag and memory, side by side.

    python -m bench.crawl [--rounds 3] [--pages 450] [--data ../shared/data] [--feed]

Builds a site from real pages of ``../shared/data`` (``--pages`` distinct
news pages, each also served under three more URLs: an exact copy, a copy
with other dates and counters in a byline, a copy with an ad block, so 3 in
4 pages are near-duplicates; an index page links them all), serves it with
nginx on 127.0.0.1 (a free port; installed from Debian's packages when
missing), and crawls it with CONCURRENT_REQUESTS 32, each variant in a
process of its own, the variants interleaved in every round:

- ``no filter``: no item pipeline;
- ``defaults``: the filter at its default settings (SQLite store, one worker process per core);
- ``memory backend``: ``SIMHASH_DEDUP_BACKEND = "memory"``;
- ``on the reactor``: ``SIMHASH_DEDUP_WORKERS = 0``, fingerprints on the reactor thread (as before the workers);
- ``naive``: a naive SimHash pipeline: the whole visible text, jieba TF-IDF top words, on the reactor thread.

Per crawl: pages/s (responses over the time from the engine's start to the
spider's close), CPU per page of the crawl and its worker processes, the
reactor's lag (a call scheduled every 10 ms: how late it ran; p50, p99, max),
and the memory of the crawl plus its workers (every one the crawl started)
at the end of the crawl: resident (RSS, summed over the processes, so pages
they share, such as libraries, count once per process) and proportional
(PSS: shared pages divided among the processes that map them, the memory
the crawl really takes).  Prints every round and the medians with their ratios to ``no
filter``; writes ``bench/results/crawl.json``.

``--feed``: every variant also exports its items (URL and HTML) to a JSON
Lines file, as a crawl that stores its pages does (``FEEDS``); the figures go
to ``bench/results/crawl-feed.json``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parents[1]
RESULTS = PROJECT / "bench" / "results" / "crawl.json"

VARIANTS: dict[str, dict[str, Any]] = {
    "no filter": {},
    "defaults": {"ITEM_PIPELINES": {"pipelines.SimhashDedupPipeline": 300}},
    "memory backend": {"ITEM_PIPELINES": {"pipelines.SimhashDedupPipeline": 300}, "SIMHASH_DEDUP_BACKEND": "memory"},
    "on the reactor": {"ITEM_PIPELINES": {"pipelines.SimhashDedupPipeline": 300}, "SIMHASH_DEDUP_WORKERS": 0},
    "naive": {"ITEM_PIPELINES": {"bench.crawl.NaivePipeline": 300}},
}


# -- the site ---------------------------------------------------------------------------------------

def real_pages(data: Path, count: int) -> list[bytes]:
    """``count`` real news pages: the extraction test sets first (English, then Chinese), then the
    article-extraction benchmark's pages."""
    from bench.quality_sets import news_test_pages  # here: the crawls, whose memory is measured, never load it

    paths = [*news_test_pages(data), *sorted((data / "article-extraction-benchmark" / "html").glob("*.html.gz"))]
    pages = []
    for path in paths:
        body = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        if b"<body" in body.lower() and len(body) > 5_000:
            pages.append(body)
    if len(pages) < count:
        sys.exit(f"only {len(pages)} pages found under {data}")
    return pages[:count]


_BODY_END = re.compile(rb"</body\s*>", re.IGNORECASE)
_BODY_START = re.compile(rb"<body[^>]*>", re.IGNORECASE)


def variants_of(page: bytes, n: int) -> list[bytes]:
    """The page, an exact copy, a copy with a byline of other figures, a copy with an ad block."""
    byline = f'<p class="meta">Updated 2024-05-{n % 28 + 1:02d} 10:{n % 60:02d} | {1000 + 7 * n:,} views</p>'.encode()
    ad = (b'<div class="ad-slot"><a href="https://ads.example/c?id=' + str(n).encode() + b'">Sponsored: the offer of '
          b'the week, only today, click here</a></div>')
    dated = _BODY_START.sub(lambda m: m.group(0) + byline, page, count=1)
    with_ad = _BODY_END.sub(lambda m: ad + m.group(0), page, count=1)
    return [page, page, dated, with_ad]


def build_site(folder: Path, pages: list[bytes]) -> int:
    """Write the site; return how many pages the crawl fetches (index included)."""
    links = []
    for n, page in enumerate(pages):
        for v, body in enumerate(variants_of(page, n)):
            name = f"p/{n}-{v}.html"
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(body)
            links.append(f'<li><a href="/{name}">page {n} version {v}</a></li>')
    (folder / "index.html").write_text("<html><body><ul>" + "".join(links) + "</ul></body></html>")
    for path in [folder, *folder.rglob("*")]:  # readable by nginx's worker user
        path.chmod(0o755 if path.is_dir() else 0o644)
    return len(links) + 1


# -- nginx ------------------------------------------------------------------------------------------

def nginx_binary() -> str:
    found = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
    if found:
        return found
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    subprocess.run([*sudo, "apt-get", "update", "-qq"], check=False)
    subprocess.run([*sudo, "apt-get", "install", "-y", "-qq", "nginx-light"],
                   env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"}, check=False)
    return shutil.which("nginx") or "/usr/sbin/nginx"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Nginx:
    """nginx serving ``root`` on 127.0.0.1, started and stopped here."""

    def __init__(self, root: Path, work: Path) -> None:
        self.port = free_port()
        temp = work / "nginx"
        temp.mkdir()
        config = temp / "nginx.conf"
        user = "user root;" if os.geteuid() == 0 else ""
        config.write_text(f"""
{user}
worker_processes 1;
daemon off;
pid {temp}/nginx.pid;
error_log {temp}/error.log;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    default_type text/html;
    sendfile on;
    keepalive_timeout 65;
    client_body_temp_path {temp}/body;
    proxy_temp_path {temp}/proxy;
    fastcgi_temp_path {temp}/fastcgi;
    uwsgi_temp_path {temp}/uwsgi;
    scgi_temp_path {temp}/scgi;
    server {{ listen 127.0.0.1:{self.port}; root {root}; }}
}}
""")
        self.process = subprocess.Popen([nginx_binary(), "-c", str(config), "-p", str(temp)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"nginx did not start: {self.process.stderr.read().decode()[-2000:]}")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)


# -- one crawl, in its own process ------------------------------------------------------------------

class NaivePipeline:
    """The naive design: SimHash of the whole visible text's jieba TF-IDF top words, on the reactor
    thread, compared with every kept page (distance 3)."""

    def __init__(self) -> None:
        self.kept: list[int] = []

    async def process_item(self, item: dict) -> dict:
        from scrapy.exceptions import DropItem

        from bench.anchors import anchor_fingerprints, visible_text

        fingerprint = anchor_fingerprints(visible_text(item["html"]))["jieba_topn"]
        if fingerprint is not None:
            if any((fingerprint ^ kept).bit_count() <= 3 for kept in self.kept):
                raise DropItem("near-duplicate")
            self.kept.append(fingerprint)
        return item


def memory_mb(pid: int | str = "self") -> tuple[float, float]:
    """Resident memory of a process, and its proportional share (PSS: pages shared with other
    processes, such as libraries, divided among them); (0, 0) once it has ended."""
    try:
        rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0.0, 0.0
    return tuple(int(rollup.split(f"\n{name}:")[1].split()[0]) / 1024 for name in ("Rss", "Pss"))


def crawl(variant: str, url: str, work: Path, feed: bool = False) -> dict[str, Any]:
    """Crawl the site once with ``variant``'s settings (and a JSON Lines feed of its items if
    ``feed``); return its figures."""
    import scrapy
    from scrapy import signals
    from scrapy.crawler import CrawlerProcess

    class SiteSpider(scrapy.Spider):
        name = "bench_site"
        start_urls = [url]

        def parse(self, response):
            for href in response.css("a::attr(href)").getall():
                yield response.follow(href, self.parse_page)

        def parse_page(self, response):
            yield {"url": response.url, "html": response.text}

    settings = {
        "CONCURRENT_REQUESTS": 32, "CONCURRENT_REQUESTS_PER_DOMAIN": 32, "ROBOTSTXT_OBEY": False,
        "LOG_LEVEL": "WARNING", "TELNETCONSOLE_ENABLED": False, "AUTOTHROTTLE_ENABLED": False,
        "SIMHASH_DEDUP_PATH": str(work / f"seen-{os.getpid()}.sqlite"), **VARIANTS[variant],
    }
    if feed:
        settings["FEEDS"] = {str(work / f"items-{os.getpid()}.jsonl"): {"format": "jsonlines"}}
    process = CrawlerProcess(settings)
    crawler = process.create_crawler(SiteSpider)
    lags: list[float] = []
    memory: list[tuple[tuple[float, float], list[tuple[float, float]]]] = []  # (crawl, [each worker])
    worker_pids: set[int] = set()  # every worker seen: the pool replaces a worker that dies
    at_end: list[tuple[tuple[float, float], list[tuple[float, float]]]] = []  # the sample at the crawl's end
    clock: dict[str, float] = {}

    def probe(due: float) -> None:
        from twisted.internet import reactor  # the one Scrapy installed

        now = time.monotonic()
        lags.append(now - due)
        if "closed" not in clock:
            reactor.callLater(0.01, probe, now + 0.01)

    def sample_memory(again: bool = True) -> None:
        from twisted.internet import reactor

        workers = getattr(dedup_pipeline(), "fingerprints", None)
        worker_pids.update(pid for pid, _ in workers.workers()) if workers else None
        memory.append((memory_mb(), [memory_mb(pid) for pid in sorted(worker_pids)]))
        if again and "closed" not in clock:
            reactor.callLater(0.5, sample_memory)

    def dedup_pipeline() -> Any:
        return next(iter(getattr(crawler.engine.scraper.itemproc, "middlewares", ())), None)

    def started() -> None:
        from twisted.internet import reactor

        clock["start"] = time.monotonic()
        reactor.callLater(0.01, probe, clock["start"] + 0.01)
        sample_memory()

    def idle(**_: Any) -> None:  # the last time is the end of the crawl, before the workers stop
        clock["end"] = time.monotonic()
        sample_memory(again=False)
        at_end[:] = memory[-1:]  # (the periodic samples go on until the spider closes)

    def closed(**_: Any) -> None:
        clock["closed"] = time.monotonic()

    crawler.signals.connect(started, signal=signals.engine_started)
    crawler.signals.connect(idle, signal=signals.spider_idle)
    crawler.signals.connect(closed, signal=signals.spider_closed)
    process.crawl(crawler)
    process.start()
    clock.setdefault("end", time.monotonic())
    own, children = (resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    own_cpu = own.ru_utime + own.ru_stime
    cpu = own_cpu + children.ru_utime + children.ru_stime
    stats = crawler.stats.get_stats()
    pages = stats.get("response_received_count", 0)
    ordered = sorted(lags)
    return {
        "variant": variant, "pages": pages, "items": stats.get("item_scraped_count", 0),
        "dropped": stats.get("item_dropped_count", 0), "seconds": clock["end"] - clock["start"],
        "pages_per_s": pages / (clock["end"] - clock["start"]), "cpu_ms_per_page": 1000 * cpu / max(1, pages),
        "cpu_ms_per_page_crawl": 1000 * own_cpu / max(1, pages),
        "lag_ms": {"p50": 1000 * statistics.median(ordered), "p99": 1000 * ordered[int(0.99 * (len(ordered) - 1))],
                   "max": 1000 * ordered[-1]},
        "rss_mb_end": total(at_end[0], 0), "rss_mb_max": max(total(sample, 0) for sample in memory),
        "pss_mb_end": total(at_end[0], 1), "pss_mb_max": max(total(sample, 1) for sample in memory),
        "rss_mb_end_crawl": at_end[0][0][0], "rss_mb_end_workers": [w[0] for w in at_end[0][1]],
        "filter_stats": {key: value for key, value in stats.items() if key.startswith("simhash_dedup/")},
    }


def total(sample: tuple[tuple[float, float], list[tuple[float, float]]], which: int) -> float:
    """RSS (``which`` 0) or PSS (1) of the crawl plus its workers in one sample."""
    crawl, workers = sample
    return crawl[which] + sum(worker[which] for worker in workers)


# -- the rounds -------------------------------------------------------------------------------------

def run_variant(variant: str, url: str, work: Path, feed: bool) -> dict[str, Any]:
    out = work / "result.json"
    done = subprocess.run([sys.executable, "-m", "bench.crawl", "--one", variant, "--url", url, "--work", str(work),
                           "--out", str(out), *(["--feed"] if feed else [])], cwd=PROJECT, capture_output=True, text=True, timeout=1800)
    if done.returncode:
        raise RuntimeError(f"{variant} failed:\n{done.stderr[-3000:]}")
    return json.loads(out.read_text())


COLUMNS = ("| variant | pages/s | x no filter | CPU ms/page: all (crawl process) | reactor lag p50 / p99 / max ms "
           "| RSS MB at end: crawl + workers (vs no filter) | PSS MB at end (vs no filter) | kept / dropped |\n"
           "|---|---|---|---|---|---|---|---|")


def row(name: str, result: dict[str, Any], ratio: float, baseline: dict[str, Any]) -> str:
    lag = result["lag_ms"]
    return (f"| {name} | {result['pages_per_s']:.0f} | {ratio:.2f} | {result['cpu_ms_per_page']:.2f} "
            f"({result['cpu_ms_per_page_crawl']:.2f}) | {lag['p50']:.0f} / {lag['p99']:.0f} / {lag['max']:.0f} | "
            f"{result['rss_mb_end']:.0f} ({result['rss_mb_end'] - baseline['rss_mb_end']:+.0f}) | "
            f"{result['pss_mb_end']:.0f} ({result['pss_mb_end'] - baseline['pss_mb_end']:+.0f}) | "
            f"{result['items']:.0f} / {result['dropped']:.0f} |")


def median_result(results: list[dict[str, Any]], baselines: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians over the rounds; the ratio is the median of each round's ratio."""
    med = statistics.median
    return {
        "pages_per_s": med(r["pages_per_s"] for r in results),
        "ratio": med(r["pages_per_s"] / b["pages_per_s"] for r, b in zip(results, baselines)),
        **{key: med(r[key] for r in results) for key in ("cpu_ms_per_page", "cpu_ms_per_page_crawl", "rss_mb_end",
                                                          "pss_mb_end", "rss_mb_max", "pss_mb_max", "items", "dropped")},
        "lag_ms": {key: med(r["lag_ms"][key] for r in results) for key in ("p50", "p99", "max")},
        "rss_vs_no_filter": med(r["rss_mb_end"] - b["rss_mb_end"] for r, b in zip(results, baselines)),
        "pss_vs_no_filter": med(r["pss_mb_end"] - b["pss_mb_end"] for r, b in zip(results, baselines)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=PROJECT.parent / "shared" / "data")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pages", type=int, default=450, help="distinct real pages (each served under 4 URLs)")
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--feed", action="store_true", help="every variant exports its items to JSON Lines")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:  # one crawl, in this process
        args.out.write_text(json.dumps(crawl(args.one, args.url, args.work, args.feed)))
        return
    variants = ["no filter", *(v for v in args.variants if v != "no filter")]
    with tempfile.TemporaryDirectory(prefix="bench-crawl-") as temp:
        work = Path(temp)
        site = work / "site"
        site.mkdir()
        total = build_site(site, real_pages(args.data, args.pages))
        server = Nginx(site, work)
        print(f"site: {args.pages} distinct real pages under {total - 1} URLs and an index, served by nginx at "
              f"{server.url}; {args.rounds} rounds, variants interleaved\n", flush=True)
        rounds: list[dict[str, dict[str, Any]]] = []
        try:
            for n in range(args.rounds):
                order = variants if n % 2 == 0 else list(reversed(variants))
                results = {variant: run_variant(variant, server.url, work, args.feed) for variant in order}
                rounds.append(results)
                print(f"round {n + 1}\n\n{COLUMNS}")
                baseline = results["no filter"]
                for variant in variants:
                    print(row(variant, results[variant], results[variant]["pages_per_s"] / baseline["pages_per_s"],
                              baseline))
                print(flush=True)
        finally:
            server.stop()
    medians = {variant: median_result([r[variant] for r in rounds], [r["no filter"] for r in rounds])
               for variant in variants}
    print(f"medians of {args.rounds} rounds (x no filter: the median of the rounds' ratios)\n\n{COLUMNS}")
    for variant, m in medians.items():
        print(row(variant, m, m["ratio"], medians["no filter"]))
    command = "python -m bench.crawl " + " ".join(sys.argv[1:])
    written = RESULTS.with_name("crawl-feed.json") if args.feed else RESULTS
    written.write_text(json.dumps({"command": command, "cores": os.cpu_count(), "pages": total,
                                   "rounds": rounds, "medians": medians}, indent=1))
    print(f"\nwritten {written}; reproduce with: {command}")


if __name__ == "__main__":
    main()
