"""A Scrapy add-on: one line in ``ADDONS`` enables the pipeline and the middleware."""

from __future__ import annotations

from scrapy.settings import BaseSettings

from .linkguard import SimhashDedupLinkMiddleware, SimhashDedupRuleMiddleware
from .middleware import SimhashDedupHtmlMiddleware
from .pipeline import SimhashDedupPipeline

PIPELINE_PRIORITY = 200  # before typical storage pipelines (300+), so duplicates are not stored
MIDDLEWARE_PRIORITY = 600
LINK_MIDDLEWARE_PRIORITY = 650  # nearer the spider than most: it sees the callback's own requests
RULE_MIDDLEWARE_PRIORITY = 50  # before robots.txt (100) and the cache: a skipped request costs nothing


class SimhashDedupAddon:
    """``ADDONS = {"pipelines.SimhashDedupAddon": 0}``: the pipeline, the HTML middleware, the link guard
    and the URL rules; priorities set by hand win.

    The HTML the middleware puts in items is there for the filter only: kept items lose it once
    fingerprinted (``SIMHASH_DEDUP_REMOVE_HTML``, which a project's own setting overrides), so it is
    neither exported nor printed in Scrapy's "Scraped from" DEBUG lines."""

    def update_settings(self, settings: BaseSettings) -> None:
        settings.set("SIMHASH_DEDUP_REMOVE_HTML", True, priority="addon")
        settings.setdefault_in_component_priority_dict(
            "ITEM_PIPELINES", SimhashDedupPipeline, PIPELINE_PRIORITY
        )
        settings.setdefault_in_component_priority_dict(
            "SPIDER_MIDDLEWARES", SimhashDedupHtmlMiddleware, MIDDLEWARE_PRIORITY
        )
        settings.setdefault_in_component_priority_dict(
            "SPIDER_MIDDLEWARES", SimhashDedupLinkMiddleware, LINK_MIDDLEWARE_PRIORITY
        )
        settings.setdefault_in_component_priority_dict(
            "DOWNLOADER_MIDDLEWARES", SimhashDedupRuleMiddleware, RULE_MIDDLEWARE_PRIORITY
        )
