"""Near-duplicate page filter for Scrapy: content and structure SimHash fingerprints.

Enable it with the add-on, ``ADDONS = {"scrapy_simhash_dedup.SimhashDedupAddon": 0}``:
the pipeline, :class:`SimhashDedupSpiderMiddleware` (each response's page
decided once, for all its items; the link guard) and
:class:`SimhashDedupDownloaderMiddleware` (requests held back while the
fingerprint workers are behind; those the URL rules show to be copies,
skipped).  Or :class:`SimhashDedupPipeline` alone in
``ITEM_PIPELINES`` for items that carry their page's HTML.  Its folder in the
checkout is ``pipelines/``; it installs, and is imported, only as
``scrapy_simhash_dedup``.

The Scrapy-facing classes are imported when first used: a fingerprint worker
process imports ``scrapy_simhash_dedup.fingerprint`` without loading Scrapy,
Redis or the index.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .fingerprint.fingerprinter import SCHEME_VERSION, Fingerprint, Fingerprinter
from .fingerprint.simhash import hamming, simhash
from .version import __version__

if TYPE_CHECKING:
    from .crawl.addon import SimhashDedupAddon
    from .crawl.items import SimhashDuplicate, SimhashUnchecked
    from .crawl.middleware import SimhashDedupDownloaderMiddleware, SimhashDedupSpiderMiddleware
    from .crawl.pipeline import SimhashDedupPipeline

_MODULES = {
    "SimhashDedupAddon": "crawl.addon",
    "SimhashDedupSpiderMiddleware": "crawl.middleware",
    "SimhashDedupDownloaderMiddleware": "crawl.middleware",
    "SimhashDedupPageMiddleware": "crawl.middleware",  # deprecated names, for one release
    "SimhashDedupRequestMiddleware": "crawl.middleware",
    "SimhashDedupPipeline": "crawl.pipeline",
    "SimhashDuplicate": "crawl.items",
    "SimhashUnchecked": "crawl.items",
}
__all__ = [
    "SCHEME_VERSION",
    "__version__",
    "Fingerprint",
    "Fingerprinter",
    "SimhashDedupAddon",
    "SimhashDedupDownloaderMiddleware",
    "SimhashDedupPipeline",
    "SimhashDedupSpiderMiddleware",
    "SimhashDuplicate",
    "SimhashUnchecked",
    "hamming",
    "simhash",
]


def __getattr__(name: str) -> Any:
    if name not in _MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_MODULES[name]}", __name__), name)
