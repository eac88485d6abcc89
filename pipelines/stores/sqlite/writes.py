"""A store's writes to its file: what one write takes (``WriteBatch``), its SQL (``write_batch``), and its
transaction, which counts only once committed, with its faults: a write that fails (a full disk, an I/O error, the
file deleted or replaced) is said once, then tried again later (``WriteTransaction``); the close tries the last
write ``CLOSE_TRIES`` times.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...matching.matcher import Matcher
from ...matching.scope import ScopedMatchers
from ..records import CANONICAL, DECISION_FIELDS, Alias, Decision, Rule, Skip, field_values
from .schema import DECISION_COLUMNS

#: A kept page's URL and sketch.
Page = tuple[str, bytes | None]


@dataclass
class WriteBatch:
    """What one write takes: the rows of the confirmed pages (ascending) with their URLs and sketches, the log's
    entries and the rules changed, as they were when the write began."""

    rows: list[int]
    pages: list[Page]
    decisions: list[Decision]
    skips: list[Skip]
    aliases: list[Alias]
    rules: list[Rule]


def write_batch(
    connection: sqlite3.Connection,
    batch: WriteBatch,
    matcher: Matcher | ScopedMatchers,
    first_row: int,
    decisions_kept: int,
    texts_kept: int,
) -> None:
    """Write ``batch``: in crawl scope its pages numbered on from ``first_row`` (the file's next row), in a narrower
    scope under their own rows; the log cut to its newest ``decisions_kept`` entries, of which the ``texts_kept``
    newest decisions keep their texts."""
    if batch.rows:
        if isinstance(matcher, ScopedMatchers):
            _write_site_pages(connection, matcher, batch)
        else:
            _write_pages(connection, matcher, batch, first_row)
    _write_decisions(connection, batch.decisions, decisions_kept, texts_kept)
    _write_skips_and_rules(connection, batch.skips, batch.rules, decisions_kept)
    _write_aliases(connection, batch.aliases)


def _write_pages(connection: sqlite3.Connection, matcher: Matcher, batch: WriteBatch, first: int) -> None:
    """The confirmed pages at rows ``first`` on, and their fingerprints as one row of ``batches``."""
    rows = batch.rows
    connection.executemany(
        "INSERT INTO pages (row, url, sketch) VALUES (?, ?, ?)",
        [(first + n, *page) for n, page in enumerate(batch.pages)],
    )
    connection.execute(
        "INSERT INTO batches (first_row, content, structure, present, addresses) VALUES (?, ?, ?, ?, ?)",
        (
            first,
            matcher.fingerprints[rows, 0].astype("<u8").tobytes(),
            matcher.fingerprints[rows, 1].astype("<u8").tobytes(),
            matcher.present[rows].tobytes(),
            matcher.addresses[rows].astype("<u8").tobytes(),
        ),
    )


def _write_site_pages(connection: sqlite3.Connection, matcher: ScopedMatchers, batch: WriteBatch) -> None:
    """The confirmed pages under their own rows, and per site a row of ``site_batches``."""
    rows = batch.rows
    connection.executemany(
        "INSERT INTO pages (row, url, sketch) VALUES (?, ?, ?)", [(row, *page) for row, page in zip(rows, batch.pages)]
    )
    fingerprints, present, addresses, sites = matcher.unwritten(rows)
    of_site: dict[str, list[int]] = {}
    for n, site in enumerate(sites):
        of_site.setdefault(site, []).append(n)
    connection.executemany(
        "INSERT INTO site_batches (site, rows, content, structure, present, addresses) VALUES (?, ?, ?, ?, ?, ?)",
        [
            (
                site,
                np.array(rows, dtype="<i8")[at].tobytes(),
                fingerprints[at, 0].astype("<u8").tobytes(),
                fingerprints[at, 1].astype("<u8").tobytes(),
                present[at].tobytes(),
                addresses[at].astype("<u8").tobytes(),
            )
            for site, at in of_site.items()
        ],
    )


def _write_decisions(connection: sqlite3.Connection, added: list[Decision], kept: int, texts_kept: int) -> None:
    """Append the decisions; then the oldest beyond ``kept`` go, and those beyond ``texts_kept`` lose their texts
    (only the rows that just crossed that line are touched)."""
    if not added:
        return
    connection.executemany(
        f"INSERT INTO decisions ({DECISION_COLUMNS}) VALUES ({', '.join('?' * (len(DECISION_FIELDS) + 2))})",
        [field_values(decision) for decision in added],
    )
    (last,) = connection.execute("SELECT max(id) FROM decisions").fetchone()
    connection.execute("DELETE FROM decisions WHERE id <= ?", (last - kept,))
    cut = last - texts_kept
    connection.execute(
        "UPDATE decisions SET text = NULL, kept_text = NULL WHERE id > ? AND id <= ?", (cut - len(added), cut)
    )


def _write_skips_and_rules(connection: sqlite3.Connection, added: list[Skip], rules: list[Rule], kept: int) -> None:
    """Append the skipped links and requests (the newest ``kept`` stay); write the rules."""
    if added:
        connection.executemany(
            "INSERT INTO skipped (time, kind, url, because, rule) VALUES (?, ?, ?, ?, ?)",
            [field_values(skip) for skip in added],
        )
        (last,) = connection.execute("SELECT max(id) FROM skipped").fetchone()
        connection.execute("DELETE FROM skipped WHERE id <= ?", (last - kept,))
    if rules:
        connection.executemany(
            "INSERT OR REPLACE INTO rules (host, kind, name, support, refuted_by) VALUES (?, ?, ?, ?, ?)",
            [(r.host, r.kind, r.name, r.support, r.refuted_by) for r in rules],
        )


def _write_aliases(connection: sqlite3.Connection, added: list[Alias]) -> None:
    if added:
        # a URL's first naming stays, but a canonical URL names the page that took it last (a page renamed)
        for replace, sql in ((False, "INSERT OR IGNORE"), (True, "INSERT OR REPLACE")):
            connection.executemany(
                f"{sql} INTO aliases (url, kept_url, reason, time) VALUES (?, ?, ?, ?)",
                [(a.url, a.kept_url, a.reason, a.time) for a in added if (a.reason == CANONICAL) == replace],
            )


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
