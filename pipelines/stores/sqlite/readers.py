"""Read a store's file without opening it as a store (a running crawl may hold it): the decision log and runs,
the URL rules and skips, the aliases.  For the report and the CLI."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import StoreNotOpened
from ..records import Alias, Decision, Rule, Skip
from .schema import DECISION_COLUMNS, is_store, tables


def read_log(path: Path) -> tuple[list[Decision], list[dict[str, Any]]]:
    """The decision log and the runs kept in the store at ``path`` (read-only: a running crawl may hold it)."""
    with _read_only(path) as connection:
        if not is_store(connection):
            raise StoreNotOpened(f"{path} is not a store of simhash_dedup")
        if "decisions" not in tables(connection):  # a store written before the log existed
            return [], []
        rows = connection.execute(f"SELECT {DECISION_COLUMNS} FROM decisions ORDER BY id")
        decisions = [Decision(*row) for row in rows]
        runs = [json.loads(run) for (run,) in connection.execute("SELECT run FROM runs ORDER BY id")]
        return decisions, runs


def read_rules(path: Path) -> tuple[list[Rule], list[Skip]]:
    """The URL rules and the skipped links and requests kept in the store at ``path`` (read-only)."""
    with _read_only(path) as connection:
        if not {"rules", "skipped"} <= tables(connection):  # a store written before rules existed
            return [], []
        rules = [Rule(*row) for row in connection.execute("SELECT host, kind, name, support, refuted_by FROM rules")]
        skips = [
            Skip(*row) for row in connection.execute("SELECT time, kind, url, because, rule FROM skipped ORDER BY id")
        ]
        return rules, skips


def read_aliases(path: Path) -> list[Alias]:
    """The URLs that name the kept pages of the store at ``path``, oldest first (read-only)."""
    with _read_only(path) as connection:
        if "aliases" not in tables(connection):  # a store written before aliases were kept
            return []
        rows = connection.execute("SELECT time, url, kept_url, reason FROM aliases ORDER BY time, rowid")
        return [Alias(*row) for row in rows]


@contextlib.contextmanager
def _read_only(path: Path) -> Iterator[sqlite3.Connection]:
    """The store at ``path``, opened read-only (a running crawl may hold it) for the readers above; an SQLite
    error on the way is one ``StoreNotOpened`` that names the file."""
    try:
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            yield connection
        finally:
            connection.close()
    except sqlite3.Error as error:
        raise StoreNotOpened(f"{path} cannot be read as a store of simhash_dedup ({error})") from None
