"""How far it goes: the index at 10^6 and 10^7 fingerprints (``index``), the Redis store (``redis``), crawlers on
Redis through an outage and a kill (``redis_crawl``), crawl and site scope on one node and a cluster (``scope``),
and the Spark job's unit costs and projection to 10^8 and 10^9 pages (``spark``)."""
