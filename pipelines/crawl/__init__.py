"""The Scrapy components: the item pipeline (``pipeline``: Scrapy's hooks only), the spider and downloader
middlewares (``middleware``), the add-on (``addon``), the ``SIMHASH_DEDUP_*`` settings (``settings``); the
parts the pipeline and the middlewares share: which store and where (``opening``), pages decided in their
order of arrival (``queue``), what a decided page teaches (``learning``), a page and its verdict (``pages``),
a verdict applied to an item (``items``), a kept page written once its item got through (``confirmation``),
the stats (``counts``), the shared store unreachable (``outage``); a start refused in one line
(``startup``), what a crawl says at its close (``summary``), the start-up objects kept out of full garbage
collections (``gcfreeze``).

May import: ``fingerprint``, ``matching``, ``stores``, ``workers``, ``guards``.
"""
