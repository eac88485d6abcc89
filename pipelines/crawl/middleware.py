"""The filter's middlewares: the page of each response handed to the pipeline, and no requests spent on
near-duplicates.

Item pipelines never see the response, so :class:`SimhashDedupSpiderMiddleware`
(a spider middleware) hands it over: at the first item a response's callback
yields, the pipeline starts deciding the response's page (its body, decoded
with its ``Content-Type``), and every item of the response goes on at once
and follows that verdict in the pipeline.  No item field is needed.  With
``SIMHASH_DEDUP_SKIP_LINKS`` the requests the callback yields are held until
the verdict is known; those of a near-duplicate page are not scheduled when
the link guard (:mod:`scrapy_simhash_dedup.guards.linkguard`) finds them covered.  A callback
that yields no item decides nothing, and its requests go on at its end; a
request with ``dont_filter`` always goes on (the spider asked for it).

:class:`SimhashDedupDownloaderMiddleware` (a downloader middleware) holds a
request back while the fingerprint workers are behind (so that downloaded
pages do not pile up in memory, where a killed crawl loses them), and skips it
when the trusted URL rules (:mod:`scrapy_simhash_dedup.matching.urlrules`) rewrite its URL to a
page already fetched (never a request with ``dont_filter``).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from functools import cached_property
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter
from scrapy import Request
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.utils.deprecate import create_deprecated_class

from ..matching.decision_log import Skip
from .settings import DedupSettings
from .startup import crawl_settings

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from .pages import PageDecision, PageVerdict
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


class SimhashDedupSpiderMiddleware(_Component):
    """Starts deciding each response's page at its first item, for all its items; holds and guards its
    links (``SIMHASH_DEDUP_SKIP_LINKS``)."""

    async def process_spider_output(self, response: Response, result: AsyncIterator[Any]) -> AsyncIterator[Any]:
        pipeline = self.pipeline
        if pipeline is None:  # the pipeline is not enabled: nothing to decide
            async for output in result:
                yield output
            return
        page: PageDecision | None = None
        held: list[Request] = []  # requests that wait for the page's verdict (or for the end: no item came)
        failed: Exception | None = None
        try:
            async for output in result:
                if isinstance(output, Request):
                    if pipeline.learner.links is None or (page is not None and page.made is not None):
                        if self._follow(pipeline, output, page.made if page is not None else None):
                            yield output
                    else:
                        held.append(output)
                    continue
                if ItemAdapter.is_item(output):
                    page = page or pipeline.decide_response(response)
                    pipeline.assign(output, page)
                yield output
        except Exception as error:  # the callback failed: what it yielded before goes on, as without this
            failed = error
        verdict = await page.verdict() if page is not None and held else None
        for request in held:
            if self._follow(pipeline, request, verdict):
                yield request
        if failed is not None:
            raise failed

    @staticmethod
    def _follow(pipeline: SimhashDedupPipeline, request: Request, page: PageVerdict | None) -> bool:
        """Schedule ``request``, yielded by the callback of ``page`` (None: not decided)?  Not when the page
        is the same page as an earlier one (``PageVerdict.same_as``: a near-duplicate, not a re-crawl, or an empty
        page that repeats one but for a date) and the link guard finds the link covered."""
        guard = pipeline.learner.links
        if guard is None:
            return True
        if (
            page is not None
            and (same_as := page.same_as) is not None
            and not request.dont_filter
            and (covered := guard.covered(request.url)) is not None
        ):
            pipeline.counts.repeated(
                "links_skipped",
                "simhash_dedup: link not followed, %s is a near-duplicate of %s and %s: %s",
                page.url,
                same_as,
                covered,
                request.url,
            )
            pipeline.skipped(
                Skip(time.time(), "link", request.url, page.url, f"near-duplicate of {same_as}; {covered}")
            )
            return False
        guard.followed(request.url)
        return True


class SimhashDedupDownloaderMiddleware(_Component):
    """Holds requests back while the fingerprint workers are behind; skips those the trusted URL rules
    rewrite to a page already fetched (``SIMHASH_DEDUP_URL_RULES``)."""

    async def process_request(self, request: Request) -> None:
        pipeline = self.pipeline
        if pipeline is None:
            return
        await pipeline.fingerprints.room()
        if request.dont_filter or pipeline.learner.rules is None:
            return
        rules = pipeline.learner.rules.applying(request.url)
        target = pipeline.learner.fetched.find(request.url) if rules else None
        if target is None or target == request.url:
            return
        because = "; ".join(rule.describe() for rule in rules)
        pipeline.counts.repeated(
            "requests_skipped",
            "simhash_dedup: request skipped, %s is %s by the URL rules (%s)",
            request.url,
            target,
            because,
        )
        pipeline.skipped(Skip(time.time(), "request", request.url, target, because))
        raise IgnoreRequest(f"simhash_dedup: {request.url} is {target}, already fetched, by the URL rules")


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
