"""One worker process seen from the reactor: its socket, the pages it holds, their answers read as they arrive
(``FingerprintWorker``), and the writes that never block nor spin (``SocketWriter``, ``UnsentBytes``)."""

from __future__ import annotations

import logging
import socket
import subprocess
import time
from collections import deque
from collections.abc import Callable
from itertools import islice

from twisted.internet.defer import Deferred
from twisted.internet.protocol import Factory, Protocol, connectionDone
from twisted.python.failure import Failure

from .process import FingerprinterOptions, FingerprintFailed, page_frames, read_answer, read_message, take_frame
from .start import START_TIMEOUT, WorkerCrashed, WorkersCannotStart, start_worker_process, started

logger = logging.getLogger(__name__)

#: Seconds a worker gets to finish when the pool closes, before it is killed.
STOP_TIMEOUT = 5.0

#: Bytes a worker's socket buffers (the system may cap it: net.core.wmem_max): the pages it holds wait there,
#: written at once.
SEND_BUFFER = 4 << 20


Page = tuple[str | bytes, str, str | None, Deferred]  # HTML, URL, the Content-Type of bytes, where its fingerprint goes


class FingerprintWorker(Protocol):
    """One worker process, the reactor reading the crawl's end of its socket.  Its first message says it
    is ready (or why it cannot start); then pages go out in order and their fingerprints come back in
    that order: the first page unanswered is the one in progress."""

    def __init__(self, options: FingerprinterOptions, on_lost: Callable[[FingerprintWorker, list[Page]], None]) -> None:
        from twisted.internet import reactor

        self.process, self._socket = start_worker_process(options)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
        self._socket.setblocking(False)
        self._writer = SocketWriter(self._socket)
        self.pages: deque[Page] = deque()  # sent, not answered
        self.ready: Deferred[None] = Deferred()  # fires once it is ready, fails if it cannot start
        self.cannot_start: WorkersCannotStart | None = None
        self.since: float | None = time.monotonic()  # when the page it is on (or its start) began; None: idle
        self.abandoned = False  # killed for taking too long: what it still sends is ignored
        self._received = bytearray()
        self._on_lost = on_lost
        reactor.adoptStreamConnection(self._socket.fileno(), socket.AF_UNIX, Factory.forProtocol(lambda: self))

    @property
    def url(self) -> str | None:
        """The page it is fingerprinting."""
        return self.pages[0][1] if self.pages else None

    def send(self, page: Page) -> None:
        if not self.pages and self.ready.called:
            self.since = time.monotonic()
        self.pages.append(page)
        self._writer.write(page_frames(*page[:3]))

    def dataReceived(self, data: bytes) -> None:
        if self.abandoned:
            return
        self._received += data
        try:
            while (message := take_frame(self._received)) is not None:
                if not self.ready.called:
                    self._started(read_message(message))
                    continue
                if not self.pages:
                    raise ValueError("an answer for no page")
                result = read_answer(message)
                answer = self.pages.popleft()[3]
                self.since = time.monotonic() if self.pages else None
                if isinstance(result, FingerprintFailed):
                    answer.errback(result)
                else:
                    answer.callback(result)
        except (ValueError, TypeError, EOFError) as error:  # not what a worker sends: it is broken, lost as if it died
            logger.error("simhash_dedup: a fingerprint worker sent what no worker sends (%s); it is replaced", error)
            self._received.clear()
            self.process.kill()

    def _started(self, first_message: object) -> None:
        try:
            started(first_message)
        except WorkersCannotStart as error:
            self.cannot_start = error  # the process exits: connectionLost hands its pages back
            return
        self.since = time.monotonic() if self.pages else None
        self.ready.callback(None)

    def late(self, now: float, page_timeout: float) -> bool:
        """Has it been on its page (or its start) for longer than it may?"""
        limit = page_timeout if self.ready.called else max(page_timeout, START_TIMEOUT)
        return self.since is not None and now - self.since > limit

    def abandon(self) -> list[Page]:
        """Kill the process (stopped or stuck) and take its pages back at once, whatever it does meanwhile; its
        connection's loss follows, with no page left to fail."""
        self.abandoned = True
        self.since = None
        pages, self.pages = list(self.pages), deque()
        self.process.kill()
        if self.transport is not None:
            self.transport.abortConnection()
        return pages

    def connectionLost(self, reason: Failure = connectionDone) -> None:
        self._writer.stop()
        self._socket.close()
        pages, self.pages = list(self.pages), deque()
        if not self.ready.called:  # it never started: none of its pages was begun
            code = self.process.wait()
            self.ready.errback(
                self.cannot_start or WorkersCannotStart(f"it exited with code {code} before it was ready")
            )
            self._on_lost(self, pages)
            return
        self._on_lost(self, pages[1:])  # the pages it had not started go to another worker
        if pages:  # it died on this one
            exit_code = self.process.poll()
            pages[0][3].errback(WorkerCrashed(f"the fingerprint worker died (exit code {exit_code})"))

    def is_alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        """End of input (the worker exits), then wait for it; killed if it does not exit in time."""
        self._writer.stop()
        try:
            self._socket.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        try:
            self.process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._socket.close()
        if self.transport is not None:
            self.transport.abortConnection()


class UnsentBytes:
    """Buffers on their way to a non-blocking socket, in order, never copied: each write takes what the
    socket takes now.  Empty buffers are never queued (an empty page's body): a write of nothing writes 0
    bytes, which would look like no progress for ever."""

    def __init__(self) -> None:
        self._buffers: deque[memoryview] = deque()

    def __bool__(self) -> bool:
        return bool(self._buffers)

    def add(self, buffers: list[bytes]) -> None:
        self._buffers.extend(memoryview(buffer) for buffer in buffers if len(buffer))

    def clear(self) -> None:
        self._buffers.clear()

    def send(self, sock: socket.socket) -> None:
        """Write what ``sock`` takes until it would block (or took nothing: tried again when writable); an
        ``OSError`` other than blocking (the peer is gone) is raised."""
        while self._buffers:
            try:
                written = sock.sendmsg(list(islice(self._buffers, 64)))
            except BlockingIOError:
                return
            if not written:
                return
            while written:
                first = self._buffers[0]
                if len(first) > written:
                    self._buffers[0] = first[written:]
                    break
                written -= len(first)
                self._buffers.popleft()


class SocketWriter:
    """Writes to a non-blocking socket at once, as much as it takes, and the rest whenever the reactor finds
    it writable again (an ``IWriteDescriptor``).  A page goes to its worker without being copied (its
    buffers written as they are) and without waiting for the reactor's next turn: through the reactor's
    transport, a busy crawl left its worker waiting for the bytes of its next page longer than it took to
    fingerprint one."""

    def __init__(self, sock: socket.socket) -> None:
        self._socket = sock
        self._unsent = UnsentBytes()
        self._waiting = False  # registered with the reactor, for the rest

    def write(self, buffers: list[bytes]) -> None:
        self._unsent.add(buffers)
        if not self._waiting:
            self.doWrite()

    def doWrite(self) -> None:
        """Write what the socket takes; wait for the reactor for the rest, if any."""
        from twisted.internet import reactor

        try:
            self._unsent.send(self._socket)
        except OSError:  # the worker is gone: its connection's loss says so (connectionLost)
            self._unsent.clear()
        if self._unsent and not self._waiting:
            reactor.addWriter(self)  # type: ignore[call-arg,misc]  # zope interface methods lack self (no mypy-zope)
        elif not self._unsent and self._waiting:
            reactor.removeWriter(self)  # type: ignore[call-arg,misc]  # zope interface methods lack self (no mypy-zope)
        self._waiting = bool(self._unsent)

    def stop(self) -> None:
        """Write no more (the worker is stopped or gone)."""
        self._unsent.clear()
        self.doWrite()

    def fileno(self) -> int:
        return self._socket.fileno()

    def connectionLost(self, reason: Failure) -> None:
        self._unsent.clear()
        self._waiting = False

    def logPrefix(self) -> str:
        return "simhash_dedup worker"
