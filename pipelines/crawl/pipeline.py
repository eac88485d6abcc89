"""The item pipeline: drop items whose page is a near-duplicate of a kept one.

It keeps Scrapy's hooks only and puts together the parts that do the work:
``opening`` (which store, where), ``queue`` (pages decided in their order of
arrival), ``learning`` (what a decided page teaches the guards, the log and
the summary), ``items`` (a verdict applied to an item), ``confirmation`` (a
kept page written once one of its items got through), ``counts`` (the stats)
and ``outage`` (the shared store unreachable).
"""

from __future__ import annotations

import logging
import time
from functools import partial
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter
from scrapy.exceptions import NotConfigured

from ..fingerprint.declared import declared_in_header
from ..matching.decision_log import Skip, run_summary
from ..workers.pool import FingerprintPool
from .confirmation import WriteConfirmation, flush_feeds
from .counts import STATS_PREFIX, Counts
from .gcfreeze import StartupObjects
from .items import ItemVerdicts
from .learning import Learner
from .opening import StoreOpener
from .outage import StoreOutage
from .pages import AssignedItems, PageDecision, SameObjectPages
from .queue import DecisionQueue
from .settings import DedupSettings
from .startup import crawl_settings

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from ..stores.base import Store
    from ..stores.redis.batching import StoreBatcher

logger = logging.getLogger(__name__)

#: Items without HTML, and no page checked yet, after which the crawl is told that nothing is deduplicated.
NO_HTML_WARNING = 20


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
        self.fingerprints = FingerprintPool(self.fingerprinter, settings.workers, settings.worker_timeout)
        self.counts = Counts(crawler, settings.debug)
        self.outage = StoreOutage(crawler, settings.fail_mode)
        self.opener = StoreOpener(crawler, settings)
        store = self.opener.open_local(partial(flush_feeds, crawler), self.outage)  # SQLite: before the feeds open
        self.confirmation = WriteConfirmation(crawler, store)
        self.learner = Learner(crawler, settings, self.counts, store)
        self.queue = DecisionQueue(self.fingerprints, store, self.learner, self.counts, self.outage)
        self.items = ItemVerdicts(settings, self.counts)
        self._use(store)
        self._assigned = AssignedItems()
        self._item_pages = SameObjectPages()
        self._started = time.time()
        self._frozen = False  # this crawl froze the process's objects (``gcfreeze``) and thaws them at close

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if not crawler.settings.getbool("SIMHASH_DEDUP_ENABLED", True):
            raise NotConfigured("SIMHASH_DEDUP_ENABLED is off")
        return cls(crawler, crawl_settings(crawler))

    def _use(self, store: Store, batcher: StoreBatcher | None = None) -> None:
        """Every part works with ``store`` (through ``batcher``, for Redis)."""
        self.store = self.confirmation.store = self.learner.store = self.queue.store = store
        self.queue.batcher = batcher

    async def open_spider(self) -> None:
        self.counts.start()
        await self.fingerprints.start()
        if self.settings.backend == "redis":
            self._use(*await self.opener.open_redis(self.outage))
        elif self.settings.backend == "sqlite" and self.opener.remembers():
            logger.info("simhash_dedup: %d kept pages remembered from %s", len(self.store), self.opener.path())
        elif self.settings.backend == "sqlite":
            logger.info(
                "simhash_dedup: this crawl's store is %s; the next crawl starts afresh "
                "(SIMHASH_DEDUP_PERSIST = True to remember across crawls)",
                self.opener.path(),
            )
        self.crawler.stats.set_value(f"{STATS_PREFIX}/remembered", len(self.store))
        if not self.outage.closing:
            await self.learner.load_rules(self._read_rules)
        if self.settings.gc_freeze:
            self._frozen = True
            frozen = StartupObjects.freeze()  # last: the store, the workers and the rules are loaded
            self.crawler.stats.set_value(f"{STATS_PREFIX}/gc_frozen", frozen)

    async def _read_rules(self) -> tuple[list, list[str]]:
        if self.queue.batcher is not None:
            return await self.queue.batcher.run(self.store.load_rules)
        return self.store.load_rules()

    async def close_spider(self) -> None:
        if self._frozen:
            self._frozen = False
            StartupObjects.thaw()
        self.fingerprints.close()
        if self.queue.batcher is not None:
            self.queue.batcher.stop()
        self.counts.stop()
        self.learner.summary.log(self.opener.report_hint(self.store))
        self.store.save_run(self.run_summary())
        self.store.close()
        if self.opener.write_faults is not None:
            self.opener.write_faults.closed(self.store.unwritten)

    def run_summary(self) -> dict[str, Any]:
        """This crawl, for the report: the spider, when, the decision's settings and the counts."""
        prefix = f"{STATS_PREFIX}/"
        counts = {
            key[len(prefix) :]: value for key, value in self.crawler.stats.get_stats().items() if key.startswith(prefix)
        }
        summary = run_summary(self.crawler.spider.name, self._started, self.settings.policy, counts)
        summary["settings"]["rule_support"] = self.settings.rule_support  # which URL rules were trusted
        return summary

    async def process_item(self, item: Any) -> Any:
        adapter = ItemAdapter(item)
        decision = self._assigned.take(item)
        if decision is None:
            url = str(adapter.get(self.settings.url_field) or "")
            html = adapter.get(self.settings.html_field)
            if html is None:
                self.counts.add("no_html", url)
                self._warn_if_no_html()
                return item
            decision = self._item_pages.page(html, lambda: self._begin_item_page(url, html))
        page = decision.made or await decision.verdict()  # no wait when it is made: no other item runs between
        if page.row is not None:
            self.confirmation.expect(item, page.row)
        return self.items.apply(item, adapter, page)

    def _begin_item_page(self, url: str, html: Any) -> PageDecision:
        """The item route: a page whose HTML an item carries."""
        page = PageDecision(url)
        self.queue.begin(page, html)
        return page

    def _warn_if_no_html(self) -> None:
        """The first ``NO_HTML_WARNING`` items had no HTML and no page was handed over: nothing is being
        deduplicated.  Said once, with the way out."""
        if self.counts.get("no_html") == NO_HTML_WARNING and not self.counts.get("checked"):
            logger.warning(
                "simhash_dedup: the first %d items carry no HTML in their %r field and came from no page the add-on "
                "handed over, so nothing is deduplicated. Enable the add-on, which takes each page from its "
                "response (ADDONS = {'scrapy_simhash_dedup.SimhashDedupAddon': 0}), or put the page's HTML in "
                "the items (SIMHASH_DEDUP_HTML_FIELD).",
                NO_HTML_WARNING,
                self.settings.html_field,
            )

    def decide_response(self, response: Response) -> PageDecision:
        """Start deciding the page of a response (the spider middleware, at its first item), from its body
        and the ``Content-Type`` it came with; its items and links await the verdict."""
        content_type = response.headers.get(b"Content-Type")
        links = response.headers.getlist(b"Link") if self.learner.canonicals is not None else []
        page = PageDecision(response.url, declared_in_header(links) if links else None)
        self.queue.begin(page, response.body, content_type.decode("latin-1") if content_type is not None else None)
        return page

    def assign(self, item: Any, page: PageDecision) -> None:
        """``item`` belongs to ``page`` (being decided for the spider middleware): the pipeline takes its
        verdict."""
        self._assigned.assign(item, page)

    def skipped(self, skip: Skip) -> None:
        """A link or a request the guards skip (the middlewares)."""
        self.learner.skipped(skip)
