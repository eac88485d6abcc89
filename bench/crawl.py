"""A real crawl with and without the filter: pages/s, CPU, reactor lag and memory, side by side.

    python -m bench.crawl [--rounds 3] [--pages 450] [--modes polite saturated] [--variants ...] [--against REF] [--feed]
                          [--results FILE]

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
- ``defaults, GC frozen``: ``SIMHASH_DEDUP_GC_FREEZE = True`` (the objects that exist when the spider opens are
  left out of Python's full garbage collections while it runs; opt-in since 0.2, the default before);
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
freezes its start-up objects itself); writes ``bench/results/crawl.json`` (or ``--results``).

``--against REF``: the filter's variants also run with the plugin of another
commit (a temporary git worktree, this script copied into it), as
``<variant> at REF``, in the same rounds.

``--feed``: every variant also exports its items (URL and HTML) to a JSON
Lines file, as a crawl that stores its pages does (``FEEDS``); the figures go
to ``bench/results/crawl-feed.json``.
"""

from __future__ import annotations

import argparse
import gc
import gzip
import json
import os
import random
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench import command_line, plugin_root

PROJECT = Path(__file__).resolve().parents[1]
RESULTS = PROJECT / "bench" / "results" / "crawl.json"

ADDON = {"ADDONS": {"scrapy_simhash_dedup.SimhashDedupAddon": 0}}
VARIANTS: dict[str, dict[str, Any]] = {
    "no filter": {},
    "defaults": ADDON,
    "defaults, GC frozen": {**ADDON, "SIMHASH_DEDUP_GC_FREEZE": True},
    "no filter, frozen GC": {"EXTENSIONS": {"bench.crawl.FrozenStartupObjects": 0}},
    "memory backend": {**ADDON, "SIMHASH_DEDUP_BACKEND": "memory"},
    "no review texts": {**ADDON, "SIMHASH_DEDUP_REVIEW_TEXTS": 0},
    "no decision log": {**ADDON, "SIMHASH_DEDUP_LOG_SIZE": 0, "SIMHASH_DEDUP_REVIEW_TEXTS": 0},
    "check only": {
        **ADDON,
        "SIMHASH_DEDUP_LOG_SIZE": 0,
        "SIMHASH_DEDUP_REVIEW_TEXTS": 0,
        "SIMHASH_DEDUP_SKIP_LINKS": False,
        "SIMHASH_DEDUP_URL_RULES": False,
    },
    "on the reactor": {**ADDON, "SIMHASH_DEDUP_WORKERS": 0},
    "2 workers": {**ADDON, "SIMHASH_DEDUP_WORKERS": 2},
    "naive": {"ITEM_PIPELINES": {"bench.crawl.NaivePipeline": 300}},
    "pass-through pipeline": {"ITEM_PIPELINES": {"bench.crawl.PassThroughPipeline": 300}},
    "hand-over floor": {
        "SPIDER_MIDDLEWARES": {"bench.crawl.HandOverFloor": 900},
        "ITEM_PIPELINES": {"bench.crawl.HandOverFloorPipeline": 300},
    },
    "hold-response floor": {"DOWNLOADER_MIDDLEWARES": {"bench.crawl.HoldResponseFloor": 950}},
    "working hand-over floor": {
        "SPIDER_MIDDLEWARES": {"bench.crawl.WorkingHandOverFloor": 900},
        "ITEM_PIPELINES": {"bench.crawl.HandOverFloorPipeline": 300},
    },
    # Scrapy's scraper starts CONCURRENT_ITEMS tasks per response (default 100), with or without the filter
    "no filter, 16 items": {"CONCURRENT_ITEMS": 16},
    "defaults, 16 items": {**ADDON, "CONCURRENT_ITEMS": 16},
}
MODES: dict[str, dict[str, Any]] = {
    "polite": {
        "CONCURRENT_REQUESTS": 1,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
        "DOWNLOAD_DELAY": 0.02,
        "DOWNLOAD_DELAY_JITTER": 0,
    },
    "saturated": {"CONCURRENT_REQUESTS": 32, "CONCURRENT_REQUESTS_PER_DOMAIN": 32, "DOWNLOAD_DELAY": 0},
}
#: Not a crawl: ``Fingerprinter.fingerprint`` called in one process on the pages the workers fingerprint.
IN_PROCESS = "fingerprint in one process"


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
    ad = (
        b'<div class="ad-slot"><a href="https://ads.example/c?id=' + str(n).encode() + b'">Sponsored: the offer of '
        b"the week, only today, click here</a></div>"
    )
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


def debian_command(command: str, package: str) -> str:
    """Where ``command`` is (on the PATH, or in the system folders a user's PATH may lack), installed from
    Debian's ``package`` first when it is missing; exits, saying so, when it cannot be."""
    path = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    if not shutil.which(command, path=path):
        sudo = [] if os.geteuid() == 0 else ["sudo"]
        subprocess.run([*sudo, "apt-get", "update", "-qq"], check=False)
        subprocess.run(
            [*sudo, "apt-get", "install", "-y", "-qq", package],
            env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
            check=False,
        )
    return shutil.which(command, path=path) or sys.exit(f"{command} is needed (Debian's package {package})")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Nginx:
    """nginx serving ``root`` on 127.0.0.1, started and stopped here.  A SIGTERM (a run stopped by hand, a
    timeout) then raises ``SystemExit``, so that the ``finally`` that stops it runs: a killed Python process
    would leave nginx serving."""

    def __init__(self, root: Path, work: Path) -> None:
        signal.signal(signal.SIGTERM, lambda *_: sys.exit("stopped by SIGTERM"))
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
        self.process = subprocess.Popen(
            [debian_command("nginx", "nginx-light"), "-c", str(config), "-p", str(temp)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
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


class FrozenStartupObjects:
    """``no filter, frozen GC``: the objects that exist when the spider opens are frozen out of full garbage
    collections by the filter's own ``StartupObjects``, and thawed when it closes."""

    @classmethod
    def from_crawler(cls, crawler: Any) -> FrozenStartupObjects:
        from scrapy import signals

        extension = cls()
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def spider_opened(self) -> None:
        from scrapy_simhash_dedup.crawl.gcfreeze import StartupObjects

        StartupObjects.freeze()

    def spider_closed(self) -> None:
        from scrapy_simhash_dedup.crawl.gcfreeze import StartupObjects

        StartupObjects.thaw()


class PassThroughPipeline:
    """``pass-through pipeline``: returns every item as it is."""

    async def process_item(self, item: Any) -> Any:
        return item


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


#: How long the floor's worker takes to answer: about a fingerprint's time on this machine, spent asleep.
FLOOR_ANSWER_SECONDS = 0.003
#: The floor's worker: its own few lines, not ``worker_process.read_frame``, since importing the package would
#: load the fingerprint's modules into a process whose memory the bench counts as the crawl's.  Its second
#: argument, ``fingerprint``, makes it fingerprint each page instead of sleeping (``working hand-over floor``).
_FLOOR_WORKER = f"""
import os, struct, sys, time
fd, working = int(sys.argv[1]), sys.argv[2] == "fingerprint"
if working:
    from scrapy_simhash_dedup.fingerprint.fingerprinter import Fingerprinter
    fingerprinter = Fingerprinter(keep_text=True)
def read(size):
    data = bytearray()
    while len(data) < size:
        chunk = os.read(fd, size - len(data))
        if not chunk:
            raise SystemExit(0)
        data += chunk
    return data
while True:
    (size,) = struct.unpack("!i", read(4))
    page = read(size)
    if working:
        fingerprinter.fingerprint(bytes(page))
    else:
        time.sleep({FLOOR_ANSWER_SECONDS})
    os.write(fd, bytes(16))
"""


class FloorWorker:
    """The floor variants' worker process, one per crawl: a page's body goes out over a socket (the filter's
    own ``SocketWriter``), a 16-byte answer comes back ``FLOOR_ANSWER_SECONDS`` later (``working``: once the
    page is fingerprinted)."""

    _the: FloorWorker | None = None

    @classmethod
    def the(cls, working: bool = False) -> FloorWorker:
        if cls._the is None:
            cls._the = cls(working)
        return cls._the

    def __init__(self, working: bool) -> None:
        from twisted.internet import reactor
        from twisted.internet.protocol import Factory, Protocol

        from scrapy_simhash_dedup.workers.connection import SocketWriter

        mine, theirs = socket.socketpair()
        self.process = subprocess.Popen(
            [sys.executable, "-c", _FLOOR_WORKER, str(theirs.fileno()), "fingerprint" if working else "sleep"],
            cwd=PROJECT,
            pass_fds=[theirs.fileno()],
        )
        theirs.close()
        mine.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
        mine.setblocking(False)
        self.socket = mine  # held: its file descriptor is the reactor's connection to the worker
        self.writer, self.waiting, received = SocketWriter(mine), deque(), bytearray()
        waiting = self.waiting

        class Answers(Protocol):
            def dataReceived(self, data: bytes) -> None:
                received.extend(data)
                while len(received) >= 16:
                    del received[:16]
                    waiting.popleft().callback(None)

        reactor.adoptStreamConnection(mine.fileno(), socket.AF_UNIX, Factory.forProtocol(Answers))

    def answer(self, body: bytes) -> Any:
        """A Deferred that fires when the worker has answered for ``body``."""
        from twisted.internet.defer import Deferred

        self.waiting.append(Deferred())
        self.writer.write([len(body).to_bytes(4, "big"), body])
        return self.waiting[-1]


#: The floor's items waiting for their page's answer: id(item) -> (item, the answer).
_FLOOR_ITEMS: dict[int, tuple[Any, Any]] = {}


class HandOverFloor:
    """``hand-over floor``, the filter's own shape without its work: a spider middleware hands the response's
    body to the worker at its first item, and an item pipeline (``HandOverFloorPipeline``) makes every item
    of the response await the answer."""

    working = False  # the worker sleeps instead of fingerprinting

    async def process_spider_output(self, response: Any, result: Any) -> Any:
        answer = None
        async for output in result:
            if isinstance(output, dict):
                if answer is None:  # the response's first item
                    answer = FloorWorker.the(self.working).answer(response.body)
                _FLOOR_ITEMS[id(output)] = (output, answer)
            yield output


class WorkingHandOverFloor(HandOverFloor):
    """``working hand-over floor``: ``hand-over floor`` whose worker fingerprints each page before it answers."""

    working = True


class HandOverFloorPipeline:
    """``hand-over floor``'s item pipeline: an item of a page handed out waits for the worker's answer."""

    async def process_item(self, item: Any) -> Any:
        from scrapy.utils.defer import maybe_deferred_to_future

        held, answer = _FLOOR_ITEMS.pop(id(item), (None, None))
        if held is item:
            await maybe_deferred_to_future(answer)
        return item


class HoldResponseFloor:
    """``hold-response floor``: a downloader middleware hands each response's body to the worker and holds the
    response until the answer comes back; the spider and the items then run without waiting."""

    async def process_response(self, request: Any, response: Any) -> Any:
        from scrapy.utils.defer import maybe_deferred_to_future

        await maybe_deferred_to_future(FloorWorker.the().answer(response.body))
        return response


def memory_mb(pid: int | str = "self") -> tuple[float, float]:
    """Resident memory of a process, and its proportional share (PSS: pages shared with other
    processes, such as libraries, divided among them); (0, 0) once it has ended."""
    try:
        rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0.0, 0.0
    return tuple(int(rollup.split(f"\n{name}:")[1].split()[0]) / 1024 for name in ("Rss", "Pss"))


def cpu_seconds(pid: int | str = "self") -> float:
    """User + system CPU a process has used so far (every thread); 0 once it has ended."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class CollectorTime:
    """CPU this process's cyclic garbage collector spends, in all its collections and in its full ones (each
    collection timed on the thread's CPU clock, from ``gc.callbacks``)."""

    def __init__(self) -> None:
        self.seconds = {"all": 0.0, "full": 0.0}
        self._started = 0.0
        gc.callbacks.append(self._collecting)

    def _collecting(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.thread_time()
            return
        spent = time.thread_time() - self._started
        self.seconds["all"] += spent
        if info["generation"] == 2:  # the oldest of Python's three generations: a full collection
            self.seconds["full"] += spent


def crawl(
    variant: str, mode: str, url: str, work: Path, feed: bool = False, lag_probe: bool = True, follow_all: bool = False
) -> dict[str, Any]:
    """Crawl the site once with ``variant``'s settings in ``mode`` (and a JSON Lines feed of its items if
    ``feed``); return its figures.  Without ``lag_probe`` the reactor is not woken every 10 ms to measure
    its lag (``bench.crawl_instructions``: under valgrind, those wake-ups would be counted per second, not
    per page).  With ``follow_all`` every page's links on the site's host are followed too, as a
    ``CrawlSpider`` does (most lead nowhere: the pages' own relative links)."""
    import scrapy
    from scrapy import signals
    from scrapy.crawler import CrawlerProcess
    from scrapy.linkextractors import LinkExtractor

    site_links = LinkExtractor(allow=[re.escape(url)])  # the pages follow_all follows

    class SiteSpider(scrapy.Spider):
        name = "bench_site"
        start_urls = [url]

        def parse(self, response):
            for href in response.css("a::attr(href)").getall():
                yield response.follow(href, self.parse_page)

        def parse_page(self, response):
            yield {"url": response.url, "html": response.text}
            if follow_all:
                for link in site_links.extract_links(response):
                    yield response.follow(link, self.parse_page)

    settings = {
        "ROBOTSTXT_OBEY": False,
        "LOG_LEVEL": "WARNING",
        "TELNETCONSOLE_ENABLED": False,
        "AUTOTHROTTLE_ENABLED": False,
        "SIMHASH_DEDUP_PATH": str(work / f"seen-{os.getpid()}.sqlite"),
        **MODES[mode],
        **VARIANTS[variant],
    }
    if feed:
        settings["FEEDS"] = {str(work / f"items-{os.getpid()}.jsonl"): {"format": "jsonlines"}}
    process = CrawlerProcess(settings)
    crawler = process.create_crawler(SiteSpider)
    lags: list[float] = []
    clock: dict[str, float] = {}
    cpu: dict[str, dict[int | str, float]] = {}  # at the engine's start and the spider's idle: per process
    collector = CollectorTime()
    collected: dict[str, dict[str, float]] = {}  # the collector's CPU so far, at the same two moments

    def probe(due: float) -> None:
        from twisted.internet import reactor  # the one Scrapy installed

        now = time.monotonic()
        lags.append(now - due)
        if "closed" not in clock:
            reactor.callLater(0.01, probe, now + 0.01)

    def sample_cpu(when: str) -> None:
        pool = getattr(dedup_pipeline(), "fingerprints", None)
        workers = [pid for pid, _ in pool.workers()] if pool is not None else []
        cpu[when] = {"crawl": cpu_seconds(), **{pid: cpu_seconds(pid) for pid in workers}}
        collected[when] = dict(collector.seconds)

    def dedup_pipeline() -> Any:
        return next(
            (m for m in getattr(crawler.engine.scraper.itemproc, "middlewares", ()) if hasattr(m, "fingerprints")), None
        )

    def started() -> None:
        from twisted.internet import reactor

        clock["start"] = time.monotonic()
        if lag_probe:
            reactor.callLater(0.01, probe, clock["start"] + 0.01)
        sample_cpu("start")

    def idle(**_: Any) -> None:  # the last time is the end of the crawl, before the workers stop
        clock["end"] = time.monotonic()
        sample_cpu("end")

    def closed(**_: Any) -> None:
        clock["closed"] = time.monotonic()

    crawler.signals.connect(started, signal=signals.engine_started)
    crawler.signals.connect(idle, signal=signals.spider_idle)
    crawler.signals.connect(closed, signal=signals.spider_closed)
    process.crawl(crawler)
    process.start()
    own, children = (resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    total_cpu = own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
    stats = crawler.stats.get_stats()
    pages = stats.get("response_received_count", 0)
    crawl_cpu = cpu["end"]["crawl"] - cpu["start"]["crawl"]
    worker_cpu = sum(cpu["end"][pid] - cpu["start"].get(pid, 0.0) for pid in cpu["end"] if pid != "crawl")
    fingerprinted = stats.get("simhash_dedup/checked", 0) - stats.get("simhash_dedup/same_html", 0)
    ordered = sorted(lags)
    return {
        "variant": variant,
        "mode": mode,
        "pages": pages,
        "items": stats.get("item_scraped_count", 0),
        "dropped": stats.get("item_dropped_count", 0),
        "seconds": clock["end"] - clock["start"],
        "pages_per_s": pages / (clock["end"] - clock["start"]),
        "cpu_ms_per_page": 1000 * (crawl_cpu + worker_cpu) / max(1, pages),
        "cpu_ms_per_page_crawl": 1000 * crawl_cpu / max(1, pages),
        "cpu_ms_per_page_workers": 1000 * worker_cpu / max(1, pages),
        "fingerprinted": fingerprinted,
        "worker_ms_per_fingerprinted": 1000 * worker_cpu / fingerprinted if fingerprinted and worker_cpu else None,
        "startup_cpu_s": total_cpu - crawl_cpu - worker_cpu,
        **{
            f"{kind}_gc_ms_per_page": 1000 * (collected["end"][kind] - collected["start"][kind]) / max(1, pages)
            for kind in ("all", "full")
        },
        "lag_ms": {
            "p50": 1000 * statistics.median(ordered),
            "p99": 1000 * ordered[int(0.99 * (len(ordered) - 1))],
            "max": 1000 * ordered[-1],
        }
        if ordered
        else None,
        "filter_stats": {key: value for key, value in stats.items() if key.startswith("simhash_dedup/")},
    }


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
        # another commit's plugin under the plugin's name, for the crawl and its workers (bench.plugin_root)
        process = subprocess.Popen(
            [sys.executable, "-m", "bench.crawl", *command, "--work", str(work), "--out", str(out)],
            cwd=tree,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env=plugin_environment(tree),
        )
        peak = [0.0, 0.0]
        while process.poll() is None:
            pids = [process.pid, *children(process.pid)]
            sample = [memory_mb(pid) for pid in pids]
            peak = [max(peak[which], sum(s[which] for s in sample)) for which in (0, 1)]
            time.sleep(0.2)
    if process.returncode:
        raise RuntimeError(f"{variant} failed:\n{errors.read_text()[-3000:]}")
    return {**json.loads(out.read_text()), "rss_mb_max": peak[0], "pss_mb_max": peak[1]}


def against_tree(ref: str) -> Path:
    """A built checkout of ``ref`` (a git worktree) holding this checkout's crawl script and the helpers it
    imports: the crawl these benches run, with that commit's plugin (``--against``)."""
    from bench.fingerprint import worktree

    tree = worktree(ref)
    for name in ("crawl.py", "__init__.py"):
        shutil.copyfile(Path(__file__).parent / name, tree / "bench" / name)
    return tree


def plugin_environment(tree: Path) -> Mapping[str, str]:
    """The environment of a crawl of the checkout ``tree``: another commit's plugin first on the path under the
    plugin's name (``bench.plugin_root``), this one's as installed."""
    return os.environ if tree == PROJECT else {**os.environ, "PYTHONPATH": str(plugin_root(tree))}


def remove_tree(tree: Path) -> None:
    subprocess.run(["git", "-C", str(PROJECT), "worktree", "remove", "--force", str(tree)], check=False)


def children(pid: int) -> list[int]:
    """The processes ``pid`` started (a crawl's fingerprint workers)."""
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def columns(baseline: str) -> str:
    return (
        f"| variant | pages/s | x {baseline} | CPU ms/page: crawl process + workers (vs {baseline}) "
        "| of which the crawl process's garbage collector: all (full) | workers: ms per fingerprinted page "
        "(x in one process) | start-up CPU s | reactor lag p50 / p99 / max ms "
        f"| PSS MB peak (vs {baseline}) | RSS MB peak | kept / dropped |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|"
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
    }


def row(name: str, result: dict[str, Any]) -> str:
    lag = result["lag_ms"]
    per_fingerprint = result.get("worker_ms_per_fingerprinted")
    workers = f"{per_fingerprint:.2f} ({result['workers_vs_in_process']:.2f}x)" if per_fingerprint else "-"
    return (
        f"| {name} | {result['pages_per_s']:.1f} | {result['ratio']:.2f} | {result['cpu_ms_per_page_crawl']:.2f} + "
        f"{result['cpu_ms_per_page_workers']:.2f} = {result['cpu_ms_per_page']:.2f} "
        f"({result['crawl_ms_added']:+.2f} + {result['cpu_ms_per_page_workers']:.2f}) | "
        f"{result['all_gc_ms_per_page']:.2f} ({result['full_gc_ms_per_page']:.2f}) | {workers} | "
        f"{result['startup_cpu_s']:.2f} | {lag['p50']:.1f} / {lag['p99']:.1f} / {lag['max']:.0f} | "
        f"{result['pss_mb_max']:.0f} ({result['pss_mb_added']:+.0f}) | "
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
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    parser.add_argument("--variants", nargs="+", default=["no filter", "defaults"], choices=list(VARIANTS))
    parser.add_argument("--feed", action="store_true", help="every variant exports its items to JSON Lines")
    parser.add_argument(
        "--results",
        type=Path,
        help="where the figures go (default: bench/results/crawl.json, crawl-feed.json with --feed)",
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
        total_pages = build_site(site, real_pages(args.data, args.pages))
        server = Nginx(site, work)
        print(
            f"site: {args.pages} distinct real pages under {total_pages - 1} URLs and an index, served by nginx at "
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
    command = command_line("bench.crawl")
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
