"""Which pages a page is compared with (``SIMHASH_DEDUP_SCOPE``): every page of the crawl, or only those of
its own site (its registrable domain, by the public suffix list) or its own host.  A store in "site" or "host"
scope decides exactly as one filter per site would (``scoped``; the Redis store: ``stores.redis.sites``)."""

from __future__ import annotations

from enum import Enum
from functools import lru_cache
from urllib.parse import urlsplit

import tldextract


class Scope(str, Enum):
    CRAWL = "crawl"  # every page with every page (the default)
    SITE = "site"  # a page with the pages of its registrable domain: www.example.co.uk and shop.example.co.uk
    HOST = "host"  # a page with the pages of its host name


#: The public suffix list as the installed ``tldextract`` ships it (no download: the same sites in every process
#: of one install), private suffixes included: two blogs on blogspot.com or two projects on github.io are two sites.
_SUFFIXES = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None, include_psl_private_domains=True)


def site_key(url: str, scope: Scope) -> str:
    """The part of ``url`` its scope is named by: "" in "crawl" scope (one scope), the host name in "host"
    scope, the registrable domain in "site" scope (``docs.python.org`` -> ``python.org``); a host without
    one (an IP address, ``localhost``, an unknown suffix) is a site of its own.  Lower case, no port."""
    if scope is Scope.CRAWL:
        return ""
    try:
        host = (urlsplit(url).hostname or "").rstrip(".")  # (example.com. is example.com)
    except ValueError:  # a malformed URL (a bad IPv6 literal): its pages are one site
        host = ""
    return host if scope is Scope.HOST else registrable_domain(host)


@lru_cache(maxsize=65_536)
def registrable_domain(host: str) -> str:
    """``host``'s registrable domain (the public suffix and one label before it), or ``host`` itself when it
    has none."""
    return _SUFFIXES.extract_str(host).top_domain_under_public_suffix or host
