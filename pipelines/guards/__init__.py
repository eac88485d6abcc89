"""What a crawl learns from its decisions: which links of a near-duplicate are covered (``linkguard``), and the
address a kept page is known by (``canonical``).

May import: ``fingerprint``, ``matching``.
"""
