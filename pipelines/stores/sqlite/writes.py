"""The SQL of one write to a store's file (``write_batch``), run inside its transaction (``WriteTransaction``): the
confirmed pages and their fingerprints, the decisions, skips and aliases logged, the URL rules changed."""

from __future__ import annotations

import sqlite3

import numpy as np

from ...matching.matcher import Matcher
from ...matching.scoped import ScopedMatchers
from ..records import CANONICAL, DECISION_FIELDS, Alias, Decision, Rule, Skip, field_values
from .schema import DECISION_COLUMNS
from .waiting import WriteBatch


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
