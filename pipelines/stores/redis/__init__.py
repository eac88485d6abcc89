"""The shared store: Redis, with an atomic check-and-add (``store``, ``check_and_add.lua``), this process's
replica of the log and its reading (``replica``), the keys' layout (``keys``), failed calls and their retry
(``guard``), the pages checked while Redis is down (``outage``), a lost store written back (``heal``,
``heal.lua``), the decision log, rules, aliases and runs (``log``), and the batching of a crawl's round trips
off the reactor thread (``batching``).

May import: ``fingerprint``, ``matching``, ``stores``.
"""
