"""A Scrapy add-on: one line in ``ADDONS`` enables the pipeline and the middleware."""

from __future__ import annotations

from scrapy.settings import BaseSettings

from .middleware import SimhashDedupHtmlMiddleware
from .pipeline import SimhashDedupPipeline

PIPELINE_PRIORITY = 200  # before typical storage pipelines (300+), so duplicates are not stored
MIDDLEWARE_PRIORITY = 600


class SimhashDedupAddon:
    """``ADDONS = {"pipelines.SimhashDedupAddon": 0}``; priorities set by hand win.

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
