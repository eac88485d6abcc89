"""What a store's file holds, read back (``SavedState``): the kept pages' fingerprints at open (crawl scope) or a
site's when it is met (a narrower scope), a page's URL and sketch when a match needs them, the URL rules; and where
this run's pages lie in the file (the row map)."""

from __future__ import annotations

import sqlite3

import numpy as np

from ...matching.matcher import KeptPages, Matcher
from ...matching.policy import Policy
from ...matching.scope import Scope
from ...matching.scoped import ScopedMatchers, SiteRows
from ..records import FETCHED_URLS, Rule


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
