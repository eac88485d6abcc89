"""Serve a folder over HTTP on 127.0.0.1 (a free port) for offline crawls."""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def serve_directory(root: Path, host: str = "127.0.0.1") -> Iterator[str]:
    """Serve ``root`` until the block ends; yields its base URL (``http://127.0.0.1:PORT/``).  Another loopback
    ``host`` (``127.0.0.2``…) is another site for the filter's "site" scope."""
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = ThreadingHTTPServer((host, 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
