"""The item pipeline: drop items whose page is a near-duplicate of a kept one."""

from __future__ import annotations

import logging
import re
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import xxhash
from itemadapter import ItemAdapter
from scrapy import signals
from scrapy.exceptions import CloseSpider, DropItem, NotConfigured
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from twisted.internet.defer import Deferred
from twisted.internet.task import LoopingCall
from twisted.python.failure import Failure
from scrapy.utils.project import data_path

from ..fingerprint.declared import declared_in_header
from ..fingerprint.fingerprinter import Fingerprint, comparable, outcomes
from ..guards.canonical import CanonicalUrls
from ..guards.linkguard import LinkGuard
from ..matching.decision_log import RULE, Alias, Reviewer, Skip, canonical_aliases, run_summary
from ..matching.policy import UPDATE, Match, dropped
from ..matching.urlrules import KnownUrls, RuleBook
from ..stores.errors import CheckedLocally, StoreNotOpened, StoreUnavailable
from ..stores.memory import MemoryStore
from ..stores.sqlite import SqliteStore, reset_store
from ..workers.cache import RecentPages
from ..workers.pool import FingerprintPool
from ..workers.start import WorkerTimedOut
from .gcfreeze import StartupObjects
from .settings import DedupSettings
from .startup import crawl_settings, refuse
from .summary import CrawlSummary

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from typing_extensions import Self

    from ..stores.redis.batching import StoreBatcher

logger = logging.getLogger(__name__)

STATS_PREFIX = "simhash_dedup"
#: Items whose page was decided at response time (the page middleware) waiting for the pipeline: at most this many.
ASSIGNED_HELD = 10_000
#: Pages of the item route whose HTML objects are held: the items of one page arrive together, within them.
SAME_OBJECT_PAGES = 256
#: Items without HTML, and no page checked yet, after which the crawl is told that nothing is deduplicated.
NO_HTML_WARNING = 20
#: The field a kept page's items get with ``SIMHASH_DEDUP_UPDATES`` when the page is an update.
UPDATE_FIELD = "simhash_dedup_update"
#: What an item raises when it cannot take a field: undeclared (``scrapy.Item``), frozen (a dataclass, attrs),
#: a value its validation refuses (a model).  The item is then kept as it is, never lost.
FIELD_REFUSED = (KeyError, AttributeError, TypeError, ValueError)
CLOSE_REASON = "simhash_dedup_store_unavailable"  # the finish reason with SIMHASH_DEDUP_FAIL_MODE = "closed"
#: Seconds between two hand-overs of the filter's counts to the crawl's stats (``Counts``).
STATS_EVERY = 1.0


class SimhashDuplicate(DropItem):
    """An item of a page that is a near-duplicate of a page kept earlier in the crawl (or an earlier crawl)."""

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
class PageVerdict:
    """What the filter decided for a page; every item of the page follows it.  ``fingerprint`` is None
    for a page that was not compared; ``match`` says what it duplicates (``dropped``), its borderline
    candidate or the page it updates; ``row``: the SQLite row it was kept at (written once one of its
    items passes); ``unchecked``: the store could not check it (fail mode "closed"); ``recrawl``: it is a
    page an earlier crawl kept, met again (its links are followed)."""

    url: str
    fingerprint: Fingerprint | None = None
    match: Match | None = None
    row: int | None = None
    unchecked: bool = False
    recrawl: bool = False
    canonical: str | None = None  # a kept page's canonical URL (``SIMHASH_DEDUP_CANONICAL_FIELD``)

    @property
    def duplicate(self) -> bool:
        return dropped(self.match)

    @property
    def update(self) -> bool:
        return self.match is not None and self.match.reason == UPDATE


class SimhashDedupPipeline:
    """Fingerprints every page once and drops all the items of a page that is a near-duplicate of a
    kept one.

    With the add-on, the page is the response the items came from
    (``SimhashDedupSpiderMiddleware`` hands it over at the first item); else the
    HTML in an item field, items carrying the very same HTML object being one
    page.  Items without HTML, and pages that cannot be fingerprinted, are kept
    and counted in stats; the first of each kind is logged.
    """

    def __init__(self, crawler: Crawler, settings: DedupSettings) -> None:
        self.crawler = crawler
        self.settings = settings
        self.fingerprinter = settings.fingerprinter(keep_text=settings.keep_texts)
        self.reviewer = Reviewer(settings.keep_texts)  # makes the decision log's entries
        self._started = time.time()
        self.fingerprints = FingerprintPool(self.fingerprinter, settings.workers, settings.worker_timeout)
        self._recent = RecentPages()  # byte-identical pages are fingerprinted once
        self._arrived: deque[PageDecision] = deque()  # pages not decided yet, in their order of arrival
        self._batcher: StoreBatcher | None = None  # for the Redis store: checks off the reactor thread
        self._logged: set[str] = set()
        self.counts = Counts(crawler)
        self.summary = CrawlSummary()  # said at close: pages kept and dropped by rule, sites mostly dropped
        self._store_down = False  # the Redis store failed and has not answered since
        self._closing = False
        self._frozen = False  # this crawl froze the process's objects (``gcfreeze``) and thaws them at close
        self._unconfirmed: dict[int, int] = {}  # id of a kept item on its way through later pipelines -> its row
        self._assigned: OrderedDict[int, tuple[Any, PageDecision]] = OrderedDict()  # id(item) -> item, its page
        self._item_pages = SameObjectPages()
        self.rules = RuleBook(settings.rule_support) if settings.url_rules else None
        # pages fetched, and those earlier crawls kept: what the rule middleware skips requests for
        self.fetched = KnownUrls(self.rules) if self.rules is not None else None
        self.links = LinkGuard(self.rules, settings.link_budget) if settings.skip_links else None
        self.canonicals = CanonicalUrls(self.rules) if settings.canonical_field else None
        self.store: MemoryStore = self._open_store()  # SQLite: here, before the feed exports open their files
        crawler.signals.connect(self._item_passed, signal=signals.item_scraped)
        crawler.signals.connect(self._item_lost, signal=signals.item_dropped)
        crawler.signals.connect(self._item_lost, signal=signals.item_error)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if not crawler.settings.getbool("SIMHASH_DEDUP_ENABLED", True):
            raise NotConfigured("SIMHASH_DEDUP_ENABLED is off")
        settings = crawl_settings(crawler)
        return cls(crawler, settings)

    def _open_store(self) -> MemoryStore:
        """The SQLite store, locked for this crawl (emptied first unless the crawl remembers earlier runs);
        a memory store otherwise (Redis opens with the spider).  A store that cannot be used stops the
        crawl before it starts."""
        if self.settings.backend != "sqlite":
            return MemoryStore(self.settings.policy)
        path = self.store_path()
        try:
            if (self._reset_requested() or not self.remembers()) and reset_store(path) and self.remembers():
                logger.info("simhash_dedup: reset, %s removed", path)
            store = SqliteStore(self.settings.policy, path, self.settings.scheme, self.settings.commit_every,
                                self.settings.decisions, self.settings.review_texts)
        except StoreNotOpened as error:
            raise refuse(str(error)) from None
        store.before_write = self._flush_feeds
        return store

    def remembers(self) -> bool:
        """Does this crawl go on from what earlier crawls kept?  With ``JOBDIR`` (a resumed job),
        ``SIMHASH_DEDUP_PERSIST`` or ``SIMHASH_DEDUP_PATH``, as Scrapy's own duplicate filter does
        with ``JOBDIR`` only."""
        return self.settings.persist or bool(self.settings.path) or bool(self.crawler.settings.get("JOBDIR"))

    async def open_spider(self) -> None:
        self.counts.start()
        await self.fingerprints.start()
        if isinstance(self.store, SqliteStore):
            if self.remembers():
                logger.info("simhash_dedup: %d kept pages remembered from %s", len(self.store), self.store.path)
            else:
                logger.info("simhash_dedup: this crawl's store is %s; the next crawl starts afresh "
                            "(SIMHASH_DEDUP_PERSIST = True to remember across crawls)", self.store.path)
        elif self.settings.backend == "redis":
            await self._open_redis()
        self.crawler.stats.set_value(f"{STATS_PREFIX}/remembered", len(self.store))
        if self.rules is not None and not self._closing:
            await self._load_rules()
        if self.settings.gc_freeze:
            self._frozen = True
            frozen = StartupObjects.freeze()  # last: the store, the workers and the rules are loaded
            self.crawler.stats.set_value(f"{STATS_PREFIX}/gc_frozen", frozen)

    async def _load_rules(self) -> None:
        try:
            rules, fetched = (await self._batcher.run(self.store.load_rules) if self._batcher is not None
                              else self.store.load_rules())
        except Exception as error:  # noqa: BLE001 (Redis down: the rules are learned again)
            logger.warning("simhash_dedup: the URL rules could not be read (%s); they are learned afresh", error)
            return
        self.rules.load(rules)
        for url in fetched:
            self.fetched.add(url)  # type: ignore[union-attr] (there with the rules)
        self.crawler.stats.set_value(f"{STATS_PREFIX}/rules", len(self.rules.trusted()))
        if rules:
            logger.info("simhash_dedup: %d URL rules remembered, %d trusted", len(rules), len(self.rules.trusted()))

    async def _open_redis(self) -> None:
        import redis  # (and the Redis store's modules) only in crawls that use it

        from ..stores.redis.batching import StoreBatcher
        from ..stores.redis.store import RedisStore, remove_redis_store

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
        except ValueError as error:  # a store of another fingerprint scheme or layout: not this crawl's
            logger.error("simhash_dedup: %s The crawl stops.", error)
            raise CloseSpider(CLOSE_REASON) from None
        logger.info("simhash_dedup: %d kept pages remembered from Redis (%s)", len(store), key)

    async def close_spider(self) -> None:
        if self._frozen:
            self._frozen = False
            StartupObjects.thaw()
        self.fingerprints.close()
        if self._batcher is not None:
            self._batcher.stop()
        self.counts.stop()
        self.summary.log(self._report_hint())
        self.store.save_run(self.run_summary())
        self.store.close()

    def _report_hint(self) -> str:
        """The command that shows this crawl's decisions side by side."""
        if self.settings.decisions == 0:
            return "set SIMHASH_DEDUP_LOG_SIZE to keep the decision log, then run simhash-dedup report"
        if isinstance(self.store, SqliteStore):
            return f"simhash-dedup report {self.store.path} -o report.html"
        if self.settings.backend == "redis":
            key = self.settings.redis_key % {"spider": self.crawler.spider.name}
            where = re.sub(r"//[^@/]*@", "//", self.settings.redis_url or "")  # no password in the log
            return f"simhash-dedup report {where} --key {key} -o report.html"
        return "the Dropped lines of this log (the memory store keeps no decision log)"

    def run_summary(self) -> dict[str, Any]:
        """This crawl, for the report: the spider, when, the decision's settings and the counts."""
        prefix = f"{STATS_PREFIX}/"
        counts = {key[len(prefix):]: value for key, value in self.crawler.stats.get_stats().items()
                  if key.startswith(prefix)}
        summary = run_summary(self.crawler.spider.name, self._started, self.settings.policy, counts)
        summary["settings"]["rule_support"] = self.settings.rule_support  # which URL rules were trusted
        return summary

    def store_path(self) -> Path:
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
            f"{name}.sqlite" if self.settings.persist else f"{name}.last-crawl.sqlite")

    def _reset_requested(self) -> bool:
        """``SIMHASH_DEDUP_RESET``, or ``-a simhash_dedup_reset=1`` on the command line."""
        argument = str(getattr(self.crawler.spider, "simhash_dedup_reset", "")).lower()
        return self.settings.reset or argument in ("1", "true", "yes")

    async def process_item(self, item: Any) -> Any:
        adapter = ItemAdapter(item)
        decision = self._assigned_page(item)
        if decision is None:
            url = str(adapter.get(self.settings.url_field) or "")
            html = adapter.get(self.settings.html_field)
            if html is None:
                self._count("no_html", url)
                self._warn_if_no_html()
                return item
            decision = self._item_pages.page(html, lambda: self._begin_item_page(url, html))
        page = decision.made or await decision.verdict()  # no wait when it is made: no other item runs between
        return self._pass_or_drop(item, adapter, page)

    def _begin_item_page(self, url: str, html: Any) -> PageDecision:
        """The item route: a page whose HTML an item carries."""
        page = PageDecision(url)
        self._begin(page, html)
        return page

    def _warn_if_no_html(self) -> None:
        """The first ``NO_HTML_WARNING`` items had no HTML and no page was handed over: nothing is being
        deduplicated.  Said once, with the way out."""
        if self.counts.get("no_html") == NO_HTML_WARNING and not self.counts.get("checked"):
            logger.warning(
                "simhash_dedup: the first %d items carry no HTML in their %r field and came from no page the add-on "
                "handed over, so nothing is deduplicated. Enable the add-on, which takes each page from its "
                "response (ADDONS = {'scrapy_simhash_dedup.SimhashDedupAddon': 0}), or put the page's HTML in "
                "the items (SIMHASH_DEDUP_HTML_FIELD).", NO_HTML_WARNING, self.settings.html_field)

    def _pass_or_drop(self, item: Any, adapter: ItemAdapter, page: PageVerdict) -> Any:
        """The item of a decided page: passed on (with what a kept page's items get), or dropped."""
        if page.row is not None:
            self._unconfirmed[id(item)] = page.row
        if page.unchecked:
            self._count("dropped_unchecked")
            self._remove_html(adapter)
            raise SimhashUnchecked(page.url)
        if page.duplicate:
            self._count("dropped")
            self._count(f"dropped/{page.match.reason}")
            self._remove_html(adapter)  # keeps the page out of Scrapy's drop log line
            raise SimhashDuplicate(page.url, page.match, self.settings.drop_log_level)
        self._count("kept")
        self._finish_kept(adapter, page)
        return item

    def decide_response(self, response: Response) -> PageDecision:
        """Start deciding the page of a response (the page middleware, at its first item), from its body
        and the ``Content-Type`` it came with; its items and links await the verdict."""
        content_type = response.headers.get(b"Content-Type")
        links = response.headers.getlist(b"Link") if self.canonicals is not None else []
        page = PageDecision(response.url, declared_in_header(links) if links else None)
        self._begin(page, response.body, content_type.decode("latin-1") if content_type is not None else None)
        return page

    def assign(self, item: Any, page: PageDecision) -> None:
        """``item`` belongs to ``page`` (being decided for the page middleware): the pipeline takes its
        verdict."""
        self._assigned[id(item)] = (item, page)  # the item held: its id is not reused while here
        if len(self._assigned) > ASSIGNED_HELD:  # items an earlier pipeline dropped never come
            self._assigned.popitem(last=False)

    def _assigned_page(self, item: Any) -> PageDecision | None:
        held = self._assigned.pop(id(item), None)
        return held[1] if held is not None and held[0] is item else None

    def _begin(self, page: PageDecision, html: Any, content_type: str | None = None) -> None:
        """Start fingerprinting the page (in a worker process, or at once when it is known by its bytes or
        cannot be fingerprinted); it is decided in its turn (``_decide_in_turn``)."""
        self._count("checked")
        self._arrived.append(page)
        if not isinstance(html, (str, bytes)):
            self._count("not_html", page.url)
            self._fingerprinted(None, page)
            return
        known = self._recent.fingerprint(RecentPages.key(html, content_type),
                                         lambda: self.fingerprints.fingerprint(html, page.url, content_type))
        known.addBoth(self._fingerprinted, page)

    def _fingerprinted(self, result: tuple[Fingerprint, bool] | Failure | None, page: PageDecision) -> None:
        """The page's fingerprint is ready (``None``: nothing to compare; a failure: kept, counted): counted,
        and the pages whose turn it is are decided."""
        if isinstance(result, Failure) and result.check(WorkerTimedOut):  # kept (the pool logged the first)
            self._count("fingerprint_timeouts")
        elif isinstance(result, Failure):  # a bug or an odd page must never lose the page
            self._count("errors", page.url, exc_info=result)
        elif result is not None:
            fingerprint, known = result
            if known:
                self._count("same_html")
            for outcome in outcomes(fingerprint):
                self._count(outcome, "" if outcome == "short_text" else page.url)  # the first of each kind is logged
            page.fingerprint = fingerprint if comparable(fingerprint) else None
        page.fingerprinted = True
        self._decide_in_turn()

    def _decide_in_turn(self) -> None:
        """Decide the pages whose fingerprints are ready, in the order the pages arrived, whatever order
        their fingerprints came back in: a page of a cluster is kept because it came first, as without
        workers (a large page fingerprinted beside a small later copy of it is still the one kept)."""
        while self._arrived and self._arrived[0].fingerprinted:
            self._decide(self._arrived.popleft())

    def _decide(self, page: PageDecision) -> None:
        """Check the page against the store and add it if kept, atomically (the next page is checked after
        this one is in the store, or in the Redis batcher's queue); then settle its verdict."""
        if page.fingerprint is None:
            self._settle(page, PageVerdict(page.url))
            return
        try:
            if self._batcher is not None:  # Redis: checked off the reactor thread, in batches
                self._batcher.submit(page.url, page.fingerprint).addBoth(self._checked, page)
                return
            match = self.store.check_and_add(page.url, page.fingerprint)
        except Exception as error:  # noqa: BLE001 (a bug or an odd page must never lose the page)
            self._checked(Failure(error), page)
            return
        kept_at = len(self.store) - 1 if not dropped(match) and isinstance(self.store, SqliteStore) else None
        self._settle(page, self._verdict(page.url, page.fingerprint, match, kept_at))

    def _checked(self, result: Match | None | Failure, page: PageDecision) -> None:
        """The store's answer for the page (Redis: when it comes back), or why there is none."""
        url, fingerprint = page.url, page.fingerprint
        if not isinstance(result, Failure):
            if self._store_down:
                self._store_down = False
                logger.info("simhash_dedup: the Redis store answers again; items are checked again")
            verdict = self._verdict(url, fingerprint, result)
        elif isinstance(error := result.value, CheckedLocally):  # Redis down: checked against this crawler's replica
            self._store_failed(url, error)
            closed = self.settings.fail_mode == "closed"
            verdict = PageVerdict(url, unchecked=True) if closed else self._verdict(url, fingerprint, error.matches[0])
            self._count("checked_locally")
        elif isinstance(error, StoreUnavailable):  # kept unchecked, or with fail mode "closed" dropped as the crawl stops
            self._store_failed(url, error)
            verdict = PageVerdict(url, unchecked=self.settings.fail_mode == "closed")
        else:  # a bug or an odd page must never lose the page
            self._count("errors", url, exc_info=result)
            verdict = PageVerdict(url)
        self._settle(page, verdict)

    def _settle(self, page: PageDecision, verdict: PageVerdict) -> None:
        """The page is decided: counted, logged and learned from, a kept page named; its items go on."""
        try:
            self._decided(verdict)
            verdict = self._named(verdict, page.declared)
        except Exception:  # noqa: BLE001 (its items must never wait for ever)
            self._count("errors", page.url, exc_info=True)
        page.settle(verdict)

    def _verdict(self, url: str, fingerprint: Fingerprint, match: Match | None, row: int | None = None) -> PageVerdict:
        recrawl = dropped(match) and self.links is not None and self.links.is_recrawl(url, match)
        return PageVerdict(url, fingerprint, match, row, recrawl=recrawl)

    def _decided(self, page: PageVerdict) -> None:
        """A page was decided: counted, logged for review, and taught to the URL rules and the link guard."""
        if self.links is not None:
            self.links.page_decided(page.url, page.duplicate if page.fingerprint is not None else None)
        if page.unchecked:  # its items are dropped unchecked (counted)
            return
        self._count("pages_dropped" if page.duplicate else "pages_kept")
        self.summary.add(page.url, page.match, page.fingerprint is not None)
        if page.duplicate:
            self.store.record(self.reviewer.dropped(page.url, page.fingerprint, page.match))
            self.store.record_alias(Alias(time.time(), page.url, page.match.url, page.match.reason))
        else:
            if page.update:
                self._count("updated")
            elif page.match is not None:
                self._count("borderline")
            if decision := self.reviewer.kept(page.url, page.fingerprint, page.match):
                self.store.record(decision)
        if self.rules is not None:
            self.fetched.add(page.url)
            self._learn(page)

    def _named(self, page: PageVerdict, declared: str | None) -> PageVerdict:
        """A kept page with its canonical URL (``canonical.CanonicalUrls``): chosen after the rules learned
        from the page, so that a rule it refutes never names it.  The page's ``<link rel="canonical">``
        comes before its ``Link`` header's."""
        if self.canonicals is None or page.duplicate or page.unchecked:
            return page
        canonical = self.canonicals.choose(page.url, (page.fingerprint and page.fingerprint.canonical) or declared)
        self._count(f"canonical/{canonical.source}")
        if canonical.cleaned:
            self._count("canonical/cleaned")
        for alias in canonical_aliases(page.url, canonical.url, time.time()):
            self.store.record_alias(alias)
        return replace(page, canonical=canonical.url)

    def _learn(self, page: PageVerdict) -> None:
        """A decided page teaches the URL rules: a drop is a supporting pair, a keep may refute."""
        if page.duplicate:
            for rule in self.rules.learn(page.url, page.match.url):
                logger.info("simhash_dedup: URL rule trusted after %d pairs: %s", rule.support, rule.describe())
        elif page.fingerprint is not None:
            for rule in self.rules.kept(page.url):
                if rule.support >= self.rules.support:  # it was trusted
                    logger.warning("simhash_dedup: URL rule withdrawn: %s (%s were both kept, as different pages)",
                                   rule.describe(), " and ".join(rule.refuted_by.split(" ", 1)))
        if changed := self.rules.take_changed():
            self.store.save_rules(changed)
            self.crawler.stats.set_value(f"{STATS_PREFIX}/rules", len(self.rules.trusted()))

    def skipped(self, skip: Skip) -> None:
        """A link or a request the crawl will not make (the guards): counted and logged in the store."""
        self._count("links_skipped" if skip.kind == "link" else "requests_skipped")
        self.store.record_skip(skip)
        if skip.kind == "request":
            self.store.record_alias(Alias(skip.time, skip.url, skip.because, RULE))

    def _item_passed(self, item: Any, **_: Any) -> None:
        """``item_scraped``: the item got past every pipeline (and to the feed exports): its page may
        now be written to the store."""
        if (row := self._unconfirmed.pop(id(item), None)) is not None:
            self.store.confirm(row)  # type: ignore[attr-defined]

    def _item_lost(self, item: Any, exception: BaseException | None = None, **_: Any) -> None:
        """``item_dropped`` / ``item_error`` after this pipeline kept it: it does not make its page written.
        A drop of ours loses its traceback here: Scrapy's frame that handled it keeps the exception (in its
        log arguments) and the traceback keeps that frame, a reference cycle holding the item and its
        response until the garbage collector runs (a full collection every few hundred drops)."""
        self._unconfirmed.pop(id(item), None)
        if isinstance(exception, (SimhashDuplicate, SimhashUnchecked)):
            exception.__traceback__ = None

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
                "pages are checked against this crawler's replica of it and the pages it kept meanwhile only "
                "(simhash_dedup/checked_locally), until it answers (SIMHASH_DEDUP_FAIL_MODE = 'open').",
            )
        if closed:
            self._close_spider()

    def _finish_kept(self, adapter: ItemAdapter, page: PageVerdict) -> None:
        """What a kept page's items get: the fingerprints and the update mark if asked, no HTML field if asked."""
        if page.canonical is not None:
            self._give_canonical(adapter, page)
        try:
            if page.update:
                adapter[UPDATE_FIELD] = True
            if self.settings.fingerprint_fields and page.fingerprint is not None:
                adapter["simhash_content"] = _hex(page.fingerprint.content)
                adapter["simhash_structure"] = _hex(page.fingerprint.structure)
            if self.settings.remove_html:
                self._remove_html(adapter)
        except FIELD_REFUSED:
            self._count("item_field_errors", page.url, exc_info=True)

    def _give_canonical(self, adapter: ItemAdapter, page: PageVerdict) -> None:
        """The page's canonical URL in the item's field, unless the spider filled it; an item that cannot take
        it (no such field, a frozen dataclass, a model that refuses the value) is kept, counted and told about
        once."""
        field = self.settings.canonical_field
        if adapter.get(field):
            return
        try:
            adapter[field] = page.canonical
        except FIELD_REFUSED:
            self.crawler.stats.inc_value(f"{STATS_PREFIX}/canonical_field_missing")
            if "canonical_field_missing" not in self._logged:
                self._logged.add("canonical_field_missing")
                logger.info("simhash_dedup: items of %s cannot take the page's canonical URL in %r; add the field, or "
                            "set SIMHASH_DEDUP_CANONICAL_FIELD = '' (counted: simhash_dedup/canonical_field_missing)",
                            type(adapter.item).__name__, field)

    def _remove_html(self, adapter: ItemAdapter) -> None:
        """Delete the field from dicts and ``scrapy.Item``; blank it in fixed-field items."""
        if isinstance(adapter.item, MutableMapping):
            adapter.item.pop(self.settings.html_field, None)
        elif self.settings.html_field in adapter:
            adapter[self.settings.html_field] = None

    def _count(self, outcome: str, url: str = "", exc_info: bool | Failure = False) -> None:
        """Count ``outcome``; the first of its kind with a URL is logged, with the exception being handled or
        the failure given (``exc_info``) at ERROR."""
        self.counts.add(outcome)
        if not url or outcome in self._logged:
            return
        self._logged.add(outcome)
        level = logging.ERROR if exc_info else logging.INFO
        if isinstance(exc_info, Failure):
            exc_info = (exc_info.type, exc_info.value, exc_info.getTracebackObject())
        logger.log(
            level,
            "simhash_dedup: %s for %s; kept. Further items like this are only "
            "counted in the stats (simhash_dedup/%s).",
            outcome, url, outcome, exc_info=exc_info,
        )


class Counts:
    """The filter's stats (``simhash_dedup/<outcome>``), added up here and handed to the crawl's stats
    collector every ``STATS_EVERY`` seconds while the spider runs (``start``) and when it closes: each of
    Scrapy's stats calls costs microseconds (its collector checks every attribute it reads), and a page
    made five of them."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self._pending: Counter[str] = Counter()
        self._handing: LoopingCall | None = None

    def add(self, outcome: str) -> None:
        self._pending[outcome] += 1

    def get(self, outcome: str) -> int:
        """The count so far, handed over or not."""
        return (self.crawler.stats.get_value(f"{STATS_PREFIX}/{outcome}") or 0) + self._pending[outcome]

    def hand_over(self) -> None:
        """Add what was counted since the last time to the crawl's stats."""
        pending, self._pending = self._pending, Counter()
        for outcome, count in pending.items():
            self.crawler.stats.inc_value(f"{STATS_PREFIX}/{outcome}", count)

    def start(self, clock: Any = None) -> None:
        """Hand the counts over every ``STATS_EVERY`` seconds (of ``clock``: the reactor's by default)."""
        self._handing = LoopingCall(self.hand_over)
        if clock is not None:
            self._handing.clock = clock
        self._handing.start(STATS_EVERY, now=False)

    def stop(self) -> None:
        if self._handing is not None and self._handing.running:
            self._handing.stop()
        self.hand_over()


class PageDecision:
    """A page being decided: fingerprinted (off the reactor thread), then decided in its turn; each of its
    items, and for the link guard its links, await the verdict (at once once it is made)."""

    __slots__ = ("url", "declared", "fingerprint", "fingerprinted", "made", "_waiting")

    def __init__(self, url: str, declared: str | None = None) -> None:
        self.url = url
        self.declared = declared  # the canonical URL its response's ``Link`` header gives
        self.fingerprint: Fingerprint | None = None  # None: nothing to compare (kept)
        self.fingerprinted = False  # its fingerprint is ready (or known not to be): its turn may come
        self.made: PageVerdict | None = None
        self._waiting: list[Deferred[PageVerdict]] = []

    async def verdict(self) -> PageVerdict:
        """The page's verdict, at once if it is made."""
        if self.made is not None:
            return self.made
        self._waiting.append(Deferred())
        return await maybe_deferred_to_future(self._waiting[-1])

    def settle(self, verdict: PageVerdict) -> None:
        self.made = verdict
        waiting, self._waiting = self._waiting, []
        for waiter in waiting:
            waiter.callback(verdict)


class SameObjectPages:
    """Pages of the item route: items whose HTML field holds the very same object, as ``response.text``
    and ``response.body`` give every item of one response, are one page, decided once (the items that
    come while it is decided wait for its verdict).  The objects of the last ``size`` pages are held, so
    that their ids are not reused while items of theirs may still come."""

    def __init__(self, size: int = SAME_OBJECT_PAGES) -> None:
        self.size = size
        self._pages: OrderedDict[int, tuple[object, PageDecision]] = OrderedDict()

    def page(self, html: object, begin: Callable[[], PageDecision]) -> PageDecision:
        """The decision for the page whose HTML is ``html``: known or pending, else ``begin``-ning now."""
        key = id(html)
        if (entry := self._pages.get(key)) is not None and entry[0] is html:
            self._pages.move_to_end(key)
            return entry[1]
        decision = begin()
        self._pages[key] = (html, decision)
        while len(self._pages) > self.size:
            self._pages.popitem(last=False)
        return decision


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
