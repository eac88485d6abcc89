"""A crawl that cannot start with the filter says so in one line and exits with a non-zero status.

The filter's components are built with Scrapy's engine, before the spider is
opened and so before the feed exports open (and truncate) their files: a
wrong setting or a store that another crawl holds stops the crawl there, with
nothing written.  :func:`refuse` logs the one ERROR line and returns the
exception to raise; Scrapy then ends the crawl with exit status 1, and the
traceback asyncio (or Twisted) would print for that exception is left out.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from .settings import DedupSettings

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


class StartRefused(Exception):
    """The crawl cannot start with the filter; the message says why and what to do (logged already)."""


def refuse(message: str) -> StartRefused:
    """Log ``message`` as the crawl's one ERROR line; the exception to raise from a component's start."""
    logger.error("simhash_dedup: %s. The crawl did not start.", message)
    for name in ("asyncio", "twisted"):  # they would print the exception's traceback: said already
        if not any(isinstance(f, _SaidAlready) for f in logging.getLogger(name).filters):
            logging.getLogger(name).addFilter(_SaidAlready())
    return StartRefused(message)


def crawl_settings(crawler: Crawler) -> DedupSettings:
    """The crawl's ``SIMHASH_DEDUP_*`` settings, or a refused start naming the wrong one."""
    try:
        return DedupSettings.from_settings(crawler.settings)
    except ValueError as error:
        raise refuse(str(error)) from None


class _SaidAlready(logging.Filter):
    """Leaves out the records that only repeat a refused start with a traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, StartRefused) and "StartRefused" not in record.getMessage()
