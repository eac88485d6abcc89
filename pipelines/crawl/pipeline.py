"""The item pipeline: drop items whose page is a near-duplicate of a kept one.

Scrapy's hooks only: the work is the page filter's (``filter``), which the middlewares share.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.exceptions import NotConfigured

from .filter import PageFilter
from .settings import DedupSettings, crawl_settings

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler


class SimhashDedupPipeline:
    """Fingerprints every page once and drops all the items of a page that is a near-duplicate of a kept one
    (its ``PageFilter``: ``filter``)."""

    def __init__(self, crawler: Crawler, settings: DedupSettings) -> None:
        self.crawler = crawler
        self.settings = settings
        self.filter = PageFilter(crawler, settings)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if not crawler.settings.getbool("SIMHASH_DEDUP_ENABLED", True):
            raise NotConfigured("SIMHASH_DEDUP_ENABLED is off")
        return cls(crawler, crawl_settings(crawler))

    async def open_spider(self) -> None:
        await self.filter.open()

    async def close_spider(self) -> None:
        self.filter.close()

    async def process_item(self, item: Any) -> Any:
        return await self.filter.process_item(item)
