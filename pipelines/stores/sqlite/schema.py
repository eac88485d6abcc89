"""A store's file: its tables (``SCHEMA``), how a file is known to be one (``is_store``), and its removal."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ..records import DECISION_FIELDS

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS pages (row INTEGER PRIMARY KEY, url TEXT NOT NULL, sketch BLOB);
CREATE TABLE IF NOT EXISTS batches (
    first_row INTEGER PRIMARY KEY, content BLOB NOT NULL, structure BLOB NOT NULL, present BLOB NOT NULL,
    addresses BLOB NOT NULL
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
CREATE TABLE IF NOT EXISTS aliases (
    url TEXT PRIMARY KEY, kept_url TEXT NOT NULL, reason TEXT NOT NULL, time REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS rules (
    host TEXT NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL, support INTEGER NOT NULL, refuted_by TEXT,
    PRIMARY KEY (host, kind, name)
);
"""

#: In "site" or "host" scope (a file of that scheme), pages are read back a site at a time: each write's pages of
#: one site are a row here, with their rows in ``pages`` (``rows``, ascending).
SITE_SCHEMA = """
CREATE TABLE IF NOT EXISTS site_batches (
    id INTEGER PRIMARY KEY, site TEXT NOT NULL, rows BLOB NOT NULL, content BLOB NOT NULL, structure BLOB NOT NULL,
    present BLOB NOT NULL, addresses BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS site_batches_by_site ON site_batches (site);
"""

DECISION_COLUMNS = ", ".join((*DECISION_FIELDS, "text", "kept_text"))  # the texts packed (``Decision``)


def remove_store(path: Path) -> None:
    """Delete a store's file and SQLite's journal files beside it."""
    for file in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        file.unlink(missing_ok=True)


def is_store(connection: sqlite3.Connection) -> bool:
    """Is this database new and empty, or one of this plugin's stores (its tables, and no other)?"""
    found = tables(connection)
    return not found or {"meta", "pages", "batches"} <= found <= {
        "meta",
        "pages",
        "batches",
        "decisions",
        "runs",
        "skipped",
        "rules",
        "aliases",
        "site_batches",
    }


def tables(connection: sqlite3.Connection) -> set[str]:
    return {name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
