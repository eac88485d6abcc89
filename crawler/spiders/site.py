"""``scrapy crawl site -a url=https://example.com [-a hosts=203.0.113.7,old.example.com]``: every page of one
site, under its host and the other names it is known by."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy.http import Response, TextResponse
from scrapy.linkextractors import LinkExtractor


class SiteSpider(scrapy.Spider):
    """Follows links within the start URL's host and port, and the other hosts (host[:port], comma-separated)
    the site is known by; yields url and title per page."""

    name = "site"

    def __init__(self, url: str | None = None, hosts: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not url:
            raise ValueError("give the site to crawl: scrapy crawl site -a url=https://example.com")
        self.start_url = url
        self.sites = {urlsplit(url).netloc, *(host.strip() for host in hosts.split(",") if host.strip())}
        self.allowed_domains = sorted({urlsplit(f"//{site}").hostname or "" for site in self.sites})
        self.links = LinkExtractor()

    async def start(self) -> AsyncIterator[scrapy.Request]:
        yield scrapy.Request(self.start_url)

    def parse(self, response: Response) -> Iterator[Any]:
        if not isinstance(response, TextResponse):
            return
        yield {"url": response.url, "title": (response.css("title::text").get() or "").strip()}
        for link in self.links.extract_links(response):
            if urlsplit(link.url).netloc in self.sites:
                yield response.follow(link)
