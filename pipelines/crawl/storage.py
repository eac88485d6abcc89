"""The crawl's store: which one and where (the SQLite file, opened with the pipeline, before the feed exports
open theirs; Redis, opened with the spider, whose name its key takes; or memory), reset when asked, the command
that shows a crawl's decisions afterwards; and what the crawl does when the store fails (Redis unreachable,
the SQLite file not written): said once per fault and counted, and with ``SIMHASH_DEDUP_FAIL_MODE = "closed"``
the crawl closed.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import TYPE_CHECKING

import xxhash
from scrapy.exceptions import CloseSpider
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.project import data_path

from ..matching.scope import Scope
from ..stores.errors import StoreNotOpened, StoreUnavailable
from ..stores.memory import MemoryStore
from ..stores.sqlite.lock import check_store_path
from ..stores.sqlite.store import SqliteStore, reset_store
from .settings import DedupSettings, refuse
from .stats import STATS_PREFIX

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy.crawler import Crawler

    from ..stores.base import Store
    from ..stores.redis.batching import StoreBatcher

logger = logging.getLogger(__name__)


class StoreOpener:
    """Opens the crawl's store as its settings say (``SIMHASH_DEDUP_BACKEND``, ``_PATH``, ``_PERSIST``,
    ``_RESET``, ``JOBDIR``); a store that cannot be used stops the crawl before it starts."""

    def __init__(self, crawler: Crawler, settings: DedupSettings) -> None:
        self.crawler = crawler
        self.settings = settings
        self.write_faults: WriteFaults | None = None  # the SQLite store's, once open

    def open_local(self, before_write: Callable[[], None], outage: StoreOutage) -> Store:
        """The SQLite store, locked for this crawl (emptied first unless the crawl remembers earlier runs),
        ``before_write`` called before it writes pages, its write faults said and acted on as ``outage``'s fail
        mode says (``WriteFaults``); a memory store otherwise (Redis opens with the spider: ``open_redis``)."""
        if self.settings.backend != "sqlite":
            return MemoryStore(self.settings.policy, self.settings.scope)
        path = self.path()
        if job_dir := self.crawler.settings.get("JOBDIR"):
            try:
                Path(job_dir).mkdir(parents=True, exist_ok=True)  # (as Scrapy makes it, later)
            except OSError as error:
                raise refuse(f"JOBDIR ({job_dir}) cannot be made: {error.strerror or error}") from None
        try:
            check_store_path(path, folder_must_exist=bool(self.settings.path))
            if (self.reset_requested() or not self.remembers()) and reset_store(path) and self.remembers():
                logger.info("simhash_dedup: reset, %s removed", path)
            store = SqliteStore(
                self.settings.policy,
                path,
                self.settings.scheme,
                self.settings.commit_every,
                self.settings.decisions,
                self.settings.review_texts,
                self.settings.scope,
                self.settings.memory_budget,
            )
        except StoreNotOpened as error:
            raise refuse(f"{'SIMHASH_DEDUP_PATH' if self.settings.path else 'the store'}: {error}") from None
        store.before_write = before_write
        store.on_fault = self.write_faults = WriteFaults(self.crawler, outage, str(path))
        if store.repaired:
            logger.warning(
                "simhash_dedup: %s was left inconsistent by an earlier failure: %s dropped (those pages "
                "are checked as new)",
                path,
                store.repaired,
            )
        return store

    async def open_redis(self, outage: StoreOutage) -> tuple[Store, StoreBatcher]:
        """The Redis store under the spider's key and the batcher its checks go through; read (reset first
        if asked) in the batcher's thread.  Unreachable: said (``outage``), and the crawl goes on as the fail
        mode says; a store of another scheme or layout stops the crawl."""
        import redis  # (and the Redis store's modules) only in crawls that use it
        from redis.exceptions import RedisClusterException
        from scrapy.utils.defer import maybe_deferred_to_future
        from twisted.internet.threads import deferToThread

        from ..stores.redis.batching import StoreBatcher
        from ..stores.redis.connect import connect, redis_store
        from ..stores.redis.keys import remove_redis_store

        key = self.redis_key()
        settings = self.settings
        try:  # (a cluster's client reads the cluster's nodes: off the reactor thread)
            assert settings.redis_url is not None  # the Redis backend has its URL (``DedupSettings``)
            client = await maybe_deferred_to_future(deferToThread(connect, settings.redis_url, settings.redis_timeout))
            store = redis_store(
                settings.policy,
                client,
                key,
                settings.scheme,
                settings.scope,
                settings.memory_budget,
                round(settings.expire_days * 86400),
                settings.decisions,
                settings.review_texts,
            )
        except (ValueError, RedisClusterException) as error:  # crawl scope on a cluster; no seed of a cluster answers
            logger.error("simhash_dedup: %s. The crawl stops.", str(error).rstrip("."))
            raise CloseSpider(CLOSE_REASON) from None
        batcher = StoreBatcher(store)
        try:
            if self.reset_requested():
                removed = await batcher.run(remove_redis_store, client, key)
                logger.info("simhash_dedup: reset, %d Redis keys of %s removed", removed, key)
            await batcher.run(store.open)
        except (StoreUnavailable, redis.RedisError) as error:
            outage.failed(key, error)
            return store, batcher
        except ValueError as error:  # a store of another fingerprint scheme or layout: not this crawl's
            batcher.stop()
            logger.error("simhash_dedup: %s The crawl stops.", error)
            raise CloseSpider(CLOSE_REASON) from None
        if settings.scope is Scope.CRAWL:
            logger.info("simhash_dedup: %d kept pages remembered from Redis (%s)", len(store), key)
        else:
            logger.info(
                "simhash_dedup: Redis store %s, a site's kept pages read when the site is met (%s scope)",
                key,
                settings.scope.value,
            )
        return store, batcher

    def remembers(self) -> bool:
        """Does this crawl go on from what earlier crawls kept?  With ``JOBDIR`` (a resumed job),
        ``SIMHASH_DEDUP_PERSIST`` or ``SIMHASH_DEDUP_PATH``, as Scrapy's own duplicate filter does
        with ``JOBDIR`` only."""
        return self.settings.persist or bool(self.settings.path) or bool(self.crawler.settings.get("JOBDIR"))

    def path(self) -> Path:
        """``SIMHASH_DEDUP_PATH``, else ``JOBDIR/simhash_dedup.sqlite``, else in ``.scrapy/simhash_dedup/``
        ``<spider>.sqlite`` with ``SIMHASH_DEDUP_PERSIST``, ``<spider>.last-crawl.sqlite`` without (the
        spider's name made safe for a file name): a crawl that does not remember never empties the store
        of those that do."""
        if self.settings.path:
            return Path(self.settings.path)
        if job_dir := self.crawler.settings.get("JOBDIR"):
            return Path(job_dir) / "simhash_dedup.sqlite"
        name = file_name((self.crawler.spider or self.crawler.spidercls).name)  # (the spider exists in a crawl)
        return Path(data_path("simhash_dedup", createdir=True)) / (
            f"{name}.sqlite" if self.settings.persist else f"{name}.last-crawl.sqlite"
        )

    def redis_key(self) -> str:
        assert self.crawler.spider is not None  # asked once the spider opens
        return self.settings.redis_key % {"spider": self.crawler.spider.name}

    def reset_requested(self) -> bool:
        """``SIMHASH_DEDUP_RESET``, or ``-a simhash_dedup_reset=1`` on the command line."""
        argument = str(getattr(self.crawler.spider, "simhash_dedup_reset", "")).lower()
        return self.settings.reset or argument in ("1", "true", "yes")

    def report_hint(self, store: Store) -> str:
        """The command that shows this crawl's decisions side by side."""
        if self.settings.decisions == 0:
            return "set SIMHASH_DEDUP_LOG_SIZE to keep the decision log, then run simhash-dedup report"
        if isinstance(store, SqliteStore):
            return f"simhash-dedup report {store.path} -o report.html"
        if self.settings.backend == "redis":
            where = re.sub(r"//[^@/]*@", "//", self.settings.redis_url or "")  # no password in the log
            return f"simhash-dedup report {where} --key {self.redis_key()} -o report.html"
        return "the Dropped lines of this log (the memory store keeps no decision log)"


def file_name(name: str) -> str:
    """``name`` as a file name that stays in its folder on every system: letters, digits, ``.``, ``_``
    and ``-`` kept, anything else (``/``, ``\\``, ``:``, ``..``, a leading dot...) made ``_``, and then, so
    that two names never share a file, a hash of the name added."""
    safe = re.sub(r"^\.|\.\.+", "_", re.sub(r"[^A-Za-z0-9._-]", "_", name))[:100]
    return (
        safe
        if safe == name and name
        else f"{safe}-{xxhash.xxh3_64_hexdigest(name.encode('utf-8', 'surrogatepass'))[:8]}"
    )


CLOSE_REASON = "simhash_dedup_store_unavailable"  # the finish reason with SIMHASH_DEDUP_FAIL_MODE = "closed"


class StoreOutage:
    """Whether the Redis store is down (it failed and has not answered since), and what that does."""

    def __init__(self, crawler: Crawler, fail_mode: str) -> None:
        self.crawler = crawler
        self.closed = fail_mode == "closed"  # fail closed: items not checked are dropped, the crawl stops
        self.down = False
        self.closing = False  # the spider is being closed (fail mode "closed")

    def failed(self, url: str, error: Exception) -> None:
        """Redis is unreachable: counted, logged once per outage, the crawl stopped if it fails closed."""
        self.crawler.stats.inc_value(f"{STATS_PREFIX}/store_errors")
        if not self.down:
            self.down = True
            logger.error(
                "simhash_dedup: the Redis store is unreachable (%s) at %s; %s",
                error,
                url,
                "closing the spider (SIMHASH_DEDUP_FAIL_MODE = 'closed')."
                if self.closed
                else "pages are checked against this crawler's replica of it and the pages it kept meanwhile only "
                "(simhash_dedup/checked_locally), until it answers (SIMHASH_DEDUP_FAIL_MODE = 'open').",
            )
        if self.closed:
            self.close_spider()

    def answered(self) -> None:
        """The store answered: an outage, if there was one, is over."""
        if self.down:
            self.down = False
            logger.info("simhash_dedup: the Redis store answers again; items are checked again")

    def close_spider(self) -> None:
        """Close the spider with ``CLOSE_REASON`` (once; on the reactor's next turn: this may run inside
        ``open_spider`` or ``process_item``)."""
        if self.closing:
            return
        self.closing = True
        from twisted.internet import reactor

        assert self.crawler.engine is not None  # a crawl that runs has its engine
        closing = self.crawler.engine.close_spider_async(reason=CLOSE_REASON)
        # zope declares IReactorTime.callLater without ``self``: mypy takes the delay for it
        reactor.callLater(0, deferred_from_coro, closing)  # type: ignore[arg-type]


class WriteFaults:
    """The SQLite store cannot be written (a full disk, an I/O error, its file deleted or replaced): said once per
    fault, as a warning, and counted; the pages kept meanwhile are still compared within the crawl and written once
    the store can be (``SqliteStore.flush``); with ``SIMHASH_DEDUP_FAIL_MODE = "closed"`` the crawl stops.  At the
    close, one line says how many delivered pages the store could not remember."""

    def __init__(self, crawler: Crawler, outage: StoreOutage, path: str) -> None:
        self.crawler = crawler
        self.outage = outage
        self.path = path

    def __call__(self, fault: str | None) -> None:
        """``SqliteStore.on_fault``: writes fail (``fault`` says why), or succeed again (``None``)."""
        if fault is None:
            logger.info(
                "simhash_dedup: the store %s is written again; the pages kept meanwhile are remembered", self.path
            )
            return
        self.crawler.stats.inc_value(f"{STATS_PREFIX}/store_write_failures")
        logger.warning(
            "simhash_dedup: the store %s cannot be written (%s); %s",
            self.path,
            fault,
            "closing the spider (SIMHASH_DEDUP_FAIL_MODE = 'closed')."
            if self.outage.closed
            else "kept pages are still compared within this crawl, and remembered once it can be written (tried again "
            "at each commit and at the close; SIMHASH_DEDUP_FAIL_MODE = 'open').",
        )
        if self.outage.closed:
            self.outage.close_spider()

    def closed(self, unwritten: int) -> None:
        """The store is closed, ``unwritten`` kept pages whose items were delivered not written to it."""
        if unwritten:
            self.crawler.stats.set_value(f"{STATS_PREFIX}/pages_not_remembered", unwritten)
            logger.warning(
                "simhash_dedup: %d kept pages whose items were delivered are not remembered in %s (it "
                "could not be written): a later crawl checks them as new.",
                unwritten,
                self.path,
            )
