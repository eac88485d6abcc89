"""The item pipeline: drop items whose page is a near-duplicate of a kept one."""

from __future__ import annotations

import logging
import re
import time
from collections import OrderedDict
from collections.abc import MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import xxhash
from itemadapter import ItemAdapter
from scrapy import signals
from scrapy.exceptions import DropItem, NotConfigured
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from scrapy.utils.project import data_path

from .decisions import Decision, Reviewer, Skip, run_summary
from .fingerprint import Fingerprint, Fingerprinter, comparable, outcomes
from .settings import DedupSettings
from .policy import Match, dropped
from .stores import MemoryStore, SqliteStore, StoreNotOpened, StoreUnavailable, reset_store
from .urlrules import RuleBook
from .workers import ArrivalOrder, FingerprintPool, RecentPages

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from typing_extensions import Self

    from .batching import StoreBatcher

logger = logging.getLogger(__name__)

STATS_PREFIX = "simhash_dedup"
#: Items decided at response time (the link guard) waiting for the pipeline: at most this many held.
DECIDED_HELD = 10_000
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


@dataclass(frozen=True)
class Verdict:
    """What the filter decided for a page: its fingerprint (``None``: not compared), the match (``dropped``
    tells a duplicate), the SQLite row it was kept at (written once its item passes), and whether it
    could not be checked at all (the store down, fail mode "closed")."""

    fingerprint: Fingerprint | None = None
    match: Match | None = None
    row: int | None = None
    unchecked: bool = False


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
        self._decided: OrderedDict[int, tuple[Any, Verdict]] = OrderedDict()  # id(item) -> item, its verdict
        self.rules = RuleBook(settings.rule_support) if settings.url_rules else None
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
        if self.rules is not None and not self._closing:
            await self._load_rules()

    async def _load_rules(self) -> None:
        try:
            rules, fetched = (await self._batcher.run(self.store.load_rules) if self._batcher is not None
                              else self.store.load_rules())
        except Exception as error:  # noqa: BLE001 (Redis down: the rules are learned again)
            logger.warning("simhash_dedup: the URL rules could not be read (%s); they are learned afresh", error)
            return
        self.rules.load(rules, fetched)
        self.crawler.stats.set_value(f"{STATS_PREFIX}/rules", len(self.rules.trusted()))
        if rules:
            logger.info("simhash_dedup: %d URL rules remembered, %d trusted", len(rules), len(self.rules.trusted()))

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
        summary = run_summary(self.crawler.spider.name, self._started, self.settings.policy, counts)
        summary["settings"]["rule_support"] = self.settings.rule_support  # which URL rules were trusted
        return summary

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
        verdict = self._verdict_taken(item)
        if verdict is None:
            html = adapter.get(self.settings.html_field)
            if html is None:
                self._count("no_html", url)
                return item
            verdict = await self._decide(url, html)
        if verdict.row is not None:
            self._unconfirmed[id(item)] = verdict.row
        if verdict.unchecked:
            self._count("dropped_unchecked")
            self._remove_html(adapter)
            raise SimhashUnchecked(url)
        match = verdict.match
        if dropped(match):
            self._count("dropped")
            self._count(f"dropped/{match.reason}")
            self._remove_html(adapter)  # keeps the page out of Scrapy's drop log line
            self._log(self.reviewer.dropped(url, verdict.fingerprint, match))
            raise SimhashDuplicate(url, match, self.settings.drop_log_level)
        self._count("kept")
        if match is not None:
            self._count("borderline")
        self._log(self.reviewer.kept(url, verdict.fingerprint, match))
        self._finish_kept(adapter, url, verdict.fingerprint)
        return item

    async def decide_early(self, item: Any, html: str | bytes, url: str) -> Match | None:
        """Decide an item's page before the item reaches the pipeline (the link guard, at response time);
        the pipeline then takes this verdict for the item instead of fingerprinting it again."""
        verdict = await self._decide(url, html)
        self._decided[id(item)] = (item, verdict)  # the item held: its id is not reused while here
        if len(self._decided) > DECIDED_HELD:  # items an earlier pipeline dropped never come
            self._decided.popitem(last=False)
        return verdict.match

    def _verdict_taken(self, item: Any) -> Verdict | None:
        held = self._decided.pop(id(item), None)
        return held[1] if held is not None and held[0] is item else None

    async def _decide(self, url: str, html: Any) -> Verdict:
        """Fingerprint the page and check it against the store, in the order pages arrived; what the
        rules learn from it."""
        turn = self._order.take()
        try:
            fingerprint = await self._fingerprint(url, html)
            await self._order.wait(turn)
            verdict = Verdict(fingerprint, *await self._check_and_add(url, fingerprint, turn)) if fingerprint else Verdict()
        except StoreUnavailable as error:  # kept unchecked, or with fail mode "closed" dropped as the crawl stops
            self._store_failed(url, error)
            return Verdict(unchecked=self.settings.fail_mode == "closed")
        except Exception:  # a bug or an odd page must never lose the item
            self._count("errors", url, exc_info=True)
            return Verdict()
        finally:
            self._order.end(turn)
        if self.rules is not None:
            self._learn(url, verdict)
        return verdict

    def _learn(self, url: str, verdict: Verdict) -> None:
        """A decided page teaches the URL rules: a drop is a supporting pair, a keep may refute."""
        self.rules.fetched(url)
        if dropped(verdict.match):
            for rule in self.rules.learn(url, verdict.match.url):
                logger.info("simhash_dedup: URL rule trusted after %d pairs: %s", rule.support, rule.describe())
        elif verdict.fingerprint is not None:
            for rule in self.rules.kept(url):
                if rule.support >= self.rules.support:  # it was trusted
                    logger.warning("simhash_dedup: URL rule withdrawn: %s (%s were both kept, as different pages)",
                                   rule.describe(), " and ".join(rule.refuted_by.split(" ", 1)))
        if changed := self.rules.take_changed():
            self.store.save_rules(changed)
            self.crawler.stats.set_value(f"{STATS_PREFIX}/rules", len(self.rules.trusted()))

    def skipped(self, skip: Skip) -> None:
        """A link or a request the crawl will not make (the link guard): counted and logged in the store."""
        self._count("links_skipped" if skip.kind == "link" else "requests_skipped")
        self.store.record_skip(skip)

    async def _check_and_add(self, url: str, fingerprint: Fingerprint, turn: int) -> tuple[Match | None, int | None]:
        """Check and add, atomically; the next item's turn starts once the page is in the store's queue.
        A page kept in the SQLite store waits there (at the row returned) for its item to get past the
        later pipelines."""
        if self._batcher is None:
            match = self.store.check_and_add(url, fingerprint)
            kept_at = len(self.store) - 1 if not dropped(match) and isinstance(self.store, SqliteStore) else None
            return match, kept_at
        answer = self._batcher.submit(url, fingerprint)
        self._order.end(turn)
        match = await maybe_deferred_to_future(answer)
        if self._store_down:
            self._store_down = False
            logger.info("simhash_dedup: the Redis store answers again; items are checked again")
        return match, None

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
