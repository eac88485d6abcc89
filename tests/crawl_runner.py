"""Run one real Scrapy crawl and write what happened as JSON.

The tests start it in a subprocess (a Twisted reactor runs once per process):
``python -m tests.crawl_runner CONFIG.json RESULT.json``.  The spider visits the
given URLs one after another, in order, so which page of a cluster is kept
first is fixed.  ScrapyDeprecationWarning is an error here as in the tests.
"""

from __future__ import annotations

import gc
import json
import os
import signal
import sys
import warnings
from pathlib import Path
from typing import Any

from scrapy.exceptions import ScrapyDeprecationWarning

warnings.filterwarnings("error", category=ScrapyDeprecationWarning)

import scrapy  # noqa: E402
from scrapy import signals  # noqa: E402
from scrapy.crawler import CrawlerProcess  # noqa: E402

BASE_SETTINGS = {
    "ROBOTSTXT_OBEY": False,
    "DOWNLOAD_DELAY": 0,
    "AUTOTHROTTLE_ENABLED": False,
    "TELNETCONSOLE_ENABLED": False,
    "LOG_LEVEL": "INFO",
}


class InOrderSpider(scrapy.Spider):
    """Requests ``urls`` one at a time; yields ``{"url", "html"}`` (or only url)."""

    name = "in_order"

    def __init__(self, urls: list[str], yield_html: bool = True, repeat: int = 1, all_at_once: bool = False,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.urls = urls
        self.yield_html = yield_html
        self.repeat = repeat  # items per page, yielded together (``url#n``): processed concurrently
        self.all_at_once = all_at_once  # request every URL at start: pages arrive concurrently, in any order

    async def start(self):
        for index in range(len(self.urls) if self.all_at_once else 1):
            yield self._request(index)

    def _request(self, index: int) -> scrapy.Request:
        return scrapy.Request(self.urls[index], cb_kwargs={"index": index}, dont_filter=True)

    def parse(self, response: scrapy.http.Response, index: int):
        for n in range(self.repeat):
            item = {"url": response.url if n == 0 else f"{response.url}#{n}"}
            if self.yield_html:
                item["html"] = response.text
            yield item
        if not self.all_at_once and index + 1 < len(self.urls):
            yield self._request(index + 1)


class DropSomeItems:
    """A later pipeline that drops the items whose URL holds ``TEST_DROP_AT`` (as a validation step would)."""

    def __init__(self, at: str) -> None:
        self.at = at

    @classmethod
    def from_crawler(cls, crawler: Any) -> DropSomeItems:
        return cls(crawler.settings.get("TEST_DROP_AT"))

    async def process_item(self, item: Any) -> Any:
        if self.at in item["url"]:
            from scrapy.exceptions import DropItem

            raise DropItem("dropped by a later pipeline")
        return item


class KillFingerprintWorkers:
    """Kills the filter's worker process that fingerprints the page whose URL holds ``TEST_KILL_WORKERS_AT``,
    0.3 s after the page passes by (enable it before the filter)."""

    def __init__(self, crawler: Any) -> None:
        self.crawler = crawler
        self.at = crawler.settings.get("TEST_KILL_WORKERS_AT")

    @classmethod
    def from_crawler(cls, crawler: Any) -> KillFingerprintWorkers:
        return cls(crawler)

    async def process_item(self, item: Any) -> Any:
        if self.at in item["url"]:
            from twisted.internet import reactor

            from pipelines import SimhashDedupPipeline

            dedup = next(p for p in self.crawler.engine.scraper.itemproc.middlewares
                         if isinstance(p, SimhashDedupPipeline))
            reactor.callLater(0.3, lambda: [os.kill(pid, signal.SIGKILL) for pid, url in dedup.fingerprints.workers()
                                            if url == item["url"]])
        return item


def main(config_path: str, result_path: str) -> None:
    config = json.loads(Path(config_path).read_text())
    kept: list[str] = []
    dropped: list[dict[str, Any]] = []
    canonical: dict[str, str | None] = {}  # a kept item's URL -> its canonical_url field
    frozen: dict[str, int] = {"during": 0}  # objects frozen out of the garbage collector while items passed, and after

    kept_log = open(config["kept_log"], "a") if config.get("kept_log") else None  # noqa: SIM115

    def on_scraped(item: Any, **_: Any) -> None:
        kept.append(item["url"])
        canonical[item["url"]] = item.get("canonical_url")
        frozen["during"] = max(frozen["during"], gc.get_freeze_count())
        if kept_log:  # survives a kill: one flushed line per kept item
            kept_log.write(item["url"] + "\n")
            kept_log.flush()

    def on_dropped(item: Any, exception: Exception, **_: Any) -> None:
        match = getattr(exception, "match", None)
        if match is None:  # not a duplicate: dropped unchecked (fail mode "closed")
            dropped.append({"url": item["url"], "unchecked": True})
            return
        dropped.append({
            "url": item["url"], "duplicate_of": match.url, "reason": match.reason,
            "content_distance": match.content_distance, "structure_distance": match.structure_distance,
        })

    if config.get("keep_garbage"):  # what the collector finds unreachable is kept, to be counted at the end
        gc.set_debug(gc.DEBUG_SAVEALL)
    process = CrawlerProcess({**BASE_SETTINGS, **config["settings"]})
    spider = InOrderSpider if "spider_name" not in config else type(
        "NamedSpider", (InOrderSpider,), {"name": config["spider_name"]})
    crawler = process.create_crawler(spider)
    crawler.signals.connect(on_scraped, signal=signals.item_scraped)
    crawler.signals.connect(on_dropped, signal=signals.item_dropped)
    process.crawl(
        crawler, urls=config["urls"], yield_html=config.get("yield_html", True), repeat=config.get("repeat", 1),
        all_at_once=config.get("all_at_once", False), **config.get("spider_args", {}),
    )
    process.start()
    stats = {key: value for key, value in crawler.stats.get_stats().items() if isinstance(value, (int, float, str))}
    frozen["after"] = gc.get_freeze_count()
    gc.collect()
    garbage = sorted({type(thing).__name__ for thing in gc.garbage})  # (only with keep_garbage)
    Path(result_path).write_text(json.dumps({"kept": kept, "dropped": dropped, "stats": stats,
                                                   "canonical": canonical, "garbage": garbage, "frozen": frozen}))


if __name__ == "__main__":
    main(*sys.argv[1:3])
