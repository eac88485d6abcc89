"""What a SQLite store holds in memory until it is written (``Waiting``): the pages kept and not confirmed yet,
those confirmed and not written yet, the decisions, skips and aliases logged and the URL rules changed since the last
write; and what one write takes of them (``WriteBatch``)."""

from __future__ import annotations

from dataclasses import dataclass

from ..records import Alias, Decision, Rule, Skip

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
