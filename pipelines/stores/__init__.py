"""Where kept pages are remembered and decided in arrival order: what a store raises (``errors``), the matcher
every store builds on and the store in memory (``memory``), the SQLite store with the readers the report and the
CLI use (``sqlite``) and its file lock (``lock``), and Redis (``redis/``: the store, its Lua scripts, the
batching of round trips).

May import: ``fingerprint``, ``matching``.
"""
