"""What a store raises: unreachable (a page not checked, or checked against a local replica only), or
not usable by this crawl."""

from __future__ import annotations

from ..matching.policy import Match


class StoreUnavailable(Exception):
    """The store could not be reached (Redis down or too slow); the page was not checked."""


class CheckedLocally(StoreUnavailable):
    """The shared store could not be reached, so the pages were checked against this process's replica of
    it and the pages it kept meanwhile only: ``matches``, one per page (a copy another process kept
    meanwhile may have been missed)."""

    def __init__(self, message: str, matches: list[Match | None]) -> None:
        super().__init__(message)
        self.matches = matches


class StoreNotOpened(Exception):
    """The store cannot be used by this crawl (corrupt, not a store of this plugin, in use by another
    crawl); the message names the file and the way out."""
