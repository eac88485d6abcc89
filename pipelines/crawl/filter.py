"""The page filter: every page of the crawl, from its response or item to its verdict, in one object that the
pipeline and both middlewares call through a few methods.

``PageFilter`` owns the parts that do the work: which store and where (``opening``), pages decided in their
order of arrival (``queue``), what a decided page teaches the guards, the log and the summary (``learning``),
a verdict applied to an item (``items``), a kept page written once one of its items got through
(``confirmation``), the stats (``counts``) and the shared store unreachable (``outage``).
"""

from __future__ import annotations

import logging
import time
from functools import partial
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter
from scrapy.exceptions import IgnoreRequest

from ..fingerprint.declared import declared_in_header
from ..matching.policy import never_to_drop, not_filtered
from ..stores.records import Skip, run_summary
from ..workers.pool import FingerprintPool
from .decisions import DecisionEffects, DecisionQueue
from .gcfreeze import StartupObjects
from .items import (
    AssignedItems,
    ItemVerdicts,
    PageDecision,
    PageVerdict,
    SameObjectPages,
    WriteConfirmation,
    flush_feeds,
)
from .settings import DedupSettings
from .stats import STATS_PREFIX, Counts
from .storage import StoreOpener, StoreOutage

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from ..stores.base import Store
    from ..stores.redis.batching import StoreBatcher

logger = logging.getLogger(__name__)

#: Items without HTML, and no page checked yet, after which the crawl is told that nothing is deduplicated.
NO_HTML_WARNING = 20


class PageFilter:
    """Fingerprints every page once and decides it against the kept pages; applies the verdict to the page's
    items and, through the link guard and the URL rules, to its links and to the requests to come.

    With the add-on, the page is the response the items came from (the spider middleware hands it over at the
    first item); else the HTML in an item field, items carrying the very same HTML object being one page.
    Items without HTML, and pages that cannot be fingerprinted, are kept and counted in stats; the first of
    each kind is logged.
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
        self.effects = DecisionEffects(crawler, settings, self.counts, store)
        self.queue = DecisionQueue(self.fingerprints, store, self.effects, self.counts, self.outage)
        self.items = ItemVerdicts(settings, self.counts)
        self._use(store)
        self._assigned = AssignedItems()
        self._item_pages = SameObjectPages()
        self._started = time.time()
        self._frozen = False  # this crawl froze the process's objects (``gcfreeze``) and thaws them at close

    def _use(self, store: Store, batcher: StoreBatcher | None = None) -> None:
        """Every part works with ``store`` (through ``batcher``, for Redis)."""
        self.store = self.confirmation.store = self.effects.store = self.queue.store = store
        self.queue.batcher = batcher

    async def open(self) -> None:
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
            await self.effects.load_rules(self._read_rules)
        if self.settings.gc_freeze:
            self._frozen = True
            frozen = StartupObjects.freeze()  # last: the store, the workers and the rules are loaded
            self.crawler.stats.set_value(f"{STATS_PREFIX}/gc_frozen", frozen)

    async def _read_rules(self) -> tuple[list, list[str]]:
        if self.queue.batcher is not None:
            return await self.queue.batcher.run(self.store.load_rules)
        return self.store.load_rules()

    def close(self) -> None:
        if self._frozen:
            self._frozen = False
            StartupObjects.thaw()
        self.fingerprints.close()
        if self.queue.batcher is not None:
            self.queue.batcher.stop()
        self.counts.stop()
        self.effects.summary.log(self.opener.report_hint(self.store))
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
        assert self.crawler.spider is not None  # asked as the spider closes
        summary = run_summary(self.crawler.spider.name, self._started, self.settings.policy, counts)
        summary["settings"]["rule_support"] = self.settings.rule_support  # which URL rules were trusted
        return summary

    async def process_item(self, item: Any) -> Any:
        """``item`` passed on as its page's verdict says (``DropItem`` raised for a dropped page's)."""
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
        page = decision.decided or await decision.verdict()  # no wait when it is made: no other item runs between
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
        meta = response.request.meta if response.request is not None else {}
        if not_filtered(meta):  # the spider's word for this page
            self.counts.add("not_filtered")
            page = PageDecision(response.url)
            page.settle(PageVerdict(response.url))
            return page
        content_type = response.headers.get(b"Content-Type")
        links = response.headers.getlist(b"Link") if self.effects.canonicals is not None else []
        page = PageDecision(response.url, declared_in_header(links) if links else None, never_to_drop(meta))
        self.queue.begin(page, response.body, content_type.decode("latin-1") if content_type is not None else None)
        return page

    def assign(self, item: Any, page: PageDecision) -> None:
        """``item`` belongs to ``page`` (being decided for the spider middleware): the pipeline takes its
        verdict."""
        self._assigned.assign(item, page)

    def skipped(self, skip: Skip) -> None:
        """A link or a request the guards skip (the middlewares)."""
        self.effects.skipped(skip)

    @property
    def guards_links(self) -> bool:
        """The link guard is on (``SIMHASH_DEDUP_SKIP_LINKS``): a page's links wait for its verdict."""
        return self.effects.links is not None

    async def wait_for_room(self) -> None:
        """Returns once the fingerprint workers have room for another page (the downloader middleware
        waits here, so that downloaded pages do not pile up in memory)."""
        await self.fingerprints.wait_for_room()

    def follows(self, request: Request, page: PageVerdict | None) -> bool:
        """Schedule ``request``, yielded by the callback of ``page`` (None: not decided)?  Not when the page
        is the same page as an earlier one (``PageVerdict.same_as``: a near-duplicate, not a re-crawl, or an empty
        page that repeats one but for a date) and the link guard finds the link covered."""
        guard = self.effects.links
        if guard is None:
            return True
        if (
            page is not None
            and (same_as := page.same_as) is not None
            and not request.dont_filter
            and (covered := guard.covered(request.url)) is not None
        ):
            self.counts.repeated(
                "links_skipped",
                "simhash_dedup: link not followed, %s is a near-duplicate of %s and %s: %s",
                page.url,
                same_as,
                covered,
                request.url,
            )
            self.skipped(Skip(time.time(), "link", request.url, page.url, f"near-duplicate of {same_as}; {covered}"))
            return False
        guard.followed(request.url)
        return True

    def skip_if_fetched(self, request: Request) -> None:
        """``IgnoreRequest`` when the trusted URL rules rewrite ``request``'s URL to a page already fetched
        (never a request with ``dont_filter``)."""
        if request.dont_filter or self.effects.rules is None:
            return
        rules = self.effects.rules.applying(request.url)
        fetched = self.effects.fetched
        target = fetched.find(request.url) if rules and fetched is not None else None
        if target is None or target == request.url:
            return
        because = "; ".join(rule.describe() for rule in rules)
        self.counts.repeated(
            "requests_skipped",
            "simhash_dedup: request skipped, %s is %s by the URL rules (%s)",
            request.url,
            target,
            because,
        )
        self.skipped(Skip(time.time(), "request", request.url, target, because))
        raise IgnoreRequest(f"simhash_dedup: {request.url} is {target}, already fetched, by the URL rules")
