"""Spend no requests on near-duplicates: the links of a duplicate page, and URLs the rules show to be copies.

:class:`SimhashDedupLinkMiddleware` (a spider middleware) decides a response's
page as soon as its callback yields the first item, with the pipeline's store
and policy; the pipeline takes that decision for the item, so the page is
fingerprinted once.  Requests the callback yields are held until then; if the
page is a near-duplicate they are not scheduled: the kept page it duplicates
carries the same links, and a trap's pages are near-duplicates of each other.
A callback that yields no item decides nothing, and its requests go on; a
request with ``dont_filter`` always goes on (the spider asked for it).

:class:`SimhashDedupRuleMiddleware` (a downloader middleware) skips a request
before download when the trusted URL rules (:mod:`pipelines.urlrules`)
rewrite its URL to one already fetched.  Requests with ``dont_filter`` are
never skipped.
"""

from __future__ import annotations

import logging
import time
from functools import cached_property
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter
from scrapy import Request
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import TextResponse

from .decisions import Skip
from .settings import DedupSettings
from .policy import dropped

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from typing_extensions import Self

    from .pipeline import SimhashDedupPipeline

logger = logging.getLogger(__name__)


class _Guard:
    """What both middlewares share: the crawl's settings, checked as the pipeline checks them, and the
    crawl's :class:`SimhashDedupPipeline` (found when first needed: the engine exists by then)."""

    switch = ""  # the DedupSettings flag that turns the middleware on

    def __init__(self, crawler: Crawler, settings: DedupSettings) -> None:
        self.crawler = crawler
        self.settings = settings

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        settings = DedupSettings.from_settings(crawler.settings)
        if not (crawler.settings.getbool("SIMHASH_DEDUP_ENABLED", True) and getattr(settings, cls.switch)):
            raise NotConfigured(f"SIMHASH_DEDUP_{cls.switch.upper()} is off")
        return cls(crawler, settings)

    @cached_property
    def pipeline(self) -> SimhashDedupPipeline | None:
        from .pipeline import SimhashDedupPipeline

        manager = getattr(getattr(self.crawler.engine, "scraper", None), "itemproc", None)
        return next((p for p in getattr(manager, "middlewares", ()) if isinstance(p, SimhashDedupPipeline)), None)


class SimhashDedupLinkMiddleware(_Guard):
    """Drops the requests a near-duplicate page's callback yields (``SIMHASH_DEDUP_SKIP_LINKS``)."""

    switch = "skip_links"

    async def process_spider_output(self, response: Response, result: AsyncIterator[Any]) -> AsyncIterator[Any]:
        pipeline = self.pipeline
        held: list[Request] | None = []  # requests before the page is decided; None once it is
        duplicate_of: str | None = None
        failed: Exception | None = None
        try:
            async for output in result:
                if isinstance(output, Request) and not output.dont_filter:
                    if held is not None:
                        held.append(output)
                    elif duplicate_of is None:
                        yield output
                    else:
                        self._skip(pipeline, output, response.url, duplicate_of)
                    continue
                if held is not None and pipeline is not None and ItemAdapter.is_item(output):
                    duplicate_of = await self._decide(pipeline, output, response)
                    for request in held:
                        if duplicate_of is None:
                            yield request
                        else:
                            self._skip(pipeline, request, response.url, duplicate_of)
                    held = None
                yield output
        except Exception as error:  # the callback failed: what it yielded before goes on, as without this
            failed = error
        for request in held or ():  # no item (or none before a failure): nothing decided, the links followed
            yield request
        if failed is not None:
            raise failed

    async def _decide(self, pipeline: SimhashDedupPipeline, item: Any, response: Response) -> str | None:
        """The kept page this item's page duplicates (its URL), or None; decided once, for the pipeline too."""
        adapter = ItemAdapter(item)
        html = adapter.get(self.settings.html_field)
        if html is None and isinstance(response, TextResponse):
            html = response.text  # what SimhashDedupHtmlMiddleware puts in the item
        if not isinstance(html, (str, bytes)):
            return None
        match = await pipeline.decide_early(item, html, str(adapter.get(self.settings.url_field) or response.url))
        return match.url if dropped(match) else None

    @staticmethod
    def _skip(pipeline: SimhashDedupPipeline, request: Request, page: str, kept: str) -> None:
        logger.debug("simhash_dedup: link not followed, %s is a near-duplicate of %s: %s", page, kept, request.url)
        pipeline.skipped(Skip(time.time(), "link", request.url, page, f"near-duplicate of {kept}"))


class SimhashDedupRuleMiddleware(_Guard):
    """Skips requests the trusted URL rules rewrite to a page already fetched (``SIMHASH_DEDUP_URL_RULES``)."""

    switch = "url_rules"

    def process_request(self, request: Request) -> None:
        pipeline = self.pipeline
        if request.dont_filter or pipeline is None or pipeline.rules is None:
            return
        found = pipeline.rules.already_fetched(request.url)
        if found is None:
            return
        target, rules = found
        because = "; ".join(rule.describe() for rule in rules)
        logger.debug("simhash_dedup: request skipped, %s is %s by the URL rules (%s)", request.url, target, because)
        pipeline.skipped(Skip(time.time(), "request", request.url, target, because))
        raise IgnoreRequest(f"simhash_dedup: {request.url} is {target}, already fetched, by the URL rules")
