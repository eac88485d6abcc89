"""What a page's verdict does to each of its items: passed on, with the fields a kept page's items get, or
dropped with :class:`SimhashDuplicate` (or :class:`SimhashUnchecked` when the store could not check it)."""

from __future__ import annotations

import logging
from collections.abc import MutableMapping
from typing import Any

from itemadapter import ItemAdapter
from scrapy.exceptions import DropItem

from ..matching.policy import Match
from .counts import Counts
from .pages import PageVerdict
from .settings import DedupSettings

logger = logging.getLogger(__name__)

#: The field a kept page's items get with ``SIMHASH_DEDUP_UPDATES`` when the page is an update.
UPDATE_FIELD = "simhash_dedup_update"
#: What an item raises when it cannot take a field: undeclared (``scrapy.Item``), frozen (a dataclass, attrs),
#: a value its validation refuses (a model).  The item is then kept as it is, never lost.
FIELD_REFUSED = (KeyError, AttributeError, TypeError, ValueError)
#: Said by the first drop of a page an earlier run kept under the same URL.
RERUN_NOTE = (
    " - a page an earlier run kept, met again; no more such drops will be shown (counted in "
    "simhash_dedup/pages_dropped/rerun; SIMHASH_DEDUP_DEBUG = True shows all)"
)


class SimhashDuplicate(DropItem):
    """An item of a page that is a near-duplicate of a page kept earlier in the crawl (or an earlier crawl)."""

    def __init__(self, url: str, match: Match, log_level: str, note: str = "") -> None:
        super().__init__(
            f"near-duplicate of {match.url} (matched on {match.reason}: "
            f"content distance {_show(match.content_distance)}, "
            f"similarity {_show(match.similarity)}, "
            f"structure distance {_show(match.structure_distance)}): {url}{note}",
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
            self.counts.add("items_dropped")
            self.counts.add(f"items_dropped/{page.match.reason}")
            self.remove_html(adapter)  # keeps the page out of Scrapy's drop log line
            raise self._duplicate(page)
        self.counts.add("items_kept")
        self._finish_kept(adapter, page)
        return item

    def _duplicate(self, page: PageVerdict) -> SimhashDuplicate:
        """The drop of an item at ``SIMHASH_DEDUP_DROP_LOG_LEVEL``; a re-run's drop of the page an earlier run
        kept under the same URL, which a re-run makes by the thousand, follows Scrapy's duplicate filter: the
        first logged, saying how to see all, the rest only counted (``pages_dropped/rerun``), at ``NOTSET``,
        a level no Scrapy ``LOG_LEVEL`` writes (``SIMHASH_DEDUP_DEBUG``: each at DEBUG)."""
        if not page.recrawl:
            return SimhashDuplicate(page.url, page.match, self.settings.drop_log_level)
        if self.settings.debug:
            return SimhashDuplicate(page.url, page.match, "DEBUG")
        if self.counts.first("rerun_drop"):
            return SimhashDuplicate(page.url, page.match, self.settings.drop_log_level, RERUN_NOTE)
        return SimhashDuplicate(page.url, page.match, "NOTSET")

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
