"""Fingerprints off the reactor: the crawl's pool of worker processes and its cache of recent pages
(``pool``), and the worker process's side of the socket (``process``).

May import: ``fingerprint``.
"""
