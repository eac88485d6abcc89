"""A page on its way through the filter and what its verdict does to its items.

A page is being decided (``PageDecision``) or decided (``PageVerdict``); the items of a page find it through
``AssignedItems`` (the add-on's route) or ``SameObjectPages`` (the item route).  A verdict passes an item on,
with the fields a kept page's items get, or drops it with :class:`SimhashDuplicate` (:class:`SimhashUnchecked`
when the store could not check it).  A kept page is written to the store only once one of its items got past
every pipeline (Scrapy's ``item_scraped``), the feed exports flushed first (``WriteConfirmation``): the store
never remembers a page the user did not get.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter
from scrapy import signals
from scrapy.exceptions import DropItem
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred

from ..fingerprint.fingerprinter import Fingerprint
from ..matching.policy import UPDATE, Match, dropped
from .settings import DedupSettings
from .stats import Counts

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from ..stores.base import Store

logger = logging.getLogger(__name__)


#: Items whose page was decided at response time (the spider middleware) waiting for the pipeline: at most this many.
ASSIGNED_HELD = 10_000
#: Pages of the item route whose HTML objects are held: the items of one page arrive together, within them.
SAME_OBJECT_PAGES = 256


@dataclass(frozen=True)
class PageVerdict:
    """What the filter decided for a page; every item of the page follows it.  ``fingerprint`` is None
    for a page that was not compared; ``match`` says what it duplicates (``dropped``), its borderline
    candidate or the page it updates; ``row``: the SQLite row it was kept at (written once one of its
    items passes); ``unchecked``: the store could not check it (fail mode "closed"); ``recrawl``: it is a
    page an earlier crawl kept, met again (its links are followed); ``refetched``: a page this crawl kept, fetched
    again at its URL (a start URL a page links to, a request with ``dont_filter``): its items were passed on the
    first time, and it is no near-duplicate of another page; ``repeat_of``: a kept page without content of
    its own that shows what an earlier page of its site showed but for a date or a number (an empty calendar
    month): kept, and the same page for the guards."""

    url: str
    fingerprint: Fingerprint | None = None
    match: Match | None = None
    row: int | None = None
    unchecked: bool = False
    recrawl: bool = False
    refetched: bool = False
    never_dropped: bool = False  # a near-duplicate kept because its request said so (``NEVER_DROP_META``)
    canonical: str | None = None  # a kept page's canonical URL (``SIMHASH_DEDUP_CANONICAL_FIELD``)
    repeat_of: str | None = None

    @property
    def duplicate(self) -> bool:
        return dropped(self.match)

    @property
    def same_as(self) -> str | None:
        """The earlier page this one is the same page as, for the link guard and the URL rules: the page it
        duplicates (not as a re-crawl), or the page it repeats."""
        if self.duplicate and not self.recrawl and not self.refetched:
            assert self.match is not None  # a duplicate has its match
            return self.match.url
        return self.repeat_of

    @property
    def update(self) -> bool:
        return self.match is not None and self.match.reason == UPDATE


class PageDecision:
    """A page being decided: fingerprinted (off the reactor thread), then decided in its turn; each of its
    items, and for the link guard its links, await the verdict (at once once it is made)."""

    __slots__ = ("url", "declared", "never_drop", "fingerprint", "fingerprinted", "decided", "_waiting")

    def __init__(self, url: str, declared: str | None = None, never_drop: bool = False) -> None:
        self.url = url
        self.declared = declared  # the canonical URL its response's ``Link`` header gives
        self.never_drop = never_drop  # its request said so (``NEVER_DROP_META``): compared, kept whatever it matches
        self.fingerprint: Fingerprint | None = None  # None: nothing to compare (kept)
        self.fingerprinted = False  # its fingerprint is ready (or known not to be): its turn may come
        self.decided: PageVerdict | None = None
        self._waiting: list[Deferred[PageVerdict]] = []

    async def verdict(self) -> PageVerdict:
        """The page's verdict, at once if it is made."""
        if self.decided is not None:
            return self.decided
        self._waiting.append(Deferred())
        return await maybe_deferred_to_future(self._waiting[-1])

    def settle(self, verdict: PageVerdict) -> None:
        self.decided = verdict
        waiting, self._waiting = self._waiting, []
        for waiter in waiting:
            waiter.callback(verdict)


class AssignedItems:
    """The add-on's route: items the spider middleware gave a page to (at most ``size``; the oldest are
    forgotten: items an earlier pipeline dropped never come).  The item is held, so that its id is not
    reused while it is here."""

    def __init__(self, size: int = ASSIGNED_HELD) -> None:
        self.size = size
        self._items: OrderedDict[int, tuple[Any, PageDecision]] = OrderedDict()  # id(item) -> item, its page

    def assign(self, item: Any, page: PageDecision) -> None:
        self._items[id(item)] = (item, page)
        if len(self._items) > self.size:
            self._items.popitem(last=False)

    def take(self, item: Any) -> PageDecision | None:
        """The page ``item`` was given, once; ``None`` if none."""
        held = self._items.pop(id(item), None)
        return held[1] if held is not None and held[0] is item else None


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


#: The field a kept page's items get with ``SIMHASH_DEDUP_UPDATES`` when the page is an update.
UPDATE_FIELD = "simhash_dedup_update"
#: What an item raises when it cannot take a field: undeclared (``scrapy.Item``), frozen (a dataclass, attrs),
#: a value its validation refuses (a model).  The item is then kept as it is, never lost.
FIELD_REFUSED = (KeyError, AttributeError, TypeError, ValueError)
#: Said by the first drop of a page an earlier run kept, met again (``rerun``) and of a page this crawl kept, fetched
#: again at its URL (``refetched``): the rest are only counted, as Scrapy's duplicate filter does.
NO_MORE_SHOWN = (
    " - no more such drops will be shown (counted in simhash_dedup/pages_dropped/{kind}; "
    "SIMHASH_DEDUP_DEBUG = True shows all)"
)


class SimhashDuplicate(DropItem):
    """An item of a page that is a near-duplicate of a page kept earlier in the crawl (``kind`` "near"), the page an
    earlier crawl kept, met again at its URL or one the trusted URL rules make equal to it ("rerun"), or a page this
    crawl kept, fetched again at its URL ("refetched")."""

    def __init__(self, url: str, match: Match, log_level: str, kind: str = "near", note: bool = False) -> None:
        if kind == "refetched":
            said = "fetched again, its items were passed on at its first fetch in this crawl"
        elif kind == "rerun":
            kept_as = f" (kept as {match.url})" if match.url != url else ""
            said = f"kept by an earlier run, met again{kept_as} {_evidence(match)}"
        else:
            said = f"near-duplicate of {match.url} {_evidence(match)}"
        super().__init__(f"{said}: {url}{NO_MORE_SHOWN.format(kind=kind) if note else ''}", log_level=log_level)
        self.match = match


def _evidence(match: Match) -> str:
    """What a drop rests on, as its log line says it."""
    return (
        f"(matched on {match.reason}: content distance {_show(match.content_distance)}, "
        f"similarity {_show(match.similarity)}, structure distance {_show(match.structure_distance)})"
    )


class SimhashUnchecked(DropItem):
    """With ``SIMHASH_DEDUP_FAIL_MODE = "closed"``: an item that could not be checked, the store being
    unreachable.  Dropped rather than let through unchecked; each is logged (WARNING) and counted."""

    def __init__(self, url: str) -> None:
        super().__init__(
            f"not checked: the store is unreachable and SIMHASH_DEDUP_FAIL_MODE is 'closed': {url}",
            log_level="WARNING",
        )


class ItemVerdicts:
    """Applies a decided page's verdict to one of its items (any item type, through ``ItemAdapter``)."""

    def __init__(self, settings: DedupSettings, counts: Counts) -> None:
        self.settings = settings
        self.counts = counts

    def apply(self, item: Any, adapter: ItemAdapter, page: PageVerdict) -> Any:
        """The item, passed on (with what a kept page's items get); or dropped (raises)."""
        if page.unchecked:
            self.counts.add("dropped_unchecked")
            self.remove_html(adapter)
            raise SimhashUnchecked(page.url)
        if page.duplicate:
            assert page.match is not None  # a duplicate has its match
            self.counts.add("items_dropped")
            self.counts.add(f"items_dropped/{page.match.reason}")
            self.remove_html(adapter)  # keeps the page out of Scrapy's drop log line
            raise self._duplicate(page, page.match)
        self.counts.add("items_kept")
        self._finish_kept(adapter, page)
        return item

    def _duplicate(self, page: PageVerdict, match: Match) -> SimhashDuplicate:
        """The drop of an item at ``SIMHASH_DEDUP_DROP_LOG_LEVEL``; a re-run's drop of the page an earlier run
        kept under the same URL, which a re-run makes by the thousand, follows Scrapy's duplicate filter: the
        first logged, saying how to see all, the rest only counted (``pages_dropped/rerun``), at ``NOTSET``,
        a level no Scrapy ``LOG_LEVEL`` writes (``SIMHASH_DEDUP_DEBUG``: each at DEBUG)."""
        if not page.recrawl and not page.refetched:
            return SimhashDuplicate(page.url, match, self.settings.drop_log_level)
        kind = "refetched" if page.refetched else "rerun"
        if self.settings.debug:
            return SimhashDuplicate(page.url, match, "DEBUG", kind)
        if self.counts.first(f"{kind}_drop"):
            return SimhashDuplicate(page.url, match, self.settings.drop_log_level, kind, note=True)
        return SimhashDuplicate(page.url, match, "NOTSET", kind)

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
                self.remove_html(adapter)
        except FIELD_REFUSED:
            self.counts.add("item_field_errors", page.url, exc_info=True)

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
            self.counts.add("canonical_field_missing")
            if self.counts.first("canonical_field_missing"):
                logger.info(
                    "simhash_dedup: items of %s cannot take the page's canonical URL in %r; add the field, or "
                    "set SIMHASH_DEDUP_CANONICAL_FIELD = '' (counted: simhash_dedup/canonical_field_missing)",
                    type(adapter.item).__name__,
                    field,
                )

    def remove_html(self, adapter: ItemAdapter) -> None:
        """Delete the field from dicts and ``scrapy.Item``; blank it in fixed-field items."""
        if isinstance(adapter.item, MutableMapping):
            adapter.item.pop(self.settings.html_field, None)
        elif self.settings.html_field in adapter:
            adapter[self.settings.html_field] = None


def _show(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def _hex(fingerprint: int | None) -> str | None:
    """Fingerprints go into items as 16 hex digits: JSON numbers lose bits above 2**53."""
    return None if fingerprint is None else f"{fingerprint:016x}"


class WriteConfirmation:
    """The kept items on their way through the later pipelines, and their pages' rows in the store."""

    def __init__(self, crawler: Crawler, store: Store) -> None:
        self.crawler = crawler
        self.store = store
        self._unconfirmed: dict[int, int] = {}  # id of a kept item on its way through later pipelines -> its row
        crawler.signals.connect(self._item_passed, signal=signals.item_scraped)
        crawler.signals.connect(self._item_lost, signal=signals.item_dropped)
        crawler.signals.connect(self._item_lost, signal=signals.item_error)

    def expect(self, item: Any, row: int) -> None:
        """``item``, of the page kept at ``row``, goes on through the later pipelines."""
        self._unconfirmed[id(item)] = row

    def _item_passed(self, item: Any, **_: Any) -> None:
        """``item_scraped``: the item got past every pipeline (and to the feed exports): its page may
        now be written to the store."""
        if (row := self._unconfirmed.pop(id(item), None)) is not None:
            self.store.confirm(row)

    def _item_lost(self, item: Any, exception: BaseException | None = None, **_: Any) -> None:
        """``item_dropped`` / ``item_error`` after the filter kept it: it does not make its page written.
        A drop of ours loses its traceback here: Scrapy's frame that handled it keeps the exception (in its
        log arguments) and the traceback keeps that frame, a reference cycle holding the item and its
        response until the garbage collector runs (a full collection every few hundred drops)."""
        self._unconfirmed.pop(id(item), None)
        if isinstance(exception, (SimhashDuplicate, SimhashUnchecked)):
            exception.__traceback__ = None


def flush_feeds(crawler: Crawler) -> None:
    """Push what the feed exports hold in memory to their files before pages are written to the
    store, so that a kill leaves no page remembered whose item is not in the output (Scrapy's
    exports buffer ~8 KB)."""
    for stream in feed_streams(crawler):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):  # closed
            pass


def feed_streams(crawler: Crawler) -> list[Any]:
    """The files the crawl's feed exports write to.  Scrapy gives no public route to them: this walks its
    ``FeedExporter``'s slots (``crawler.extensions.middlewares``, ``slot.exporter.stream``, ``slot.file``), and
    ``tests/test_scrapy_routes.py`` fails the day Scrapy changes them."""
    streams = []
    for extension in getattr(crawler.extensions, "middlewares", ()):
        for slot in getattr(extension, "slots", ()):
            for stream in (getattr(getattr(slot, "exporter", None), "stream", None), getattr(slot, "file", None)):
                if stream is not None:
                    streams.append(stream)
    return streams
