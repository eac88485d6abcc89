"""The item pipeline: drop items whose page is a near-duplicate of a kept one."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import xxhash
from itemadapter import ItemAdapter
from scrapy import signals
from scrapy.exceptions import DropItem, NotConfigured
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from scrapy.utils.project import data_path

from .decisions import Decision, Reviewer, run_summary
from .fingerprint import Fingerprint, Fingerprinter, comparable, outcomes
from .settings import DedupSettings
from .stores import Match, MemoryStore, SqliteStore, StoreNotOpened, StoreUnavailable, dropped, reset_store
from .workers import ArrivalOrder, FingerprintPool, RecentPages

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from typing_extensions import Self

    from .batching import StoreBatcher

logger = logging.getLogger(__name__)

STATS_PREFIX = "simhash_dedup"
CLOSE_REASON = "simhash_dedup_store_unavailable"  # the finish reason with SIMHASH_DEDUP_FAIL_MODE = "closed"


class SimhashDuplicate(DropItem):
    """A near-duplicate of a page kept earlier in the crawl (or an earlier crawl)."""

    def __init__(self, url: str, match: Match, log_level: str) -> None:
        super().__init__(
            f"near-duplicate of {match.url} (matched on {match.reason}: "
            f"content distance {_show(match.content_distance)}, "
            f"similarity {_show(match.similarity)}, "
            f"structure distance {_show(match.structure_distance)}): {url}",
            log_level=log_level,
        )
        self.match = match


class SimhashUnchecked(DropItem):
    """With ``SIMHASH_DEDUP_FAIL_MODE = "closed"``: an item that could not be checked, the store being
    unreachable.  Dropped rather than let through unchecked; each is logged (WARNING) and counted."""

    def __init__(self, url: str) -> None:
        super().__init__(
            f"not checked: the store is unreachable and SIMHASH_DEDUP_FAIL_MODE is 'closed': {url}",
            log_level="WARNING",
        )


class SimhashDedupPipeline:
    """Fingerprints every item's HTML and drops near-duplicates of kept pages.

    Items without HTML, and pages that cannot be fingerprinted, are kept and
    counted in stats; the first of each kind is logged.
    """

    def __init__(self, crawler: Crawler, settings: DedupSettings) -> None:
        self.crawler = crawler
        self.settings = settings
        self.fingerprinter = Fingerprinter(
            structure_decay=settings.structure_decay,
            min_features=settings.min_features,
            max_bytes=settings.max_html_bytes,
            max_elements=settings.max_elements,
            max_text_chars=settings.max_text_chars,
            keep_text=settings.keep_texts,
        )
        self.reviewer = Reviewer(settings.keep_texts)  # makes the decision log's entries
        self._started = time.time()
        self.fingerprints = FingerprintPool(self.fingerprinter, settings.workers)  # off the reactor thread
        self._recent = RecentPages()  # byte-identical pages are fingerprinted once
        self._order = ArrivalOrder()  # decisions in the items' order of arrival
        self.store: MemoryStore = MemoryStore(settings.policy)
        self._batcher: StoreBatcher | None = None  # for the Redis store: checks off the reactor thread
        self._logged: set[str] = set()
        self._store_down = False  # the Redis store failed and has not answered since
        self._closing = False
        self._unconfirmed: dict[int, int] = {}  # id of a kept item on its way through later pipelines -> its row
        crawler.signals.connect(self._item_passed, signal=signals.item_scraped)
        crawler.signals.connect(self._item_lost, signal=signals.item_dropped)
        crawler.signals.connect(self._item_lost, signal=signals.item_error)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if not crawler.settings.getbool("SIMHASH_DEDUP_ENABLED", True):
            raise NotConfigured("SIMHASH_DEDUP_ENABLED is off")
        return cls(crawler, DedupSettings.from_settings(crawler.settings))

    async def open_spider(self) -> None:
        if self.settings.backend == "sqlite":
            path = self.store_path()
            try:
                if self._reset_requested() and reset_store(path):
                    logger.info("simhash_dedup: reset, %s removed", path)
                self.store = SqliteStore(self.settings.policy, path, self.settings.scheme, self.settings.commit_every,
                                         self.settings.decisions, self.settings.review_texts)
                self.store.before_write = self._flush_feeds
            except StoreNotOpened as error:
                self._store_not_opened(error)
                return
            logger.info("simhash_dedup: %d kept pages remembered from %s", len(self.store), path)
        elif self.settings.backend == "redis":
            await self._open_redis()
        self.crawler.stats.set_value(f"{STATS_PREFIX}/remembered", len(self.store))

    async def _open_redis(self) -> None:
        import redis  # (and the Redis store's modules) only in crawls that use it

        from .batching import StoreBatcher
        from .redis_store import RedisStore, remove_redis_store

        key = self.settings.redis_key % {"spider": self.crawler.spider.name}
        timeout = self.settings.redis_timeout
        client = redis.Redis.from_url(self.settings.redis_url, socket_timeout=timeout, socket_connect_timeout=timeout)
        expire = round(self.settings.expire_days * 86400)
        store = self.store = RedisStore(self.settings.policy, client, key, self.settings.scheme, expire,
                                        self.settings.decisions, self.settings.review_texts)
        self._batcher = StoreBatcher(store)
        try:
            if self._reset_requested():
                removed = await self._batcher.run(remove_redis_store, client, key)
                logger.info("simhash_dedup: reset, %d Redis keys of %s removed", removed, key)
            await self._batcher.run(store.open)
        except (StoreUnavailable, redis.RedisError) as error:
            self._store_failed(key, error)
            return
        logger.info("simhash_dedup: %d kept pages remembered from Redis (%s)", len(store), key)

    async def close_spider(self) -> None:
        self.fingerprints.close()
        if self._batcher is not None:
            self._batcher.stop()
        self.store.save_run(self.run_summary())
        self.store.close()

    def run_summary(self) -> dict[str, Any]:
        """This crawl, for the report: the spider, when, the decision's settings and the counts."""
        prefix = f"{STATS_PREFIX}/"
        counts = {key[len(prefix):]: value for key, value in self.crawler.stats.get_stats().items()
                  if key.startswith(prefix)}
        return run_summary(self.crawler.spider.name, self._started, self.settings.policy, counts)

    def store_path(self) -> Path:
        """``SIMHASH_DEDUP_PATH``, else ``JOBDIR/simhash_dedup.sqlite``, else
        ``.scrapy/simhash_dedup/<spider>.sqlite`` (the spider's name made safe for a file name)."""
        if self.settings.path:
            return Path(self.settings.path)
        if job_dir := self.crawler.settings.get("JOBDIR"):
            return Path(job_dir) / "simhash_dedup.sqlite"
        return Path(data_path("simhash_dedup", createdir=True)) / f"{file_name(self.crawler.spider.name)}.sqlite"

    def _reset_requested(self) -> bool:
        """``SIMHASH_DEDUP_RESET``, or ``-a simhash_dedup_reset=1`` on the command line."""
        argument = str(getattr(self.crawler.spider, "simhash_dedup_reset", "")).lower()
        return self.settings.reset or argument in ("1", "true", "yes")

    async def process_item(self, item: Any) -> Any:
        adapter = ItemAdapter(item)
        url = str(adapter.get(self.settings.url_field) or "")
        html = adapter.get(self.settings.html_field)
        if html is None:
            self._count("no_html", url)
            return item
        turn = self._order.take()
        unchecked = False
        try:
            fingerprint = await self._fingerprint(url, html)
            await self._order.wait(turn)
            match = await self._check_and_add(url, fingerprint, turn, id(item)) if fingerprint else None
        except StoreUnavailable as error:  # kept unchecked, or with fail mode "closed" dropped as the crawl stops
            self._store_failed(url, error)
            unchecked, match = self.settings.fail_mode == "closed", None
        except Exception:  # a bug or an odd page must never lose the item
            self._count("errors", url, exc_info=True)
            fingerprint, match = None, None
        finally:
            self._order.end(turn)
        if unchecked:
            self._count("dropped_unchecked")
            self._remove_html(adapter)
            raise SimhashUnchecked(url)
        if dropped(match):
            self._count("dropped")
            self._count(f"dropped/{match.reason}")
            self._remove_html(adapter)  # keeps the page out of Scrapy's drop log line
            self._log(self.reviewer.dropped(url, fingerprint, match))
            raise SimhashDuplicate(url, match, self.settings.drop_log_level)
        self._count("kept")
        if match is not None:
            self._count("borderline")
        self._log(self.reviewer.kept(url, fingerprint, match))
        self._finish_kept(adapter, url, fingerprint)
        return item

    async def _check_and_add(self, url: str, fingerprint: Fingerprint, turn: int, item_id: int) -> Match | None:
        """Check and add, atomically; the next item's turn starts once the page is in the store's queue.
        A page kept in the SQLite store waits there for its item to get past the later pipelines."""
        if self._batcher is None:
            match = self.store.check_and_add(url, fingerprint)
            if not dropped(match) and isinstance(self.store, SqliteStore):
                self._unconfirmed[item_id] = len(self.store) - 1
            return match
        answer = self._batcher.submit(url, fingerprint)
        self._order.end(turn)
        match = await maybe_deferred_to_future(answer)
        if self._store_down:
            self._store_down = False
            logger.info("simhash_dedup: the Redis store answers again; items are checked again")
        return match

    def _log(self, decision: Decision | None) -> None:
        if decision is not None:
            self.store.record(decision)

    def _item_passed(self, item: Any, **_: Any) -> None:
        """``item_scraped``: the item got past every pipeline (and to the feed exports): its page may
        now be written to the store."""
        if (row := self._unconfirmed.pop(id(item), None)) is not None:
            self.store.confirm(row)  # type: ignore[attr-defined]

    def _item_lost(self, item: Any, **_: Any) -> None:
        """``item_dropped`` / ``item_error`` after this pipeline kept it: its page is never written."""
        if (row := self._unconfirmed.pop(id(item), None)) is not None:
            self.store.forget(row)  # type: ignore[attr-defined]

    def _flush_feeds(self) -> None:
        """Push what the feed exports hold in memory to their files before pages are written to the
        store, so that a kill leaves no page remembered whose item is not in the output (Scrapy's
        exports buffer ~8 KB)."""
        for extension in getattr(self.crawler.extensions, "middlewares", ()):
            for slot in getattr(extension, "slots", ()):
                for stream in (getattr(getattr(slot, "exporter", None), "stream", None), getattr(slot, "file", None)):
                    try:
                        stream.flush()
                    except (AttributeError, OSError, ValueError):  # none, or closed
                        pass

    def _store_not_opened(self, error: StoreNotOpened) -> None:
        """The store cannot be used: one line that says why and what to do, and the crawl stops before
        its first item (items already on their way are treated as with the store down)."""
        logger.error("simhash_dedup: %s. The crawl stops.", error)
        self._close_spider()

    def _close_spider(self) -> None:
        if self._closing:
            return
        self._closing = True
        from twisted.internet import reactor  # closing from inside open_spider or process_item: next turn

        reactor.callLater(0, deferred_from_coro, self.crawler.engine.close_spider_async(reason=CLOSE_REASON))

    def _store_failed(self, url: str, error: Exception) -> None:
        """Redis is unreachable: keep the item (counted), log once per outage, stop if fail-closed."""
        self.crawler.stats.inc_value(f"{STATS_PREFIX}/store_errors")
        closed = self.settings.fail_mode == "closed"
        if not self._store_down:
            self._store_down = True
            logger.error(
                "simhash_dedup: the Redis store is unreachable (%s) at %s; %s", error, url,
                "closing the spider (SIMHASH_DEDUP_FAIL_MODE = 'closed')." if closed else
                "items are kept unchecked, counted in simhash_dedup/store_errors, until it answers "
                "(SIMHASH_DEDUP_FAIL_MODE = 'open').",
            )
        if closed:
            self._close_spider()

    async def _fingerprint(self, url: str, html: Any) -> Fingerprint | None:
        """The page's fingerprint, or ``None`` (counted) if it has nothing to compare."""
        self._count("checked")
        if not isinstance(html, (str, bytes)):
            self._count("not_html", url)
            return None
        fingerprint, known = await self._recent.fingerprint(html, url, self.fingerprints.fingerprint)
        if known:
            self._count("same_html")
        for outcome in outcomes(fingerprint):
            self._count(outcome, "" if outcome == "short_text" else url)  # the first of each kind is logged
        return fingerprint if comparable(fingerprint) else None

    def _finish_kept(self, adapter: ItemAdapter, url: str, fingerprint: Fingerprint | None) -> None:
        try:
            if self.settings.fingerprint_fields and fingerprint is not None:
                adapter["simhash_content"] = _hex(fingerprint.content)
                adapter["simhash_structure"] = _hex(fingerprint.structure)
            if self.settings.remove_html:
                self._remove_html(adapter)
        except KeyError:  # e.g. a scrapy.Item class without these fields
            self._count("item_field_errors", url, exc_info=True)

    def _remove_html(self, adapter: ItemAdapter) -> None:
        """Delete the field from dicts and ``scrapy.Item``; blank it in fixed-field items."""
        if isinstance(adapter.item, MutableMapping):
            adapter.item.pop(self.settings.html_field, None)
        elif self.settings.html_field in adapter:
            adapter[self.settings.html_field] = None

    def _count(self, outcome: str, url: str = "", exc_info: bool = False) -> None:
        self.crawler.stats.inc_value(f"{STATS_PREFIX}/{outcome}")
        if not url or outcome in self._logged:
            return
        self._logged.add(outcome)
        level = logging.ERROR if exc_info else logging.INFO
        logger.log(
            level,
            "simhash_dedup: %s for %s; kept. Further items like this are only "
            "counted in the stats (simhash_dedup/%s).",
            outcome, url, outcome, exc_info=exc_info,
        )


def file_name(name: str) -> str:
    """``name`` as a file name that stays in its folder on every system: letters, digits, ``.``, ``_``
    and ``-`` kept, anything else (``/``, ``\\``, ``:``, ``..``, a leading dot...) made ``_``, and then, so
    that two names never share a file, a hash of the name added."""
    safe = re.sub(r"^\.|\.\.+", "_", re.sub(r"[^A-Za-z0-9._-]", "_", name))[:100]
    return safe if safe == name and name else f"{safe}-{xxhash.xxh3_64_hexdigest(name.encode('utf-8', 'surrogatepass'))[:8]}"


def _show(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def _hex(fingerprint: int | None) -> str | None:
    """Fingerprints go into items as 16 hex digits: JSON numbers lose bits above 2**53."""
    return None if fingerprint is None else f"{fingerprint:016x}"
