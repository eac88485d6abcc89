"""The shared store unreachable: said once per outage and counted, and with ``SIMHASH_DEDUP_FAIL_MODE =
"closed"`` the crawl closed."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.utils.defer import deferred_from_coro

from .counts import STATS_PREFIX

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

CLOSE_REASON = "simhash_dedup_store_unavailable"  # the finish reason with SIMHASH_DEDUP_FAIL_MODE = "closed"


class StoreOutage:
    """Whether the Redis store is down (it failed and has not answered since), and what that does."""

    def __init__(self, crawler: Crawler, fail_mode: str) -> None:
        self.crawler = crawler
        self.closed = fail_mode == "closed"  # fail closed: items not checked are dropped, the crawl stops
        self.down = False
        self.closing = False  # the spider is being closed (fail mode "closed")

    def failed(self, url: str, error: Exception) -> None:
        """Redis is unreachable: counted, logged once per outage, the crawl stopped if it fails closed."""
        self.crawler.stats.inc_value(f"{STATS_PREFIX}/store_errors")
        if not self.down:
            self.down = True
            logger.error(
                "simhash_dedup: the Redis store is unreachable (%s) at %s; %s",
                error,
                url,
                "closing the spider (SIMHASH_DEDUP_FAIL_MODE = 'closed')."
                if self.closed
                else "pages are checked against this crawler's replica of it and the pages it kept meanwhile only "
                "(simhash_dedup/checked_locally), until it answers (SIMHASH_DEDUP_FAIL_MODE = 'open').",
            )
        if self.closed:
            self.close_spider()

    def answered(self) -> None:
        """The store answered: an outage, if there was one, is over."""
        if self.down:
            self.down = False
            logger.info("simhash_dedup: the Redis store answers again; items are checked again")

    def close_spider(self) -> None:
        """Close the spider with ``CLOSE_REASON`` (once; on the reactor's next turn: this may run inside
        ``open_spider`` or ``process_item``)."""
        if self.closing:
            return
        self.closing = True
        from twisted.internet import reactor

        reactor.callLater(0, deferred_from_coro, self.crawler.engine.close_spider_async(reason=CLOSE_REASON))


class WriteFaults:
    """The SQLite store cannot be written (a full disk, an I/O error, its file deleted or replaced): said once per
    fault, as a warning, and counted; the pages kept meanwhile are still compared within the crawl and written once
    the store can be (``SqliteStore.flush``); with ``SIMHASH_DEDUP_FAIL_MODE = "closed"`` the crawl stops.  At the
    close, one line says how many delivered pages the store could not remember."""

    def __init__(self, crawler: Crawler, outage: StoreOutage, path: str) -> None:
        self.crawler = crawler
        self.outage = outage
        self.path = path

    def __call__(self, fault: str | None) -> None:
        """``SqliteStore.on_fault``: writes fail (``fault`` says why), or succeed again (``None``)."""
        if fault is None:
            logger.info(
                "simhash_dedup: the store %s is written again; the pages kept meanwhile are remembered", self.path
            )
            return
        self.crawler.stats.inc_value(f"{STATS_PREFIX}/store_write_failures")
        logger.warning(
            "simhash_dedup: the store %s cannot be written (%s); %s",
            self.path,
            fault,
            "closing the spider (SIMHASH_DEDUP_FAIL_MODE = 'closed')."
            if self.outage.closed
            else "kept pages are still compared within this crawl, and remembered once it can be written (tried again "
            "at each commit and at the close; SIMHASH_DEDUP_FAIL_MODE = 'open').",
        )
        if self.outage.closed:
            self.outage.close_spider()

    def closed(self, unwritten: int) -> None:
        """The store is closed, ``unwritten`` kept pages whose items were delivered not written to it."""
        if unwritten:
            self.crawler.stats.set_value(f"{STATS_PREFIX}/pages_not_remembered", unwritten)
            logger.warning(
                "simhash_dedup: %d kept pages whose items were delivered are not remembered in %s (it "
                "could not be written): a later crawl checks them as new.",
                unwritten,
                self.path,
            )
