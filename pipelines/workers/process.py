"""A fingerprint worker process: pages in, fingerprints out, through one socket.

Started by :func:`scrapy_simhash_dedup.workers.start.start_worker_process`, whose process imports
this module and calls :func:`main`; imports the fingerprint's modules only (no Scrapy, no
Twisted, no index).  Its first message says it is ready: a worker that
cannot start is known before it is given any page.
"""

from __future__ import annotations

import json
import marshal
import os
import struct
import time
import traceback
from dataclasses import asdict, dataclass, fields
from multiprocessing.connection import Connection
from typing import TypeAlias

from ..fingerprint.fingerprinter import Fingerprint, Fingerprinter
from ..fingerprint.process_memory import release_freed_memory, resident_bytes
from ..fingerprint.textloops import payload_text, text_payload

#: Seconds between two looks at the worker's resident memory, and how much it may have grown since the last
#: return of freed memory to the system (a big page's parse) before the next: a return costs a crawl's
#: worker ~2 ms and the next page its page faults (~10 % of a page's CPU when made after every page), so it
#: is made only when there is much to give back.
RELEASE_EVERY = 1.0
RELEASE_OVER = 32 << 20


class FingerprintFailed(RuntimeError):
    """Fingerprinting raised in the worker process; the message holds its traceback."""


#: A worker's first message once it has imported everything and built its fingerprinter.
READY = "ready"
#: The first element of the message a worker sends instead, with the error, when it cannot start.
CANNOT_START = "cannot start"
#: The fields of a fingerprint, in the order an answer carries them.
_FIELDS = tuple(field.name for field in fields(Fingerprint))


@dataclass(frozen=True)
class FingerprinterOptions:
    """What a worker needs to build the crawl's :class:`Fingerprinter`."""

    structure_decay: float
    min_features: int
    max_bytes: int
    max_elements: int
    max_text_chars: int
    keep_text: bool

    @classmethod
    def of(cls, fingerprinter: Fingerprinter) -> FingerprinterOptions:
        return cls(
            fingerprinter.structure_decay,
            fingerprinter.min_features,
            fingerprinter.max_bytes,
            fingerprinter.max_elements,
            fingerprinter.max_text_chars,
            fingerprinter.keep_text,
        )


def page_messages(html: str | bytes, url: str, content_type: str | None = None) -> tuple[bytes, bytes]:
    """What a worker receives for a page, as two messages: what it is (how its characters are held, its URL,
    the ``Content-Type`` bytes came with; marshalled), then the page itself, unchanged: bytes as they are (a
    response's body, a WARC record: decoded in the worker, off the crawl's thread), a string as Python holds
    its characters (1, 2 or 4 bytes each; ``textloops.text_payload``).  No copy, no encoding on the reactor
    thread, where encoding and pickling a 150 KB page as UTF-8 cost ~0.4 ms."""
    kind, data = (0, html) if isinstance(html, bytes) else text_payload(html)
    return marshal.dumps((kind, url, content_type)), data


def page_frames(html: str | bytes, url: str, content_type: str | None = None) -> list[bytes]:
    """``page_messages`` framed as ``multiprocessing.connection`` frames them, to be written as they are."""
    frames = []
    for message in page_messages(html, url, content_type):
        frames += [frame_header(len(message)), message]
    return frames


#: ``multiprocessing.connection``'s frame header: the message's size, or -1 and then its size over 2 GB.
_SIZE = struct.Struct("!i")
_LARGE_SIZE = struct.Struct("!Q")


def frame_header(size: int) -> bytes:
    """``multiprocessing.connection``'s frame header."""
    return _SIZE.pack(size) if size <= 0x7FFFFFFF else _SIZE.pack(-1) + _LARGE_SIZE.pack(size)


def read_page(connection: Connection) -> tuple[str | bytes, str, str | None]:
    """The HTML, URL and content type ``page_messages`` sent."""
    kind, url, content_type = marshal.loads(read_frame(connection.fileno()))
    data = read_frame(connection.fileno())
    return (data if kind == 0 else payload_text(kind, data)), url, content_type


def read_frame(fd: int) -> bytes:
    """One message framed as ``multiprocessing.connection`` frames them, read from ``fd``: a page written at
    once arrives whole, and one read gives its bytes, where ``Connection.recv_bytes`` copies them twice."""
    (size,) = _SIZE.unpack(_read_exactly(fd, _SIZE.size))
    if size == -1:
        (size,) = _LARGE_SIZE.unpack(_read_exactly(fd, _LARGE_SIZE.size))
    return _read_exactly(fd, size)


def take_frame(received: bytearray) -> bytes | None:
    """The first whole message framed as ``read_frame`` reads them in ``received`` (bytes that came so far;
    the message is removed from them), or None.  A size no frame has raises ``ValueError``: a caller that
    looped on it would take nothing from ``received`` at each turn."""
    start = _SIZE.size
    if len(received) < start:
        return None
    (size,) = _SIZE.unpack_from(received)
    if size < -1:
        raise ValueError(f"a frame of {size} bytes")
    if size == -1:
        if len(received) < start + _LARGE_SIZE.size:
            return None
        (size,), start = _LARGE_SIZE.unpack_from(received, start), start + _LARGE_SIZE.size
    if len(received) < start + size:
        return None
    message = bytes(received[start : start + size])
    del received[: start + size]
    return message


def _read_exactly(fd: int, size: int) -> bytes:
    data = os.read(fd, size)
    if len(data) == size:
        return data
    parts = [data]
    while size := size - len(data):
        if not (data := os.read(fd, size)):
            raise EOFError
        parts.append(data)
    return b"".join(parts)


#: What ``message`` sends: plain values ``marshal`` writes (a fingerprint's fields, a traceback, ``READY``).
Message: TypeAlias = None | bool | int | float | str | bytes | tuple["Message", ...]


def message(value: Message) -> bytes:
    """What a worker and the crawl say to each other besides pages: a worker's first message, its answers
    (``answer_message``); marshalled (plain values: no class looked up, nothing pickled)."""
    return marshal.dumps(value)


def read_message(data: bytes) -> object:
    return marshal.loads(data)


def answer_message(answer: Fingerprint | FingerprintFailed) -> bytes:
    """A worker's answer for a page: the fingerprint's fields, or the traceback that failed it."""
    if isinstance(answer, FingerprintFailed):
        return message(str(answer))
    return message(tuple(getattr(answer, name) for name in _FIELDS))


def read_answer(data: bytes) -> Fingerprint | FingerprintFailed:
    """The fingerprint (or the failure) ``answer_message`` sent."""
    value = read_message(data)
    if isinstance(value, str):
        return FingerprintFailed(value)
    assert isinstance(value, tuple), "answer_message sends a fingerprint's fields as a tuple"
    return Fingerprint(*value)


def serve(connection: Connection, options: FingerprinterOptions) -> None:
    """The loop: a page in (``page_messages``), its fingerprint (or the traceback) out, until the
    crawler closes its end, or is gone (killed): then the worker exits quietly."""
    fingerprinter = Fingerprinter(**asdict(options))
    memory = FreedMemory()
    try:
        connection.send_bytes(message(READY))
        while True:
            if not connection.poll():  # idle: give back what the last pages freed (a big page's parse)
                memory.release()
            html, url, content_type = read_page(connection)
            answer: Fingerprint | FingerprintFailed
            try:
                answer = fingerprinter.fingerprint(html, url, content_type)
            except Exception:  # a bug: reported in the crawler, the page kept
                answer = FingerprintFailed(traceback.format_exc())
            connection.send_bytes(answer_message(answer))
    except (EOFError, OSError):  # the end of input, or the crawler was killed (its end reset)
        return


class FreedMemory:
    """Gives the memory that pages freed back to the system, at most every ``RELEASE_EVERY`` seconds and only
    when the worker's resident memory grew by ``RELEASE_OVER`` since it last did (where it cannot be read:
    every time)."""

    def __init__(self) -> None:
        self._looked = time.monotonic()
        self._resident = resident_bytes()  # after the last return

    def release(self) -> None:
        if time.monotonic() - self._looked < RELEASE_EVERY:
            return
        resident = resident_bytes()
        if resident is None or self._resident is None or resident > self._resident + RELEASE_OVER:
            release_freed_memory()
            self._resident = resident_bytes()  # what is in use
        else:
            self._resident = min(self._resident, resident)
        self._looked = time.monotonic()


def main(fd: int, options: str) -> None:
    """Serve the crawl at the other end of the socket ``fd``, with the options given as JSON."""
    serve(Connection(fd), FingerprinterOptions(**json.loads(options)))
