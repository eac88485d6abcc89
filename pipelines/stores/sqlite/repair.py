"""A store file's own invariants, checked when it opens and by ``simhash-dedup check``: every kept row of a batch
has its page (URL and sketch) and every page its batch.  A write is one transaction, so only a file left by an
earlier version's failed write (a full disk) or by a damaged disk breaks them; what breaks them is dropped (those
pages are checked as new by the next crawl), with one line saying how many."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import StoreNotOpened
from .lock import StoreLock
from .schema import is_store, tables


@dataclass
class Findings:
    """What a check found (and, when asked, dropped)."""

    integrity: list[str] = field(default_factory=list)  # SQLite's ``PRAGMA integrity_check`` lines, if not "ok"
    batches_without_pages: int = 0  # batches (rows of fingerprints) some of whose pages are missing
    rows_without_pages: int = 0  # the rows those batches held
    pages_without_rows: int = 0  # pages no batch holds the fingerprints of

    def __bool__(self) -> bool:
        return bool(self.integrity or self.batches_without_pages or self.pages_without_rows)

    def __str__(self) -> str:
        said = []
        if self.batches_without_pages:
            said.append(
                f"{self.rows_without_pages:,} kept pages' fingerprints without their page "
                f"({self.batches_without_pages:,} batches)"
            )
        if self.pages_without_rows:
            said.append(f"{self.pages_without_rows:,} pages without their fingerprints")
        said += [f"SQLite: {line}" for line in self.integrity[:5]]
        return "; ".join(said) or "no problem"


def check(connection: sqlite3.Connection, site_scope: bool, repair: bool, integrity: bool = True) -> Findings:
    """The store's problems (with ``integrity``, SQLite's own check too, which reads the whole file); with
    ``repair``, the batches missing a page and the pages without a batch deleted (one transaction).  The pages' rows
    are read as one array: ~8 bytes a kept page."""
    found = Findings(
        integrity=[line for (line,) in connection.execute("PRAGMA integrity_check") if line != "ok"]
        if integrity
        else []
    )
    pages = np.fromiter((row for (row,) in connection.execute("SELECT row FROM pages")), dtype=np.int64)
    table, rows_of = ("site_batches", _site_rows) if site_scope else ("batches", _crawl_rows)
    held, broken, every = [], [], []
    for key, rows in rows_of(connection):
        every.append(rows)
        if np.isin(rows, pages).all():
            held.append(rows)
        else:
            broken.append(key)
            found.batches_without_pages += 1
            found.rows_without_pages += len(rows)
    found.pages_without_rows = int((~np.isin(pages, _joined(every))).sum())
    orphans = pages[~np.isin(pages, _joined(held))]  # and the pages of the batches dropped
    if repair and (broken or len(orphans)):
        column = "id" if site_scope else "first_row"
        with connection:
            connection.execute("BEGIN")
            connection.executemany(f"DELETE FROM {table} WHERE {column} = ?", [(k,) for k in broken])
            connection.executemany("DELETE FROM pages WHERE row = ?", [(int(row),) for row in orphans])
    return found


def _joined(arrays: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)


def _crawl_rows(connection: sqlite3.Connection) -> list[tuple[int, np.ndarray]]:
    return [
        (first, np.arange(first, first + count, dtype=np.int64))
        for first, count in connection.execute("SELECT first_row, length(content) / 8 FROM batches")
    ]


def _site_rows(connection: sqlite3.Connection) -> list[tuple[int, np.ndarray]]:
    return [
        (ident, np.frombuffer(rows, dtype="<i8").astype(np.int64))
        for ident, rows in connection.execute("SELECT id, rows FROM site_batches")
    ]


def check_file(path: Path, repair: bool) -> tuple[Findings, int]:
    """``simhash-dedup check``: the store at ``path`` checked whole (SQLite's check too), repaired if asked, under
    its lock (a crawl using it makes this a ``StoreNotOpened``); the findings and the kept pages it holds."""
    if not path.is_file():
        raise StoreNotOpened(f"{path} cannot be read: no such file")
    with StoreLock(path):
        try:
            connection = sqlite3.connect(path, isolation_level=None)
            try:
                if not is_store(connection) or not tables(connection):
                    raise StoreNotOpened(f"{path} is not a store of simhash_dedup")
                found = check(connection, "site_batches" in tables(connection), repair)
                (pages,) = connection.execute("SELECT count(*) FROM pages").fetchone()
                return found, pages
            finally:
                connection.close()
        except sqlite3.Error as error:
            raise StoreNotOpened(f"{path} cannot be read as a store of simhash_dedup ({error})") from None
