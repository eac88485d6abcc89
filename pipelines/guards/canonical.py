"""The address a kept page is known by: its canonical URL, chosen when the page is kept.

A crawl meets a page under whatever URL it happens to come by first, a crawl
trap's included (``/story?sid=8f3a``).  Search engines weigh what a page
declares (``<link rel="canonical">``, a ``Link: <...>; rel="canonical"``
header) against what they learned of the site's URLs; so does this, with the
crawl's URL rules (``urlrules``):

1. the page's declared canonical URL, when it is an http(s) URL of the same
   host (``www.`` aside) and nothing gives it away as false: it is not the
   address of another page kept as different, and no other kept page
   declared it (a template that points every page at the home page);
2. else the URL the page was fetched by;

and either one cleaned by the trusted URL rules that apply to it (a declared
canonical that merely echoes a session or tracking URL loses its variant
part).  A page kept before a rule was trusted keeps the canonical URL it got
then.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import NamedTuple
from urllib.parse import urljoin

from ..matching.urlrules import RuleBook, cleaned, host_key, split, url_key

#: Kept pages whose URLs and declared canonical URLs are remembered to doubt the next ones (the most recent).
KEPT_PAGES = 100_000


def on_its_host(url: str, declared: str | None) -> str | None:
    """``declared`` resolved against ``url``, if it is an http(s) URL of the same host (``www.`` aside); else
    None (a canonical URL on another host, another scheme, one that cannot be parsed)."""
    if not declared:
        return None
    try:
        target = urljoin(url, declared)
        same_host = split(target).scheme in ("http", "https") and host_key(target) == host_key(url) is not None
    except ValueError:  # a broken IPv6 address
        return None
    return target if same_host else None


class Canonical(NamedTuple):
    """A kept page's canonical URL; ``source``: ``"declared"`` (the page's own), ``"doubted"`` (one was
    declared but not believed: the fetched URL) or ``"fetched"`` (none declared); ``cleaned``: the trusted
    URL rules changed it."""

    url: str
    source: str
    cleaned: bool


class CanonicalUrls:
    """Chooses kept pages' canonical URLs, and remembers what it needs to doubt the next ones: the kept
    pages' URLs and canonical URLs, and the canonical URLs they declared (by normal form,
    ``urlrules.url_key``, after the trusted URL rules)."""

    def __init__(self, rules: RuleBook | None, size: int = KEPT_PAGES) -> None:
        self.rules = rules
        self.size = size
        self._kept: OrderedDict[int, str] = OrderedDict()  # a kept page's URL, and its canonical URL -> its URL
        self._declared: OrderedDict[int, str] = OrderedDict()  # a declared canonical URL -> the kept page's URL

    def choose(self, url: str, declared: str | None) -> Canonical:
        """The canonical URL of a page kept at ``url`` that declares ``declared`` (relative or absolute,
        or None)."""
        target = on_its_host(url, declared)
        try:
            key = url_key(url)
        except ValueError:  # a URL that cannot be parsed (a broken IPv6 address): the page's own
            return Canonical(url, "doubted" if declared else "fetched", False)
        named = self._cleaned(target) if target is not None else None
        trusted = named is not None and self._believable(url, named)
        chosen, source = (named, "declared") if trusted else (self._cleaned(url), "doubted" if declared else "fetched")
        self._remember(self._kept, key, url)
        self._remember(self._kept, url_key(chosen), url)
        if named is not None:
            self._remember(self._declared, url_key(named), url)
        return Canonical(chosen, source, chosen != (target if trusted else url))

    def _cleaned(self, url: str) -> str:
        """``url`` cleaned by the trusted URL rules that apply to it."""
        applying = self.rules.applying(url) if self.rules is not None else []
        return cleaned(url, applying) if applying else url

    def _believable(self, url: str, named: str) -> bool:
        """Is ``named`` (a URL of the page's host, ``on_its_host``, as the rules clean it) neither the URL or
        canonical URL of another kept page, nor declared by another kept page?"""
        key = url_key(named)
        return self._kept.get(key, url) == url and self._declared.get(key, url) == url

    def _remember(self, table: OrderedDict[int, str], key: int, url: str) -> None:
        table.setdefault(key, url)
        table.move_to_end(key)
        if len(table) > self.size:
            table.popitem(last=False)
