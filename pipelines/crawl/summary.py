"""What a crawl's filter did, said when it closes: one INFO line with the pages kept and dropped by rule, and a
WARNING for each site of which more than half the pages were dropped as near-duplicates that are not copies.

A crawl that drops most of a site as near-duplicates of other pages (not the same text under other addresses)
has most likely met a site whose pages share a template: the user should look at the pairs before trusting
the output (``simhash-dedup report``).  Scrapy's log shows each drop; this says what they add up to.
"""

from __future__ import annotations

import logging
from collections import Counter
from urllib.parse import urlsplit

from ..matching.policy import Match

logger = logging.getLogger(__name__)

#: A site whose dropped share is looked at: at least this many pages compared.
SITE_PAGES = 20
#: More than this share of a site's compared pages dropped as near-duplicates (not copies) is told.
SITE_SHARE = 0.5


class CrawlSummary:
    """Pages kept and dropped, by the rule that dropped them, and per site (host) the pages compared and those
    dropped as near-duplicates whose text is not the kept page's."""

    def __init__(self) -> None:
        self.kept = 0
        self.dropped: Counter[str] = Counter()  # by the match's reason
        self._compared: Counter[str] = Counter()  # by host
        self._near: Counter[str] = Counter()

    def add(self, url: str, match: Match | None, compared: bool) -> None:
        """A page decided: kept (``match`` None or not a duplicate) or dropped; ``compared``: it had a
        fingerprint (pages that cannot be compared are kept and not counted per site)."""
        if match is None or not match.duplicate:
            self.kept += 1
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
            "simhash_dedup: %s pages kept, %s dropped as near-duplicates%s",
            f"{self.kept:,}",
            f"{sum(self.dropped.values()):,}",
            f" ({rules})" if rules else "",
        )
        for host, compared in sorted(self._compared.items()):
            near = self._near[host]
            if compared >= SITE_PAGES and near > SITE_SHARE * compared:
                logger.warning(
                    "simhash_dedup: %d %% of the pages of %s (%s of %s) were dropped as near-duplicates of other pages, "
                    "not as copies of their text: if its pages share a template, some may be other documents. "
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
