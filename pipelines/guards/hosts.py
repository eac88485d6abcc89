"""Hosts that serve the same pages: a site's other names (an alias host, an IP address, a mirror host name).

A crawl meets some of a site's pages under another name than the site's own (``http://203.0.113.7/a`` for
``http://news.example/a``; ``www.`` aside, which ``urlrules.host_key`` already leaves out).  Such a page's
declared canonical URL is on the site's main host, which the canonical check would doubt as "another
host".  What shows that host A serves host B's pages, each an observation of the pair:

- a page of A dropped as a near-duplicate of a kept page of B at the same path and query;
- a kept page of A that declares as its canonical URL B's page of the same path and query.

After ``support`` observations and no counterexample the two hosts are one site (and so are the hosts
aliased to either).  A counterexample is a kept page of A and a kept page of B at the same path and query,
both kept as different pages: the hosts do not serve the same pages, for good.  A site's main host is the
one the other's pages declared as theirs (else the first one met).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from ..matching.urlrules import host_key, split, url_key

#: Observations that make two hosts one site.
SUPPORT = 2
#: Kept pages remembered by path and query, to find counterexamples (the most recent).
KEPT_PAGES = 100_000


@dataclass
class HostPair:
    """Two hosts (``host_key``) and what is known of them: observations, a counterexample, which one the
    other's pages declared as theirs."""

    hosts: tuple[str, str]
    support: int = 0
    refuted_by: str | None = None  # "url1 url2": the two kept, different pages
    declared_to: str | None = None  # the host the other's pages declared canonical URLs on


class HostAliases:
    """Learns which hosts serve the same pages; ``site(host)`` is the main host of a host's site (itself, if
    it is known to be one only)."""

    def __init__(self, support: int = SUPPORT, size: int = KEPT_PAGES) -> None:
        self.support = support
        self.size = size
        self._pairs: dict[tuple[str, str], HostPair] = {}
        self._kept: OrderedDict[int, tuple[str, str]] = OrderedDict()  # path and query -> (host, kept URL), first
        self._main: dict[str, str] = {}  # a host -> its site's main host (only hosts with aliases)
        self._first: dict[str, int] = {}  # a host -> when it was first met (the main host without declarations)

    def site(self, host: str) -> str:
        return self._main.get(host, host)

    def same_site(self, url: str, other: str) -> bool:
        a, b = host_key(url), host_key(other)
        return a is not None and b is not None and self.site(a) == self.site(b)

    def on_main_host(self, url: str) -> str:
        """``url`` on its site's main host (the scheme and the rest as they are)."""
        host = host_key(url)
        main = self.site(host) if host is not None else None
        if main is None or main == host:
            return url
        parts = split(url)
        netloc = main if not parts.username else f"{parts.netloc.rsplit('@', 1)[0]}@{main}"
        return parts._replace(netloc=netloc).geturl()

    def dropped(self, url: str, kept_url: str) -> bool:
        """A page at ``url`` was dropped as a near-duplicate of the page kept at ``kept_url``.  True when two
        hosts just became one site."""
        return self._observe(url, kept_url, None)

    def declared(self, url: str, declared: str) -> bool:
        """A page kept at ``url`` declares ``declared`` (absolute) as its canonical URL.  True when two hosts
        just became one site."""
        return self._observe(url, declared, host_key(declared))

    def kept(self, url: str) -> bool:
        """A page was kept at ``url``: a page kept at the same path and query on another host refutes their
        pair.  True when that parted two hosts that were one site."""
        host = host_key(url)
        if host is None:
            return False
        self._first.setdefault(host, len(self._first))
        key = _path_key(url)
        other = self._kept.get(key)
        if other is None:
            self._kept[key] = (host, url)
            if len(self._kept) > self.size:
                self._kept.popitem(last=False)
            return False
        if other[0] == host:
            return False
        pair = self._pair(host, other[0])
        if pair.refuted_by is not None:
            return False
        was_trusted = self._trusted(pair)
        pair.refuted_by = f"{other[1]} {url}"
        if was_trusted:
            self._regroup()
        return was_trusted

    def _observe(self, url: str, other: str, declared_to: str | None) -> bool:
        a, b = host_key(url), host_key(other)
        if a is None or b is None or a == b or _path_key(url) != _path_key(other):
            return False
        if split(url).scheme != split(other).scheme:
            return False
        pair = self._pair(a, b)
        if pair.refuted_by is not None:
            return False
        pair.support += 1
        if declared_to is not None:
            pair.declared_to = declared_to
        if pair.support == self.support:
            self._regroup()
            return True
        if declared_to is not None and self._trusted(pair):
            self._regroup()  # the main host may change
        return False

    def _pair(self, a: str, b: str) -> HostPair:
        hosts = (a, b) if a < b else (b, a)
        for host in hosts:
            self._first.setdefault(host, len(self._first))
        return self._pairs.setdefault(hosts, HostPair(hosts))

    def _trusted(self, pair: HostPair) -> bool:
        return pair.refuted_by is None and pair.support >= self.support

    def _regroup(self) -> None:
        """The sites: hosts joined by trusted pairs; each site's main host the one most declared to, else the
        first met."""
        parent: dict[str, str] = {}

        def root(host: str) -> str:
            while parent.get(host, host) != host:
                host = parent[host]
            return host

        trusted = [pair for pair in self._pairs.values() if self._trusted(pair)]
        for pair in trusted:
            a, b = (root(host) for host in pair.hosts)
            if a != b:
                parent[b] = a
        members: dict[str, list[str]] = {}
        for pair in trusted:
            for host in pair.hosts:
                members.setdefault(root(host), [])
                if host not in members[root(host)]:
                    members[root(host)].append(host)
        declared: dict[str, int] = {}
        for pair in trusted:
            if pair.declared_to is not None:
                declared[pair.declared_to] = declared.get(pair.declared_to, 0) + pair.support
        self._main = {}
        for hosts in members.values():
            main = min(hosts, key=lambda host: (-declared.get(host, 0), self._first[host]))
            self._main.update(dict.fromkeys(hosts, main))


def _path_key(url: str) -> int:
    """The path and query of ``url``, in ``urlrules``' normal form, whatever its host."""
    parts = split(url)
    return url_key(parts._replace(netloc="h").geturl())
