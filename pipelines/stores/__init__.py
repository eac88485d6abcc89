"""Where kept pages are remembered and decided in arrival order, each store holding a ``matching.Matcher``: the
``Store`` protocol every store follows (``base``), the records it keeps beside its pages (``records``: the
decision log, names, skips, URL rules), what a store raises (``errors``: the exceptions the crawl, the
report and the CLI catch, whichever the store), the store in memory (``memory``), the SQLite store (``sqlite/``)
and the Redis store (``redis/``); each folder's docstring lists its modules.

May import: ``fingerprint``, ``matching``.  Within ``stores``, ``sqlite/`` and ``redis/`` import ``base``,
``records``, ``errors`` and ``memory``, never each other.
"""
