"""Near-duplicate page filter for Scrapy: content and structure SimHash fingerprints.

Enable :class:`SimhashDedupPipeline` in ``ITEM_PIPELINES`` (and
:class:`SimhashDedupHtmlMiddleware` in ``SPIDER_MIDDLEWARES`` if your items
do not carry the page's HTML; :class:`SimhashDedupLinkMiddleware` there and
:class:`SimhashDedupRuleMiddleware` in ``DOWNLOADER_MIDDLEWARES`` to spend no
requests on near-duplicates), or all at once with the add-on
``ADDONS = {"pipelines.SimhashDedupAddon": 0}``.

The Scrapy-facing classes are imported when first used: a fingerprint worker
process imports ``pipelines.fingerprint`` without loading Scrapy, Redis or the
index.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .fingerprint import SCHEME_VERSION, Fingerprint, Fingerprinter
from .simhash import hamming, simhash

if TYPE_CHECKING:
    from .addon import SimhashDedupAddon
    from .linkguard import SimhashDedupLinkMiddleware, SimhashDedupRuleMiddleware
    from .middleware import SimhashDedupHtmlMiddleware
    from .pipeline import SimhashDedupPipeline, SimhashDuplicate, SimhashUnchecked

_MODULES = {
    "SimhashDedupAddon": "addon",
    "SimhashDedupHtmlMiddleware": "middleware",
    "SimhashDedupLinkMiddleware": "linkguard",
    "SimhashDedupRuleMiddleware": "linkguard",
    "SimhashDedupPipeline": "pipeline",
    "SimhashDuplicate": "pipeline",
    "SimhashUnchecked": "pipeline",
}
__all__ = [
    "SCHEME_VERSION",
    "Fingerprint",
    "Fingerprinter",
    "SimhashDedupAddon",
    "SimhashDedupHtmlMiddleware",
    "SimhashDedupLinkMiddleware",
    "SimhashDedupPipeline",
    "SimhashDedupRuleMiddleware",
    "SimhashDuplicate",
    "SimhashUnchecked",
    "hamming",
    "simhash",
]


def __getattr__(name: str) -> Any:
    if name not in _MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_MODULES[name]}", __name__), name)
