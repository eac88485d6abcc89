"""What a crawl learns from its decisions: the requests and links a crawl trap would cost, cut (``traps``: the
URL rules learned from near-duplicates, the URLs known, the link guard), and the address a kept page is known by
(``canonical``: its canonical URL, the hosts that serve the same pages).

May import: ``fingerprint``, ``matching``, ``stores``, ``workers``.
"""
