"""A file a command writes, replaced only when the run succeeds: the ``-o`` outputs of ``simhash-dedup`` and
its report.

May import: nothing of the package (the lowest layer: every layer may use it).
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import IO


class Output:
    """A file a command writes, under a temporary name beside it until the run has read something (``done``):
    a run that fails or reads nothing leaves an earlier file of that name as it was.  Interrupted, a run that
    remembers its pages in a store (``resumable``) keeps what it wrote, as ``NAME.part1`` (or the next number
    free), since the store now holds those pages as seen."""

    def __init__(self, path: str, resumable: bool = False) -> None:
        self.path = Path(path)
        self.writing = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        self.resumable = resumable
        self.done = False
        self.kept_as: Path | None = None  # where an interrupted run left what it wrote

    def __enter__(self) -> IO[str]:
        if not self.path.parent.is_dir():
            raise ValueError(f"{self.path}: there is no folder {self.path.parent}")
        self.file = open(self.writing, "w", encoding="utf-8", newline="")
        return self.file

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        self.file.close()
        if kind is None and self.done:
            os.replace(self.writing, self.path)
        elif kind is KeyboardInterrupt and self.resumable:
            self.kept_as = next(
                part
                for number in itertools.count(1)
                if not (part := self.path.with_name(f"{self.path.name}.part{number}")).exists()
            )
            os.replace(self.writing, self.kept_as)
        else:
            self.writing.unlink(missing_ok=True)
