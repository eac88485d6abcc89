"""A spider middleware that puts each response's HTML (and URL) into its items.

Item pipelines never see the response, so the HTML must travel in the item.
Spiders that already yield it need no middleware.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter
from scrapy.http import TextResponse
from scrapy.spidermiddlewares.base import BaseSpiderMiddleware

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)


class SimhashDedupHtmlMiddleware(BaseSpiderMiddleware):
    """Fills ``SIMHASH_DEDUP_HTML_FIELD`` and ``SIMHASH_DEDUP_URL_FIELD`` where empty."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self.html_field: str = crawler.settings.get("SIMHASH_DEDUP_HTML_FIELD", "html")
        self.url_field: str = crawler.settings.get("SIMHASH_DEDUP_URL_FIELD", "url")
        self._warned = False

    def get_processed_item(self, item: Any, response: Response | None) -> Any:
        if response is None or not ItemAdapter.is_item(item):
            return item
        adapter = ItemAdapter(item)
        body = response.text if isinstance(response, TextResponse) else response.body
        self._fill(adapter, self.html_field, body, warn=True)
        self._fill(adapter, self.url_field, response.url, warn=False)
        return item

    def _fill(self, adapter: ItemAdapter, field: str, value: Any, warn: bool) -> None:
        if adapter.get(field) is not None:
            return
        try:
            adapter[field] = value
        except KeyError:
            if warn and not self._warned:
                self._warned = True
                logger.warning(
                    "simhash_dedup: %s items have no %r field, so their pages "
                    "cannot be deduplicated; declare the field or set "
                    "SIMHASH_DEDUP_HTML_FIELD.", type(adapter.item).__name__, field,
                )
