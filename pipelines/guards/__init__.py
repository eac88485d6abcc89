"""What a crawl learns from its decisions: which links of a near-duplicate are covered (``linkguard``), the
address a kept page is known by (``canonical``), and the hosts that serve the same pages (``hosts``).

May import: ``fingerprint``, ``matching``, ``stores``, ``workers``.
"""
