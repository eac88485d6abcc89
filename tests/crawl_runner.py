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

# after the filter above: Scrapy's deprecation warnings are errors from its first import on
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
    """Requests ``urls`` one at a time; yields ``{"url", "html"}`` (or only url), ``repeat`` items a page."""

    name = "in_order"

    def __init__(
        self,
        urls: list[str],
        yield_html: bool = True,
        repeat: int = 1,
        all_at_once: bool = False,
        html_as: str = "text",
        meta: dict[str, dict[str, Any]] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.urls = urls
        self.meta = meta or {}  # URL -> the ``Request.meta`` its request carries
        self.yield_html = yield_html
        self.html_as = html_as  # "text": ``response.text`` (the body of a response that has no text); "bytes"
        self.repeat = repeat  # items per page, yielded together (``url#n``): processed concurrently
        self.all_at_once = all_at_once  # request every URL at start: pages arrive concurrently, in any order

    async def start(self):
        for index in range(len(self.urls) if self.all_at_once else 1):
            yield self._request(index)

    def _request(self, index: int) -> scrapy.Request:
        url = self.urls[index]
        return scrapy.Request(url, cb_kwargs={"index": index}, dont_filter=True, meta=dict(self.meta.get(url, {})))

    def parse(self, response: scrapy.http.Response, index: int):
        for n in range(self.repeat):
            item = {"url": response.url if n == 0 else f"{response.url}#{n}"}
            if self.yield_html:
                text = self.html_as == "text" and isinstance(response, scrapy.http.TextResponse)
                item["html"] = response.text if text else response.body
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


class RecordScrapyRoutes:
    """A pipeline that records, at each item, what the filter reaches through Scrapy's private attributes: the
    feed exports' files (``confirmation.feed_streams``) and, from a middleware, the filter's pipeline."""

    def __init__(self, crawler: Any) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Any) -> RecordScrapyRoutes:
        return cls(crawler)

    async def process_item(self, item: Any) -> Any:
        from scrapy_simhash_dedup import SimhashDedupDownloaderMiddleware, SimhashDedupPipeline
        from scrapy_simhash_dedup.crawl.items import feed_streams

        stats = self.crawler.stats
        stats.set_value("test/feed_streams", len(feed_streams(self.crawler)))
        found = SimhashDedupDownloaderMiddleware.from_crawler(self.crawler).pipeline
        stats.set_value("test/pipeline_found", isinstance(found, SimhashDedupPipeline))
        return item


class WorkerFault:
    """A pipeline enabled before the filter that acts on the filter's worker process once the page whose URL
    holds the setting ``TEST_<NAME>_AT`` passes by (``act``)."""

    setting = ""

    def __init__(self, crawler: Any) -> None:
        self.crawler = crawler
        self.at = crawler.settings.get(self.setting)

    @classmethod
    def from_crawler(cls, crawler: Any) -> WorkerFault:
        return cls(crawler)

    async def process_item(self, item: Any) -> Any:
        if self.at in item["url"]:
            from scrapy_simhash_dedup import SimhashDedupPipeline

            dedup = next(
                p for p in self.crawler.engine.scraper.itemproc.middlewares if isinstance(p, SimhashDedupPipeline)
            )
            self.act(dedup.filter, item["url"])
        return item

    def act(self, dedup: Any, url: str) -> None:
        raise NotImplementedError


class KillFingerprintWorkers(WorkerFault):
    """Kills the worker process that fingerprints the page whose URL holds ``TEST_KILL_WORKERS_AT``, 0.3 s after
    the page passes by."""

    setting = "TEST_KILL_WORKERS_AT"

    def act(self, dedup: Any, url: str) -> None:
        from twisted.internet import reactor

        reactor.callLater(
            0.3, lambda: [os.kill(pid, signal.SIGKILL) for pid, on in dedup.fingerprints.workers() if on == url]
        )


class StopFingerprintWorkers(WorkerFault):
    """Stops (SIGSTOP) the worker process while it fingerprints the page whose URL holds ``TEST_STOP_WORKERS_AT``:
    looks every 5 ms from the moment the page passes by; logs the stopped process's pid."""

    setting = "TEST_STOP_WORKERS_AT"

    def act(self, dedup: Any, url: str) -> None:
        from twisted.internet.task import LoopingCall

        def stop_it() -> None:
            for pid, on in dedup.fingerprints.workers():
                if on == url:
                    os.kill(pid, signal.SIGSTOP)
                    self.crawler.spider.logger.info("test: worker %d stopped on %s", pid, url)
                    looking.stop()

        looking = LoopingCall(stop_it)
        looking.start(0.005)


class CrawlRecord:
    """What one crawler kept and dropped, from its signals; ``kept_log``: a file that gets one flushed line per
    kept item (it survives a kill)."""

    def __init__(self, crawler: Any, kept_log: str | None = None) -> None:
        self.crawler = crawler
        self.kept: list[str] = []
        self.dropped: list[dict[str, Any]] = []
        self.canonical: dict[str, str | None] = {}  # a kept item's URL -> its canonical_url field
        self.frozen: dict[str, int] = {"during": 0}  # objects frozen out of the collector while items passed, and after
        self.kept_log = open(kept_log, "a") if kept_log else None  # noqa: SIM115 (closed at the spider's close)
        crawler.signals.connect(self.on_scraped, signal=signals.item_scraped)
        crawler.signals.connect(self.on_dropped, signal=signals.item_dropped)

    def on_scraped(self, item: Any, **_: Any) -> None:
        self.kept.append(item["url"])
        self.canonical[item["url"]] = item.get("canonical_url")
        self.frozen["during"] = max(self.frozen["during"], gc.get_freeze_count())
        if self.kept_log:
            self.kept_log.write(item["url"] + "\n")
            self.kept_log.flush()

    def on_dropped(self, item: Any, exception: Exception, **_: Any) -> None:
        match = getattr(exception, "match", None)
        if match is None:  # not a duplicate: dropped unchecked (fail mode "closed")
            self.dropped.append({"url": item["url"], "unchecked": True})
            return
        self.dropped.append(
            {
                "url": item["url"],
                "duplicate_of": match.url,
                "reason": match.reason,
                "content_distance": match.content_distance,
                "structure_distance": match.structure_distance,
            }
        )

    def result(self) -> dict[str, Any]:
        stats = {
            key: value for key, value in self.crawler.stats.get_stats().items() if isinstance(value, (int, float, str))
        }
        return {
            "kept": self.kept,
            "dropped": self.dropped,
            "stats": stats,
            "canonical": self.canonical,
            "frozen": self.frozen,
        }


def start_crawl(process: CrawlerProcess, config: dict[str, Any], spider: type[InOrderSpider]) -> CrawlRecord:
    crawler = process.create_crawler(spider)
    record = CrawlRecord(crawler, config.get("kept_log"))
    process.crawl(
        crawler,
        urls=config["urls"],
        yield_html=config.get("yield_html", True),
        repeat=config.get("repeat", 1),
        all_at_once=config.get("all_at_once", False),
        html_as=config.get("html_as", "text"),
        meta=config.get("meta"),
        **config.get("spider_args", {}),
    )
    return record


def main(config_path: str, result_path: str) -> None:
    """One crawl (``settings``, ``urls``...), or with ``crawls`` several at once in this process, each with its
    own settings (its spider's ``custom_settings``), urls and options; the result holds one record each."""
    config = json.loads(Path(config_path).read_text())
    if config.get("failing_writes"):  # SQLite writes that fail as on a full disk (``tests.faults``)
        from tests.faults import fail_writes

        fail_writes(config["failing_writes"])
    if config.get("keep_garbage"):  # what the collector finds unreachable is kept, to be counted at the end
        gc.set_debug(gc.DEBUG_SAVEALL)
    if "crawls" in config:
        process = CrawlerProcess(BASE_SETTINGS)
        records = [
            start_crawl(
                process,
                one,
                type(
                    f"Crawl{n}",
                    (InOrderSpider,),
                    {"name": one.get("spider_name", f"crawl{n}"), "custom_settings": one["settings"]},
                ),
            )
            for n, one in enumerate(config["crawls"])
        ]
        process.start()
        Path(result_path).write_text(json.dumps({"crawls": [record.result() for record in records]}))
        return
    process = CrawlerProcess({**BASE_SETTINGS, **config["settings"]})
    spider = (
        InOrderSpider
        if "spider_name" not in config
        else type("NamedSpider", (InOrderSpider,), {"name": config["spider_name"]})
    )
    record = start_crawl(process, config, spider)
    process.start()
    result = record.result()
    result["frozen"]["after"] = gc.get_freeze_count()
    gc.collect()
    result["garbage"] = sorted({type(thing).__name__ for thing in gc.garbage})  # (only with keep_garbage)
    Path(result_path).write_text(json.dumps(result))


if __name__ == "__main__":
    main(*sys.argv[1:3])
