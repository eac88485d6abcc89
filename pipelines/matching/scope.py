"""Which pages a page is compared with (``SIMHASH_DEDUP_SCOPE``): every page of the crawl, or only those of its own
site (its registrable domain, by the public suffix list) or its own host.

In "site" or "host" scope a ``Matcher`` per site decides a page against its own site's pages only, so that the
decisions are exactly those of one filter per site (``ScopedMatchers``, which answers a crawl-scope ``Matcher``'s
calls with the store's own row numbers; the Redis store's counterpart: ``stores.redis.sites``); the sites a process
holds in memory stay under a budget, the least recently used let go first (``SitesInMemory``).
"""

from __future__ import annotations

from array import array
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import replace
from enum import Enum
from functools import lru_cache
from typing import Generic, TypeVar, overload
from urllib.parse import urlsplit

import numpy as np
import tldextract

from ..fingerprint.fingerprinter import Fingerprint
from .matcher import KeptPages, Matcher
from .policy import Match, Policy


class Scope(str, Enum):
    CRAWL = "crawl"  # every page with every page (the default)
    SITE = "site"  # a page with the pages of its registrable domain: www.example.co.uk and shop.example.co.uk
    HOST = "host"  # a page with the pages of its host name


#: The public suffix list as the installed ``tldextract`` ships it (no download: the same sites in every process
#: of one install), private suffixes included: two blogs on blogspot.com or two projects on github.io are two sites.
_SUFFIXES = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None, include_psl_private_domains=True)


def site_key(url: str, scope: Scope) -> str:
    """The part of ``url`` its scope is named by: "" in "crawl" scope (one scope), the host name in "host"
    scope, the registrable domain in "site" scope (``docs.python.org`` -> ``python.org``); a host without
    one (an IP address, ``localhost``, an unknown suffix) is a site of its own.  Lower case, no port."""
    if scope is Scope.CRAWL:
        return ""
    try:
        host = (urlsplit(url).hostname or "").rstrip(".")  # (example.com. is example.com)
    except ValueError:  # a malformed URL (a bad IPv6 literal): its pages are one site
        host = ""
    return host if scope is Scope.HOST else registrable_domain(host)


@lru_cache(maxsize=65_536)
def registrable_domain(host: str) -> str:
    """``host``'s registrable domain (the public suffix and one label before it), or ``host`` itself when it
    has none."""
    return _SUFFIXES.extract_str(host).top_domain_under_public_suffix or host


T = TypeVar("T")

#: What a site costs beyond its arrays (a matcher, its indexes and their Python objects; a site's Redis store with
#: no page: ~15-20 KB by tracemalloc), counted against a budget.
SITE_OVERHEAD = 16_384
#: The rows of a site read back: store rows (ascending), fingerprints (content, structure), present flags.
SiteRows = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # rows, fingerprints, present, addresses


class SitesInMemory(Generic[T]):
    """What a process holds per site (a matcher, a replica), opened when a site is first met (``hold``) and let
    go, least recently used first, while their bytes pass ``budget`` (never without one); the sites in use (the
    last ``hold``'s) and those ``pinned`` says must stay (pages kept while Redis was down) stay."""

    def __init__(
        self,
        open_site: Callable[[str], T],
        size: Callable[[T], int],
        budget: int | None,
        pinned: Callable[[str], bool] = lambda site: False,
    ) -> None:
        self.open_site = open_site
        self.size = size
        self.budget = budget
        self.pinned = pinned
        self.held: OrderedDict[str, T] = OrderedDict()
        self._sizes: dict[str, int] = {}
        self.bytes = 0  # the held sites' sizes when last measured (the sites in use: at the next ``hold``)
        self.opened = 0  # sites opened, counting those opened again after they were let go
        self.dropped = 0  # sites let go
        self._in_use: list[str] = []
        self._stuck_at: int | None = None  # bytes when nothing could be let go (not tried again below ~1/8 more)

    def hold(self, sites: list[str]) -> list[T]:
        """The sites' holdings, each opened if it is not held; the sites of the last call are measured (they
        grew meanwhile), then sites are let go until the budget holds, never those of this call."""
        for site in self._in_use:
            self._measure(site)
        holdings = []
        for site in sites:
            held = self.held.get(site)
            if held is None:
                held = self.held[site] = self.open_site(site)
                self.opened += 1
                self._measure(site)
            else:
                self.held.move_to_end(site)
            holdings.append(held)
        self._in_use = sites
        self._fit(set(sites))
        return holdings

    def __len__(self) -> int:
        return len(self.held)

    def _measure(self, site: str) -> None:
        if site in self.held:
            size = self.size(self.held[site])
            self.bytes += size - self._sizes.get(site, 0)
            self._sizes[site] = size

    def _fit(self, using: set[str]) -> None:
        if self.budget is None or self.bytes <= self.budget:
            return
        if self._stuck_at is not None and self.bytes < self._stuck_at * 9 // 8:
            return  # every site was in use or pinned a moment ago: not searched again for each page
        for site in list(self.held):
            if self.bytes <= self.budget:
                break
            if site not in using and not self.pinned(site):
                del self.held[site]
                self.bytes -= self._sizes.pop(site, 0)
                self.dropped += 1
        self._stuck_at = self.bytes if self.bytes > self.budget else None


class RowsOfSite:
    """A site's ``KeptPages``: its matcher's rows are rows of the store (``rows``), asked about there."""

    def __init__(self, pages: KeptPages, rows: array) -> None:
        self.pages = pages
        self.rows = rows

    def url(self, row: int) -> str:
        return self.pages.url(self.rows[row])

    def sketch(self, row: int) -> bytes | None:
        return self.pages.sketch(self.rows[row])

    def alive(self, row: int) -> bool:
        return self.pages.alive(self.rows[row])


class SiteMatcher:
    """A site's ``Matcher`` and the store row of each of its rows."""

    def __init__(self, policy: Policy, pages: KeptPages) -> None:
        self.rows = array("q")
        self.matcher = Matcher(policy, RowsOfSite(pages, self.rows))

    def memory_bytes(self) -> int:
        return self.matcher.memory_bytes() + self.rows.itemsize * len(self.rows) + SITE_OVERHEAD


class ScopedMatchers:
    """The store's kept pages as one ``Matcher`` per site (its scope): the calls a store makes of its matcher
    (``check_and_add``, ``matches``, ``rows``, ``remembered``), with the store's row numbers.  A site met for
    the first time is read back by ``load`` (its rows in the store, e.g. a SQLite file; none if not given), and
    with the pages it kept that the store has not written yet (``unwritten``); with a ``budget`` the sites idle
    longest are let go."""

    def __init__(
        self,
        policy: Policy,
        scope: Scope,
        pages: KeptPages,
        budget: int | None = None,
        load: Callable[[str], SiteRows] | None = None,
        first_row: int = 0,
        remembered: int = 0,
    ) -> None:
        self.policy = policy
        self.scope = scope
        self.pages = pages
        self.load = load
        self.rows = first_row  # the store's next row
        self.remembered = remembered  # store rows below this one were kept by an earlier crawl
        self.sites: SitesInMemory[SiteMatcher] = SitesInMemory(self._open, SiteMatcher.memory_bytes, budget)
        # pages kept, not written yet, of a store that reads sites back: per site, store row -> fingerprints, flags,
        # address (read back with the site's written rows when a site let go is met again)
        self._unwritten: dict[str, dict[int, tuple[np.ndarray, np.ndarray, np.uint64]]] = {}
        self._site_of_unwritten: dict[int, str] = {}

    def check_and_add(self, url: str, page: Fingerprint) -> tuple[Match | None, int | None]:
        """As ``Matcher.check_and_add``, against the pages of ``url``'s site only."""
        site = site_key(url, self.scope)
        (held,) = self.sites.hold([site])
        match, local = held.matcher.check_and_add(url, page)
        match = self._in_store_rows(held, match)
        if local is None:
            return match, None
        row = self.rows
        self.rows += 1
        held.rows.append(row)
        if self.load is not None:  # (a store in memory writes nothing)
            self._unwritten.setdefault(site, {})[row] = (
                held.matcher.fingerprints[local].copy(),
                held.matcher.present[local].copy(),
                held.matcher.addresses[local],
            )
            self._site_of_unwritten[row] = site
        return match, row

    def matches(self, url: str, page: Fingerprint) -> Iterator[tuple[int, Match]]:
        """Every kept row of ``url``'s site near the page and how (``Matcher.matches``), in store rows."""
        (held,) = self.sites.hold([site_key(url, self.scope)])
        for local, match in held.matcher.matches(page, url=url):
            yield held.rows[local], self._in_store_rows(held, match)

    def unwritten(self, rows: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
        """The fingerprints, present flags, addresses' keys and sites of store rows kept and not written yet (in
        that order)."""
        fingerprints = np.zeros((len(rows), 2), dtype=np.uint64)
        present = np.zeros((len(rows), 3), dtype=bool)
        addresses = np.zeros(len(rows), dtype=np.uint64)
        sites = [self._site_of_unwritten[row] for row in rows]
        for n, (row, site) in enumerate(zip(rows, sites)):
            fingerprints[n], present[n], addresses[n] = self._unwritten[site][row]
        return fingerprints, present, addresses, sites

    def written(self, rows: list[int]) -> None:
        """These rows are in the store now: read back from it with their site."""
        for row in rows:
            site = self._site_of_unwritten.pop(row)
            del self._unwritten[site][row]
            if not self._unwritten[site]:
                del self._unwritten[site]

    def memory_bytes(self) -> int:
        return self.sites.bytes

    def _open(self, site: str) -> SiteMatcher:
        """A site's matcher, with its rows read back (written, and kept not written yet) in store order."""
        held = SiteMatcher(self.policy, self.pages)
        if self.load is not None:
            rows, fingerprints, present, addresses = self.load(site)
            if unwritten := self._unwritten.get(site):
                rows = np.concatenate([rows, np.fromiter(unwritten, dtype=np.int64, count=len(unwritten))])
                fingerprints = np.concatenate([fingerprints, np.array([f for f, _, _ in unwritten.values()])])
                present = np.concatenate([present, np.array([p for _, p, _ in unwritten.values()])])
                addresses = np.concatenate(
                    [addresses, np.array([a for _, _, a in unwritten.values()], dtype=np.uint64)]
                )
                order = np.argsort(rows, kind="stable")
                rows, fingerprints, present, addresses = (
                    rows[order],
                    fingerprints[order],
                    present[order],
                    addresses[order],
                )
            held.rows.extend(rows.tolist())
            held.matcher.load_rows(fingerprints, present, addresses)
            held.matcher.remembered = int(np.searchsorted(rows, self.remembered))
        return held

    @overload
    @staticmethod
    def _in_store_rows(held: SiteMatcher, match: Match) -> Match: ...

    @overload
    @staticmethod
    def _in_store_rows(held: SiteMatcher, match: Match | None) -> Match | None: ...

    @staticmethod
    def _in_store_rows(held: SiteMatcher, match: Match | None) -> Match | None:
        if match is None or match.kept_row is None:
            return match
        return replace(match, kept_row=held.rows[match.kept_row])
