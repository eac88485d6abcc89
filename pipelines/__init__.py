"""Near-duplicate page filter for Scrapy: content and structure SimHash fingerprints.

Enable :class:`SimhashDedupPipeline` in ``ITEM_PIPELINES`` (and
:class:`SimhashDedupHtmlMiddleware` in ``SPIDER_MIDDLEWARES`` if your items
do not carry the page's HTML), or both at once with the add-on
``ADDONS = {"pipelines.SimhashDedupAddon": 0}``.
"""

from .addon import SimhashDedupAddon
from .fingerprint import SCHEME_VERSION, Fingerprint, Fingerprinter
from .middleware import SimhashDedupHtmlMiddleware
from .pipeline import SimhashDedupPipeline, SimhashDuplicate
from .simhash import hamming, simhash

__all__ = [
    "SCHEME_VERSION",
    "Fingerprint",
    "Fingerprinter",
    "SimhashDedupAddon",
    "SimhashDedupHtmlMiddleware",
    "SimhashDedupPipeline",
    "SimhashDuplicate",
    "hamming",
    "simhash",
]
