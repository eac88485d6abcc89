"""Which links of a near-duplicate page the crawl can do without.

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

import re
from collections import OrderedDict
from urllib.parse import parse_qsl

from ..matching.policy import Match
from ..matching.urlrules import KnownUrls, RuleBook, host_key, rewritten, split

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
        """Why a near-duplicate page's link to ``url`` need not be followed, or None (follow it)."""
        known = self.known.find(url)
        if known is not None and rewritten(known, []) == rewritten(url, []):  # the same URL, but for a fragment
            return "already requested"
        if known is not None:
            return f"{known} already requested, the same page by the URL rules"
        if (shape := self.shapes.spent(url)) is not None:
            return f"its URL shape {shape} led to {self.shapes.budget} near-duplicates in a row"
        return None
