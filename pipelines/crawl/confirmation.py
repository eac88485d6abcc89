"""A kept page is written to the store only once one of its items got past every pipeline (Scrapy's
``item_scraped``), the feed exports flushed first: the store never remembers a page the user did not get."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy import signals

from .items import SimhashDuplicate, SimhashUnchecked

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from ..stores.base import Store


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
