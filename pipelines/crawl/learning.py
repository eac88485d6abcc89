"""What the crawl does with each decided page, whoever decided it (the pipeline's queue, for the pipeline and
the spider middleware alike): counted, summed up for the close, logged for review, taught to the URL rules
and the link guard, a kept page named; and the links and requests the guards skip, logged."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from ..fingerprint.fingerprinter import Fingerprint
from ..fingerprint.sketch import written_in
from ..guards.canonical import CanonicalUrls
from ..guards.linkguard import LinkGuard, RepeatedPages, is_recrawl
from ..matching.decision_log import CANONICAL, RULE, Alias, Reviewer, Skip, canonical_aliases
from ..matching.policy import Match, dropped
from ..matching.urlrules import KnownUrls, Rule, RuleBook
from .counts import STATS_PREFIX, Counts
from .pages import PageDecision, PageVerdict
from .settings import DedupSettings
from .summary import CrawlSummary

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from ..stores.base import Store

logger = logging.getLogger(__name__)


class Learner:
    """The guards a crawl learns (``rules``, ``fetched``, ``links``, ``canonicals``: ``None`` when their
    setting is off; the middlewares read them) and what a decided page teaches them."""

    def __init__(self, crawler: Crawler, settings: DedupSettings, counts: Counts, store: Store) -> None:
        self.crawler = crawler
        self.counts = counts
        self.store = store  # the crawl's store (Redis replaces the memory store at the spider's open)
        self.reviewer = Reviewer(settings.keep_texts)  # makes the decision log's entries
        self.summary = CrawlSummary()  # said at close: pages kept and dropped by rule, sites mostly dropped
        self.rules = RuleBook(settings.rule_support) if settings.url_rules else None
        # pages fetched, and those earlier crawls kept: what the downloader middleware skips requests for
        self.fetched = KnownUrls(self.rules) if self.rules is not None else None
        self.links = LinkGuard(self.rules, settings.link_budget) if settings.skip_links else None
        self.canonicals = CanonicalUrls(self.rules, learning=True) if settings.canonical_field else None
        self.repeats = RepeatedPages() if self.links is not None or self.rules is not None else None

    async def load_rules(self, read: Callable[[], Awaitable[tuple[list[Rule], list[str]]]]) -> None:
        """The URL rules and the pages fetched that earlier crawls kept, from the store (``read``)."""
        if self.rules is None:
            return
        try:
            rules, fetched = await read()
        except Exception as error:
            logger.warning("simhash_dedup: the URL rules could not be read (%s); they are learned afresh", error)
            return
        self.rules.load(rules)
        for url in fetched:
            self.fetched.add(url)  # type: ignore[union-attr] (there with the rules)
        self.crawler.stats.set_value(f"{STATS_PREFIX}/rules", len(self.rules.trusted()))
        if rules:
            logger.info("simhash_dedup: %d URL rules remembered, %d trusted", len(rules), len(self.rules.trusted()))

    def verdict(self, url: str, fingerprint: Fingerprint, match: Match | None, row: int | None = None) -> PageVerdict:
        """The verdict of a page the store checked; a dropped page that an earlier crawl kept is a re-crawl; a kept
        page without content of its own may repeat an earlier one but for a date (``RepeatedPages``)."""
        if dropped(match):
            return PageVerdict(url, fingerprint, match, row, recrawl=is_recrawl(url, match, self.rules))
        repeat_of = self.repeats.repeats(url, fingerprint.repeat_key) if self.repeats is not None else None
        return PageVerdict(url, fingerprint, match, row, repeat_of=repeat_of)

    def settle(self, page: PageDecision, verdict: PageVerdict) -> None:
        """The page is decided: counted, logged and learned from, a kept page named; its items go on."""
        try:
            self._decided(verdict)
            verdict = self._named(verdict, page.declared)
            self._renamed()
        except Exception:
            self.counts.add("errors", page.url, exc_info=True)
        page.settle(verdict)

    def skipped(self, skip: Skip) -> None:
        """A link or a request the crawl will not make (the guards): counted and logged in the store."""
        self.counts.add("links_skipped" if skip.kind == "link" else "requests_skipped")
        self.store.record_skip(skip)
        if skip.kind == "request":
            self.store.record_alias(Alias(skip.time, skip.url, skip.because, RULE))

    def _decided(self, page: PageVerdict) -> None:
        """A page was decided: counted, logged for review, and taught to the URL rules and the link guard."""
        if self.links is not None:
            self.links.page_decided(
                page.url, (page.duplicate or page.repeat_of is not None) if page.fingerprint is not None else None
            )
        if page.unchecked:  # its items are dropped unchecked (counted)
            return
        self.counts.add("pages_dropped" if page.duplicate else "pages_kept")
        if page.recrawl:
            self.counts.add("pages_dropped/rerun")
        self.summary.add(page.url, page.match, page.fingerprint is not None)
        if page.duplicate:
            self.store.record(self.reviewer.dropped(page.url, page.fingerprint, page.match))
            self.store.record_alias(Alias(time.time(), page.url, page.match.url, page.match.reason))
            if self.canonicals is not None:
                self.canonicals.kept_page_dropped(page.url, page.match.url)
        else:
            if page.repeat_of is not None:
                self.counts.add("repeated_pages")
            if page.update:
                self.counts.add("updated")
            elif page.match is not None:
                self.counts.add("borderline")
            if decision := self.reviewer.kept(page.url, page.fingerprint, page.match):
                self.store.record(decision)
        if self.rules is not None:
            self.fetched.add(page.url)
            self._learn(page)

    def _named(self, page: PageVerdict, declared: str | None) -> PageVerdict:
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
        for alias in canonical_aliases(page.url, canonical.url, time.time()):
            self.store.record_alias(alias)
        return replace(page, canonical=canonical.url)

    def _renamed(self) -> None:
        """Kept pages that what the crawl learned names otherwise: their new names in the alias table (the
        last naming of a page is its name there)."""
        for page in self.canonicals.take_renamed() if self.canonicals is not None else ():
            self.counts.add("canonical/renamed")
            self.store.record_alias(Alias(time.time(), page.name, page.kept_url, CANONICAL))

    def _learn(self, page: PageVerdict) -> None:
        """A decided page teaches the URL rules: a drop is a supporting pair, a keep may refute."""
        if page.duplicate or page.repeat_of is not None:
            trusted = self.rules.learn(page.url, page.repeat_of or page.match.url)
            for rule in trusted:
                logger.info("simhash_dedup: URL rule trusted after %d pairs: %s", rule.support, rule.describe())
            if self.canonicals is not None:
                self.canonicals.rules_trusted(trusted)
        elif page.fingerprint is not None:
            for rule in self.rules.kept(page.url):
                if rule.support >= self.rules.support:  # it was trusted
                    logger.warning(
                        "simhash_dedup: URL rule withdrawn: %s (%s were both kept, as different pages)",
                        rule.describe(),
                        " and ".join(rule.refuted_by.split(" ", 1)),
                    )
        if changed := self.rules.take_changed():
            self.store.save_rules(changed)
            self.crawler.stats.set_value(f"{STATS_PREFIX}/rules", len(self.rules.trusted()))
