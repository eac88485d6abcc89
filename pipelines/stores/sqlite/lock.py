"""An exclusive lock on a store's file for as long as one crawl uses it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ..errors import StoreNotOpened


class StoreLock:
    """An exclusive lock on ``<store>.lock`` for as long as a crawl uses the store: a second crawl of the
    same spider gets a clear error instead of sharing (and at close, corrupting) the file."""

    def __init__(self, path: Path) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(f"{path}.lock", "a+")  # noqa: SIM115 (held open: the lock lives as long as it)
        except OSError as error:
            raise StoreNotOpened(
                f"{path} cannot be written ({error.strerror or error}); give a path in a folder this crawl can write"
            ) from None
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


if sys.platform == "win32":  # (the test mypy understands: it checks only this platform's branch)
    import msvcrt

    def _exclusive(fd: int) -> None:
        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
else:  # POSIX
    import fcntl

    def _exclusive(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


def check_store_path(path: Path, folder_must_exist: bool) -> None:
    """A path that cannot be a store's, said in a ``StoreNotOpened`` before anything is touched: a folder, a path
    under a file, a folder that does not exist (when it must) or cannot be written."""
    if path.is_dir():
        raise StoreNotOpened(f"{path} is a folder; give the store's file, e.g. {path / 'seen.sqlite'}")
    folder = next((p for p in path.parents if p.exists()), None)
    if folder is not None and not folder.is_dir():
        raise StoreNotOpened(f"{path} cannot be a file: {folder} is a file, not a folder")
    if folder_must_exist and folder != path.parent:
        raise StoreNotOpened(f"{path}: the folder {path.parent} does not exist; create it, or give another path")
    if folder is not None and not os.access(folder, os.W_OK | os.X_OK):
        raise StoreNotOpened(f"{path} cannot be written: {folder} is not writable")
