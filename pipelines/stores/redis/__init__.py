"""The shared store: Redis, with an atomic check-and-add (``store``, ``check_and_add.lua``, ``heal.lua``) and
the batching of a crawl's round trips off the reactor thread (``batching``).

May import: ``fingerprint``, ``matching``, ``stores``.
"""
