"""Kept pages in one SQLite file per spider: remembered across pause/resume and, when asked, across runs;
the decision log, URL rules and aliases beside them."""

from __future__ import annotations

import json
import logging
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ...fingerprint.fingerprinter import Fingerprint
from ...matching.decision_log import CANONICAL, DECISION_FIELDS, Alias, Decision, Skip, field_values
from ...matching.matcher import Matcher
from ...matching.policy import Match, Policy
from ...matching.scope import Scope
from ...matching.scoped import ScopedMatchers, SiteRows
from ...matching.urlrules import FETCHED_URLS, Rule
from ..errors import StoreNotOpened
from .lock import StoreLock
from .repair import check
from .schema import DECISION_COLUMNS, SCHEMA, SITE_SCHEMA, is_store, remove_store

logger = logging.getLogger(__name__)

CLOSE_TRIES = 3  # (an I/O error may pass at once)


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
    the close; ``on_fault`` is
    told when writes start failing (with what happened) and when they succeed again (``None``).  A file left
    inconsistent by anything else (an earlier version's failed write) is repaired at open (``repair.check``).

    In "site" or "host" scope (``ScopedMatchers``) a site's pages are read back when the site is first met,
    and sites idle longest are let go while their fingerprints take more than ``budget`` bytes; a page keeps
    its row number in the file (the rows of pages never confirmed are left out).  A file remembers its scope
    with its scheme: a file of another scope is moved aside as one of another scheme is.
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
        self.matcher: Matcher | ScopedMatchers = Matcher(policy, self)
        self.path = path
        self.commit_every = max(1, commit_every)
        self.decisions_kept = decisions  # the log's length: older decisions are deleted
        self.texts_kept = texts  # the most recent decisions keep both texts
        self._decisions: list[Decision] = []  # not written yet
        self._skips: list[Skip] = []  # not written yet
        self._aliases: list[Alias] = []  # not written yet
        self._naming: dict[int, list[Alias]] = {}  # kept, not confirmed yet -> the aliases it gets once written
        self._unconfirmed_rows: dict[str, int] = {}  # the URL of a page kept, not confirmed yet -> its row
        self._rules: dict[tuple[str, str, str], Rule] = {}  # changed, not written yet
        self.before_write: Callable[[], None] | None = None
        self.on_fault: Callable[[str | None], None] | None = None
        self.fault: str | None = None  # what made the last write fail, while writes fail
        self.repaired = ""  # what the check at open found and dropped ("" if nothing)
        self._retry_at = 0  # while writes fail: how much there is to write when they are tried again
        self._unconfirmed: dict[int, tuple[str, bytes | None]] = {}  # kept, no item past the pipelines yet
        self._pending: dict[int, tuple[str, bytes | None]] = {}  # confirmed, not yet written
        self._written_as: dict[int, int] = {}  # this run's rows written -> their row in the file
        self._loaded = 0  # rows read from the file at open
        self._file_rows = np.zeros(0, dtype=np.int64)  # (crawl scope) their rows in the file
        self._next_row = 0  # the file's next row
        self._lock = StoreLock(path)
        try:
            self._connection = self._open(path, scheme if scope is Scope.CRAWL else f"{scheme}/scope={scope.value}")
            self._inode = os.stat(path).st_ino
            if found := check(self._connection, scope is not Scope.CRAWL, repair=True, integrity=False):
                self.repaired = str(found)
            self._load()
        except (sqlite3.Error, OSError) as error:
            self._lock.close()
            raise StoreNotOpened(
                f"{path} cannot be read as a store of simhash_dedup ({error}); move it aside or delete it "
                f"(or set SIMHASH_DEDUP_PATH to another file), then run again"
            ) from None

    def _open(self, path: Path, scheme: str) -> sqlite3.Connection:
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
        connection.executescript(SCHEMA if self.scope is Scope.CRAWL else SCHEMA + SITE_SCHEMA)
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
            return self._open(path, scheme)
        return connection

    def _load(self) -> None:
        (self._next_row,) = self._connection.execute("SELECT coalesce(max(row) + 1, 0) FROM pages").fetchone()
        if self.scope is not Scope.CRAWL:
            rows = self._next_row
            self.matcher = ScopedMatchers(self.policy, self.scope, self, self.budget, self._site_rows, rows, rows)
            self._loaded = rows
            return
        batches = self._connection.execute(
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
            self.matcher.load_rows(
                np.column_stack([content, structure]), present.reshape(-1, 3), addresses.astype(np.uint64)
            )
        self._loaded = self.matcher.remembered = self.matcher.rows

    def _site_rows(self, site: str) -> SiteRows:
        """A site's written pages: their rows (ascending), fingerprints, present flags and addresses' keys."""
        parts = [
            (
                np.frombuffer(r, dtype="<i8"),
                np.frombuffer(c, dtype="<u8"),
                np.frombuffer(s, dtype="<u8"),
                np.frombuffer(p, dtype=bool).reshape(-1, 3),
                np.frombuffer(a, dtype="<u8"),
            )
            for r, c, s, p, a in self._connection.execute(
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

    def __len__(self) -> int:
        return self.matcher.rows

    @property
    def remembered(self) -> int:
        return self.matcher.remembered

    def check_and_add(self, url: str, fingerprint: Fingerprint) -> Match | None:
        """A kept page is remembered in memory until one of its items is confirmed."""
        match, row = self.matcher.check_and_add(url, fingerprint)
        if row is not None:
            self._unconfirmed[row] = (url, fingerprint.sketch)
            self._unconfirmed_rows[url] = row
        return match

    def confirm(self, row: int) -> None:
        """An item of the page kept at ``row`` got past every pipeline: the page may be written (once,
        whichever of its items comes first).  A page none of whose items gets there is never written."""
        if (page := self._unconfirmed.pop(row, None)) is None:
            return
        self._pending[row] = page
        if self._unconfirmed_rows.get(page[0]) == row:
            del self._unconfirmed_rows[page[0]]
        self._aliases.extend(self._naming.pop(row, ()))
        if len(self._pending) >= self.commit_every:
            self.flush()

    def record(self, decision: Decision) -> None:
        if self.decisions_kept:
            self._decisions.append(decision)
            if len(self._decisions) >= self.commit_every:
                self.flush()

    def save_run(self, run: dict[str, Any]) -> None:
        if self.decisions_kept:
            try:
                self._connection.execute("INSERT INTO runs (run) VALUES (?)", (json.dumps(run),))
            except sqlite3.Error as error:
                self._failed(error)

    def record_skip(self, skip: Skip) -> None:
        if self.decisions_kept:
            self._skips.append(skip)
            if len(self._skips) >= self.commit_every:
                self.flush()

    def record_alias(self, alias: Alias) -> None:
        if (row := self._unconfirmed_rows.get(alias.kept_url)) is not None:
            self._naming.setdefault(row, []).append(alias)  # written with its page, never if the page is not
            return
        self._aliases.append(alias)
        if len(self._aliases) >= self.commit_every:
            self.flush()

    def save_rules(self, rules: list[Rule]) -> None:
        self._rules.update((rule.ident, rule) for rule in rules)

    def load_rules(self) -> tuple[list[Rule], list[str]]:
        """The rules, and the URLs of the last ``FETCHED_URLS`` pages written (kept, their items exported)."""
        rules = [
            Rule(*row) for row in self._connection.execute("SELECT host, kind, name, support, refuted_by FROM rules")
        ]
        urls = self._connection.execute("SELECT url FROM pages ORDER BY row DESC LIMIT ?", (FETCHED_URLS,))
        return rules, [url for (url,) in reversed(urls.fetchall())]

    def flush(self, retry: bool = False) -> None:
        """Write the confirmed pages not written yet, numbered on from the file's last, and the decisions logged
        since the last write: one transaction, after which (only) they count as written.  While writes fail, only
        at the next commit (``commit_every`` more to write than at the failed one), or with ``retry``."""
        if not (self._pending or self._decisions or self._skips or self._rules or self._aliases):
            return
        if self.fault is not None and not retry and self._to_write() < self._retry_at:
            return
        if self._pending and self.before_write is not None:
            self.before_write()
        rows, decisions, skips, aliases = (
            sorted(self._pending),
            len(self._decisions),
            len(self._skips),
            len(self._aliases),
        )
        rules = list(self._rules.values())
        try:
            if os.stat(self.path).st_ino != self._inode:
                raise FileNotFoundError(f"{self.path} was replaced by another file")
            with self._connection:  # BEGIN ... COMMIT, or ROLLBACK
                self._connection.execute("BEGIN")
                self._write_pages(rows)
                self._write_decisions(self._decisions[:decisions])
                self._write_skips_and_rules(self._skips[:skips], rules)
                self._write_aliases(self._aliases[:aliases])
        except (sqlite3.Error, OSError) as error:
            if self._connection.in_transaction:  # (a failed COMMIT may leave it open)
                self._connection.rollback()
            self._failed(error)
            return
        self._written(rows)
        del self._decisions[:decisions], self._skips[:skips], self._aliases[:aliases]
        for rule in rules:
            if self._rules.get(rule.ident) is rule:
                del self._rules[rule.ident]
        if self.fault is not None:
            self.fault = None
            if self.on_fault is not None:
                self.on_fault(None)

    def _to_write(self) -> int:
        return len(self._pending) + len(self._decisions) + len(self._skips) + len(self._aliases)

    def _failed(self, error: BaseException) -> None:
        """A write failed: nothing of it was kept (in the file or here); said once, until writes succeed again."""
        self._retry_at = self._to_write() + self.commit_every
        if self.fault is None:
            self.fault = (
                f"the file was deleted or replaced ({error})" if isinstance(error, FileNotFoundError) else str(error)
            )
            if self.on_fault is not None:
                self.on_fault(self.fault)

    @property
    def unwritten(self) -> int:
        """Kept pages whose items were delivered and that are not written yet (not remembered, if the crawl ended
        now)."""
        return len(self._pending)

    def _write_pages(self, rows: list[int]) -> None:
        if not rows:
            return
        if isinstance(self.matcher, ScopedMatchers):
            self._write_site_pages(self.matcher, rows)
            return
        first = self._next_row
        self._connection.executemany(
            "INSERT INTO pages (row, url, sketch) VALUES (?, ?, ?)",
            [(first + n, *self._pending[row]) for n, row in enumerate(rows)],
        )
        self._connection.execute(
            "INSERT INTO batches (first_row, content, structure, present, addresses) VALUES (?, ?, ?, ?, ?)",
            (
                first,
                self.matcher.fingerprints[rows, 0].astype("<u8").tobytes(),
                self.matcher.fingerprints[rows, 1].astype("<u8").tobytes(),
                self.matcher.present[rows].tobytes(),
                self.matcher.addresses[rows].astype("<u8").tobytes(),
            ),
        )

    def _written(self, rows: list[int]) -> None:
        """The pages at ``rows`` are in the file now (their transaction committed)."""
        if isinstance(self.matcher, ScopedMatchers):
            self.matcher.written(rows)
        else:
            for n, row in enumerate(rows):
                self._written_as[row] = self._next_row + n
            self._next_row += len(rows)
        for row in rows:
            del self._pending[row]

    def _write_site_pages(self, matcher: ScopedMatchers, rows: list[int]) -> None:
        """The confirmed pages under their own rows, and per site a row of ``site_batches``."""
        self._connection.executemany(
            "INSERT INTO pages (row, url, sketch) VALUES (?, ?, ?)", [(row, *self._pending[row]) for row in rows]
        )
        fingerprints, present, addresses, sites = matcher.unwritten(rows)
        of_site: dict[str, list[int]] = {}
        for n, site in enumerate(sites):
            of_site.setdefault(site, []).append(n)
        self._connection.executemany(
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

    def _write_decisions(self, added: list[Decision]) -> None:
        """Append the decisions; then the oldest beyond ``decisions_kept`` go, and those beyond
        ``texts_kept`` lose their texts (only the rows that just crossed that line are touched)."""
        if not added:
            return
        self._connection.executemany(
            f"INSERT INTO decisions ({DECISION_COLUMNS}) VALUES ({', '.join('?' * (len(DECISION_FIELDS) + 2))})",
            [field_values(decision) for decision in added],
        )
        (last,) = self._connection.execute("SELECT max(id) FROM decisions").fetchone()
        self._connection.execute("DELETE FROM decisions WHERE id <= ?", (last - self.decisions_kept,))
        cut = last - self.texts_kept
        self._connection.execute(
            "UPDATE decisions SET text = NULL, kept_text = NULL WHERE id > ? AND id <= ?", (cut - len(added), cut)
        )

    def _write_skips_and_rules(self, added: list[Skip], rules: list[Rule]) -> None:
        """Append the skipped links and requests (the newest ``decisions_kept`` stay); write the rules."""
        if added:
            self._connection.executemany(
                "INSERT INTO skipped (time, kind, url, because, rule) VALUES (?, ?, ?, ?, ?)",
                [field_values(skip) for skip in added],
            )
            (last,) = self._connection.execute("SELECT max(id) FROM skipped").fetchone()
            self._connection.execute("DELETE FROM skipped WHERE id <= ?", (last - self.decisions_kept,))
        if rules:
            self._connection.executemany(
                "INSERT OR REPLACE INTO rules (host, kind, name, support, refuted_by) VALUES (?, ?, ?, ?, ?)",
                [(r.host, r.kind, r.name, r.support, r.refuted_by) for r in rules],
            )

    def _write_aliases(self, added: list[Alias]) -> None:
        if added:
            # a URL's first naming stays, but a canonical URL names the page that took it last (a page renamed)
            for replace, sql in ((False, "INSERT OR IGNORE"), (True, "INSERT OR REPLACE")):
                self._connection.executemany(
                    f"{sql} INTO aliases (url, kept_url, reason, time) VALUES (?, ?, ?, ?)",
                    [(a.url, a.kept_url, a.reason, a.time) for a in added if (a.reason == CANONICAL) == replace],
                )

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
        for waiting in (self._unconfirmed, self._pending):
            if row in waiting:
                return waiting[row]
        if self.scope is not Scope.CRAWL:
            written = row
        else:
            written = int(self._file_rows[row]) if row < self._loaded else self._written_as[row]
        return self._connection.execute("SELECT url, sketch FROM pages WHERE row = ?", (written,)).fetchone()


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
