"""``scrapy crawl site -a url=https://example.com``: every page of one site."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy.http import Response, TextResponse
from scrapy.linkextractors import LinkExtractor


class SiteSpider(scrapy.Spider):
    """Follows links within the start URL's host and port; yields url and title per page."""

    name = "site"

    def __init__(self, url: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not url:
            raise ValueError("give the site to crawl: scrapy crawl site -a url=https://example.com")
        self.start_url = url
        self.site = urlsplit(url).netloc
        self.allowed_domains = [urlsplit(url).hostname or ""]
        self.links = LinkExtractor()

    async def start(self) -> AsyncIterator[scrapy.Request]:
        yield scrapy.Request(self.start_url)

    def parse(self, response: Response) -> Iterator[Any]:
        if not isinstance(response, TextResponse):
            return
        yield {"url": response.url, "title": (response.css("title::text").get() or "").strip()}
        for link in self.links.extract_links(response):
            if urlsplit(link.url).netloc == self.site:
                yield response.follow(link)
