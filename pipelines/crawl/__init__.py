"""The Scrapy components: the add-on (``addon``), the item pipeline (``pipeline``) and the spider and
downloader middlewares (``middleware``), Scrapy's hooks only, all three calling one page filter (``filter``:
``PageFilter``), and the ``SIMHASH_DEDUP_*`` settings (``settings``, with a start refused in one line).  The
filter's parts: pages decided in their order of arrival and what a decision teaches (``decisions``), a page,
its verdict and its items (``items``), the crawl's store and its faults (``storage``), the stats and the
close's summary (``stats``), the start-up objects kept out of full garbage collections (``gcfreeze``).

May import: ``fingerprint``, ``matching``, ``stores``, ``workers``, ``guards``.
"""
