"""A fingerprint worker process: pages in, fingerprints out, through one socket.

    python -m pipelines.worker_process FD OPTIONS_JSON

Started by :class:`pipelines.workers.FingerprintWorker`; imports the
fingerprint's modules only (no Scrapy, no Twisted, no index).
"""

from __future__ import annotations

import json
import sys
import traceback
from dataclasses import asdict, dataclass
from multiprocessing.connection import Connection

from .document import response_text
from .fingerprint import Fingerprinter
from .memory import release_freed_memory
from .textloops import payload_text, text_payload


class FingerprintFailed(RuntimeError):
    """Fingerprinting raised in the worker process; the message holds its traceback."""


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
        return cls(fingerprinter.structure_decay, fingerprinter.min_features, fingerprinter.max_bytes,
                   fingerprinter.max_elements, fingerprinter.max_text_chars, fingerprinter.keep_text)


PageMessage = tuple[int, bytes, str, str | None]


def page_message(html: str | bytes, url: str, content_type: str | None = None) -> PageMessage:
    """What a worker receives for a page: bytes as they are (kind 0), a string as Python holds its
    characters (kind 1, 2 or 4 bytes each; ``textloops.text_payload``): no encoding on the reactor
    thread, where encoding and pickling a 150 KB page as UTF-8 cost ~0.4 ms.  Bytes with a
    ``content_type`` (batch mode: a response's body and header) are decoded in the worker as
    Scrapy's ``response.text`` would be, off the reading process."""
    return (0, html, url, content_type) if isinstance(html, bytes) else (*text_payload(html), url, None)


def page_of(message: PageMessage) -> tuple[str | bytes, str]:
    """The HTML and URL ``page_message`` was given (bytes with a content type: decoded)."""
    kind, data, url, content_type = message
    if kind != 0:
        return payload_text(kind, data), url
    return (data if content_type is None else response_text(data, content_type)), url


def serve(connection: Connection, options: FingerprinterOptions) -> None:
    """The loop: a page in (``page_message``), its fingerprint (or the traceback) out, until the
    crawler closes its end."""
    fingerprinter = Fingerprinter(**asdict(options))
    while True:
        if not connection.poll():  # nothing waiting: give back what the last pages freed
            release_freed_memory()
        try:
            html, url = page_of(connection.recv())
        except EOFError:
            return
        try:
            connection.send(fingerprinter.fingerprint(html, url))
        except Exception:  # a bug: reported in the crawler, the page kept
            connection.send(FingerprintFailed(traceback.format_exc()))


def main() -> None:
    serve(Connection(int(sys.argv[1])), FingerprinterOptions(**json.loads(sys.argv[2])))


if __name__ == "__main__":
    from pipelines.worker_process import main as package_main  # what it sends is pickled under the package's names

    package_main()
