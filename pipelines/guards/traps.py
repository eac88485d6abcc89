"""The requests and links a crawl trap would cost, cut: URL rules learned from near-duplicates (a request the
trusted rules rewrite to a page already fetched is skipped) and the link guard (the links of a near-duplicate
that lead where the crawl has been are not followed).

URL rewrite rules learned from near-duplicates, so a crawl trap's URLs are skipped before download.

Every page dropped as a near-duplicate gives a pair (its URL, the kept page's
URL).  Each rule of the shapes below that makes the two URLs equal gets one
supporting pair; after ``support`` pairs and no counterexample a rule is
*trusted*.  A counterexample is two URLs the rule makes equal whose pages
were both kept, as different pages: it withdraws the rule for good.

Shapes (per host and port, ``www.`` left out of the host's name):

- ``param``: a query parameter that does not change the page (``sid``,
  ``utm_source``, ``sort``): removed;
- ``path_param``: a path parameter (``;jsessionid=...``): removed;
- ``segment``: a path segment, as a prefix (``/amp/``, ``/print/``, a
  mirrored path's first folder), inside the path, or last (``index.html``):
  removed;
- ``host``: the ``www.`` alias of the host: removed.

A request is skipped when the trusted rules of its host rewrite its URL to
one already fetched (:class:`KnownUrls`, ``find``): the page it would give
is, by the rule, a copy of one the crawl has.  (DustBuster, Bar-Yossef et
al., WWW 2007, and Koppula et al., WSDM 2010, learn such rules from duplicate
URL pairs.)

Which links of a near-duplicate page the crawl can do without.

A near-duplicate page's links often lead where its kept page's links lead (a
copy's navigation), and in a crawl trap only to more copies; but not always:
the identical index pages of language or mirror folders each lead into their
own folder, where some pages are unique.  So a link of a near-duplicate page
is skipped only when what it leads to is known to be covered:

- its URL, or a URL the trusted URL rules make equal to it, was already
  requested or fetched by this crawl: the crawl has, or will have, that page;
- or its *shape* (its host, its folders with numbers generalised and a
  repeated folder counted once, its query parameters' names) has led to
  ``budget`` near-duplicates in a row and to no unique page since: an endless
  calendar, a mirrored path or session ids run out of budget, a folder whose
  pages are sometimes unique does not (katana spends a budget per cluster of
  near-duplicates in the same spirit).

A near-duplicate of a page kept by an earlier crawl under the same URL (or
the same URL by the trusted rules) is a re-crawl, not a copy: its links are
followed, so a re-run finds what was added since.
"""

from __future__ import annotations

import functools
import re
from collections import OrderedDict
from collections.abc import Sequence
from urllib.parse import SplitResult, parse_qsl, unquote_plus, urlencode, urlsplit, urlunsplit

import xxhash

from ..matching.policy import Match
from ..stores.records import FETCHED_URLS, Rule

#: Kept URLs per host a new rule is checked against for counterexamples (the most recent).
KEPT_URLS = 20_000
#: Query parameters in which a pair may differ and still support each of them.
MAX_PARAMS = 3
#: Candidate rules per host: more are not started (the oldest candidates without support go first).
MAX_CANDIDATES = 200


class RuleBook:
    """The rules of a crawl: learned from pairs, refuted by kept pages, applied to URLs.

    Everything is kept per host, so a page costs the work of its own host's rules.  ``version(host)``
    changes whenever the host's trusted rules do (:class:`KnownUrls` then rewrites its URLs again)."""

    def __init__(self, support: int = 5) -> None:
        self.support = support
        self._rules: dict[str, dict[tuple[str, str], Rule]] = {}  # host -> (kind, name) -> rule
        self._trusted: dict[str, list[Rule]] = {}  # host -> its trusted rules (none: no entry)
        self._versions: dict[str, int] = {}  # host -> how many times its trusted rules changed
        self._kept: dict[str, OrderedDict[int, str]] = {}  # host -> recently kept URLs, by their normal form
        self._changed: dict[tuple[str, str, str], Rule] = {}  # rules to save
        # a rule's ident -> the kept URLs it changes, by their rewritten form (until it is refuted)
        self._keys: dict[tuple[str, str, str], dict[int, str]] = {}

    def trusted(self) -> list[Rule]:
        return [rule for rules in self._trusted.values() for rule in rules]

    def is_trusted(self, rule: Rule) -> bool:
        return rule.refuted_by is None and rule.support >= self.support

    def applying(self, url: str) -> list[Rule]:
        """The trusted rules that change ``url``."""
        host = host_key(url)
        return [rule for rule in self._trusted.get(host, ()) if applies(rule, url)] if host is not None else []

    def trusted_for(self, host: str) -> list[Rule]:
        return self._trusted.get(host, [])

    def version(self, host: str) -> int:
        return self._versions.get(host, 0)

    def take_changed(self) -> list[Rule]:
        """The rules that changed since the last call (for the store)."""
        changed, self._changed = list(self._changed.values()), {}
        return changed

    def load(self, rules: list[Rule]) -> None:
        """Rules kept by the store (a resumed or re-run crawl)."""
        for rule in rules:
            self._rules.setdefault(rule.host, {})[rule.kind, rule.name] = rule
        for host in self._rules:
            self._retrust(host)

    def learn(self, dropped_url: str, kept_url: str) -> list[Rule]:
        """A page was dropped as a near-duplicate of a kept one: every rule shape that explains the pair
        gains a supporting pair.  Returns the rules that just became trusted."""
        host = host_key(dropped_url)
        if host is None:  # a URL that cannot be parsed explains no pair (``explanations``)
            return []
        became = []
        for kind, name in explanations(dropped_url, kept_url):  # none for a URL that cannot be parsed
            rule = self._rules.get(host, {}).get((kind, name)) or self._candidate(host, kind, name)
            if rule is None or rule.refuted_by is not None:
                continue
            rule.support += 1
            self._changed[rule.ident] = rule
            if rule.support == self.support:
                became.append(rule)
        if became:
            self._retrust(host)
        return became

    def kept(self, url: str) -> list[Rule]:
        """A page was kept as unique: a rule that makes its URL equal to another kept page's is refuted.
        Returns the rules refuted now."""
        host = host_key(url)
        if host is None:
            return []
        refuted = [rule for rule in self._rules.get(host, {}).values() if self._refutes(rule, url)]
        kept = self._kept.setdefault(host, OrderedDict())
        kept[url_key(url)] = url
        if len(kept) > KEPT_URLS:
            kept.popitem(last=False)
        if any(rule.support >= self.support for rule in refuted):
            self._retrust(host)
        return refuted

    def _candidate(self, host: str, kind: str, name: str) -> Rule | None:
        """A new rule, checked at once against the host's recently kept URLs."""
        rules = self._rules.setdefault(host, {})
        if len(rules) >= MAX_CANDIDATES:
            weakest = min(
                (r for r in rules.values() if r.support < self.support), key=lambda r: r.support, default=None
            )
            if weakest is None:
                return None
            del rules[weakest.kind, weakest.name]
            self._keys.pop(weakest.ident, None)
        rule = rules[kind, name] = Rule(host, kind, name)
        for url in list(self._kept.get(host, {}).values()):
            if self._refutes(rule, url):
                break
        return rule

    def _refutes(self, rule: Rule, url: str) -> bool:
        """Is ``url``, a kept page, a counterexample to ``rule`` (with a page kept before)?  The rule
        book remembers the kept URLs each rule changes, by their rewritten form; the host, all its kept URLs."""
        if rule.refuted_by is not None:
            return False
        keys = self._keys.setdefault(rule.ident, {})
        if applies(rule, url):  # another kept URL the rule changes, or one it does not, is the same by it
            key = url_key(url, [rule])
            other = keys.get(key) or self._kept.get(rule.host, OrderedDict()).get(key)
            if other is None or other == url:
                keys[key] = url
                return False
        else:  # a kept URL the rule changes becomes this one
            other = keys.get(url_key(url))
            if other is None or other == url:
                return False
        rule.refuted_by = f"{other} {url}"
        self._keys.pop(rule.ident, None)
        self._changed[rule.ident] = rule
        return True

    def _retrust(self, host: str) -> None:
        """The host's rules changed: which are trusted now (a new version if that changed)."""
        trusted = [rule for rule in self._rules.get(host, {}).values() if self.is_trusted(rule)]
        if [rule.ident for rule in trusted] != [rule.ident for rule in self._trusted.get(host, [])]:
            self._versions[host] = self.version(host) + 1
        if trusted:
            self._trusted[host] = trusted
        else:
            self._trusted.pop(host, None)


class KnownUrls:
    """URLs the crawl knows (fetched, or requested), per host the most recent ``FETCHED_URLS``, found
    again by their form under the host's trusted rules: ``find`` tells whether a URL, or one the rules
    make equal to it, is known.  Without rules (``None``), only the URL itself, in a normal form."""

    def __init__(self, rules: RuleBook | None) -> None:
        self.rules = rules
        self._urls: dict[str, OrderedDict[str, None]] = {}  # host -> URLs, oldest first
        self._keys: dict[str, dict[int, str]] = {}  # host -> rewritten form -> the first URL known with it
        self._versions: dict[str, int] = {}  # host -> the rules' version its keys were made with

    def add(self, url: str) -> None:
        host = host_key(url)
        if host is None:
            return
        urls = self._urls.setdefault(host, OrderedDict())
        if url in urls:
            urls.move_to_end(url)
            return
        urls[url] = None
        if len(urls) > FETCHED_URLS:
            urls.popitem(last=False)  # its key stays until the next rewrite: a URL known a while longer
        self._host_keys(host).setdefault(url_key(url, self._trusted(host)), url)

    def find(self, url: str) -> str | None:
        """A known URL that is ``url`` by the trusted rules (``url`` itself if it is known), or None."""
        host = host_key(url)
        if host is None or host not in self._urls:
            return None
        return self._host_keys(host).get(url_key(url, self._trusted(host)))

    def _trusted(self, host: str) -> list[Rule]:
        return self.rules.trusted_for(host) if self.rules is not None else []

    def _host_keys(self, host: str) -> dict[int, str]:
        """The host's URLs by rewritten form, made again when its trusted rules changed."""
        version = self.rules.version(host) if self.rules is not None else 0
        if self._versions.get(host) != version or host not in self._keys:
            rules, keys = self._trusted(host), dict[int, str]()
            for known in self._urls.get(host, ()):
                keys.setdefault(url_key(known, rules), known)
            self._keys[host], self._versions[host] = keys, version
        return self._keys[host]


def applies(rule: Rule, url: str) -> bool:
    """Does ``rule`` change ``url`` (has it the parameter, the segment, the ``www.``)?"""
    parts = split(url)
    if rule.kind == "host":
        return parts.netloc.startswith("www.")
    if rule.kind == "param":
        return any(name == rule.name for name, _ in parse_qsl(parts.query, keep_blank_values=True))
    if rule.kind == "path_param":
        return any(name == rule.name for name, _ in _path_params(parts.path))
    return rule.name in _segments(parts.path)


def explanations(a: str, b: str) -> list[tuple[str, str]]:
    """The rules (kind, name) that make URLs ``a`` and ``b`` equal, each on its own or with the other
    query parameters the pair differs in."""
    if a == b or host_key(a) is None or host_key(b) is None:
        return []
    one, other = split(a), split(b)
    if one.scheme != other.scheme:
        return []
    if one.hostname != other.hostname:
        same_rest = (one.path, one.query) == (other.path, other.query)
        alias = host_key(a) == host_key(b) and one.port == other.port
        return [("host", "")] if same_rest and alias else []
    if one.path != other.path and one.query == other.query:
        return _path_explanations(one.path, other.path)
    if one.path == other.path:
        return [("param", name) for name in _params_differing(one.query, other.query)]
    return []


def _path_explanations(a: str, b: str) -> list[tuple[str, str]]:
    params_a, params_b = _path_params(a), _path_params(b)
    if _bare(a) == _bare(b):
        names = {name for name, _ in params_a + params_b}
        return [
            ("path_param", name)
            for name in sorted(names)
            if [v for n, v in params_a if n == name] != [v for n, v in params_b if n == name]
        ]
    longer, shorter = (_segments(a), _segments(b))
    if len(longer) < len(shorter):
        longer, shorter = shorter, longer
    if len(longer) != len(shorter) + 1:
        return []
    for n, segment in enumerate(longer):
        if longer[:n] + longer[n + 1 :] == shorter:
            return [("segment", segment)]
    return []


def _params_differing(a: str, b: str) -> list[str]:
    """The query parameters two queries differ in (present in one only, or with other values), if
    removing them makes the queries equal and they are at most ``MAX_PARAMS``."""
    pa, pb = parse_qsl(a, keep_blank_values=True), parse_qsl(b, keep_blank_values=True)
    names = {n for n, _ in pa} | {n for n, _ in pb}
    differing = sorted(n for n in names if [v for k, v in pa if k == n] != [v for k, v in pb if k == n])
    return differing if 0 < len(differing) <= MAX_PARAMS else []


def rewritten(url: str, rules: Sequence[Rule]) -> str:
    """``url`` with each rule applied, in a normal form: the path without empty segments (``/a/`` and
    ``/a`` compare equal), the query as ``urlencode`` writes it, no fragment."""
    return _rewritten(url, tuple((rule.kind, rule.name) for rule in rules))


def cleaned(url: str, rules: Sequence[Rule]) -> str:
    """``url`` with each rule applied and nothing else changed: an address to give a page (its canonical
    URL), where ``rewritten`` gives a form to compare URLs by."""
    return _applied(url, tuple((rule.kind, rule.name) for rule in rules))


def url_key(url: str, rules: Sequence[Rule] = ()) -> int:
    """A hash of ``rewritten(url, rules)``: URLs the rules make equal share it."""
    return _key(rewritten(url, rules))


@functools.lru_cache(maxsize=4096)
def _rewritten(url: str, rules: tuple[tuple[str, str], ...]) -> str:
    """``rewritten``, remembered for the URLs of the last pages: a page's URL is rewritten several times
    (the URLs known, the link guard, the rules learned from it)."""
    parts = split(_applied(url, rules))
    path = "/" + "/".join(_segments(parts.path))
    query = urlencode(parse_qsl(parts.query, keep_blank_values=True))
    return urlunsplit((parts.scheme, parts.netloc.lower(), path, query, ""))


def _applied(url: str, rules: tuple[tuple[str, str], ...]) -> str:
    """``url`` with each rule (kind, name) applied: the parameter, the segment or the ``www.`` removed."""
    if not rules:
        return url
    parts = split(url)
    host, path, query = parts.netloc, parts.path, parts.query
    for kind, name in rules:
        if kind == "host" and host.startswith("www."):
            host = host[4:]
        elif kind == "param":
            query = "&".join(pair for pair in query.split("&") if unquote_plus(pair.split("=", 1)[0]) != name)
        elif kind == "path_param":
            path = "/".join(_drop_path_param(s, name) for s in path.split("/"))
        elif kind == "segment":
            segments = path.split("/")
            path = "/".join(s for s in segments if s != name) + ("/" if segments[-1] == name else "")
    return urlunsplit((parts.scheme, host, path, query.strip("&"), parts.fragment))


@functools.lru_cache(maxsize=4096)
def host_key(url: str) -> str | None:
    """The site a URL's rules belong to: its host and port, ``www.`` left out; None for a URL that cannot
    be parsed (a bad port, a broken IPv6 address), which no rule ever touches."""
    try:
        parts = split(url)
        port = parts.port
    except ValueError:
        return None
    host = parts.hostname or ""
    host = host[4:] if host.startswith("www.") else host
    return f"{host}:{port}" if port else host


@functools.lru_cache(maxsize=4096)
def split(url: str) -> SplitResult:
    """``urlsplit(url)``, remembered for the URLs of the last pages and requests: the rules, the link guard and
    the canonical URLs each read a page's URL, all through this one parse (Python's own cache of ``urlsplit``
    holds 128 URLs, once for each way it is called)."""
    return urlsplit(url)


def _segments(path: str) -> list[str]:
    return [s for s in path.split("/") if s]


def _path_params(path: str) -> list[tuple[str, str]]:
    """The ``;name=value`` parameters of a path's segments."""
    return [
        (name, value)
        for segment in path.split("/")
        for name, _, value in (param.partition("=") for param in segment.split(";")[1:])
    ]


def _bare(path: str) -> str:
    return "/".join(segment.split(";")[0] for segment in path.split("/"))


def _drop_path_param(segment: str, name: str) -> str:
    head, *params = segment.split(";")
    return ";".join([head, *(p for p in params if p.split("=", 1)[0] != name)])


def _key(url: str) -> int:
    return xxhash.xxh3_64_intdigest(url.encode("utf-8", "surrogatepass"))


#: Near-duplicates in a row a URL shape may lead to before the links of near-duplicate pages with that
#: shape are skipped (``SIMHASH_DEDUP_LINK_BUDGET``).
DEFAULT_BUDGET = 10
#: URL shapes whose count is kept (the most recently met).
MAX_SHAPES = 100_000
_NUMBER = re.compile(r"\d+")


def url_shape(url: str) -> str | None:
    """What a URL looks like without its particulars: ``host/folders/?names``.  Numbers in folders become
    ``N``, a folder repeated next to itself counts once (``/mirror/mirror/`` is ``/mirror/``), the last
    path segment (the page) is left out, and of the query only the parameters' names are kept, sorted.
    None for a URL that cannot be parsed."""
    host = host_key(url)
    if host is None:
        return None
    parts = split(url)
    folders: list[str] = []
    for segment in parts.path.split("/")[1:-1]:
        folder = _NUMBER.sub("N", segment.split(";")[0])
        if not folders or folders[-1] != folder:
            folders.append(folder)
    names = sorted({name for name, _ in parse_qsl(parts.query, keep_blank_values=True)})
    return f"{host}/{''.join(f'{folder}/' for folder in folders)}?{'&'.join(names)}"


def is_recrawl(url: str, match: Match, rules: RuleBook | None) -> bool:
    """Is a page that matched ``match`` the same page met again by a re-run (not a copy): the page an earlier
    crawl kept, under its URL or one the trusted URL ``rules`` make equal to it?"""
    if not match.remembered:
        return False
    if url == match.url:
        return True
    applying = rules.applying(url) + rules.applying(match.url) if rules is not None else []
    return bool(applying) and rewritten(url, applying) == rewritten(match.url, applying)


class ShapeBudget:
    """Per URL shape: the near-duplicates its pages were in a row, since the last unique page."""

    def __init__(self, budget: int = DEFAULT_BUDGET) -> None:
        self.budget = budget
        self._in_a_row: OrderedDict[str, int] = OrderedDict()

    def decided(self, url: str, duplicate: bool) -> None:
        """A page of this URL was decided: one more near-duplicate in a row, or a unique page (count 0)."""
        if (shape := url_shape(url)) is None:
            return
        self._in_a_row[shape] = self._in_a_row.get(shape, 0) + 1 if duplicate else 0
        self._in_a_row.move_to_end(shape)
        if len(self._in_a_row) > MAX_SHAPES:
            self._in_a_row.popitem(last=False)

    def spent(self, url: str) -> str | None:
        """The URL's shape, if it has led to ``budget`` near-duplicates in a row."""
        shape = url_shape(url)
        return shape if shape is not None and self._in_a_row.get(shape, 0) >= self.budget else None


class RepeatedPages:
    """Pages without content of their own that show the same but for a date or a number in their name (empty
    calendar months, empty pages of results): per site, the first URL that showed each such page
    (``Fingerprint.repeat_key``).  Each is kept (it names a month of its own), yet for the link guard and the URL
    rules it is the same page as the first: an endless calendar whose months are named apart runs out of budget
    as one whose months read the same.  A page with content of its own (a list, a product) has no key."""

    def __init__(self) -> None:
        self._first: OrderedDict[tuple[str, int], str] = OrderedDict()

    def repeats(self, url: str, key: int | None) -> str | None:
        """The earlier URL of the site whose page showed what the page at ``url`` shows (key ``key``), if any;
        else the page is remembered as the first."""
        if key is None or (host := host_key(url)) is None:
            return None
        first = self._first.setdefault((host, key), url)
        self._first.move_to_end((host, key))
        if len(self._first) > MAX_SHAPES:
            self._first.popitem(last=False)
        return first if first != url else None


class LinkGuard:
    """The crawl's memory for the link guard: what it requested and fetched, and the shapes' budgets."""

    def __init__(self, rules: RuleBook | None, budget: int = DEFAULT_BUDGET) -> None:
        self.rules = rules
        self.known = KnownUrls(rules)  # requested or fetched by this crawl
        self.shapes = ShapeBudget(budget)

    def page_decided(self, url: str, duplicate: bool | None) -> None:
        """A page was fetched and decided: a near-duplicate, unique, or (None) not compared."""
        self.known.add(url)
        if duplicate is not None:
            self.shapes.decided(url, duplicate)

    def followed(self, url: str) -> None:
        """A request the crawl schedules."""
        self.known.add(url)

    def covered(self, url: str) -> str | None:
        """Why a near-duplicate page's link to ``url`` need not be followed, or None (follow it).  Not a URL this
        crawl already requested (but for a fragment): Scrapy's duplicate filter drops that request whoever yields
        it, an offsite one its offsite filter, and the guard counts only the requests it alone saves."""
        known = self.known.find(url)
        if known is not None and rewritten(known, []) == rewritten(url, []):
            return None
        if known is not None:
            return f"{known} already requested, the same page by the URL rules"
        if (shape := self.shapes.spent(url)) is not None:
            return f"its URL shape {shape} led to {self.shapes.budget} near-duplicates in a row"
        return None
