"""Kept pages in this process's memory, forgotten when the crawl ends (or a batch job's shard)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import cast

import numpy as np

from ..fingerprint.fingerprinter import Fingerprint
from ..matching.matcher import Matcher, address_keys
from ..matching.policy import Match, Policy
from ..matching.scope import Scope, ScopedMatchers
from .base import Store


class MemoryStore(Store):
    """A ``Store`` in memory: the matcher's rows, and per row the URL and the sketch.  It keeps no log,
    runs, rules or aliases (the crawl's log lines say what was dropped): ``Store``'s methods for them, which
    do nothing, are its own.  In "site" or "host" scope a page is compared with its site's pages only
    (``ScopedMatchers``; every site stays in memory: nothing could read it back)."""

    confirms = False  # a kept page is in memory at once

    def __init__(self, policy: Policy, scope: Scope = Scope.CRAWL) -> None:
        self.policy = policy
        self.matcher: Matcher | ScopedMatchers = (
            Matcher(policy, self) if scope is Scope.CRAWL else ScopedMatchers(policy, scope, self)
        )
        self._urls: list[str] = []
        self._sketches: list[bytes | None] = []

    def __len__(self) -> int:
        return self.matcher.rows

    @property
    def remembered(self) -> int:
        return self.matcher.remembered

    def check_and_add(self, url: str, fingerprint: Fingerprint) -> Match | None:
        match, row = self.matcher.check_and_add(url, fingerprint)
        if row is not None:
            self._urls.append(url)
            self._sketches.append(fingerprint.sketch)
        return match

    def matches(self, page: Fingerprint, url: str | None = None) -> Iterator[tuple[int, Match]]:
        """Every kept row near the page (at ``url``, if given: a kept page there may be its earlier version) and
        how (``Matcher.matches``): the batch jobs' candidates (crawl scope: a shard of pages that may all be
        compared)."""
        return cast(Matcher, self.matcher).matches(page, url=url)  # (crawl scope: a Matcher)

    def load(
        self, urls: list[str], fingerprints: np.ndarray, present: np.ndarray, sketches: list[bytes | None]
    ) -> None:
        """Pages known to be kept, added at once (``fingerprint_rows``' arrays): a shard of a batch job."""
        cast(Matcher, self.matcher).load_rows(fingerprints, present, address_keys(urls))  # (crawl scope: a Matcher)
        self._urls.extend(urls)
        self._sketches.extend(sketches)

    def url(self, row: int) -> str:
        return self._urls[row]

    def sketch(self, row: int) -> bytes | None:
        return self._sketches[row]

    def alive(self, row: int) -> bool:
        return True
