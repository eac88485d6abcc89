"""The pages of a crawl decided one at a time, in their order of arrival, and what each decision teaches.

``DecisionQueue``: a page is fingerprinted (in the worker processes, or at once when known by its bytes), then
checked against the store (Redis: in batches, off the reactor thread), then settled.  ``DecisionEffects``: whoever
decided it, a decided page is counted, summed up for the close, logged for review, taught to the URL rules and
the link guard, and, kept, named; the links and requests the guards skip are logged.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from twisted.python.failure import Failure

from ..fingerprint.fingerprinter import Fingerprint, comparable, outcomes
from ..fingerprint.sketch import written_in
from ..guards.canonical import CanonicalUrls
from ..guards.traps import KnownUrls, LinkGuard, RepeatedPages, RuleBook, is_recrawl
from ..matching.policy import Match, dropped, never_dropped
from ..stores.errors import CheckedLocally, StoreUnavailable
from ..stores.records import CANONICAL, RULE, Alias, DecisionLogEntries, Record, Rule, Skip, canonical_aliases
from ..workers.pool import FingerprintPool, RecentPages
from ..workers.start import WorkerTimedOut
from .items import PageDecision, PageVerdict
from .settings import DedupSettings
from .stats import STATS_PREFIX, Counts, CrawlSummary
from .storage import StoreOutage

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from ..stores.base import Store
    from ..stores.redis.batching import StoreBatcher

logger = logging.getLogger(__name__)


class DecisionQueue:
    """Pages not decided yet, in their order of arrival.  A page of a cluster is kept because it came
    first, as without workers, whatever order the fingerprints come back in (a large page fingerprinted
    beside a small later copy of it is still the one kept); and each page is checked and added to the
    store atomically (the next one is checked after it is in the store, or in the Redis batcher's queue)."""

    def __init__(
        self, fingerprints: FingerprintPool, store: Store, effects: DecisionEffects, counts: Counts, outage: StoreOutage
    ) -> None:
        self.fingerprints = fingerprints
        self.store = store
        self.batcher: StoreBatcher | None = None  # for the Redis store: checks off the reactor thread
        self.effects = effects
        self.counts = counts
        self.outage = outage
        self._recent = RecentPages()  # byte-identical pages are fingerprinted once
        self._arrived: deque[PageDecision] = deque()

    def begin(self, page: PageDecision, html: Any, content_type: str | None = None) -> None:
        """Start fingerprinting the page; it is decided in its turn."""
        self.counts.add("checked")
        self._arrived.append(page)
        if not isinstance(html, (str, bytes)):
            self.counts.add("not_html", page.url)
            self._fingerprinted(None, page)
            return
        known = self._recent.fingerprint(
            RecentPages.key(html, content_type), lambda: self.fingerprints.fingerprint(html, page.url, content_type)
        )
        known.addBoth(self._fingerprinted, page)

    def _fingerprinted(self, result: tuple[Fingerprint, bool] | Failure | None, page: PageDecision) -> None:
        """The page's fingerprint is ready (``None``: nothing to compare; a failure: kept, counted): counted,
        and the pages whose turn it is are decided."""
        if isinstance(result, Failure) and result.check(WorkerTimedOut):  # kept (the pool logged the first)
            self.counts.add("fingerprint_timeouts")
        elif isinstance(result, Failure):  # a bug or an odd page must never lose the page
            self.counts.add("errors", page.url, exc_info=result)
        elif result is not None:
            fingerprint, known = result
            if known:
                self.counts.add("same_html")
            for outcome in outcomes(fingerprint):
                self.counts.add(outcome, "" if outcome == "short_text" else page.url)  # the first of each logged
            page.fingerprint = fingerprint if comparable(fingerprint) else None
        page.fingerprinted = True
        while self._arrived and self._arrived[0].fingerprinted:
            self._decide(self._arrived.popleft())

    def _decide(self, page: PageDecision) -> None:
        """Check the page against the store and add it if kept; then settle its verdict."""
        if page.fingerprint is None:
            self.effects.settle(page, PageVerdict(page.url))
            return
        try:
            if self.batcher is not None:  # Redis: checked off the reactor thread, in batches
                self.batcher.submit(page.url, page.fingerprint).addBoth(self._checked, page)
                return
            match = self.store.check_and_add(page.url, page.fingerprint)
        except Exception as error:
            self._checked(Failure(error), page)
            return
        row = len(self.store) - 1 if self.store.confirms and not dropped(match) else None  # written once confirmed
        self.effects.settle(page, self.effects.verdict(page.url, page.fingerprint, match, row, page.never_drop))

    def _checked(self, result: Match | None | Failure, page: PageDecision) -> None:
        """The store's answer for the page (Redis: when it comes back), or why there is none."""
        url, fingerprint = page.url, page.fingerprint
        assert fingerprint is not None  # only a fingerprinted page is checked
        if not isinstance(result, Failure):
            self.outage.answered()
            verdict = self.effects.verdict(url, fingerprint, result, never_drop=page.never_drop)
        elif isinstance(error := result.value, CheckedLocally):  # Redis down: checked against this crawler's replica
            self.outage.failed(url, error)
            verdict = (
                PageVerdict(url, unchecked=True)
                if self.outage.closed
                else self.effects.verdict(url, fingerprint, error.matches[0], never_drop=page.never_drop)
            )
            self.counts.add("checked_locally")
        elif isinstance(
            error, StoreUnavailable
        ):  # kept unchecked, or with fail mode "closed" dropped as the crawl stops
            self.outage.failed(url, error)
            verdict = PageVerdict(url, unchecked=self.outage.closed)
        else:  # a bug or an odd page must never lose the page
            self.counts.add("errors", url, exc_info=result)
            verdict = PageVerdict(url)
        self.effects.settle(page, verdict)


class DecisionEffects:
    """The guards a crawl learns (``rules``, ``fetched``, ``links``, ``canonicals``: ``None`` when their
    setting is off; the middlewares read them) and what a decided page teaches them."""

    def __init__(self, crawler: Crawler, settings: DedupSettings, counts: Counts, store: Store) -> None:
        self.crawler = crawler
        self.counts = counts
        self.store = store  # the crawl's store (Redis replaces the memory store at the spider's open)
        self.log_entries = DecisionLogEntries(settings.keep_texts)  # makes the decision log's entries
        self.summary = CrawlSummary()  # said at close: pages kept and dropped by rule, sites mostly dropped
        self.rules = RuleBook(settings.rule_support) if settings.url_rules else None
        # pages fetched, and those earlier crawls kept: what the downloader middleware skips requests for
        self.fetched = KnownUrls(self.rules) if self.rules is not None else None
        self.links = LinkGuard(self.rules, settings.link_budget) if settings.skip_links else None
        self.canonicals = CanonicalUrls(self.rules, learning=True) if settings.canonical_field else None
        self.repeats = RepeatedPages() if self.links is not None or self.rules is not None else None

    async def load_rules(self, read: Callable[[], Awaitable[tuple[list[Rule], list[str]]]]) -> None:
        """The URL rules and the pages fetched that earlier crawls kept, from the store (``read``)."""
        if self.rules is None or self.fetched is None:  # (both or neither)
            return
        try:
            rules, fetched = await read()
        except Exception as error:
            logger.warning("simhash_dedup: the URL rules could not be read (%s); they are learned afresh", error)
            return
        self.rules.load(rules)
        for url in fetched:
            self.fetched.add(url)
        self.crawler.stats.set_value(f"{STATS_PREFIX}/rules", len(self.rules.trusted()))
        if rules:
            logger.info("simhash_dedup: %d URL rules remembered, %d trusted", len(rules), len(self.rules.trusted()))

    def verdict(
        self, url: str, fingerprint: Fingerprint, match: Match | None, row: int | None = None, never_drop: bool = False
    ) -> PageVerdict:
        """The verdict of a page the store checked; a dropped page that an earlier crawl kept is a re-crawl; a kept
        page without content of its own may repeat an earlier one but for a date (``RepeatedPages``).  A page whose
        request said never to drop it is kept with its match, reason ``NEVER_DROPPED`` (the store did not add it:
        the page it matched stands for it)."""
        if dropped(match) and never_drop:
            return PageVerdict(url, fingerprint, never_dropped(match), None, never_dropped=True)
        if dropped(match):
            refetched = url == match.url and not match.remembered  # kept by this crawl, at this URL
            return PageVerdict(
                url, fingerprint, match, row, recrawl=is_recrawl(url, match, self.rules), refetched=refetched
            )
        repeat_of = self.repeats.repeats(url, fingerprint.repeat_key) if self.repeats is not None else None
        return PageVerdict(url, fingerprint, match, row, repeat_of=repeat_of)

    def settle(self, page: PageDecision, verdict: PageVerdict) -> None:
        """The page is decided: counted, logged and learned from, a kept page named; its items go on.  What it
        taught the log, the names and the rules goes to the store in one visit."""
        taught: list[Record] = []
        try:
            try:
                self._decided(verdict, taught)
                verdict = self._named(verdict, page.declared, taught)
                self._renamed(taught)
            finally:
                if taught:
                    self.store.record(*taught)
        except Exception:
            self.counts.add("errors", page.url, exc_info=True)
        page.settle(verdict)

    def skipped(self, skip: Skip) -> None:
        """A link or a request the crawl will not make (the guards): counted and logged in the store."""
        self.counts.add("links_skipped" if skip.kind == "link" else "requests_skipped")
        if skip.kind == "request":
            self.store.record(skip, Alias(skip.time, skip.url, skip.because, RULE))
        else:
            self.store.record(skip)

    def _decided(self, page: PageVerdict, taught: list[Record]) -> None:
        """A page was decided: counted, logged for review (``taught``), and taught to the URL rules and the link
        guard."""
        if self.links is not None:
            self.links.page_decided(
                page.url,
                ((page.duplicate and not page.refetched) or page.repeat_of is not None)
                if page.fingerprint is not None
                else None,
            )
        if page.unchecked:  # its items are dropped unchecked (counted)
            return
        self.counts.add("pages_dropped" if page.duplicate else "pages_kept")
        if page.recrawl:
            self.counts.add("pages_dropped/rerun")
        if page.refetched:  # not a near-duplicate: no pair to review, no name nor rule to learn
            self.counts.add("pages_dropped/refetched")
            return
        self.summary.add(page.url, page.match, page.fingerprint is not None, page.recrawl)
        if page.duplicate:
            match, fingerprint = page.match, page.fingerprint
            assert match is not None and fingerprint is not None  # a page dropped was checked and matched
            if page.recrawl:  # no pair to review nor a new name; its text is the kept side of this run's pairs
                self.log_entries.remember(match.url, fingerprint)
            else:
                taught.append(self.log_entries.dropped(page.url, fingerprint, match))
                taught.append(Alias(time.time(), page.url, match.url, match.reason))
            if self.canonicals is not None:
                self.canonicals.kept_page_dropped(page.url, match.url)
        else:
            if page.repeat_of is not None:
                self.counts.add("repeated_pages")
            if page.never_dropped:
                self.counts.add("never_dropped")
            elif page.update:
                self.counts.add("updated")
            elif page.match is not None:
                self.counts.add("borderline")
            if decision := self.log_entries.kept(page.url, page.fingerprint, page.match):
                taught.append(decision)
        if self.rules is not None and self.fetched is not None:  # (both or neither)
            self.fetched.add(page.url)
            if not page.never_dropped:  # a near-duplicate the spider kept refutes no rule
                taught.extend(self._learn(self.rules, page))

    def _named(self, page: PageVerdict, declared: str | None, taught: list[Record]) -> PageVerdict:
        """A kept page with its canonical URL (``guards.canonical.CanonicalUrls``): chosen after the rules
        learned from the page, so that a rule it refutes never names it.  The page's ``<link rel="canonical">``
        comes before its ``Link`` header's."""
        if self.canonicals is None or page.duplicate or page.unchecked:
            return page
        fingerprint = page.fingerprint
        canonical = self.canonicals.choose(
            page.url,
            (fingerprint and fingerprint.canonical) or declared,
            written_in(fingerprint.sketch) if fingerprint is not None else (),
        )
        self.counts.add(f"canonical/{canonical.source}")
        if canonical.cleaned:
            self.counts.add("canonical/cleaned")
        taught.extend(canonical_aliases(page.url, canonical.url, time.time()))
        return replace(page, canonical=canonical.url)

    def _renamed(self, taught: list[Record]) -> None:
        """Kept pages that what the crawl learned names otherwise: their new names in the alias table (the
        last naming of a page is its name there)."""
        for page in self.canonicals.take_renamed() if self.canonicals is not None else ():
            self.counts.add("canonical/renamed")
            taught.append(Alias(time.time(), page.name, page.kept_url, CANONICAL))

    def _learn(self, rules: RuleBook, page: PageVerdict) -> list[Rule]:
        """A decided page teaches the URL ``rules``: a drop is a supporting pair, a keep may refute.  Returns the
        rules that changed, for the store."""
        if page.duplicate or page.repeat_of is not None:
            earlier = page.repeat_of or (page.match.url if page.match is not None else None)
            assert earlier is not None  # a drop has its match, a repeat its earlier page
            trusted = rules.learn(page.url, earlier)
            for rule in trusted:
                logger.info("simhash_dedup: URL rule trusted after %d pairs: %s", rule.support, rule.describe())
            if self.canonicals is not None:
                self.canonicals.rules_trusted(trusted)
        elif page.fingerprint is not None:
            for rule in rules.kept(page.url):
                if rule.support >= rules.support:  # it was trusted
                    logger.warning(
                        "simhash_dedup: URL rule withdrawn: %s (%s were both kept, as different pages)",
                        rule.describe(),
                        " and ".join((rule.refuted_by or "").split(" ", 1)),
                    )
        changed = rules.take_changed()
        if changed:
            self.crawler.stats.set_value(f"{STATS_PREFIX}/rules", len(rules.trusted()))
        return changed
