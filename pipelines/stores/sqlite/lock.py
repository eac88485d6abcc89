"""An exclusive lock on a store's file for as long as one crawl uses it."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import StoreNotOpened


class StoreLock:
    """An exclusive lock on ``<store>.lock`` for as long as a crawl uses the store: a second crawl of the
    same spider gets a clear error instead of sharing (and at close, corrupting) the file."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(f"{path}.lock", "a+")  # noqa: SIM115 (held open: the lock lives as long as it)
        try:
            _exclusive(self._file.fileno())
        except OSError:
            self._file.close()
            raise StoreNotOpened(
                f"{path} is in use by another running crawl; wait for it to finish, or give this crawl its "
                f"own store (SIMHASH_DEDUP_PATH, or JOBDIR)"
            ) from None

    def close(self) -> None:
        self._file.close()  # releases the lock

    def __enter__(self) -> StoreLock:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


if os.name == "posix":
    import fcntl

    def _exclusive(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
else:  # Windows
    import msvcrt

    def _exclusive(fd: int) -> None:
        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
