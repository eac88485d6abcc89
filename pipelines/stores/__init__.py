"""Where kept pages are remembered and decided in arrival order: in memory and in SQLite, with its file lock
and the report's readers (``local``), and on Redis (``redis/``: the store, its Lua scripts, the batching of
round trips).

May import: ``fingerprint``, ``matching``.
"""
