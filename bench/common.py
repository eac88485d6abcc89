"""What the benches share, in one module, so that no bench script imports another's.

Only the standard library is imported here at module level: a crawl's own process imports this module (the crawl
benches measure its memory), so lxml, jieba, the ``simhash`` package and the plugin are imported in the functions
that use them.

- running a bench and recording it: ``PROJECT``, ``RESULTS_FOLDER``, ``command_line``; another commit's plugin
  (``--against REF``): ``worktree``, ``plugin_root``, ``against_tree``, ``plugin_environment``, ``remove_tree``;
- the designs measured beside the filter (the anchors): ``visible_text``, ``language_of``, ``html_tree``,
  ``anchor_fingerprints``, ``jieba_topn``; the code the quality benches' caches are keyed on: ``CODE``,
  ``code_version``;
- the crawl benches' site and crawl: ``news_test_pages``, ``real_pages``, ``build_site``, ``Nginx``,
  ``debian_command``, ``VARIANTS``, ``MODES``, ``crawl`` (one crawl in this process, its figures),
  ``cpu_seconds``;
- ``lost``: a site's own pages of which no kept page is a near-duplicate.
"""

from __future__ import annotations

import functools
import gc
import gzip
import os
import re
import resource
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jieba.analyse
    import lxml.html

PROJECT = Path(__file__).resolve().parents[1]
#: The benches' figures, one file per bench: ``results/<purpose>/<script>.json`` (earlier runs: git's history).
RESULTS_FOLDER = PROJECT / "bench" / "results"


# -- running a bench --------------------------------------------------------------------------------


def command_line(module: str) -> str:
    """The command that is running ``module`` now, as one line a shell reads back the same (arguments with
    spaces, such as ``--variants "no filter"``, quoted)."""
    return shlex.join(["python", "-m", module, *sys.argv[1:]])


@functools.cache
def plugin_root(tree: Path) -> Path:
    """A folder that, first on ``sys.path`` (or ``PYTHONPATH``), makes ``scrapy_simhash_dedup`` the plugin of the
    checkout ``tree`` (its ``pipelines/``): a bench that compares another commit must not import this
    checkout's plugin, which the editable install finds by that name."""
    root = Path(tempfile.mkdtemp(prefix="plugin-"))
    (root / "scrapy_simhash_dedup").symlink_to(tree / "pipelines", target_is_directory=True)
    return root


def worktree(ref: str) -> Path:
    """A checkout of ``ref``, its compiled parts built (its other requirements must be installed:
    numba for commits before the compiled index)."""
    folder = Path(tempfile.mkdtemp(prefix="fingerprint-bench-")) / "tree"
    subprocess.run(["git", "-C", str(PROJECT), "worktree", "add", "--detach", "-q", str(folder), ref], check=True)
    if (folder / "setup.py").exists():
        subprocess.run(
            [sys.executable, "setup.py", "--quiet", "build_ext", "--inplace"],
            cwd=folder,
            check=True,
            capture_output=True,
        )
    return folder


#: The files a crawl of another commit's checkout takes from this one (``against_tree``): the crawl script and what
#: it imports.
CRAWL_FILES = ("__init__.py", "common.py", "speed/__init__.py", "speed/crawl.py")


def against_tree(ref: str) -> Path:
    """A built checkout of ``ref`` (a git worktree) holding this checkout's crawl script and the helpers it
    imports: the crawl these benches run, with that commit's plugin (``--against``)."""
    tree = worktree(ref)
    for name in CRAWL_FILES:
        (tree / "bench" / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(PROJECT / "bench" / name, tree / "bench" / name)
    return tree


def plugin_environment(tree: Path) -> Mapping[str, str]:
    """The environment of a crawl of the checkout ``tree``: another commit's plugin first on the path under the
    plugin's name (``plugin_root``), this one's as installed."""
    return os.environ if tree == PROJECT else {**os.environ, "PYTHONPATH": str(plugin_root(tree))}


def remove_tree(tree: Path) -> None:
    subprocess.run(["git", "-C", str(PROJECT), "worktree", "remove", "--force", str(tree)], check=False)


# -- the anchors: the designs measured beside the filter -------------------------------------------

#: The approaches the quality bench compares against, run on the same pages:
#:
#: - ``simhash_package``: the popular ``simhash`` package (1e0ng, 2.1.2) with its defaults (character 4-grams of
#:   the lower-cased text, md5), on the page's whole visible text.  Under numpy 2 it raises OverflowError on some
#:   texts: those pages get no fingerprint (counted as crashes).
#: - ``jieba_topn``: yanyiwu/simhash's recipe: jieba keywords (no one-character words, no stop words) weighted
#:   count x IDF, the top N = max(5, min(200, bytes / 120)), over the whole visible text.
#: - ``exact``: a hash of the whitespace-normalised visible text (distance 0 or 64).
ANCHORS = ("simhash_package", "jieba_topn", "exact")


@functools.cache
def _html_parser() -> lxml.html.HTMLParser:
    import lxml.html

    return lxml.html.HTMLParser(encoding="utf-8", remove_comments=True, remove_pis=True, huge_tree=True)


def html_tree(html: str | bytes) -> lxml.html.HtmlElement | None:
    """The page as an ``lxml.html`` tree (for editing pages), decoded as the filter decodes it;
    ``None`` where the filter finds no tree."""
    import lxml.html

    from scrapy_simhash_dedup.fingerprint.document import decode, load

    if load(html, 1 << 30).root is None:
        return None
    text = decode(html) if isinstance(html, bytes) else html
    return lxml.html.document_fromstring(text.encode("utf-8", "replace"), parser=_html_parser())


def visible_text(html: str | bytes) -> str:
    """The whole visible text (scripts and styles left out), as naive dedup tools take it."""
    import lxml.etree

    root = html_tree(html)
    if root is None:
        return ""
    lxml.etree.strip_elements(root, "script", "style", "noscript", "template", with_tail=False)
    return " ".join(root.itertext())


def language_of(text: str) -> str:
    """'zh' when most letters of ``text`` are Chinese, else 'en+' (English and other spaced languages)."""
    han = sum("\u4e00" <= ch <= "\u9fff" for ch in text)
    return "zh" if han > 0.3 * max(1, sum(ch.isalpha() for ch in text)) else "en+"


def anchor_fingerprints(text: str) -> dict[str, int | None]:
    import xxhash

    return {
        "simhash_package": _simhash_package(text),
        "jieba_topn": jieba_topn(text),
        "exact": xxhash.xxh3_64_intdigest(" ".join(text.split()).encode()) if text.strip() else None,
    }


def _simhash_package(text: str) -> int | None:
    from simhash import Simhash

    try:
        return Simhash(text).value
    except OverflowError:
        return None


@functools.cache
def _keywords() -> jieba.analyse.TFIDF:
    import jieba.analyse

    return jieba.analyse.TFIDF()


def jieba_topn(text: str) -> int | None:
    """The naive design's fingerprint of a page's visible text (``ANCHORS``' ``jieba_topn``)."""
    from scrapy_simhash_dedup.fingerprint.simhash import simhash

    top_n = max(5, min(200, len(text.encode("utf-8")) // 120))
    tags = _keywords().extract_tags(text, topK=top_n, withWeight=True)
    return simhash(dict(tags)) if tags else None


#: The code each kind of result depends on (paths under ``pipelines/`` and ``bench/``): the cache is keyed on its bytes.
CODE = {
    "ours": [
        "pipelines/fingerprint/" + name
        for name in (
            "simhash.py",
            "document.py",
            "content.py",
            "languages.py",
            "structure.py",
            "sketch.py",
            "declared.py",
            "fingerprinter.py",
            "treewalk.pyx",
            "readability.pxi",
            "textloops.pyx",
            "data",
        )
    ],
    "anchors": ["bench/common.py", "pipelines/fingerprint/document.py", "pipelines/fingerprint/simhash.py"],
}


def code_version(paths: list[str]) -> str:
    """A digest of the files ``paths`` (under the checkout; a folder: every file in it), for a cache's keys."""
    import xxhash

    import scrapy_simhash_dedup

    root = Path(scrapy_simhash_dedup.__file__).parents[1]
    digest = xxhash.xxh3_64()
    for name in paths:
        path = root / name
        for file in sorted(path.rglob("*")) if path.is_dir() else [path]:
            digest.update(file.read_bytes())
    return digest.hexdigest()


# -- the crawl benches' site ------------------------------------------------------------------------


def news_test_pages(data: Path) -> list[Path]:
    """The news pages of the extraction test sets, English then Chinese: newspaper, goose3, gne, gerapy."""
    return [
        *sorted((data / "newspaper-test-pages" / "tests" / "data" / "html").glob("*.html")),
        *sorted((data / "goose3-test-pages" / "tests" / "data" / "content").glob("*.html")),
        *sorted((data / "gne-chinese-news" / "tests").glob("*/*.html")),
        *sorted((data / "gerapy-chinese-samples" / "samples").glob("*/*.html")),
    ]


def real_pages(data: Path, count: int, folder: Path | None = None) -> list[bytes]:
    """``count`` real news pages: the extraction test sets first (English, then Chinese), then the
    article-extraction benchmark's pages; or, from ``folder``, its HTML files in name order (a documentation
    site: pages of another kind, each with its site's navigation, dozens of links a page)."""
    paths = (
        sorted(folder.rglob("*.html"))
        if folder is not None
        else [*news_test_pages(data), *sorted((data / "article-extraction-benchmark" / "html").glob("*.html.gz"))]
    )
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


# -- one crawl, in its own process: the crawl benches' variants ------------------------------------

ADDON = {"ADDONS": {"scrapy_simhash_dedup.SimhashDedupAddon": 0}}
VARIANTS: dict[str, dict[str, Any]] = {
    "no filter": {},
    "defaults": ADDON,
    "defaults, GC not frozen": {**ADDON, "SIMHASH_DEDUP_GC_FREEZE": False},
    "no filter, frozen GC": {"EXTENSIONS": {"bench.common.FrozenStartupObjects": 0}},
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
    "naive": {"ITEM_PIPELINES": {"bench.common.NaivePipeline": 300}},
    "pass-through pipeline": {"ITEM_PIPELINES": {"bench.common.PassThroughPipeline": 300}},
    "hand-over floor": {
        "SPIDER_MIDDLEWARES": {"bench.common.HandOverFloor": 900},
        "ITEM_PIPELINES": {"bench.common.HandOverFloorPipeline": 300},
    },
    "hold-response floor": {"DOWNLOADER_MIDDLEWARES": {"bench.common.HoldResponseFloor": 950}},
    "working hand-over floor": {
        "SPIDER_MIDDLEWARES": {"bench.common.WorkingHandOverFloor": 900},
        "ITEM_PIPELINES": {"bench.common.HandOverFloorPipeline": 300},
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
    its lag (``bench.speed.crawl_instructions``: under valgrind, those wake-ups would be counted per second, not
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
        pool = fingerprint_pool()
        workers = [pid for pid, _ in pool.workers()] if pool is not None else []
        cpu[when] = {"crawl": cpu_seconds(), **{pid: cpu_seconds(pid) for pid in workers}}
        collected[when] = dict(collector.seconds)

    def fingerprint_pool() -> Any:
        """The filter's pool of worker processes: its page filter's (since #61), or its pipeline's (before: the
        runs ``--against`` an earlier commit)."""
        for component in getattr(crawler.engine.scraper.itemproc, "middlewares", ()):
            owner = getattr(component, "filter", component)
            if hasattr(owner, "fingerprints"):
                return owner.fingerprints
        return None

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


# -- the trap benches ------------------------------------------------------------------------------


def lost(own_pages: list[tuple[str, str]], kept: list[tuple[str, str]]) -> list[str]:
    """The site's own pages of which no kept page is a near-duplicate (the pipeline's decision)."""
    from scrapy_simhash_dedup.fingerprint.fingerprinter import Fingerprinter, comparable
    from scrapy_simhash_dedup.matching.policy import Policy, dropped
    from scrapy_simhash_dedup.stores.memory import MemoryStore

    fingerprinter = Fingerprinter()
    store = MemoryStore(Policy())
    for url, html in kept:
        fingerprint = fingerprinter.fingerprint(html, url)
        if comparable(fingerprint):
            store.check_and_add(url, fingerprint)
    kept_urls = {url for url, _ in kept}
    missing = []
    for url, html in own_pages:
        fingerprint = fingerprinter.fingerprint(html, url)
        covered = dropped(store.check_and_add(url, fingerprint)) if comparable(fingerprint) else url in kept_urls
        if not covered:
            missing.append(url)
    return missing


def write_warc(path: Path, pages: Iterable[tuple[str, bytes, str]]) -> None:
    """A WARC.gz of HTTP 200 responses (URL, body, Content-Type), one gzip member per record as crawlers
    write them: for tests and benchmarks of ``batch.sources.read_warc``."""
    from fastwarc.stream_io import GzipWriter
    from fastwarc.warc import WarcRecord, WarcRecordType

    with GzipWriter(str(path)) as out:
        for url, body, content_type in pages:
            record = WarcRecord()
            record.init_headers(WarcRecordType.response)
            record.headers["WARC-Target-URI"] = url
            record.headers["Content-Type"] = "application/http; msgtype=response"
            record.set_bytes_content(
                f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
            record.write(out)
            out.finish()


def declared_in_html(root: Any) -> str | None:
    """The ``href`` of the page's first ``<link rel="canonical">`` in its ``<head>`` (where browsers and
    search engines read it), against the page's ``<base href>`` if it has one; relative otherwise.  The
    fingerprint reads it in its own walk of the tree (``declared_link``)."""
    from scrapy_simhash_dedup.fingerprint.content import PageText
    from scrapy_simhash_dedup.fingerprint.declared import declared_link

    return declared_link(PageText.read(root).canonical_link)
