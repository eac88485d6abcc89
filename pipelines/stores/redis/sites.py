"""The Redis store in "site" or "host" scope: a ``RedisStore`` per site, each the whole check-and-add protocol
on its own keys, ``<key>:{<site>}:…``.  The braces are Redis Cluster's hash tag: a site's keys lie in one slot,
so its script runs on the one node that holds them, and the sites spread over the cluster's nodes.  A crawler
holds the replicas of the sites it meets under a budget (``SitesInMemory``), reading a site's log when it meets it
again; the decision log, rules, aliases and runs are the crawl's, under ``<key>:…`` as in crawl scope."""

from __future__ import annotations

import time
from dataclasses import replace

from ...fingerprint.fingerprinter import Fingerprint
from ...matching.policy import Match, Policy, dropped
from ...matching.scope import SITE_OVERHEAD, Scope, SitesInMemory, site_key
from ..errors import CheckedLocally, StoreUnavailable
from ..records import Rule
from .availability import RetryGuard
from .keys import RedisClient
from .log import RedisLog, RedisLogMethods, read_redis_rules
from .store import RedisStore, check_in_stores


def site_prefix(key: str, site: str) -> str:
    """The prefix of a site's keys: ``<key>:{<site>}`` (braces in a site name, which no host has, made ``_``; the
    pages of no host are the site ``_``)."""
    return f"{key}:{{{site.replace('{', '_').replace('}', '_') or '_'}}}"  # ("{}" is no hash tag: a site "" is "_")


class SiteRedisStores(RedisLogMethods):
    """A ``Store`` of one ``RedisStore`` per site (``site_prefix``), sharing the crawl's connection, retry guard and
    log.  Rows are this process's kept pages, numbered in the order it kept them (a site's replica numbers its
    own log); pages kept while Redis could not be reached keep their site's replica held until they are added."""

    confirms = False

    def __init__(
        self,
        policy: Policy,
        client: RedisClient,
        key: str,
        scheme: str,
        scope: Scope,
        budget: int | None,
        expire_seconds: int = 0,
        decisions: int = 100_000,
        texts: int = 1_000,
    ) -> None:
        self.policy = policy
        self.client = client
        self.key = key
        self.scheme = scheme
        self.scope = scope
        self.expire_seconds = expire_seconds
        self.guard = RetryGuard()
        self.log = RedisLog(client, self.guard, key, decisions, texts)
        self.sites: SitesInMemory[RedisStore] = SitesInMemory(
            self._open, lambda store: store.replica.memory_bytes() + SITE_OVERHEAD, budget, self._pinned
        )
        self.rows = 0
        self.remembered = 0  # a site's pages are read when it is met: none at open
        self.started = int(time.time())  # the server's clock at open: a site's pages kept before, earlier crawls'
        self._outage: dict[str, RedisStore] = {}  # sites with pages kept while Redis was down, not added yet
        self._after_outage = False  # the last check failed: once Redis answers, every site held is read again

    def __len__(self) -> int:
        return self.rows

    def open(self) -> None:
        """Check that Redis answers and read its clock (a site's log is read when the site is met)."""
        self.started = int(self.guard.call(self.client.time)[0])

    def check_and_add(self, url: str, fingerprint: Fingerprint) -> Match | None:
        return self.check_and_add_many([(url, fingerprint)])[0]

    def check_and_add_many(self, pages: list[tuple[str, Fingerprint]]) -> list[Match | None]:
        """Each page's match in its site's store, the sites' script calls sent together (``check_in_stores``),
        after the pages of any site kept while Redis was down; when Redis fails, ``CheckedLocally`` with every
        page's match (against its site's replica, for the sites Redis had not decided)."""
        by_site: dict[str, list[int]] = {}
        for n, (url, _) in enumerate(pages):
            by_site.setdefault(site_key(url, self.scope), []).append(n)
        stores = self.sites.hold(list(by_site))
        work = [(store, [pages[n] for n in positions]) for store, positions in zip(stores, by_site.values())]
        order = [n for positions in by_site.values() for n in positions]
        touched = [*stores, *self._outage.values()]
        lost = sum(store.replica.lost for store in touched)
        try:
            results = self._in_order(
                order,
                [
                    match
                    for matches in check_in_stores(work, self.guard, self.log, list(self._outage.values()))
                    for match in matches
                ],
            )
        except CheckedLocally as error:
            results = self._in_order(order, error.matches)
            self._after_outage = True
            raise CheckedLocally(str(error), results) from None
        finally:
            self._outage = {
                site: store for site, store in [*self._outage.items(), *zip(by_site, stores)] if store.local.unchecked
            }
        if self._after_outage or sum(store.replica.lost for store in touched) > lost:
            self._after_outage = False
            self._heal_held()
        self.rows += sum(not dropped(match) for match in results)
        return results

    def _heal_held(self) -> None:
        """Redis answers after an outage, or a site's store was found lost (a node restarted empty, a reset): the
        sites held are read up to their end now, which writes back those their node lost (rather than when each
        is met again, which a site crawled to its end never is)."""
        for store in list(self.sites.held.values()):
            try:
                self.guard.call(store.replica.sync)
            except StoreUnavailable:
                return

    @staticmethod
    def _in_order(order: list[int], matches: list[Match | None]) -> list[Match | None]:
        """Matches given site after site, put back in the pages' order (without the kept page's row: a row of its
        site's log, not of this store)."""
        results: list[Match | None] = [None] * len(order)
        for n, match in zip(order, matches):
            results[n] = match if match is None or match.kept_row is None else replace(match, kept_row=None)
        return results

    def load_rules(self) -> tuple[list[Rule], list[str]]:
        """The crawl's URL rules (the URLs of the last pages kept are a site's, not read here)."""
        return read_redis_rules(self.client, self.key)[0], []

    def close(self) -> None:
        """Add the pages kept while Redis was down (if it answers now), send the log, let go of the connection."""
        try:
            check_in_stores([], self.guard, self.log, list(self._outage.values()))
        except StoreUnavailable:
            pass
        self.client.close()

    def memory_bytes(self) -> int:
        return self.sites.bytes

    def _open(self, site: str) -> RedisStore:
        return RedisStore(
            self.policy,
            self.client,
            site_prefix(self.key, site),
            self.scheme,
            self.expire_seconds,
            guard=self.guard,
            log=self.log,
            started=self.started,
        )

    def _pinned(self, site: str) -> bool:
        return site in self._outage
