"""Where kept pages are remembered and decided in arrival order, each store holding a
``matching.Matcher``: the ``Store`` protocol every store follows (``base``), what a store raises
(``errors``), the store in memory (``memory``), the SQLite store (``sqlite/``: the store, its file's
schema, its lock, the readers the report and the CLI use) and Redis (``redis/``: the store's check-and-add
protocol, its replica, its Lua scripts, the outage's local checks, the write-back of a lost store, the
log, the batching of a crawl's round trips).

May import: ``fingerprint``, ``matching``.
"""
