"""When a page is the same as a kept one, by its fingerprints: the rule and its answer (``policy``: ``Match``),
the kept pages' rows and the decision against them, the part every store holds (``matcher``), the pages within a
distance (``index`` with ``indexloops.pyx``), and among which pages (``scope``: the crawl, a site or a host, a
matcher per site under a memory budget).

May import: ``fingerprint``.
"""
