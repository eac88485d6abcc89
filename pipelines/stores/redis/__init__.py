"""The shared store: Redis, with an atomic check-and-add (``store``: ``RedisStore``, with ``check_and_add.lua``), a
``RedisStore`` per site in "site" or "host" scope (``sites``), the client of a server or a cluster and the store
that fits the scope (``connect``), this process's replica of the log and its reading (``replica``), the keys'
layout and the client type (``keys``), Redis's availability: failed calls and their retry, the pages checked while
Redis is down, a lost store written back (``availability``, with ``heal.lua``), the decision log, rules, aliases
and runs (``log``), and the batching of a crawl's round trips off the reactor thread (``batching``).

May import: ``fingerprint``, ``matching``, and of ``stores`` its ``errors`` and ``memory`` (never ``sqlite/``).
"""
