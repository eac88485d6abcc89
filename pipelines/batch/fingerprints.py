"""The pipeline's fingerprint worker processes, driven without a reactor: pages in, fingerprints out,
in input order."""

from __future__ import annotations

import socket
from collections import deque
from collections.abc import Iterable, Iterator
from multiprocessing.connection import Connection

from ..document import too_large
from ..fingerprint import Fingerprint, Fingerprinter
from ..worker_process import FingerprinterOptions, FingerprintFailed, page_message
from ..workers import WorkerCrashed, start_worker_process
from .sources import BadInput, Page

#: Pages sent to a worker ahead of its answers: enough that no worker waits while the reader waits on another.
PAGES_AHEAD = 12
#: Bytes a worker's socket buffers (the system may cap it: net.core.wmem_max): pages sent ahead wait there.
SEND_BUFFER = 4 << 20

Result = Fingerprint | Exception


class Worker:
    """One worker process (``python -m pipelines.worker_process``, as in a crawl) and its connection.

    Its socket's send buffer holds the pages sent ahead (``SEND_BUFFER``): a send returns at once
    while the worker is busy, and the reader goes on feeding the other workers."""

    def __init__(self, options: FingerprinterOptions) -> None:
        self.process, end = start_worker_process(options)
        end.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
        self.connection = Connection(end.detach())
        self.waiting = 0  # pages sent, not answered

    def send(self, page: Page) -> None:
        self.connection.send(page_message(page.html, page.url, page.content_type))
        self.waiting += 1

    def receive(self) -> Result:
        self.waiting -= 1
        try:
            answer = self.connection.recv()
        except (EOFError, OSError):
            return WorkerCrashed(f"the fingerprint worker died (exit code {self.process.wait()})")
        return answer

    def stop(self) -> None:
        self.connection.close()
        self.process.wait()


def fingerprinted(items: Iterable[Page | BadInput], fingerprinter: Fingerprinter,
                  processes: int) -> Iterator[tuple[Page | BadInput, Result | None]]:
    """Each item with its page's fingerprint (or the error it met), in input order; ``BadInput``
    passes through with ``None``.  ``processes`` worker processes, or this process if 0."""
    if processes <= 0:
        for item in items:
            yield item, _here(fingerprinter, item)
        return
    options = FingerprinterOptions.of(fingerprinter)
    workers = [Worker(options) for _ in range(processes)]
    sent: deque[tuple[Page | BadInput, Worker | None, Result | None]] = deque()
    try:
        for item in items:
            if isinstance(item, Page) and not too_large(item.html, fingerprinter.max_bytes):
                worker = min(workers, key=lambda w: w.waiting)
                if worker.waiting >= PAGES_AHEAD:
                    yield _answer(sent.popleft(), workers, options)
                    worker = min(workers, key=lambda w: w.waiting)
                worker.send(item)
                sent.append((item, worker, None))
            else:
                sent.append((item, None, _here(fingerprinter, item)))
        while sent:
            yield _answer(sent.popleft(), workers, options)
    finally:
        for worker in workers:
            worker.stop()


def _answer(entry: tuple[Page | BadInput, Worker | None, Result | None], workers: list[Worker],
            options: FingerprinterOptions) -> tuple[Page | BadInput, Result | None]:
    item, worker, result = entry
    if worker is None:
        return item, result
    answer = worker.receive()
    if isinstance(answer, WorkerCrashed):  # the page killed it: a new worker; its later pages fail too
        workers[workers.index(worker)] = Worker(options)
    return item, answer


def _here(fingerprinter: Fingerprinter, item: Page | BadInput) -> Result | None:
    if isinstance(item, BadInput):
        return None
    try:
        return fingerprinter.fingerprint(item.text(), item.url)
    except Exception as error:  # a bug: the page is kept and counted, never lost
        return FingerprintFailed(repr(error))
