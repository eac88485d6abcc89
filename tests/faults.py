"""Storage faults for the tests: SQLite writes that fail as a full disk makes them fail, at chosen points."""

from __future__ import annotations

import sqlite3
from typing import Any


class FailingWrites(sqlite3.Connection):
    """A connection whose writes (INSERT, UPDATE, DELETE statements, counted from 1 over the process) numbered in
    ``failing`` raise ``sqlite3.OperationalError("database or disk is full")``, as SQLite does on a full disk;
    every other write goes through."""

    failing: set[int] = set()
    writes = 0

    # (the stubs overload execute and executemany by their parameters; one signature serves the test)
    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:  # type: ignore[override]
        self._count(sql)
        return super().execute(sql, *args)

    def executemany(self, sql: str, *args: Any) -> sqlite3.Cursor:  # type: ignore[override]
        self._count(sql)
        return super().executemany(sql, *args)

    @classmethod
    def _count(cls, sql: str) -> None:
        if sql.lstrip().split(None, 1)[0].upper() in ("INSERT", "UPDATE", "DELETE"):
            FailingWrites.writes += 1
            if FailingWrites.writes in cls.failing:
                raise sqlite3.OperationalError("database or disk is full")


def fail_writes(numbers: list[int]) -> None:
    """From now on, every SQLite connection this process opens fails the writes ``numbers``."""
    FailingWrites.failing = set(numbers)
    connect = sqlite3.connect

    def connect_failing(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        return connect(*args, factory=FailingWrites, **kwargs)

    sqlite3.connect = connect_failing  # type: ignore[assignment]  # the patch is the point: every connection fails
