"""The filter's middlewares: the page of each response handed to the pipeline, and no requests spent on
near-duplicates.

Item pipelines never see the response, so :class:`SimhashDedupSpiderMiddleware`
(a spider middleware) hands it over: at the first item a response's callback
yields, the pipeline starts deciding the response's page (its body, decoded
with its ``Content-Type``), and every item of the response goes on at once
and follows that verdict in the pipeline.  No item field is needed.  With
``SIMHASH_DEDUP_SKIP_LINKS`` the requests the callback yields are held until
the verdict is known; those of a near-duplicate page are not scheduled when
the link guard (:mod:`scrapy_simhash_dedup.guards.traps`) finds them covered.  A callback
that yields no item decides nothing, and its requests go on at its end; a
request with ``dont_filter`` always goes on (the spider asked for it).

:class:`SimhashDedupDownloaderMiddleware` (a downloader middleware) holds a
request back while the fingerprint workers are behind (so that downloaded
pages do not pile up in memory, where a killed crawl loses them), and skips it
when the trusted URL rules (:mod:`scrapy_simhash_dedup.guards.traps`) rewrite its URL to a
page already fetched (never a request with ``dont_filter``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from functools import cached_property
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter
from scrapy import Request
from scrapy.exceptions import NotConfigured
from scrapy.utils.deprecate import create_deprecated_class

from .settings import DedupSettings, crawl_settings

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from .filter import PageFilter
    from .items import PageDecision
    from .pipeline import SimhashDedupPipeline


class _Component:
    """What both middlewares share: the crawl's settings, checked as the pipeline checks them, and the
    crawl's :class:`SimhashDedupPipeline` (found when first needed: the engine exists by then)."""

    def __init__(self, crawler: Crawler, settings: DedupSettings) -> None:
        self.crawler = crawler
        self.settings = settings

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if not crawler.settings.getbool("SIMHASH_DEDUP_ENABLED", True):
            raise NotConfigured("SIMHASH_DEDUP_ENABLED is off")
        return cls(crawler, crawl_settings(crawler))

    @cached_property
    def pipeline(self) -> SimhashDedupPipeline | None:
        """Scrapy gives no public route from a middleware to a pipeline: this reads the engine's item
        processor (``engine.scraper.itemproc.middlewares``); ``tests/test_scrapy_routes.py`` fails the day
        Scrapy changes it."""
        from .pipeline import SimhashDedupPipeline

        manager = getattr(getattr(self.crawler.engine, "scraper", None), "itemproc", None)
        return next((p for p in getattr(manager, "middlewares", ()) if isinstance(p, SimhashDedupPipeline)), None)

    @property
    def filter(self) -> PageFilter | None:
        """The pipeline's page filter (None: the pipeline is not enabled, nothing to decide)."""
        return self.pipeline.filter if self.pipeline is not None else None


class SimhashDedupSpiderMiddleware(_Component):
    """Starts deciding each response's page at its first item, for all its items; holds and guards its
    links (``SIMHASH_DEDUP_SKIP_LINKS``)."""

    async def process_spider_output(self, response: Response, result: AsyncIterator[Any]) -> AsyncIterator[Any]:
        page_filter = self.filter
        if page_filter is None:  # the pipeline is not enabled: nothing to decide
            async for output in result:
                yield output
            return
        page: PageDecision | None = None
        held: list[Request] = []  # requests that wait for the page's verdict (or for the end: no item came)
        failed: Exception | None = None
        try:
            async for output in result:
                if isinstance(output, Request):
                    if not page_filter.guards_links or (page is not None and page.decided is not None):
                        if page_filter.follows(output, page.decided if page is not None else None):
                            yield output
                    else:
                        held.append(output)
                    continue
                if ItemAdapter.is_item(output):
                    page = page or page_filter.decide_response(response)
                    page_filter.assign(output, page)
                yield output
        except Exception as error:  # the callback failed: what it yielded before goes on, as without this
            failed = error
        verdict = await page.verdict() if page is not None and held else None
        for request in held:
            if page_filter.follows(request, verdict):
                yield request
        if failed is not None:
            raise failed


class SimhashDedupDownloaderMiddleware(_Component):
    """Holds requests back while the fingerprint workers are behind; skips those the trusted URL rules
    rewrite to a page already fetched (``SIMHASH_DEDUP_URL_RULES``)."""

    async def process_request(self, request: Request) -> None:
        page_filter = self.filter
        if page_filter is None:
            return
        await page_filter.wait_for_room()
        page_filter.skip_if_fetched(request)


#: The names these components had before 0.2 (a spider middleware and a downloader middleware named
#: ``…PageMiddleware`` and ``…RequestMiddleware``): accepted for one release, with a ScrapyDeprecationWarning.
SimhashDedupPageMiddleware = create_deprecated_class(
    "SimhashDedupPageMiddleware",
    SimhashDedupSpiderMiddleware,
    old_class_path="scrapy_simhash_dedup.SimhashDedupPageMiddleware",
    new_class_path="scrapy_simhash_dedup.SimhashDedupSpiderMiddleware",
)
SimhashDedupRequestMiddleware = create_deprecated_class(
    "SimhashDedupRequestMiddleware",
    SimhashDedupDownloaderMiddleware,
    old_class_path="scrapy_simhash_dedup.SimhashDedupRequestMiddleware",
    new_class_path="scrapy_simhash_dedup.SimhashDedupDownloaderMiddleware",
)
