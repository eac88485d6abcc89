"""The Redis store in "site" or "host" scope: a ``RedisStore`` per site, each the whole check-and-add protocol
on its own keys, ``<key>:{<site>}:…``.  The braces are Redis Cluster's hash tag: a site's keys lie in one slot,
so its script runs on the one node that holds them, and the sites spread over the cluster's nodes.  A crawler
holds the replicas of the sites it meets under a budget (``IdleSites``), reading a site's log when it meets it
again; the decision log, rules, aliases and runs are the crawl's, under ``<key>:…`` as in crawl scope."""

from __future__ import annotations

from typing import Any

import redis

from ...fingerprint.fingerprinter import Fingerprint
from ...matching.decision_log import Alias, Decision, Skip
from ...matching.policy import Match, Policy, dropped
from ...matching.scope import Scope, site_key
from ...matching.scoped import SITE_OVERHEAD, IdleSites
from ...matching.urlrules import Rule
from ..errors import CheckedLocally
from .guard import RetryGuard
from .log import RedisLog, read_redis_rules
from .store import RedisStore, check_in_stores


def site_prefix(key: str, site: str) -> str:
    """The prefix of a site's keys: ``<key>:{<site>}`` (braces in a site name, which no host has, made ``_``)."""
    return f"{key}:{{{site.replace('{', '_').replace('}', '_')}}}"


class SiteRedisStores:
    """A ``Store`` of one ``RedisStore`` per site (``site_prefix``), sharing the crawl's connection, retry guard and
    log.  Rows are this process's kept pages, numbered in the order it kept them (a site's replica numbers its
    own log); pages kept while Redis could not be reached keep their site's replica held until they are added."""

    confirms = False

    def __init__(self, policy: Policy, client: redis.Redis, key: str, scheme: str, scope: Scope,
                 budget: int | None, expire_seconds: int = 0, decisions: int = 100_000, texts: int = 1_000) -> None:
        self.policy = policy
        self.client = client
        self.key = key
        self.scheme = scheme
        self.scope = scope
        self.expire_seconds = expire_seconds
        self.guard = RetryGuard()
        self.log = RedisLog(client, self.guard, key, decisions, texts)
        self.sites: IdleSites[RedisStore] = IdleSites(
            self._open, lambda store: store.replica.memory_bytes() + SITE_OVERHEAD, budget, self._pinned)
        self.rows = 0
        self.remembered = 0  # a site's pages are read when it is met: none at open

    def __len__(self) -> int:
        return self.rows

    def open(self) -> None:
        """Check that Redis answers (a site's log is read when the site is met)."""
        self.guard.call(self.client.ping)

    def check_and_add(self, url: str, fingerprint: Fingerprint) -> Match | None:
        return self.check_and_add_many([(url, fingerprint)])[0]

    def check_and_add_many(self, pages: list[tuple[str, Fingerprint]]) -> list[Match | None]:
        """Each page's match in its site's store, the sites' script calls sent together (``check_in_stores``);
        when Redis fails, ``CheckedLocally`` with every page's match against its site's replica."""
        by_site: dict[str, list[int]] = {}
        for n, (url, _) in enumerate(pages):
            by_site.setdefault(site_key(url, self.scope), []).append(n)
        work = [(self.sites.get(site), [pages[n] for n in positions]) for site, positions in by_site.items()]
        order = [n for positions in by_site.values() for n in positions]
        try:
            found = [match for matches in check_in_stores(work, self.guard, self.log) for match in matches]
        except CheckedLocally as error:
            matches = self._in_order(order, error.matches)
            self.rows += sum(not dropped(match) for match in matches)
            raise CheckedLocally(str(error), matches) from None
        results = self._in_order(order, found)
        self.rows += sum(not dropped(match) for match in results)
        return results

    @staticmethod
    def _in_order(order: list[int], matches: list[Match | None]) -> list[Match | None]:
        """Matches given site after site, put back in the pages' order."""
        results: list[Match | None] = [None] * len(order)
        for n, match in zip(order, matches):
            results[n] = match
        return results

    def confirm(self, row: int) -> None:
        """Nothing waits: the page is in Redis."""

    def record(self, decision: Decision) -> None:
        self.log.record(decision)

    def record_skip(self, skip: Skip) -> None:
        self.log.record_skip(skip)

    def record_alias(self, alias: Alias) -> None:
        self.log.record_alias(alias)

    def save_rules(self, rules: list[Rule]) -> None:
        self.log.save_rules(rules)

    def save_run(self, run: dict[str, Any]) -> None:
        self.log.save_run(run)

    def load_rules(self) -> tuple[list[Rule], list[str]]:
        """The crawl's URL rules (the URLs of the last pages kept are a site's, not read here)."""
        return read_redis_rules(self.client, self.key)[0], []

    def close(self) -> None:
        try:
            self.log.send()
        except redis.RedisError:
            pass
        self.client.close()

    def memory_bytes(self) -> int:
        return self.sites.bytes

    def _open(self, site: str) -> RedisStore:
        return RedisStore(self.policy, self.client, site_prefix(self.key, site), self.scheme, self.expire_seconds,
                          guard=self.guard, log=self.log)

    def _pinned(self, site: str) -> bool:
        return bool(self.sites.held[site].local.unchecked)

