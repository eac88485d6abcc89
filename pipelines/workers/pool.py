"""Fingerprinting off the reactor thread, on every core.

The reactor only hands pages out and applies decisions.  Each worker process holds one end of a socket, the
reactor the other.  A page goes out as two messages (``multiprocessing.connection``'s framing), written at once
and without a copy (``SocketWriter``); its fingerprint comes back as another, read when it arrives.  No thread,
no wait.

A worker holds at most ``PAGES_PER_WORKER`` pages.  The others wait in a queue for the first worker with room,
without blocking the reactor; Scrapy's limits on items in progress (``CONCURRENT_ITEMS``, the scraper's active
size) bound that queue.

A page that kills its worker fails with :class:`WorkerCrashed` (the pipeline keeps it and counts it in
``simhash_dedup/errors``); the pages it had not started go to another worker, and the next page starts a new
worker.  A worker that takes more than the page timeout over one page (stopped, or stuck: the bounds on a page's
work keep any page under ~1 s) is killed and replaced; the page fails with :class:`WorkerTimedOut` (kept,
counted).  A worker is a fresh interpreter (``start``) that imports the fingerprint's modules only, never the
crawler's ``__main__`` nor a copy of its memory.

With ``processes`` of 0 there is no worker: pages are fingerprinted where they arrive, on the reactor thread
(small crawls, debugging, tests that step a coroutine).

The fingerprints of the last distinct HTML documents a crawl met are kept (``RecentPages``): a page fetched
twice is fingerprinted once.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict, deque
from collections.abc import Callable

import xxhash
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred, maybeDeferred, succeed
from twisted.internet.task import LoopingCall
from twisted.python.failure import Failure

from ..fingerprint.document import too_large
from ..fingerprint.fingerprinter import Fingerprint, Fingerprinter
from ..fingerprint.textloops import text_digest
from .connection import FingerprintWorker, Page
from .process import FingerprinterOptions
from .start import START_TIMEOUT, WorkerCrashed, WorkersCannotStart, WorkerTimedOut

logger = logging.getLogger(__name__)

#: Pages a worker holds at once: the one it fingerprints, and the next ones in its socket.  A busy reactor
#: reads answers and hands out pages some milliseconds late: with 2 pages a worker, workers of a saturated
#: crawl idled half the time (bench/crawl.py: 8 gave ~30 % more pages a second than 2, 4 ~15 %).
PAGES_PER_WORKER = 8

#: Pages per worker that may wait for their fingerprints (held, or queued) before downloads wait for room:
#: a killed crawl then loses few pages already downloaded (``SimhashDedupDownloaderMiddleware``).
WAITING_PER_WORKER = PAGES_PER_WORKER

#: Seconds a worker may take over one page before it is killed and replaced (``SIMHASH_DEDUP_WORKER_TIMEOUT``):
#: far above any page's work (the bounds keep a page under ~1 s of CPU; ``bench/hostile.py``), so that only a
#: stopped or stuck worker meets it, even on a host whose cores are shared.
DEFAULT_PAGE_TIMEOUT = 30.0


class FingerprintPool:
    """Fingerprints pages in ``processes`` worker processes (in the calling thread when ``processes`` is 0).

    Workers start with the spider (``start``).  Each holds up to ``PAGES_PER_WORKER`` pages: the next ones
    wait in its socket, so a worker never idles while the reactor is busy elsewhere.  If a worker cannot
    start (its package or a library fails to import), that is logged once and every page is fingerprinted
    in this process from then on.
    """

    def __init__(
        self, fingerprinter: Fingerprinter, processes: int, page_timeout: float = DEFAULT_PAGE_TIMEOUT
    ) -> None:
        self.fingerprinter = fingerprinter
        self.processes = processes
        self.page_timeout = page_timeout
        self._options = FingerprinterOptions.of(fingerprinter)
        self._workers: list[FingerprintWorker] = []
        self._queue: deque[Page] = deque()
        self._waiting = 0  # pages given, not answered yet: queued, or held by a worker
        self._closed = False
        self._room_waiters: list[Deferred[None]] = []  # downloads waiting for pages to be answered
        self._watch = LoopingCall(self._replace_late_workers)
        self._timeout_logged = False

    async def start(self) -> None:
        """Start the workers and wait until they are ready (or known not to start, or killed for taking
        longer than ``START_TIMEOUT``)."""
        if self.processes < 1:
            return
        from twisted.internet import reactor

        # for a crawl that ends without closing (type: ignore: zope interface methods lack self; no mypy-zope)
        reactor.addSystemEventTrigger("during", "shutdown", self.close)  # type: ignore[arg-type]
        self._watch.start(min(1.0, self.page_timeout / 4), now=False)
        while len(self._workers) < self.processes:
            self._start_worker()
        for worker in list(self._workers):
            try:
                await maybe_deferred_to_future(worker.ready)
            except WorkersCannotStart:
                return  # logged; pages are fingerprinted here

    def fingerprint(self, html: str | bytes, url: str, content_type: str | None = None) -> Deferred[Fingerprint]:
        """The page's fingerprint, when a worker has made it (at once, fired, where there is no worker or
        the page is not worth sending: empty, or too large); a failure if making it failed, killed the worker
        or took it too long."""
        if self.processes < 1 or self._closed or not html or too_large(html, self.fingerprinter.max_bytes):
            return maybeDeferred(self.fingerprinter.fingerprint, html, url, content_type)
        answer: Deferred[Fingerprint] = Deferred()
        answer.addBoth(self._room_again)
        self._waiting += 1
        self._queue.append((html, url, content_type, answer))
        self._hand_out()
        return answer

    def waiting(self) -> int:
        """Pages waiting for their fingerprints: queued, or held by a worker."""
        return self._waiting

    def full(self) -> bool:
        return self.processes > 0 and not self._closed and self.waiting() >= WAITING_PER_WORKER * self.processes

    async def wait_for_room(self) -> None:
        """Return once fewer than ``WAITING_PER_WORKER`` pages per worker wait (at once if so): downloads
        wait here, so that pages do not pile up, downloaded, while the workers are behind."""
        while self.full():
            self._room_waiters.append(Deferred())
            await maybe_deferred_to_future(self._room_waiters[-1])

    def workers(self) -> list[tuple[int, str | None]]:
        """The live worker processes: their pid, and the URL of the page each is fingerprinting."""
        return [(worker.process.pid, worker.url) for worker in self._workers if worker.is_alive()]

    def close(self) -> None:
        """Stop every worker (again: nothing happens).  Scrapy closes the spider once every item is
        done, so no page is in progress; pages that come after are fingerprinted in this thread."""
        self._closed = True
        if self._watch.running:
            self._watch.stop()
        workers, self._workers = self._workers, []
        for worker in workers:
            worker.stop()
        self._fail(list(self._queue))
        self._wake()

    def _start_worker(self) -> FingerprintWorker | None:
        """A new worker; None if no process can be started (the system refused: pages are then
        fingerprinted here, as when a worker cannot start)."""
        try:
            worker = FingerprintWorker(self._options, self._lost)
        except OSError as error:  # no more processes or file descriptors
            self._cannot_start(Failure(WorkersCannotStart(f"{type(error).__name__}: {error}")))
            return None
        worker.ready.addErrback(self._cannot_start)
        self._workers.append(worker)
        return worker

    def _hand_out(self) -> None:
        """Give queued pages to the least busy workers, starting workers up to ``processes``; with no
        worker (they cannot start), fingerprint them here.  Each turn of the loop takes a page off the
        queue, or returns."""
        while self._queue and not self._closed:
            if self.processes < 1:
                html, url, content_type, answer = self._queue.popleft()
                maybeDeferred(self.fingerprinter.fingerprint, html, url, content_type).chainDeferred(answer)
                continue
            worker = min(self._workers, key=lambda w: len(w.pages), default=None)
            if (worker is None or worker.pages) and len(self._workers) < self.processes:
                if (worker := self._start_worker()) is None:
                    continue  # none can start: fingerprinted here
            elif worker is None or len(worker.pages) >= PAGES_PER_WORKER:
                return
            worker.send(self._queue.popleft())

    def _replace_late_workers(self) -> None:
        """(Every ``page_timeout`` / 4 s, at most 1 s.)  A worker on one page for longer than ``page_timeout``
        (stopped, stuck) is killed: its page fails with :class:`WorkerTimedOut` (kept, counted) and the pages
        behind it go to the others and a new worker; one that takes longer than ``START_TIMEOUT`` to start is
        killed, and pages are fingerprinted here as when workers cannot start."""
        now = time.monotonic()
        for worker in [worker for worker in self._workers if worker.late(now, self.page_timeout)]:
            if not worker.ready.called:  # its connection's loss says it cannot start
                worker.cannot_start = WorkersCannotStart(f"not ready after {START_TIMEOUT:.0f} s")
                worker.since = None
                worker.process.kill()
                continue
            self._workers.remove(worker)
            url, pages = worker.url, worker.abandon()
            if not self._timeout_logged:
                self._timeout_logged = True
                logger.warning(
                    "simhash_dedup: a fingerprint worker spent more than %g s on %s; it was killed and "
                    "replaced, and the page is kept unchecked (SIMHASH_DEDUP_WORKER_TIMEOUT; further ones "
                    "are only counted in the stats: simhash_dedup/fingerprint_timeouts).",
                    self.page_timeout,
                    url,
                )
            self._queue.extendleft(reversed(pages[1:]))
            pages[0][3].errback(WorkerTimedOut(f"the fingerprint worker took more than {self.page_timeout:g} s"))
        self._hand_out()

    def _room_again(self, result: Fingerprint | Failure) -> Fingerprint | Failure:
        """A page is answered: its worker takes the next one, downloads may go on (the answer passes on
        unchanged)."""
        self._waiting -= 1
        self._hand_out()
        if not self.full():
            self._wake()
        return result

    def _wake(self) -> None:
        waiters, self._room_waiters = self._room_waiters, []
        for waiter in waiters:
            waiter.callback(None)

    def _cannot_start(self, failure: Failure) -> None:
        """A worker failed before it was ready: no worker is started again; pages are fingerprinted here."""
        if self.processes > 0:
            self.processes = 0
            logger.error(
                "simhash_dedup: the fingerprint worker processes cannot start (%s); pages are fingerprinted "
                "in the crawl process instead, on the reactor thread (SIMHASH_DEDUP_WORKERS = 0 does "
                "this without trying).",
                failure.value,
            )

    def _lost(self, worker: FingerprintWorker, unstarted: list[Page]) -> None:
        """A worker is gone (died, stopped, or never started): forget it; its pages not started go first
        to the others (or a new worker, or this process)."""
        if worker in self._workers:
            self._workers.remove(worker)
        if self._closed:
            self._fail(unstarted)
            return
        if unstarted and worker.ready.called and worker.cannot_start is None:
            logger.info(
                "simhash_dedup: pages a fingerprint worker had not started go to another worker: %d", len(unstarted)
            )
        self._queue.extendleft(reversed(unstarted))
        self._hand_out()

    @staticmethod
    def _fail(pages: list[Page]) -> None:
        """(A reactor stopped mid-crawl) the pages are kept, counted as errors."""
        for page in pages:
            page[3].errback(WorkerCrashed("the fingerprint workers were stopped"))


#: Distinct HTML documents whose fingerprints are remembered (~300 bytes each).
RECENT_PAGES = 10_000


class RecentPages:
    """Byte-identical pages are fingerprinted once: the same page under another URL (a session id
    or tracking parameter in the link, a mirror, a trap) takes the fingerprint of the last 10,000
    distinct pages (by a 128-bit hash of the HTML), or waits for it when that page is being
    fingerprinted.  The fingerprint depends on the HTML only: reusing it changes no decision."""

    def __init__(self, size: int = RECENT_PAGES) -> None:
        self.size = size
        self._fingerprints: OrderedDict[bytes, Fingerprint] = OrderedDict()
        self._waiting: dict[bytes, list[Deferred[tuple[Fingerprint, bool]]]] = {}  # being fingerprinted: its copies

    def fingerprint(
        self, key: bytes, compute: Callable[[], Deferred[Fingerprint]]
    ) -> Deferred[tuple[Fingerprint, bool]]:
        """The fingerprint of the page whose ``key`` is given (by ``compute`` unless known), and whether
        it was known; a page that fails to be fingerprinted fails its copies the same way."""
        if (known := self._fingerprints.get(key)) is not None:
            self._fingerprints.move_to_end(key)
            return succeed((known, True))
        if (copies := self._waiting.get(key)) is not None:
            copies.append(Deferred())
            return copies[-1]
        self._waiting[key] = []
        return compute().addBoth(self._computed, key)

    def _computed(self, result: Fingerprint | Failure, key: bytes) -> tuple[Fingerprint, bool] | Failure:
        copies = self._waiting.pop(key)
        if isinstance(result, Failure):
            for copy in copies:
                copy.errback(result)
            return result
        self._fingerprints[key] = result
        if len(self._fingerprints) > self.size:
            self._fingerprints.popitem(last=False)
        for copy in copies:
            copy.callback((result, True))
        return result, False

    @staticmethod
    def key(html: str | bytes, content_type: str | None = None) -> bytes:
        """A 128-bit hash of the HTML, read where it lies (no encoding); for bytes, with the header that
        may decide their encoding."""
        if isinstance(html, str):
            return text_digest(html)
        return b"b" + xxhash.xxh3_128_digest(html) + (content_type or "").encode("latin-1", "replace")
