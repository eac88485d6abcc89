"""The pipeline's fingerprint worker processes, driven without a reactor: pages in, fingerprints out,
in input order."""

from __future__ import annotations

import logging
import socket
from collections import deque
from collections.abc import Iterable, Iterator
from multiprocessing.connection import Connection, wait

from ..fingerprint.document import too_large
from ..fingerprint.fingerprinter import Fingerprint, Fingerprinter
from ..workers.process import FingerprinterOptions, FingerprintFailed, page_messages, read_answer, read_message
from ..workers.start import WorkerCrashed, WorkersCannotStart, start_worker_process, started
from .sources import BadInput, Page

logger = logging.getLogger(__name__)

#: Pages sent to a worker ahead of its answers: enough that it never waits for the reader.
PAGES_AHEAD = 12
#: Pages read ahead of the oldest unanswered one (a slow page holds back the output, not the workers).
READ_AHEAD = 256
#: Bytes a worker's socket buffers (the system may cap it: net.core.wmem_max): pages sent ahead wait there.
SEND_BUFFER = 4 << 20

Result = Fingerprint | Exception


class Worker:
    """One worker process (started as in a crawl), its connection and the answers received from it, in
    the order its pages were sent.

    Its socket's send buffer holds the pages sent ahead (``SEND_BUFFER``): a send returns at once
    while the worker is busy, and the reader goes on feeding the other workers."""

    def __init__(self, options: FingerprinterOptions) -> None:
        self.process, end = start_worker_process(options)
        end.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
        self.connection = Connection(end.detach())
        self.waiting = 0  # pages sent, not answered
        self.answers: deque[Result] = deque()

    def wait_ready(self) -> None:
        """Return once the worker is ready; raise :class:`WorkersCannotStart` if it cannot start."""
        try:
            started(read_message(self.connection.recv_bytes()))
        except (EOFError, OSError):
            raise WorkersCannotStart(f"it exited with code {self.process.wait()} before it was ready") from None

    def send(self, page: Page) -> None:
        for message in page_messages(page.html, page.url, page.content_type):
            self.connection.send_bytes(message)
        self.waiting += 1

    def receive(self) -> bool:
        """Take one answer; False if the worker died (each of its pages then fails)."""
        try:
            self.answers.append(read_answer(self.connection.recv_bytes()))
            self.waiting -= 1
            return True
        except (EOFError, OSError):
            crash = WorkerCrashed(f"the fingerprint worker died (exit code {self.process.wait()})")
            self.answers.extend(crash for _ in range(self.waiting))
            self.waiting = 0
            return False

    def stop(self) -> None:
        self.connection.close()
        self.process.wait()


class Pool:
    """Worker processes fed without head-of-line blocking: the reader waits on whichever worker
    answers first, so a slow page on one worker never leaves another idle."""

    def __init__(self, options: FingerprinterOptions, processes: int) -> None:
        """Start the workers; raise :class:`WorkersCannotStart` (none left running) if one cannot start."""
        self.options = options
        self.workers = [Worker(options) for _ in range(processes)]
        try:
            for worker in self.workers:
                worker.wait_ready()
        except WorkersCannotStart:
            self.stop()
            raise

    def send(self, page: Page) -> Worker:
        while min(w.waiting for w in self.workers) >= PAGES_AHEAD:
            self.collect()
        worker = min(self.workers, key=lambda w: w.waiting)
        worker.send(page)
        return worker

    def collect(self) -> None:
        """Wait for at least one answer, and take every answer that has come (one wake-up for several)."""
        busy: dict[object, Worker] = {w.connection: w for w in self.workers if w.waiting}  # by what ``wait`` returns
        for connection in wait([w.connection for w in busy.values()]):
            worker = busy[connection]
            while worker.waiting and worker.connection.poll():
                if not worker.receive():  # the page killed it: a new worker; its later pages fail too
                    self.workers[self.workers.index(worker)] = replacement = Worker(self.options)
                    replacement.wait_ready()
                    break

    def stop(self) -> None:
        for worker in self.workers:
            worker.stop()


def fingerprinted(
    items: Iterable[Page | BadInput], fingerprinter: Fingerprinter, processes: int
) -> Iterator[tuple[Page | BadInput, Result | None]]:
    """Each item with its page's fingerprint (or the error it met), in input order; ``BadInput``
    passes through with ``None``.  ``processes`` worker processes, or this process if 0 (or if the
    workers cannot start: said once)."""
    try:
        pool = Pool(FingerprinterOptions.of(fingerprinter), processes) if processes > 0 else None
    except WorkersCannotStart as error:
        logger.error(
            "the fingerprint worker processes cannot start (%s); pages are fingerprinted in this process", error
        )
        pool = None
    if pool is None:
        for item in items:
            yield item, _here(fingerprinter, item)
        return
    sent: deque[tuple[Page | BadInput, Worker | None, Result | None]] = deque()
    try:
        for item in items:
            if isinstance(item, Page) and not too_large(item.html, fingerprinter.max_bytes):
                sent.append((item, pool.send(item), None))
            else:
                sent.append((item, None, _here(fingerprinter, item)))
            yield from _answered(sent, pool, until=READ_AHEAD)
        yield from _answered(sent, pool, until=0)
    finally:
        pool.stop()


def _answered(
    sent: deque[tuple[Page | BadInput, Worker | None, Result | None]], pool: Pool, until: int
) -> Iterator[tuple[Page | BadInput, Result | None]]:
    """The oldest entries whose answers have come; waits for answers while more than ``until`` remain."""
    while sent:
        item, worker, result = sent[0]
        if worker is not None and not worker.answers:
            if len(sent) <= until:
                return
            pool.collect()
            continue
        sent.popleft()
        yield item, (result if worker is None else worker.answers.popleft())


def _here(fingerprinter: Fingerprinter, item: Page | BadInput) -> Result | None:
    if isinstance(item, BadInput):
        return None
    try:
        return fingerprinter.fingerprint(item.html, item.url, item.content_type)
    except Exception as error:  # a bug: the page is kept and counted, never lost
        return FingerprintFailed(repr(error))
