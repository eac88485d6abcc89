"""Settings of the example Scrapy project that uses the near-duplicate filter."""

BOT_NAME = "crawler"
SPIDER_MODULES = ["crawler.spiders"]
NEWSPIDER_MODULE = "crawler.spiders"

ROBOTSTXT_OBEY = True
CONCURRENT_REQUESTS_PER_DOMAIN = 8
DOWNLOAD_DELAY = 0.25
FEED_EXPORT_ENCODING = "utf-8"

# The one line a project needs: the filter takes each response's page itself, items need no field.
ADDONS = {"scrapy_simhash_dedup.SimhashDedupAddon": 0}
SIMHASH_DEDUP_FINGERPRINT_FIELDS = True  # kept items carry simhash_content / simhash_structure
