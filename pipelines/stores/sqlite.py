"""Kept pages in one SQLite file per spider: remembered across pause/resume and, when asked, across runs;
the decision log, URL rules and aliases beside them, and the readers of a file the report and the CLI use."""

from __future__ import annotations

import contextlib
import json
import logging
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ..matching.decision_log import DECISION_FIELDS, Alias, Decision, Skip, field_values
from ..matching.policy import Policy
from ..matching.urlrules import FETCHED_URLS, Rule
from .errors import StoreNotOpened
from .lock import StoreLock
from .memory import MemoryStore

logger = logging.getLogger(__name__)


class SqliteStore(MemoryStore):
    """Kept pages in one SQLite file, remembered across pause, resume and re-runs.

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
    """

    def __init__(self, policy: Policy, path: Path, scheme: str, commit_every: int = 100,
                 decisions: int = 100_000, texts: int = 1_000) -> None:
        super().__init__(policy)
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
        self._unconfirmed: dict[int, tuple[str, bytes | None]] = {}  # kept, no item past the pipelines yet
        self._pending: dict[int, tuple[str, bytes | None]] = {}  # confirmed, not yet written
        self._written_as: dict[int, int] = {}  # this run's rows written -> their row in the file
        self._loaded = 0  # rows read from the file at open: the same number there
        self._lock = StoreLock(path)
        try:
            self._connection = self._open(path, scheme)
            self._load()
        except sqlite3.Error as error:
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
        connection.executescript(_SCHEMA)
        stored = connection.execute("SELECT value FROM meta WHERE key = 'scheme'").fetchone()
        if stored is None:
            connection.execute("INSERT INTO meta VALUES ('scheme', ?)", (scheme,))
        elif stored[0] != scheme:
            connection.close()
            aside = path.with_name(f"{path.name}.{stored[0].replace('/', '_')}.old")
            path.replace(aside)
            remove_store(path)  # its journal files
            logger.warning(
                "simhash_dedup: %s holds fingerprints of another scheme (%s, now %s): moved to %s, "
                "starting afresh.", path, stored[0], scheme, aside,
            )
            return self._open(path, scheme)
        return connection

    def _load(self) -> None:
        batches = self._connection.execute("SELECT content, structure, present FROM batches ORDER BY first_row")
        parts = [
            (np.frombuffer(c, dtype="<u8"), np.frombuffer(s, dtype="<u8"), np.frombuffer(p, dtype=bool))
            for c, s, p in batches
        ]
        if parts:
            content, structure, present = (np.concatenate(column) for column in zip(*parts))
            self._load_rows(np.column_stack([content, structure]), present.reshape(-1, 3))
        self._loaded = self.remembered = self._rows

    def _remember(self, row: int, url: str, sketch: bytes | None) -> None:
        self._unconfirmed[row] = (url, sketch)
        self._unconfirmed_rows[url] = row

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
            self._connection.execute("INSERT INTO runs (run) VALUES (?)", (json.dumps(run),))

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
        rules = [Rule(*row) for row in self._connection.execute(
            "SELECT host, kind, name, support, refuted_by FROM rules")]
        urls = self._connection.execute("SELECT url FROM pages ORDER BY row DESC LIMIT ?", (FETCHED_URLS,))
        return rules, [url for (url,) in reversed(urls.fetchall())]

    def flush(self) -> None:
        """Write the confirmed pages not written yet, in one transaction, numbered on from the file's last,
        and the decisions logged since the last write."""
        if not (self._pending or self._decisions or self._skips or self._rules or self._aliases):
            return
        if self._pending and self.before_write is not None:
            self.before_write()
        with self._connection:  # BEGIN ... COMMIT
            self._connection.execute("BEGIN")
            self._write_pages()
            self._write_decisions()
            self._write_skips_and_rules()
            self._write_aliases()

    def _write_pages(self) -> None:
        if not self._pending:
            return
        rows = sorted(self._pending)
        first = self._loaded + len(self._written_as)
        self._connection.executemany(
            "INSERT INTO pages (row, url, sketch) VALUES (?, ?, ?)",
            [(first + n, *self._pending[row]) for n, row in enumerate(rows)],
        )
        self._connection.execute(
            "INSERT INTO batches (first_row, content, structure, present) VALUES (?, ?, ?, ?)",
            (first, self._fingerprints[rows, 0].astype("<u8").tobytes(),
             self._fingerprints[rows, 1].astype("<u8").tobytes(), self._present[rows].tobytes()),
        )
        for n, row in enumerate(rows):
            self._written_as[row] = first + n
        self._pending.clear()

    def _write_decisions(self) -> None:
        """Append the decisions; then the oldest beyond ``decisions_kept`` go, and those beyond
        ``texts_kept`` lose their texts (only the rows that just crossed that line are touched)."""
        if not self._decisions:
            return
        added, self._decisions = self._decisions, []
        self._connection.executemany(
            f"INSERT INTO decisions ({_DECISION_COLUMNS}) VALUES ({', '.join('?' * (len(DECISION_FIELDS) + 2))})",
            [field_values(decision) for decision in added],
        )
        (last,) = self._connection.execute("SELECT max(id) FROM decisions").fetchone()
        self._connection.execute("DELETE FROM decisions WHERE id <= ?", (last - self.decisions_kept,))
        cut = last - self.texts_kept
        self._connection.execute(
            "UPDATE decisions SET text = NULL, kept_text = NULL WHERE id > ? AND id <= ?", (cut - len(added), cut)
        )

    def _write_skips_and_rules(self) -> None:
        """Append the skipped links and requests (the newest ``decisions_kept`` stay); write the rules."""
        if self._skips:
            added, self._skips = self._skips, []
            self._connection.executemany("INSERT INTO skipped (time, kind, url, because, rule) VALUES (?, ?, ?, ?, ?)",
                                         [field_values(skip) for skip in added])
            (last,) = self._connection.execute("SELECT max(id) FROM skipped").fetchone()
            self._connection.execute("DELETE FROM skipped WHERE id <= ?", (last - self.decisions_kept,))
        if self._rules:
            self._connection.executemany(
                "INSERT OR REPLACE INTO rules (host, kind, name, support, refuted_by) VALUES (?, ?, ?, ?, ?)",
                [(r.host, r.kind, r.name, r.support, r.refuted_by) for r in self._rules.values()])
            self._rules.clear()

    def _write_aliases(self) -> None:
        if self._aliases:
            added, self._aliases = self._aliases, []
            self._connection.executemany("INSERT OR IGNORE INTO aliases (url, kept_url, reason, time) VALUES (?, ?, ?, ?)",
                                         [(a.url, a.kept_url, a.reason, a.time) for a in added])

    def close(self) -> None:
        self.flush()
        self._connection.close()
        self._lock.close()

    def _url(self, row: int) -> str:
        return self._page(row)[0]

    def _sketch(self, row: int) -> bytes | None:
        return self._page(row)[1]

    def _page(self, row: int) -> tuple[str, bytes | None]:
        """URL and sketch of a kept page: in memory until written, then in the file."""
        for waiting in (self._unconfirmed, self._pending):
            if row in waiting:
                return waiting[row]
        written = row if row < self._loaded else self._written_as[row]
        return self._connection.execute("SELECT url, sketch FROM pages WHERE row = ?", (written,)).fetchone()


def remove_store(path: Path) -> None:
    """Delete a store's file and SQLite's journal files beside it."""
    for file in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        file.unlink(missing_ok=True)


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
            raise StoreNotOpened(f"{path} is not a store of simhash_dedup, so the reset left it untouched; "
                                 f"move it aside, or set SIMHASH_DEDUP_PATH to another file")
        remove_store(path)
    return True


def is_store(connection: sqlite3.Connection) -> bool:
    """Is this database new and empty, or one of this plugin's stores (its tables, and no other)?"""
    tables = _tables(connection)
    return not tables or {"meta", "pages", "batches"} <= tables <= {"meta", "pages", "batches", "decisions", "runs",
                                                                    "skipped", "rules", "aliases"}


def _tables(connection: sqlite3.Connection) -> set[str]:
    return {name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def read_log(path: Path) -> tuple[list[Decision], list[dict[str, Any]]]:
    """The decision log and the runs kept in the store at ``path`` (read-only: a running crawl may hold it)."""
    with _read_only(path) as connection:
        if not is_store(connection):
            raise StoreNotOpened(f"{path} is not a store of simhash_dedup")
        if "decisions" not in _tables(connection):  # a store written before the log existed
            return [], []
        rows = connection.execute(f"SELECT {_DECISION_COLUMNS} FROM decisions ORDER BY id")
        decisions = [Decision(*row) for row in rows]
        runs = [json.loads(run) for (run,) in connection.execute("SELECT run FROM runs ORDER BY id")]
        return decisions, runs


def read_rules(path: Path) -> tuple[list[Rule], list[Skip]]:
    """The URL rules and the skipped links and requests kept in the store at ``path`` (read-only)."""
    with _read_only(path) as connection:
        if not {"rules", "skipped"} <= _tables(connection):  # a store written before rules existed
            return [], []
        rules = [Rule(*row) for row in connection.execute("SELECT host, kind, name, support, refuted_by FROM rules")]
        skips = [Skip(*row) for row in connection.execute("SELECT time, kind, url, because, rule FROM skipped "
                                                          "ORDER BY id")]
        return rules, skips


def read_aliases(path: Path) -> list[Alias]:
    """The URLs that name the kept pages of the store at ``path``, oldest first (read-only)."""
    with _read_only(path) as connection:
        if "aliases" not in _tables(connection):  # a store written before aliases were kept
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


_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS pages (row INTEGER PRIMARY KEY, url TEXT NOT NULL, sketch BLOB);
CREATE TABLE IF NOT EXISTS batches (
    first_row INTEGER PRIMARY KEY, content BLOB NOT NULL, structure BLOB NOT NULL, present BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS decisions (
    id INTEGER PRIMARY KEY, time REAL NOT NULL, outcome TEXT NOT NULL, url TEXT NOT NULL, kept_url TEXT NOT NULL,
    reason TEXT NOT NULL, content_distance INTEGER, structure_distance INTEGER, similarity REAL,
    similarity_needed REAL, text BLOB, kept_text BLOB
);
CREATE TABLE IF NOT EXISTS runs (id INTEGER PRIMARY KEY, run TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS skipped (
    id INTEGER PRIMARY KEY, time REAL NOT NULL, kind TEXT NOT NULL, url TEXT NOT NULL, because TEXT NOT NULL,
    rule TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS aliases (url TEXT PRIMARY KEY, kept_url TEXT NOT NULL, reason TEXT NOT NULL, time REAL NOT NULL);
CREATE TABLE IF NOT EXISTS rules (
    host TEXT NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL, support INTEGER NOT NULL, refuted_by TEXT,
    PRIMARY KEY (host, kind, name)
);
"""


_DECISION_COLUMNS = ", ".join((*DECISION_FIELDS, "text", "kept_text"))  # the texts packed (``Decision``)
