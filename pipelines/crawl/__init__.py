"""The Scrapy components: the item pipeline (``pipeline``), the spider and downloader middlewares
(``middleware``), the add-on (``addon``), the ``SIMHASH_DEDUP_*`` settings (``settings``), a start refused in
one line (``startup``), what a crawl says at its close (``summary``), the start-up objects kept out of full
garbage collections (``gcfreeze``).

May import: ``fingerprint``, ``matching``, ``stores``, ``workers``, ``guards``.
"""
