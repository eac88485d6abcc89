"""What every store does (``Store``): the crawl, the batch job and the CLI use a store only through it."""

from __future__ import annotations

from typing import Any, Protocol

from ..fingerprint.fingerprinter import Fingerprint
from ..matching.policy import Match
from .records import Record, Rule


class Store(Protocol):
    """Kept pages, and the duplicate decision against them made atomically: "is this page a near-duplicate
    of a page kept before? if not, remember it" is one call with no ``await`` inside, so that two
    near-duplicates processed concurrently can never both be kept.  Beside the pages: the decision log,
    the runs, the URL rules and the aliases.  The members below the matching ones do nothing here: a store
    that subclasses ``Store`` and keeps none of those (``MemoryStore``) inherits them as they are."""

    #: Does the store write a kept page only once one of its items is confirmed (``confirm``)?
    confirms: bool

    @property
    def remembered(self) -> int:
        """Pages kept before this crawl started (by an earlier crawl): the first rows.  Read-only: a store may
        answer it from its matcher."""
        ...

    def __len__(self) -> int:
        """Pages kept, the rows numbered from 0."""
        ...

    def check_and_add(self, url: str, fingerprint: Fingerprint) -> Match | None:
        """The match for ``fingerprint``; or, after remembering it as kept (at row ``len(store) - 1``),
        ``None``, its borderline candidate or the page it updates (``policy.dropped`` tells them apart)."""
        ...

    @property
    def unwritten(self) -> int:
        """Kept pages whose items were delivered and that are not written yet (none where a kept page is stored
        at once)."""
        return 0

    def confirm(self, row: int) -> None:
        """An item of the page kept at ``row`` got past every pipeline: the page may be written."""
        return None

    def record(self, *entries: Record) -> None:
        """Keep what a decision taught, in one visit: decisions and skipped links or requests in the log (none
        with a log size of 0), the URLs that name a kept page (``Alias``: the first naming of a URL stays; once the
        page is written), the URL rules that changed (``Rule``: the latest of each)."""
        return None

    def load_rules(self) -> tuple[list[Rule], list[str]]:
        """The URL rules kept, and the URLs of the most recently kept pages (already fetched)."""
        return [], []

    def save_run(self, run: dict[str, Any]) -> None:
        """Keep a crawl's settings and counts beside its decisions (for the report; not with a log size of 0)."""
        return None

    def close(self) -> None:
        """Write what is pending and let go of the store."""
        return None
