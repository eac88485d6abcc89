"""How a fingerprint worker process starts, and how it can fail: what the crawl's pool and batch mode (no reactor)
both use."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from dataclasses import asdict

from .process import CANNOT_START, READY, FingerprinterOptions

#: Seconds a worker may take to start (import the fingerprint's modules, load its tables: ~0.3 s) before it is
#: killed, and pages are fingerprinted in the crawl process, as for a worker that cannot start.
START_TIMEOUT = 60.0


class WorkerCrashed(RuntimeError):
    """The worker process died while fingerprinting this page."""


class WorkerTimedOut(WorkerCrashed):
    """The worker process took longer than the page timeout over this page: it was killed and replaced."""


#: How a worker process starts: this package's worker module imported as the crawl imports it, the crawl's
#: ``sys.path`` after the worker's own (for libraries found only there; the working folder left out).  An import
#: that fails is reported on the socket, in one line.
_BOOTSTRAP = """
import importlib, os, sys
name, fd, options, path = sys.argv[1:5]
sys.path[:] = [p for p in sys.path if p] + [p for p in path.split(os.pathsep) if p and p not in sys.path]
try:
    worker = importlib.import_module(name + ".process")
except BaseException as error:
    import marshal
    from multiprocessing.connection import Connection
    Connection(int(fd)).send_bytes(marshal.dumps(("cannot start", f"{type(error).__name__}: {error}")))
    raise SystemExit(1)
worker.main(int(fd), options)
"""


def start_worker_process(options: FingerprinterOptions) -> tuple[subprocess.Popen, socket.socket]:
    """A worker process and the crawl's end of its socket."""
    mine, theirs = socket.socketpair()
    package = __name__.rpartition(".")[0]
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            _BOOTSTRAP,
            package,
            str(theirs.fileno()),
            json.dumps(asdict(options)),
            os.pathsep.join(sys.path),
        ],
        pass_fds=[theirs.fileno()],
        stdin=subprocess.DEVNULL,
        # its own process group: Ctrl-C in a terminal reaches the crawl (Scrapy's shutdown) or the command, which
        # stop their workers, never a worker starting or mid-page (a traceback of its own, a page lost)
        process_group=0,
    )
    theirs.close()
    return process, mine


class WorkersCannotStart(RuntimeError):
    """A worker process failed before it was ready (its package or a library does not import)."""


def started(first_message: object) -> None:
    """Check a worker's first message: ``READY``, else raise :class:`WorkersCannotStart` with its error."""
    if first_message != READY:
        error = (
            first_message[1]
            if isinstance(first_message, tuple) and first_message[:1] == (CANNOT_START,)
            else (f"unexpected first message {first_message!r}")
        )
        raise WorkersCannotStart(error)
