"""A store's writes to its file, each one transaction that counts only once committed, and their faults: a write
that fails (a full disk, an I/O error, the file deleted or replaced) is said once, then tried again later
(``WriteTransaction``); the close tries the last write ``CLOSE_TRIES`` times."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

CLOSE_TRIES = 3  # (an I/O error may pass at once)


class WriteTransaction:
    """Each write as one transaction (``commit``), and what happened while writes fail (``fault``): ``on_fault``
    is told when writes start failing (with what happened) and when one succeeds again (``None``).  While writes
    fail, the next is tried at the next commit: once there are ``commit_every`` more pages and entries to write
    (``to_write``) than at the failed one (``put_off``)."""

    def __init__(
        self, connection: sqlite3.Connection, path: Path, commit_every: int, to_write: Callable[[], int]
    ) -> None:
        self.connection = connection
        self.path = path
        self.commit_every = commit_every
        self.to_write = to_write
        self.on_fault: Callable[[str | None], None] | None = None
        self.fault: str | None = None  # what made the last write fail, while writes fail
        self._retry_at = 0  # while writes fail: how much there is to write when they are tried again
        self._inode = os.stat(path).st_ino  # the file opened (a file put in its place is not written to)

    def put_off(self, retry: bool) -> bool:
        """Is a write put off to the next commit, writes failing (never with ``retry``)?"""
        return self.fault is not None and not retry and self.to_write() < self._retry_at

    def commit(self, write: Callable[[], None]) -> bool:
        """Run ``write`` as one transaction; whether it committed (if not, nothing of it was kept in the file, and
        the fault is said: ``failed``)."""
        try:
            if os.stat(self.path).st_ino != self._inode:
                raise FileNotFoundError(f"{self.path} was replaced by another file")
            with self.connection:  # BEGIN ... COMMIT, or ROLLBACK
                self.connection.execute("BEGIN")
                write()
        except (sqlite3.Error, OSError) as error:
            if self.connection.in_transaction:  # (a failed COMMIT may leave it open)
                self.connection.rollback()
            self.failed(error)
            return False
        return True

    def failed(self, error: BaseException) -> None:
        """A write failed: nothing of it was kept (in the file or in memory); said once, until writes succeed
        again."""
        self._retry_at = self.to_write() + self.commit_every
        if self.fault is None:
            self.fault = (
                f"the file was deleted or replaced ({error})" if isinstance(error, FileNotFoundError) else str(error)
            )
            if self.on_fault is not None:
                self.on_fault(self.fault)

    def succeeded(self) -> None:
        """A write committed, and what it wrote no longer waits: writes that failed work again."""
        if self.fault is not None:
            self.fault = None
            if self.on_fault is not None:
                self.on_fault(None)
