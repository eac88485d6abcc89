"""Kept pages in one SQLite file per spider: remembered across pause/resume and, when asked, across runs; the
decision log, URL rules and aliases beside them.

``SqliteStore`` decides and keeps; ``Waiting`` holds what is not in the file yet (the pages kept and not confirmed,
those confirmed and not written, the log's entries and the rules changed since the last write); ``SavedState`` is
the file read back (the kept pages' fingerprints at open in crawl scope, or a site's when it is met in a narrower
scope; a page's URL and sketch when a match needs them; the URL rules) and where this run's pages lie in it (the row
map).
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from ...fingerprint.fingerprinter import Fingerprint
from ...matching.matcher import KeptPages, Matcher
from ...matching.policy import Match, Policy
from ...matching.scope import Scope, ScopedMatchers, SiteRows
from ..errors import StoreNotOpened
from ..records import FETCHED_URLS, Alias, Decision, Record, Rule, Skip
from .lock import StoreLock
from .repair import check
from .schema import SCHEMA, SITE_SCHEMA, is_store, remove_store
from .writes import CLOSE_TRIES, Page, WriteBatch, WriteTransaction, write_batch

logger = logging.getLogger(__name__)


class SqliteStore:
    """A ``Store`` in one SQLite file: kept pages remembered across pause, resume and re-runs.

    A kept page is in the index at once (later pages are checked against it)
    but is written to the file only once one of its items got past every
    pipeline (``confirm``, on Scrapy's ``item_scraped``): the file never
    remembers a page the crawl's output does not hold.  A page all of whose
    items a later pipeline dropped is never written.  Confirmed pages are
    written in batches of ``commit_every``, one transaction each (WAL
    journal), ``before_write`` called first (the pipeline flushes the feed
    exports there): a killed process loses at most the pages confirmed since
    the last batch, which the next run checks as new, and the file always
    opens.  At open, the fingerprints are read back as packed arrays (one row
    per batch) and indexed with one sort; URLs and sketches stay on disk and
    are read only for a candidate match.

    A write that fails (a full disk, an I/O error, the file deleted or replaced) changes nothing, in the file or
    in memory: its pages stay to be written, tried again at the next commit (``commit_every`` more to write) and at
    the close; ``on_fault`` is told when writes start failing (with what happened) and when they succeed again
    (``None``).  A file left inconsistent by anything else (an earlier version's failed write) is repaired at open
    (``repair.check``).

    In "site" or "host" scope (``ScopedMatchers``) a site's pages are read back when the site is first met,
    and sites idle longest are let go while their fingerprints take more than ``budget`` bytes; a page keeps
    its row number in the file (the rows of pages never confirmed are left out).  A file remembers its scope
    with its scheme: a file of another scope is moved aside as one of another scheme is.

    Its parts: what waits to be written (``Waiting``), the writes' transaction and faults (``WriteTransaction``),
    their SQL (``write_batch``), and the file read back with the row map (``SavedState``).
    """

    confirms = True

    def __init__(
        self,
        policy: Policy,
        path: Path,
        scheme: str,
        commit_every: int = 100,
        decisions: int = 100_000,
        texts: int = 1_000,
        scope: Scope = Scope.CRAWL,
        budget: int | None = None,
    ) -> None:
        self.policy = policy
        self.scope = scope
        self.budget = budget
        self.path = path
        self.commit_every = max(1, commit_every)
        self.decisions_kept = decisions  # the log's length: older decisions are deleted
        self.texts_kept = texts  # the most recent decisions keep both texts
        self.before_write: Callable[[], None] | None = None
        self.repaired = ""  # what the check at open found and dropped ("" if nothing)
        self._waiting = Waiting()
        self._lock = StoreLock(path)
        try:
            stored_as = scheme if scope is Scope.CRAWL else f"{scheme}/scope={scope.value}"  # a scope is a scheme
            self._connection = _open_file(path, stored_as, scope)
            self._writes = WriteTransaction(self._connection, path, self.commit_every, self._waiting.count)
            if found := check(self._connection, scope is not Scope.CRAWL, repair=True, integrity=False):
                self.repaired = str(found)
            self._saved = SavedState(self._connection, scope)
            self.matcher = self._saved.load(policy, self, budget)
        except (sqlite3.Error, OSError) as error:
            self._lock.close()
            raise StoreNotOpened(
                f"{path} cannot be read as a store of simhash_dedup ({error}); move it aside or delete it "
                f"(or set SIMHASH_DEDUP_PATH to another file), then run again"
            ) from None

    def __len__(self) -> int:
        return self.matcher.rows

    @property
    def remembered(self) -> int:
        return self.matcher.remembered

    @property
    def on_fault(self) -> Callable[[str | None], None] | None:
        """Told when writes start failing (with what happened) and when they succeed again (``None``)."""
        return self._writes.on_fault

    @on_fault.setter
    def on_fault(self, on_fault: Callable[[str | None], None] | None) -> None:
        self._writes.on_fault = on_fault

    @property
    def fault(self) -> str | None:
        """What made the last write fail, while writes fail."""
        return self._writes.fault

    @property
    def unwritten(self) -> int:
        """Kept pages whose items were delivered and that are not written yet (not remembered, if the crawl ended
        now)."""
        return len(self._waiting.confirmed)

    def check_and_add(self, url: str, fingerprint: Fingerprint) -> Match | None:
        """A kept page is remembered in memory until one of its items is confirmed."""
        match, row = self.matcher.check_and_add(url, fingerprint)
        if row is not None:
            self._waiting.kept(row, (url, fingerprint.sketch))
        return match

    def confirm(self, row: int) -> None:
        """An item of the page kept at ``row`` got past every pipeline: the page may be written (once,
        whichever of its items comes first).  A page none of whose items gets there is never written."""
        if self._waiting.confirm(row) and len(self._waiting.confirmed) >= self.commit_every:
            self.flush()

    def record(self, *entries: Record) -> None:
        """An alias is written with its page, never if the page is not (not confirmed yet); the rest with the next
        write, which comes once ``commit_every`` decisions, skips or aliases wait."""
        waiting = self._waiting
        for entry in entries:
            if isinstance(entry, Alias):
                waiting.add_alias(entry)
            elif isinstance(entry, Rule):
                waiting.rules[entry.ident] = entry
            elif not self.decisions_kept:
                continue
            elif isinstance(entry, Decision):
                waiting.decisions.append(entry)
            else:
                waiting.skips.append(entry)
        if max(len(waiting.decisions), len(waiting.skips), len(waiting.aliases)) >= self.commit_every:
            self.flush()

    def save_run(self, run: dict[str, Any]) -> None:
        if self.decisions_kept:
            try:
                self._connection.execute("INSERT INTO runs (run) VALUES (?)", (json.dumps(run),))
            except sqlite3.Error as error:
                self._writes.failed(error)

    def load_rules(self) -> tuple[list[Rule], list[str]]:
        """The rules, and the URLs of the last ``FETCHED_URLS`` pages written (kept, their items exported)."""
        return self._saved.load_rules()

    def flush(self, retry: bool = False) -> None:
        """Write the confirmed pages not written yet, numbered on from the file's last, and the decisions logged
        since the last write: one transaction, after which (only) they count as written.  While writes fail, only
        at the next commit (``commit_every`` more to write than at the failed one), or with ``retry``."""
        if not self._waiting or self._writes.put_off(retry):
            return
        if self._waiting.confirmed and self.before_write is not None:
            self.before_write()
        batch = self._waiting.batch()
        write = partial(
            write_batch,
            self._connection,
            batch,
            self.matcher,
            self._saved.next_row,
            self.decisions_kept,
            self.texts_kept,
        )
        if not self._writes.commit(write):
            return
        if isinstance(self.matcher, ScopedMatchers):
            self.matcher.written(batch.rows)
        else:
            self._saved.written(batch.rows)
        self._waiting.written(batch)
        self._writes.succeeded()

    def close(self) -> None:
        """The last write, tried ``CLOSE_TRIES`` times while it fails (what stays unwritten: ``unwritten``)."""
        for _ in range(CLOSE_TRIES):
            self.flush(retry=True)
            if self.fault is None:
                break
        self._connection.close()
        self._lock.close()

    def url(self, row: int) -> str:
        return self._page(row)[0]

    def sketch(self, row: int) -> bytes | None:
        return self._page(row)[1]

    def alive(self, row: int) -> bool:
        return True

    def _page(self, row: int) -> tuple[str, bytes | None]:
        """URL and sketch of a kept page: in memory until written, then in the file."""
        if (page := self._waiting.page(row)) is not None:
            return page
        return self._saved.page(row)


def _open_file(path: Path, scheme: str, scope: Scope) -> sqlite3.Connection:
    """The store's file, created if there is none; one of another scheme (or scope) moved aside for a new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(path, isolation_level=None)
    if not is_store(connection):
        connection.close()
        raise StoreNotOpened(
            f"{path} is not a store of simhash_dedup (another program's file?) and was left untouched; "
            f"move it aside, or set SIMHASH_DEDUP_PATH to another file"
        )
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=NORMAL")
    connection.executescript(SCHEMA if scope is Scope.CRAWL else SCHEMA + SITE_SCHEMA)
    stored = connection.execute("SELECT value FROM meta WHERE key = 'scheme'").fetchone()
    if stored is None:
        connection.execute("INSERT INTO meta VALUES ('scheme', ?)", (scheme,))
    elif stored[0] != scheme:
        connection.close()
        aside = path.with_name(f"{path.name}.{stored[0].replace('/', '_')}.old")
        path.replace(aside)
        remove_store(path)  # its journal files
        logger.warning(
            "simhash_dedup: %s holds fingerprints of another scheme (%s, now %s): moved to %s, starting afresh.",
            path,
            stored[0],
            scheme,
            aside,
        )
        return _open_file(path, scheme, scope)
    return connection


def reset_store(path: Path) -> bool:
    """Delete the store at ``path`` (for ``SIMHASH_DEDUP_RESET``), only if it is one of this plugin's
    and no other crawl is using it; whether there was one."""
    if not path.exists():
        return False
    with StoreLock(path):
        try:
            connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
            try:
                ours = is_store(connection)
            finally:
                connection.close()
        except sqlite3.Error:
            ours = False
        if not ours:
            raise StoreNotOpened(
                f"{path} is not a store of simhash_dedup, so the reset left it untouched; "
                f"move it aside, or set SIMHASH_DEDUP_PATH to another file"
            )
        remove_store(path)
    return True


class Waiting:
    """What is not in the file yet.  A kept page waits for one of its items to be confirmed (``confirm``), then for
    the next write; an alias of a page not confirmed yet waits for its page (it is never written if the page is
    not).  A write takes a ``WriteBatch`` and, once it committed (only then), ``written`` lets go of what it took:
    entries added meanwhile stay for the next write."""

    def __init__(self) -> None:
        self.decisions: list[Decision] = []
        self.skips: list[Skip] = []
        self.aliases: list[Alias] = []
        self.rules: dict[tuple[str, str, str], Rule] = {}  # changed
        self.confirmed: dict[int, Page] = {}  # row -> page: confirmed, not written yet
        self._unconfirmed: dict[int, Page] = {}  # row -> page: kept, no item past the pipelines yet
        self._unconfirmed_rows: dict[str, int] = {}  # the URL of a page kept, not confirmed yet -> its row
        self._naming: dict[int, list[Alias]] = {}  # kept, not confirmed yet -> the aliases it gets once written

    def kept(self, row: int, page: Page) -> None:
        self._unconfirmed[row] = page
        self._unconfirmed_rows[page[0]] = row

    def confirm(self, row: int) -> bool:
        """The page kept at ``row`` is to be written, with its aliases; whether it was waiting for that (not if it
        was confirmed before, by another of its items)."""
        if (page := self._unconfirmed.pop(row, None)) is None:
            return False
        self.confirmed[row] = page
        if self._unconfirmed_rows.get(page[0]) == row:
            del self._unconfirmed_rows[page[0]]
        self.aliases.extend(self._naming.pop(row, ()))
        return True

    def add_alias(self, alias: Alias) -> bool:
        """Whether ``alias`` is written with the next write; if not, with its page (not confirmed yet)."""
        if (row := self._unconfirmed_rows.get(alias.kept_url)) is not None:
            self._naming.setdefault(row, []).append(alias)
            return False
        self.aliases.append(alias)
        return True

    def page(self, row: int) -> Page | None:
        """A kept page not written yet (``None``: it is in the file)."""
        for waiting in (self._unconfirmed, self.confirmed):
            if row in waiting:
                return waiting[row]
        return None

    def __bool__(self) -> bool:
        """Is there anything to write?"""
        return bool(self.confirmed or self.decisions or self.skips or self.rules or self.aliases)

    def count(self) -> int:
        """Pages and log entries to write (the rules changed are not counted)."""
        return len(self.confirmed) + len(self.decisions) + len(self.skips) + len(self.aliases)

    def batch(self) -> WriteBatch:
        rows = sorted(self.confirmed)
        return WriteBatch(
            rows,
            [self.confirmed[row] for row in rows],
            self.decisions[:],
            self.skips[:],
            self.aliases[:],
            list(self.rules.values()),
        )

    def written(self, batch: WriteBatch) -> None:
        """``batch`` is in the file (its transaction committed): what it took no longer waits."""
        for row in batch.rows:
            del self.confirmed[row]
        del self.decisions[: len(batch.decisions)], self.skips[: len(batch.skips)], self.aliases[: len(batch.aliases)]
        for rule in batch.rules:
            if self.rules.get(rule.ident) is rule:
                del self.rules[rule.ident]


class SavedState:
    """The file's pages as rows of the store's matcher, and the way back from a row to its page in the file.

    In crawl scope the file's pages are read back at open (``load``), numbered from 0 whatever their rows in the
    file (those of pages never confirmed are left out); this run's pages written are numbered on from the file's
    last row (``written``).  In "site" or "host" scope a page keeps its row in the file, and a site's pages are
    read back when the site is first met (``site_rows``)."""

    def __init__(self, connection: sqlite3.Connection, scope: Scope) -> None:
        self.connection = connection
        self.scope = scope
        self.next_row = 0  # the file's next row
        self.loaded = 0  # rows read from the file at open
        self._file_rows = np.zeros(0, dtype=np.int64)  # (crawl scope) their rows in the file
        self._written_as: dict[int, int] = {}  # (crawl scope) this run's rows written -> their row in the file

    def load(self, policy: Policy, pages: KeptPages, budget: int | None) -> Matcher | ScopedMatchers:
        """The store's matcher (``pages``: the store), holding the pages kept by earlier crawls (crawl scope; in a
        narrower scope, a site's pages are read when it is met, under ``budget``)."""
        (self.next_row,) = self.connection.execute("SELECT coalesce(max(row) + 1, 0) FROM pages").fetchone()
        if self.scope is not Scope.CRAWL:
            rows = self.next_row
            self.loaded = rows
            return ScopedMatchers(policy, self.scope, pages, budget, self.site_rows, rows, rows)
        matcher = Matcher(policy, pages)
        batches = self.connection.execute(
            "SELECT first_row, content, structure, present, addresses FROM batches ORDER BY first_row"
        )
        parts = [
            (
                np.arange(f, f + len(c) // 8, dtype=np.int64),
                np.frombuffer(c, dtype="<u8"),
                np.frombuffer(s, dtype="<u8"),
                np.frombuffer(p, dtype=bool),
                np.frombuffer(a, dtype="<u8"),
            )
            for f, c, s, p, a in batches
        ]
        if parts:
            self._file_rows, content, structure, present, addresses = (np.concatenate(column) for column in zip(*parts))
            matcher.load_rows(
                np.column_stack([content, structure]), present.reshape(-1, 3), addresses.astype(np.uint64)
            )
        self.loaded = matcher.remembered = matcher.rows
        return matcher

    def site_rows(self, site: str) -> SiteRows:
        """A site's written pages: their rows (ascending), fingerprints, present flags and addresses' keys."""
        parts = [
            (
                np.frombuffer(r, dtype="<i8"),
                np.frombuffer(c, dtype="<u8"),
                np.frombuffer(s, dtype="<u8"),
                np.frombuffer(p, dtype=bool).reshape(-1, 3),
                np.frombuffer(a, dtype="<u8"),
            )
            for r, c, s, p, a in self.connection.execute(
                "SELECT rows, content, structure, present, addresses FROM site_batches WHERE site = ?", (site,)
            )
        ]
        if not parts:
            return (
                np.zeros(0, dtype=np.int64),
                np.zeros((0, 2), dtype=np.uint64),
                np.zeros((0, 3), dtype=bool),
                np.zeros(0, dtype=np.uint64),
            )
        rows, content, structure, present, addresses = (np.concatenate(column) for column in zip(*parts))
        order = np.argsort(rows, kind="stable")  # pages are confirmed out of order
        return (
            rows[order],
            np.column_stack([content, structure])[order],
            present[order],
            addresses.astype(np.uint64)[order],
        )

    def written(self, rows: list[int]) -> None:
        """(Crawl scope) the pages at ``rows`` are in the file now, numbered on from its last row."""
        for n, row in enumerate(rows):
            self._written_as[row] = self.next_row + n
        self.next_row += len(rows)

    def page(self, row: int) -> tuple[str, bytes | None]:
        """URL and sketch of a kept page written to the file."""
        if self.scope is not Scope.CRAWL:
            written = row
        else:
            written = int(self._file_rows[row]) if row < self.loaded else self._written_as[row]
        return self.connection.execute("SELECT url, sketch FROM pages WHERE row = ?", (written,)).fetchone()

    def load_rules(self) -> tuple[list[Rule], list[str]]:
        """The rules, and the URLs of the last ``FETCHED_URLS`` pages written (kept, their items exported)."""
        rules = [
            Rule(*row) for row in self.connection.execute("SELECT host, kind, name, support, refuted_by FROM rules")
        ]
        urls = self.connection.execute("SELECT url FROM pages ORDER BY row DESC LIMIT ?", (FETCHED_URLS,))
        return rules, [url for (url,) in reversed(urls.fetchall())]
