"""A page on its way through the filter: being decided (``PageDecision``), decided (``PageVerdict``), and how
the items of a page find it (``AssignedItems`` for the add-on's route, ``SameObjectPages`` for the item route)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred

from ..fingerprint.fingerprinter import Fingerprint
from ..matching.policy import UPDATE, Match, dropped

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
    page an earlier crawl kept, met again (its links are followed); ``repeat_of``: a kept page without content of
    its own that shows what an earlier page of its site showed but for a date or a number (an empty calendar
    month): kept, and the same page for the guards."""

    url: str
    fingerprint: Fingerprint | None = None
    match: Match | None = None
    row: int | None = None
    unchecked: bool = False
    recrawl: bool = False
    canonical: str | None = None  # a kept page's canonical URL (``SIMHASH_DEDUP_CANONICAL_FIELD``)
    repeat_of: str | None = None

    @property
    def duplicate(self) -> bool:
        return dropped(self.match)

    @property
    def same_as(self) -> str | None:
        """The earlier page this one is the same page as, for the link guard and the URL rules: the page it
        duplicates (not as a re-crawl), or the page it repeats."""
        if self.duplicate and not self.recrawl:
            return self.match.url  # type: ignore[union-attr] (a duplicate has a match)
        return self.repeat_of

    @property
    def update(self) -> bool:
        return self.match is not None and self.match.reason == UPDATE


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
