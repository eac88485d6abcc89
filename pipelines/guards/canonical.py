"""The address a kept page is known by: its canonical URL, chosen when the page is kept.

A crawl meets a page under whatever URL it happens to come by first, a crawl
trap's included (``/story?sid=8f3a``).  Search engines weigh what a page
declares (``<link rel="canonical">``, a ``Link: <...>; rel="canonical"``
header) against what they learned of the site's URLs; so does this, with the
crawl's URL rules (``traps``):

1. the page's declared canonical URL, when it is an http(s) URL of the same
   host (``www.`` aside) and nothing gives it away as false: it is not the
   address of another page kept as different, and no other kept page
   declared it (a template that points every page at the home page);
2. else the URL the page was fetched by;

and either one cleaned by the trusted URL rules that apply to it (a declared
canonical that merely echoes a session or tracking URL loses its variant
part).

A crawl also learns (``learning=True``; batch mode, which learns no rules,
does not), and renames the kept pages it remembers when it does (``Renamed``:
the item already went out under the first name, the alias table and the export
take the new one):

- hosts that serve the same pages (``HostAliases``, below) are one site: a
  canonical URL declared on another of its hosts is believed, and every name
  is given on the site's main host;
- a URL rule trusted after a page was kept cleans that page's name too;
- a page that declares no believable canonical URL is named by the URL that
  looks most canonical among those it was met under, its own and its
  near-duplicates' (``looks_canonical``): in the folder of its language, with
  no session or tracking parameter, the shortest.

Hosts that serve the same pages: a site's other names (an alias host, an IP address, a mirror host name).

A crawl meets some of a site's pages under another name than the site's own (``http://203.0.113.7/a`` for
``http://news.example/a``; ``www.`` aside, which ``traps.host_key`` already leaves out).  Such a page's
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

import functools
import re
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple
from urllib.parse import parse_qsl, urljoin

from ..stores.records import Rule
from .traps import RuleBook, cleaned, host_key, split, url_key

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
    """The path and query of ``url``, in ``traps``' normal form, whatever its host."""
    parts = split(url)
    return url_key(parts._replace(netloc="h").geturl())


#: Kept pages whose URLs and declared canonical URLs are remembered to doubt the next ones (the most recent).
KEPT_PAGES = 100_000
#: URLs a kept page was met under that are remembered to name it (its own first).
URLS_PER_PAGE = 8
#: Query and path parameters that track a visit or a session, never what a page shows.
TRACKING = frozenset(
    {
        "fbclid",
        "gclid",
        "dclid",
        "msclkid",
        "yclid",
        "mc_cid",
        "mc_eid",
        "_ga",
        "_gl",
        "igshid",
        "ref",
        "ref_src",
        "sid",
        "sessionid",
        "session_id",
        "phpsessid",
        "jsessionid",
        "cfid",
        "cftoken",
    }
)
#: A path segment that is a language folder: ``en``, ``pt-BR``, ``zh_CN``.
LANGUAGE_FOLDER = re.compile(r"([a-z]{2})(?:[-_][a-z]{2,4})?", re.IGNORECASE)
#: ISO 639-1 codes taken as language folders, and the language names of ``fingerprint.languages`` they mean.
LANGUAGE_CODES = {
    code: name
    for name, codes in {
        "en": "en",
        "de": "de",
        "fr": "fr",
        "es": "es",
        "pt": "pt",
        "it": "it",
        "nl": "nl",
        "da/nb": "da nb no nn",
        "sv": "sv",
        "ca": "ca",
        "cs/sk": "cs sk",
        "ja": "ja",
        "ko": "ko",
        "han": "zh",
        "ru": "ru",
        "pl": "pl",
        "fi": "fi",
        "tr": "tr",
        "el": "el",
        "he": "he",
        "ar": "ar",
        "hu": "hu",
        "ro": "ro",
        "uk": "uk",
        "vi": "vi",
        "id": "id",
        "th": "th",
        "hi": "hi",
        "fa": "fa",
        "hr": "hr",
        "sr": "sr",
        "sl": "sl",
        "bg": "bg",
        "lt": "lt",
        "lv": "lv",
        "et": "et",
        "eu": "eu",
        "gl": "gl",
        "is": "is",
        "ms": "ms",
        "bn": "bn",
        "ta": "ta",
        "ka": "ka",
        "hy": "hy",
    }.items()
    for code in codes.split()
}


def on_its_host(url: str, declared: str | None) -> str | None:
    """``declared`` resolved against ``url``, if it is an http(s) URL of the same host (``www.`` aside); else
    None (a canonical URL on another host, another scheme, one that cannot be parsed)."""
    target = resolved(url, declared)
    return target if target is not None and host_key(target) == host_key(url) is not None else None


def resolved(url: str, declared: str | None) -> str | None:
    """``declared`` resolved against ``url``, if it is an http(s) URL that can be parsed; else None."""
    if not declared:
        return None
    try:
        target = urljoin(url, declared)
        return target if split(target).scheme in ("http", "https") and host_key(target) is not None else None
    except ValueError:  # a broken IPv6 address
        return None


def looks_canonical(url: str, languages: Sequence[str] = ()) -> tuple[int, int, int, int, int, str]:
    """How canonical ``url`` looks for a page written in ``languages`` (``fingerprint.languages`` names), as a
    key to sort by (the smallest first): not in another language's folder, in its own language's folder, no
    tracking or session parameter, fewer query parameters, shorter, then the URL itself (the same choice in
    any order)."""
    return _looks_canonical(url, tuple(languages))


@functools.lru_cache(maxsize=4096)
def _looks_canonical(url: str, languages: tuple[str, ...]) -> tuple[int, int, int, int, int, str]:
    """``looks_canonical``, remembered for the URLs of the last pages: a kept page is named again at each
    near-duplicate of it met, from all the URLs it was met under."""
    parts = split(url)
    folders = {
        LANGUAGE_CODES.get(match.group(1).lower())
        for segment in parts.path.split("/")
        if (match := LANGUAGE_FOLDER.fullmatch(segment.split(";")[0]))
    } - {None}
    own, other = bool(folders & set(languages)), bool(folders - set(languages)) and bool(languages)
    params = [name.lower() for name, _ in parse_qsl(parts.query, keep_blank_values=True)]
    params += [param.split("=", 1)[0].lower() for segment in parts.path.split("/") for param in segment.split(";")[1:]]
    tracking = sum(name in TRACKING or name.startswith("utm_") for name in params)
    return int(other), int(not own), tracking, len(params), len(url), url


class Canonical(NamedTuple):
    """A kept page's canonical URL; ``source``: ``"declared"`` (the page's own), ``"doubted"`` (one was
    declared but not believed: the fetched URL) or ``"fetched"`` (none declared); ``cleaned``: the trusted
    URL rules changed it."""

    url: str
    source: str
    cleaned: bool


class Renamed(NamedTuple):
    """A kept page (``kept_url``) that what the crawl learned since names otherwise: ``name``."""

    kept_url: str
    name: str


@dataclass
class KeptName:
    """What names a kept page: the canonical URL it declared (absolute, any host), the URLs it was met under (its
    own first, then its near-duplicates'), the languages it is written in, its name now."""

    declared: str | None
    urls: list[str]
    languages: tuple[str, ...]
    name: str
    said: bool = False  # it declared something (believable or not)


class CanonicalUrls:
    """Chooses kept pages' canonical URLs, and remembers what it needs to doubt the next ones: the kept
    pages' URLs and canonical URLs, and the canonical URLs they declared (by normal form,
    ``traps.url_key``, after the trusted URL rules).  With ``learning``, it learns the site's hosts and
    renames the pages it remembers (``kept_page_dropped``, ``rules_trusted``; ``take_renamed``)."""

    def __init__(self, rules: RuleBook | None, size: int = KEPT_PAGES, learning: bool = False) -> None:
        self.rules = rules
        self.size = size
        self.hosts = HostAliases() if learning else None
        self._kept: OrderedDict[int, str] = OrderedDict()  # a kept page's URL, and its canonical URL -> its URL
        self._declared: OrderedDict[int, str] = OrderedDict()  # a declared canonical URL -> the kept page's URL
        self._pages: OrderedDict[str, KeptName] = OrderedDict()  # with learning: a kept page's URL -> its naming
        self._renames: dict[str, Renamed] = {}  # pages renamed since ``take_renamed``

    def choose(self, url: str, declared: str | None, languages: Sequence[str] = ()) -> Canonical:
        """The canonical URL of a page kept at ``url`` that declares ``declared`` (relative or absolute,
        or None), written in ``languages``."""
        try:
            key = url_key(url)
        except ValueError:  # a URL that cannot be parsed (a broken IPv6 address): the page's own
            return Canonical(url, "doubted" if declared else "fetched", False)
        target = self._absolute(url, declared)
        if self.hosts is not None:
            self.hosts.kept(url)
            if target is not None and self.hosts.declared(url, target):
                self._rename(list(self._pages))  # hosts became one site: every page remembered is named again
        page = KeptName(target, [url], tuple(languages), url, bool(declared))
        chosen, source, was_cleaned = self._name(url, page)
        page.name = chosen
        self._remember(self._kept, key, url)
        self._remember(self._kept, url_key(chosen), url)
        if target is not None and (source == "declared" or self._on_site(url, target)):
            self._remember(self._declared, url_key(self._site_name(target)), url)
        if self.hosts is not None:
            self._pages[url] = page
            if len(self._pages) > self.size:
                self._pages.popitem(last=False)
        return Canonical(chosen, source, was_cleaned)

    def kept_page_dropped(self, url: str, kept_url: str) -> None:
        """A page at ``url`` was dropped as a near-duplicate of the page kept at ``kept_url``: a URL the kept
        page may be named by, and maybe two hosts that are one site."""
        if self.hosts is None:
            return
        if self.hosts.dropped(url, kept_url):
            self._rename(list(self._pages))
        page = self._pages.get(kept_url)
        if page is not None and url not in page.urls and len(page.urls) < URLS_PER_PAGE:
            page.urls.append(url)
            self._rename([kept_url])

    def rules_trusted(self, rules: Sequence[Rule]) -> None:
        """URL rules just became trusted: they clean the names of the pages kept before them too."""
        if self.hosts is not None and rules:
            hosts = {rule.host for rule in rules}
            self._rename([url for url, page in self._pages.items() if any(host_key(met) in hosts for met in page.urls)])

    def take_renamed(self) -> list[Renamed]:
        """The pages kept before that are named otherwise since the last call (each with its last name)."""
        renamed, self._renames = list(self._renames.values()), {}
        return renamed

    def _rename(self, urls: list[str]) -> None:
        for url in urls:
            page = self._pages[url]
            name = self._name(url, page)[0]
            if name != page.name:
                page.name = name
                self._remember(self._kept, url_key(name), url)
                self._renames[url] = Renamed(url, name)

    def _name(self, url: str, page: KeptName) -> tuple[str, str, bool]:
        """The name of the page kept at ``url``: its declared canonical URL if believable, else the URL it was
        met under that looks the most canonical; on its site's main host, cleaned by the trusted rules."""
        if page.declared is not None and self._on_site(url, page.declared):
            named = self._site_name(page.declared)
            if self._believable(url, named):
                return named, "declared", named != page.declared
        source = "doubted" if page.said else "fetched"
        names = [self._site_name(met) for met in page.urls]
        names = [name for name in names if self._believable(url, name)] or [self._site_name(url)]
        chosen = min(names, key=lambda name: looks_canonical(name, page.languages)) if len(names) > 1 else names[0]
        return chosen, source, chosen != url

    def _absolute(self, url: str, declared: str | None) -> str | None:
        """``declared`` resolved against ``url``, if it is an http(s) URL: on the page's host (``on_its_host``),
        or with ``learning`` on any host (which host serves the page is learned)."""
        return on_its_host(url, declared) if self.hosts is None else resolved(url, declared)

    def _on_site(self, url: str, target: str) -> bool:
        return host_key(target) == host_key(url) or (self.hosts is not None and self.hosts.same_site(url, target))

    def _site_name(self, url: str) -> str:
        """``url`` on its site's main host, cleaned by the trusted URL rules that apply to it."""
        if self.hosts is not None:
            url = self.hosts.on_main_host(url)
        applying = self.rules.applying(url) if self.rules is not None else []
        return cleaned(url, applying) if applying else url

    def _believable(self, url: str, named: str) -> bool:
        """Is ``named`` (a URL of the page's site, as the rules clean it) neither the URL or canonical URL of
        another kept page, nor declared by another kept page?"""
        key = url_key(named)
        return self._kept.get(key, url) == url and self._declared.get(key, url) == url

    def _remember(self, table: OrderedDict[int, str], key: int, url: str) -> None:
        table.setdefault(key, url)
        table.move_to_end(key)
        if len(table) > self.size:
            table.popitem(last=False)
