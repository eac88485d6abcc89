"""Fingerprinting off the reactor thread, on every core.

The reactor only hands pages out and applies decisions.  Each worker process
is driven by a thread of its own, which sends it one page through a pipe and
waits for the fingerprint (the wait releases the GIL): a page that kills its
worker is known, it fails with :class:`WorkerCrashed` (the pipeline keeps it and
counts it in ``simhash_dedup/errors``), and the next page starts a new worker.
Pages wait in the thread pool's queue without blocking the reactor; Scrapy's
limits on items in progress (``CONCURRENT_ITEMS``, the scraper's active size)
bound that queue.  A worker is a fresh interpreter running
``python -m pipelines.worker_process``: it imports the fingerprint's modules
only, never the crawler's ``__main__`` nor a copy of its memory.

With ``processes`` of 0 or 1 there is no worker and no thread: pages are
fingerprinted where they arrive, on the reactor thread, as plain function
calls (small crawls, debugging, tests that step a coroutine).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from multiprocessing.connection import Connection

import xxhash
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred
from twisted.internet.threads import deferToThreadPool
from twisted.python.threadpool import ThreadPool

from .fingerprint import Fingerprint, Fingerprinter
from .worker_process import FingerprinterOptions, FingerprintFailed

#: Seconds a worker gets to finish when the pool closes, before it is killed.
STOP_TIMEOUT = 5.0
#: Distinct HTML documents whose fingerprints are remembered (~300 bytes each).
RECENT_PAGES = 10_000


class WorkerCrashed(RuntimeError):
    """The worker process died while fingerprinting this page."""


class FingerprintWorker:
    """One worker process and the crawler's end of its pipe; used by one thread at a time."""

    def __init__(self, options: FingerprinterOptions) -> None:
        mine, theirs = socket.socketpair()
        path = os.pathsep.join(entry for entry in sys.path if entry)  # where this process found pipelines
        self.process = subprocess.Popen(
            [sys.executable, "-m", "pipelines.worker_process", str(theirs.fileno()), json.dumps(asdict(options))],
            pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": path},
        )
        theirs.close()
        self.connection = Connection(mine.detach())
        self.url: str | None = None  # the page it is fingerprinting

    def is_alive(self) -> bool:
        return self.process.poll() is None

    def fingerprint(self, html: str | bytes, url: str) -> Fingerprint:
        self.url = url
        try:
            self.connection.send((html, url))
            result = self.connection.recv()
        except (EOFError, OSError) as error:
            self.process.wait(STOP_TIMEOUT)
            raise WorkerCrashed(f"the fingerprint worker died (exit code {self.process.returncode})") from error
        finally:
            self.url = None
        if isinstance(result, FingerprintFailed):
            raise result
        return result

    def stop(self) -> None:
        try:
            self.connection.send(None)
        except OSError:
            pass
        try:
            self.process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.connection.close()


class FingerprintPool:
    """Fingerprints pages in ``processes`` worker processes (in the calling thread when ``processes`` <= 1).

    Threads and processes start with the first page.
    """

    def __init__(self, fingerprinter: Fingerprinter, processes: int) -> None:
        self.fingerprinter = fingerprinter
        self.processes = processes
        self._options = FingerprinterOptions.of(fingerprinter)
        self._threads: ThreadPool | None = None
        self._local = threading.local()  # each thread's worker
        self._workers: list[FingerprintWorker] = []
        self._lock = threading.Lock()

    async def fingerprint(self, html: str | bytes, url: str) -> Fingerprint:
        if self.processes <= 1:
            return self.fingerprinter.fingerprint(html, url)
        from twisted.internet import reactor

        if self._threads is None:
            self._threads = ThreadPool(minthreads=1, maxthreads=self.processes, name="simhash_dedup_fingerprint")
            self._threads.start()
            reactor.addSystemEventTrigger("during", "shutdown", self.close)  # a crawl that ends without closing
        return await maybe_deferred_to_future(deferToThreadPool(reactor, self._threads, self._run, html, url))

    def workers(self) -> list[tuple[int, str | None]]:
        """The live worker processes: their pid, and the URL of the page each is fingerprinting."""
        with self._lock:
            return [(worker.process.pid, worker.url) for worker in self._workers if worker.is_alive()]

    def close(self) -> None:
        """Wait for the pages in progress, then stop every worker (again: nothing happens)."""
        threads, self._threads = self._threads, None
        if threads is not None:
            threads.stop()
        with self._lock:
            workers, self._workers = self._workers, []
        for worker in workers:
            worker.stop()

    def _run(self, html: str | bytes, url: str) -> Fingerprint:  # in a pool thread
        worker = getattr(self._local, "worker", None)
        if worker is not None and not worker.is_alive():  # died between two pages: none lost
            self._forget(worker)
            worker = None
        if worker is None:
            worker = self._local.worker = FingerprintWorker(self._options)
            with self._lock:
                self._workers.append(worker)
        try:
            return worker.fingerprint(html, url)
        except WorkerCrashed:
            self._forget(worker)  # the next page starts a new one
            raise

    def _forget(self, worker: FingerprintWorker) -> None:
        self._local.worker = None
        with self._lock:
            self._workers.remove(worker)
        worker.connection.close()


class RecentPages:
    """Byte-identical pages are fingerprinted once: the same page under another URL (a session id
    or tracking parameter in the link, a mirror, a trap) takes the fingerprint of the last 10,000
    distinct pages (by a 128-bit hash of the HTML), or waits for it when that page is being
    fingerprinted.  The fingerprint depends on the HTML only: reusing it changes no decision."""

    def __init__(self, size: int = RECENT_PAGES) -> None:
        self.size = size
        self._fingerprints: OrderedDict[bytes, Fingerprint] = OrderedDict()
        self._waiting: dict[bytes, list[Deferred[Fingerprint]]] = {}  # pages being fingerprinted: their copies

    async def fingerprint(
        self, html: str | bytes, url: str, compute: Callable[[str | bytes, str], Awaitable[Fingerprint]]
    ) -> tuple[Fingerprint, bool]:
        """The page's fingerprint (by ``compute`` unless known), and whether it was known."""
        key = self.key(html)
        if (known := self._fingerprints.get(key)) is not None:
            self._fingerprints.move_to_end(key)
            return known, True
        if (copies := self._waiting.get(key)) is not None:
            copies.append(Deferred())
            return await maybe_deferred_to_future(copies[-1]), True
        self._waiting[key] = []
        try:
            fingerprint = await compute(html, url)
        except Exception as error:  # its copies fail the same way (kept, counted)
            for copy in self._waiting.pop(key):
                copy.errback(error)
            raise
        self._fingerprints[key] = fingerprint
        if len(self._fingerprints) > self.size:
            self._fingerprints.popitem(last=False)
        for copy in self._waiting.pop(key):
            copy.callback(fingerprint)
        return fingerprint, False

    @staticmethod
    def key(html: str | bytes) -> bytes:
        if isinstance(html, bytes):
            return b"b" + xxhash.xxh3_128_digest(html)
        return b"s" + xxhash.xxh3_128_digest(html.encode("utf-8", "surrogatepass"))


class ArrivalOrder:
    """Items decide in the order they reached the pipeline, whatever order their fingerprints come back in.

    A page of a cluster is kept because it came first, as without workers:
    a large page fingerprinted beside a small later copy of it is still the
    one kept.  Each item takes a turn on arrival, waits for it once its
    fingerprint is ready, and ends it after its check-and-add has been made
    (or has been handed to the store's queue).  A turn ended without waiting
    (the item failed) lets the next one through.
    """

    def __init__(self) -> None:
        self._taken = 0
        self._next = 0  # the first turn not ended: every turn before it has decided
        self._ended: set[int] = set()
        self._waiting: dict[int, Deferred[None]] = {}

    def take(self) -> int:
        self._taken += 1
        return self._taken - 1

    async def wait(self, turn: int) -> None:
        """Return once every earlier turn has ended (at once, without awaiting, when they have)."""
        if turn != self._next:
            self._waiting[turn] = Deferred()
            await maybe_deferred_to_future(self._waiting[turn])

    def end(self, turn: int) -> None:
        """End ``turn`` (again: nothing happens)."""
        if turn >= self._next:
            self._ended.add(turn)
        while self._next in self._ended:
            self._ended.remove(self._next)
            self._next += 1
        if self._next in self._waiting:
            self._waiting.pop(self._next).callback(None)
