"""A Scrapy project as a new user writes one, run with the ``scrapy`` command: ``scrapy startproject``'s
layout, the README's settings line, a spider that follows every link of a site and yields
``scrapy.Item`` objects that declare no field for the filter."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from packaging.version import Version
from scrapy import __version__ as scrapy_version

SETTINGS = """
BOT_NAME = "trial"
SPIDER_MODULES = ["trial.spiders"]
ROBOTSTXT_OBEY = False
DOWNLOAD_DELAY = 0
CONCURRENT_REQUESTS = 8
TELNETCONSOLE_ENABLED = False
LOG_LEVEL = "INFO"
FEED_EXPORT_ENCODING = "utf-8"
ADDONS = {"scrapy_simhash_dedup.SimhashDedupAddon": 0}
"""

ITEMS = """
import scrapy


class PageItem(scrapy.Item):
    url = scrapy.Field()
    title = scrapy.Field()
    part = scrapy.Field()
"""

SPIDER = '''
from urllib.parse import urlsplit

import scrapy
from scrapy.linkextractors import LinkExtractor

from trial.items import PageItem


class SiteSpider(scrapy.Spider):
    """Every page of one site; ``per_page`` items per page (the rows of a listing)."""

    name = "site"

    def __init__(self, url, per_page="1", **kwargs):
        super().__init__(**kwargs)
        self.start_urls = [url]
        self.allowed_domains = [urlsplit(url).hostname]
        self.per_page = int(per_page)
        self.links = LinkExtractor()

    def parse(self, response):
        title = (response.css("title::text").get() or "").strip()
        for part in range(self.per_page):
            yield PageItem(url=response.url, title=title, part=part)
        for link in self.links.extract_links(response):
            yield response.follow(link)
'''


#: The same spider fed by scrapy-redis: it reads its start URLs from Redis (``site:start_urls``) and closes
#: after 5 idle seconds (scrapy-redis's MAX_IDLE_TIME_BEFORE_CLOSE).
REDIS_SPIDER = """
from urllib.parse import urlsplit

from scrapy.linkextractors import LinkExtractor
from scrapy_redis.spiders import RedisSpider

from trial.items import PageItem


class SiteSpider(RedisSpider):
    name = "site"
    redis_key = "site:start_urls"
    custom_settings = {"MAX_IDLE_TIME_BEFORE_CLOSE": 5}

    def __init__(self, host="127.0.0.1", **kwargs):
        super().__init__(**kwargs)
        self.allowed_domains = [host]
        self.links = LinkExtractor()

    def parse(self, response):
        yield PageItem(url=response.url, title=(response.css("title::text").get() or "").strip(), part=0)
        for link in self.links.extract_links(response):
            yield response.follow(link)
"""

#: The settings of docs/usage/redis.md for several crawlers sharing one Redis (``{redis_url}`` filled in).
SCRAPY_REDIS_SETTINGS = """
SCHEDULER = "scrapy_redis.scheduler.Scheduler"
DUPEFILTER_CLASS = "scrapy_redis.dupefilter.RFPDupeFilter"
SCHEDULER_PERSIST = True
REDIS_URL = "{redis_url}"

ADDONS = {{"scrapy_simhash_dedup.SimhashDedupAddon": 0}}
SIMHASH_DEDUP_BACKEND = "redis"
"""


def make_project(root: Path, settings: str = "", top_level_pipelines: bool = False, spider: str = SPIDER) -> Path:
    """A project in ``root`` (``scrapy.cfg``, package ``trial``), ``settings`` appended to its settings.py;
    with a top-level ``pipelines.py`` of its own if asked (some projects keep one there)."""
    package = root / "trial"
    (package / "spiders").mkdir(parents=True)
    (root / "scrapy.cfg").write_text("[settings]\ndefault = trial.settings\n")
    (package / "__init__.py").write_text("")
    (package / "spiders" / "__init__.py").write_text("")
    (package / "settings.py").write_text(SETTINGS + settings)
    (package / "items.py").write_text(ITEMS)
    (package / "spiders" / "site.py").write_text(spider)
    if top_level_pipelines:
        (root / "pipelines.py").write_text(
            "class TrialPipeline:\n    def process_item(self, item):\n        return item\n"
        )
    return root


def scrapy(
    project: Path, *arguments: str, timeout: float = 600, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """``scrapy ARGUMENTS`` run in ``project`` with this environment's ``scrapy`` command, as a user runs it
    (the plugin installed in the environment; this checkout not on the path)."""
    return subprocess.run(
        scrapy_command(*arguments), cwd=project, capture_output=True, text=True, timeout=timeout, env=environment(env)
    )


def scrapy_command(*arguments: str) -> list[str]:
    return [str(Path(sys.executable).parent / "scrapy"), *arguments]


#: The status ``scrapy crawl`` exits with when the filter refuses to start (a wrong setting, a store in use).
#: Scrapy 2.14's crawl command counts as failed only a crawl whose spider could not be built, and the filter
#: refuses once the spider is: 0 there (the one ERROR line and the untouched output are the same); 2.15 on, 1.
REFUSED_EXIT_STATUS = 1 if Version(scrapy_version) >= Version("2.15") else 0


def environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment without the checkout on its ``PYTHONPATH``, plus ``extra``.  Other entries
    stay: ``make test``'s run on the lowest Scrapy puts that Scrapy there."""
    checkout = Path(__file__).resolve().parents[1]
    path = [
        entry
        for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep)
        if entry and Path(entry).resolve() != checkout
    ]
    return {
        **{key: value for key, value in os.environ.items() if key != "PYTHONPATH"},
        **({"PYTHONPATH": os.pathsep.join(path)} if path else {}),
        **(extra or {}),
    }
