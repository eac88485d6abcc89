"""A Scrapy add-on: one line in ``ADDONS`` enables the pipeline and its middlewares."""

from __future__ import annotations

from scrapy.settings import BaseSettings

from .middleware import SimhashDedupDownloaderMiddleware, SimhashDedupSpiderMiddleware
from .pipeline import SimhashDedupPipeline

PIPELINE_PRIORITY = 200  # before typical storage pipelines (300+), so duplicates are not stored
SPIDER_MIDDLEWARE_PRIORITY = 650  # nearer the spider than most: it sees the callback's own items and requests
DOWNLOADER_MIDDLEWARE_PRIORITY = 50  # before robots.txt (100) and the cache: a skipped or held request costs nothing


class SimhashDedupAddon:
    """``ADDONS = {"scrapy_simhash_dedup.SimhashDedupAddon": 0}``: the pipeline, the spider middleware (each
    response's page decided once, for all its items, and the link guard) and the downloader middleware (the URL
    rules); priorities set by hand win.  Items need no field: the page is the response they came from."""

    def update_settings(self, settings: BaseSettings) -> None:
        settings.setdefault_in_component_priority_dict("ITEM_PIPELINES", SimhashDedupPipeline, PIPELINE_PRIORITY)
        settings.setdefault_in_component_priority_dict(
            "SPIDER_MIDDLEWARES", SimhashDedupSpiderMiddleware, SPIDER_MIDDLEWARE_PRIORITY
        )
        settings.setdefault_in_component_priority_dict(
            "DOWNLOADER_MIDDLEWARES", SimhashDedupDownloaderMiddleware, DOWNLOADER_MIDDLEWARE_PRIORITY
        )
