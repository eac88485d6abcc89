"""The filter's stats (``simhash_dedup/<outcome>``), with the first case of each kind logged, as Scrapy's
duplicate filter does (the first logged, the rest counted), and what they add up to when the crawl closes.

At the close, one INFO line gives the pages kept and dropped by rule, and a WARNING each site of which more than
half the pages were dropped as near-duplicates that are not copies: such a site's pages most likely share a
template, and the user should look at the pairs before trusting the output (``simhash-dedup report``).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from twisted.internet.task import LoopingCall
from twisted.python.failure import Failure

from ..matching.policy import Match

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


STATS_PREFIX = "simhash_dedup"
#: Seconds between two hand-overs of the filter's counts to the crawl's stats.
STATS_EVERY = 1.0
#: Stats renamed in 0.2 (old name: new name, ``<name>/<reason>`` alike): ``kept`` and ``dropped`` counted items, beside
#: ``pages_kept`` and ``pages_dropped``.  Only the new names are counted; runs recorded before are read under them.
OLD_STAT_NAMES = {"kept": "items_kept", "dropped": "items_dropped"}


def current_names(counts: Mapping[str, int]) -> dict[str, int]:
    """``counts`` under today's names only: an old name's count (a record made before the rename) under its
    new one, unless the new one is there."""
    current = {outcome: count for outcome, count in counts.items() if outcome.partition("/")[0] not in OLD_STAT_NAMES}
    for outcome, count in counts.items():
        name, slash, reason = outcome.partition("/")
        if name in OLD_STAT_NAMES:
            current.setdefault(OLD_STAT_NAMES[name] + slash + reason, count)
    return current


class Counts:
    """The counts, added up here and handed to the crawl's stats collector every ``STATS_EVERY`` seconds
    while the spider runs (``start``) and when it closes: each of Scrapy's stats calls costs microseconds
    (its collector checks every attribute it reads), and a page made five of them."""

    def __init__(self, crawler: Crawler, debug: bool = False) -> None:
        self.crawler = crawler
        self.debug = debug  # SIMHASH_DEDUP_DEBUG: every repeated case logged (``repeated``)
        self._pending: Counter[str] = Counter()
        self._handing: LoopingCall | None = None
        self._told: set[str] = set()

    def add(self, outcome: str, url: str = "", exc_info: bool | Failure = False) -> None:
        """Count ``outcome``; the first of its kind with a URL is logged, with the exception being handled or
        the failure given (``exc_info``) at ERROR."""
        self._pending[outcome] += 1
        if not url or not self.first(outcome):
            return
        level = logging.ERROR if exc_info else logging.INFO
        logged: Any = exc_info
        if isinstance(exc_info, Failure):
            logged = (exc_info.type, exc_info.value, exc_info.getTracebackObject())
        logger.log(
            level,
            "simhash_dedup: %s for %s; kept. Further items like this are only counted in the stats (simhash_dedup/%s).",
            outcome,
            url,
            outcome,
            exc_info=logged,
        )

    def repeated(self, kind: str, message: str, *args: Any) -> None:
        """A case of a kind a crawl meets by the thousand (a link not followed, a request skipped): logged at
        DEBUG as Scrapy's duplicate filter logs a filtered request, the first only unless ``SIMHASH_DEDUP_DEBUG``
        asks for all; the rest are counted (``simhash_dedup/<kind>``) by the caller."""
        if self.debug:
            logger.debug(message, *args)
        elif self.first(kind):
            logger.debug(
                message + " - no more will be shown (counted in simhash_dedup/%s; "
                "SIMHASH_DEDUP_DEBUG = True shows all)",
                *args,
                kind,
            )

    def first(self, kind: str) -> bool:
        """Is this the first case of ``kind`` (to be logged)?  Only once ``True``."""
        if kind in self._told:
            return False
        self._told.add(kind)
        return True

    def get(self, outcome: str) -> int:
        """The count so far, handed over or not."""
        return (self.crawler.stats.get_value(f"{STATS_PREFIX}/{outcome}") or 0) + self._pending[outcome]

    def hand_over(self) -> None:
        """Add what was counted since the last time to the crawl's stats."""
        pending, self._pending = self._pending, Counter()
        for outcome, count in pending.items():
            self.crawler.stats.inc_value(f"{STATS_PREFIX}/{outcome}", count)

    def start(self, clock: Any = None) -> None:
        """Hand the counts over every ``STATS_EVERY`` seconds (of ``clock``: the reactor's by default)."""
        self._handing = LoopingCall(self.hand_over)
        if clock is not None:
            self._handing.clock = clock
        self._handing.start(STATS_EVERY, now=False)

    def stop(self) -> None:
        if self._handing is not None and self._handing.running:
            self._handing.stop()
        self.hand_over()


#: A site whose dropped share is looked at: at least this many pages compared.
SITE_PAGES = 20
#: More than this share of a site's compared pages dropped as near-duplicates (not copies) is told.
SITE_SHARE = 0.5


class CrawlSummary:
    """Pages kept and dropped, by the rule that dropped them, and per site (host) the pages compared and those
    dropped as near-duplicates whose text is not the kept page's."""

    def __init__(self) -> None:
        self.kept = 0
        self.dropped: Counter[str] = Counter()  # near-duplicates, by the match's reason
        self.met_again = 0  # pages an earlier run kept, met again at their URL (a re-run's drops)
        self._compared: Counter[str] = Counter()  # by host
        self._near: Counter[str] = Counter()

    def add(self, url: str, match: Match | None, compared: bool, recrawl: bool = False) -> None:
        """A page decided: kept (``match`` None or not a duplicate) or dropped, as a near-duplicate or as the page
        an earlier run kept (``recrawl``); ``compared``: it had a fingerprint (pages that cannot be compared are
        kept and not counted per site)."""
        if match is None or not match.duplicate:
            self.kept += 1
        elif recrawl:
            self.met_again += 1
            return
        else:
            self.dropped[match.reason] += 1
        if not compared:
            return
        host = urlsplit(url).hostname or ""
        self._compared[host] += 1
        if match is not None and match.duplicate and not same_text(match):
            self._near[host] += 1

    def log(self, report_hint: str) -> None:
        """The INFO line, and a WARNING for each site with more than ``SITE_SHARE`` of its pages dropped as
        near-duplicates (``report_hint``: how to see the pairs)."""
        rules = ", ".join(f"{reason} {count:,}" for reason, count in sorted(self.dropped.items()))
        logger.info(
            "simhash_dedup: %s pages kept, %s dropped as near-duplicates%s%s",
            f"{self.kept:,}",
            f"{sum(self.dropped.values()):,}",
            f" ({rules})" if rules else "",
            f"; {self.met_again:,} dropped as pages an earlier run kept, met again" if self.met_again else "",
        )
        for host, compared in sorted(self._compared.items()):
            near = self._near[host]
            if compared >= SITE_PAGES and near > SITE_SHARE * compared:
                logger.warning(
                    "simhash_dedup: %d %% of the pages of %s (%s of %s) were dropped as near-duplicates of other "
                    "pages, not as copies of their text: if its pages share a template, some may be other documents. "
                    "Look at the pairs: %s",
                    round(100 * near / compared),
                    host or "(no host)",
                    f"{near:,}",
                    f"{compared:,}",
                    report_hint,
                )


def same_text(match: Match) -> bool:
    """Is the dropped page the kept one's text (content distance 0, every shingle the same)?"""
    return match.content_distance == 0 and (match.similarity is None or match.similarity >= 1.0)
