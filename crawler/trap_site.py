"""A local site of unique articles behind the crawl traps real sites have, for ``bench/quality/traps.py`` and tests.

Unique pages: the home page, the article list and one page per article (text
taken from real pages).  Traps, each leading only to copies of those pages:

- an endless calendar: ``/calendar?month=2026-01``, linking to the month
  before and after, forever; every month "no events" but ``EVENT_MONTHS``,
  which the home page links to (and whose pages refute the rule "``month``
  does not change the page"); with ``calendar="path"`` the month is in the
  path, ``/events/2026/01/``, and each month is named in its title and
  heading ("Events in January 2026"), as many real calendars are;
- session ids: every article link carries a fresh ``?sid=``;
- sort and filter parameters: the list under ``?sort=`` and ``&view=``;
- print views: ``/print/article/N``, the same text in a plainer page;
- a mirrored path: every page links to itself under ``/mirror``, so ``/mirror/mirror/...`` nests forever;
- tracking parameters: ``?utm_source=&utm_medium=`` on the home page's links.

Pages declare a canonical URL (``<link rel="canonical">``) as real sites do: the
right one on most pages (``canonical_path``), on some articles the very URL
requested (a template echoing the request, trap parameters and all), on others
none (``CANONICAL_KINDS``).

Served with ``alias_host``, the site has a second name, as sites reached by an IP
address or an old host name do: the site is ``http://localhost:PORT``, the same
pages answer at ``http://127.0.0.1:PORT``, and some links lead there (every
``ALIAS_EVERY``-th article of the list, the "Next" link of every other article);
the right canonical URLs are absolute, on the site's own host.
"""

from __future__ import annotations

import html
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import xxhash

Article = tuple[str, list[str]]  # title, paragraphs

SORTS = ("title", "date", "author", "popular")
EVENT_MONTHS = ("2026-06", "2026-09")  # the calendar's months with an event: an article's beginning
VIEWS = ("list", "grid")
#: What article ``n`` declares as its canonical URL: ``CANONICAL_KINDS[n % 10]``.
CANONICAL_KINDS = ("right",) * 7 + ("echo",) * 2 + ("none",)
#: With an alias host: every this many articles of the list are linked on it.
ALIAS_EVERY = 3
MONTH_NAMES = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


def articles_from_html(pages: Iterator[bytes | str], wanted: int, min_words: int = 150) -> list[Article]:
    """Titles and paragraphs of real pages (those with at least ``min_words`` words in ``<p>``, or in
    DocBook's ``<div class="para">``)."""
    import lxml.html

    articles: list[Article] = []
    for page in pages:
        try:
            root = lxml.html.fromstring(page)
        except (ValueError, lxml.etree.ParserError):
            continue
        paragraphs = [" ".join(p.text_content().split()) for p in root.xpath("//p | //div[@class='para']")]
        paragraphs = [p for p in paragraphs if len(p.split()) >= 8]
        if sum(len(p.split()) for p in paragraphs) >= min_words:
            title = " ".join((root.findtext(".//title") or f"Article {len(articles)}").split())
            articles.append((title, paragraphs))
            if len(articles) == wanted:
                break
    return articles


class TrapSite:
    """The pages of the site, by path and query."""

    def __init__(self, articles: list[Article], main: str = "", alias: str = "", calendar: str = "query") -> None:
        """The last ``len(EVENT_MONTHS)`` articles are the events' texts, not served as articles.  ``main`` and
        ``alias``: the site's base URL and its other name's (none: relative links only); ``calendar``: the
        calendar's month in the ``"query"`` or in the ``"path"``."""
        self.articles, self.events = articles[: -len(EVENT_MONTHS)], articles[-len(EVENT_MONTHS) :]
        self.main, self.alias, self.calendar = main, alias, calendar

    def month_path(self, month: str) -> str:
        """The calendar page of a month (``YYYY-MM``)."""
        return f"/calendar?month={month}" if self.calendar == "query" else f"/events/{month.replace('-', '/')}/"

    def unique_paths(self) -> list[str]:
        return [
            "/",
            "/articles",
            *(self.month_path(m) for m in EVENT_MONTHS),
            *(f"/article/{n}" for n in range(len(self.articles))),
        ]

    def page(self, target: str) -> str | None:
        """The HTML for a request target, or None (404)."""
        parts = urlsplit(target)
        here = parts.path or "/"
        segments, query, printed = self._read(target)
        if not segments:
            return self._home(here)
        if segments == ["articles"]:
            return self._list(query.get("sort", "title"), query.get("view", "list"), here)
        if (month := self._month(segments, query)) is not None:
            return self._calendar(month, here)
        if len(segments) == 2 and segments[0] == "article" and segments[1].isdigit():
            number = int(segments[1])
            if number < len(self.articles):
                return self._article(number, printed, target, here)
        return None

    def canonical_path(self, target: str) -> str | None:
        """The unique page a request target gives (one of ``unique_paths``), None for a 404 or an empty
        month of the calendar."""
        segments, query, _ = self._read(target)
        if self.page(target) is None:
            return None
        if (month := self._month(segments, query)) is not None:
            return self.month_path(month) if month in EVENT_MONTHS else None
        return "/" + "/".join(segments)

    def _month(self, segments: list[str], query: dict[str, str]) -> str | None:
        """The month a calendar page shows (``YYYY-MM``), None for any other page."""
        if self.calendar == "query" and segments == ["calendar"]:
            return query.get("month", "2026-01")
        if (
            self.calendar == "path"
            and len(segments) == 3
            and segments[0] == "events"
            and segments[1].isdigit()
            and segments[2].isdigit()
            and 1 <= int(segments[2]) <= 12
        ):
            return f"{segments[1]}-{segments[2]}"
        return None

    @staticmethod
    def _read(target: str) -> tuple[list[str], dict[str, str], bool]:
        """A target's path segments (the mirror, the print view and path parameters left out), its query, and
        whether it is a print view."""
        parts = urlsplit(target)
        segments = [s.split(";")[0] for s in parts.path.split("/") if s]  # ;jsessionid= and the like ignored
        while segments[:1] == ["mirror"]:
            segments = segments[1:]
        query = {name: values[0] for name, values in parse_qs(parts.query).items()}
        printed = segments[:1] == ["print"]
        return segments[1:] if printed else segments, query, printed

    def _frame(self, title: str, body: str, here: str, plain: bool = False, canonical: str | None = None) -> str:
        head = f"<title>{html.escape(title)}</title>"
        if canonical is not None:
            head += f'<link rel="canonical" href="{html.escape(canonical)}">'
        if plain:
            return f"<html><head>{head}</head><body>{body}</body></html>"
        nav = (
            '<nav><a href="/">Home</a> <a href="/articles">All articles</a> '
            f'<a href="{self.month_path("2026-01")}">Events</a> <a href="/mirror{html.escape(here)}">Mirror</a></nav>'
        )
        return (
            f"<html><head>{head}</head><body><header>{nav}</header>"
            f"<main>{body}</main><footer><p>A site for crawler tests.</p></footer></body></html>"
        )

    def _on_alias(self, linked_there: bool) -> str:
        """The base of a link: the alias host's for the links that lead there, else none (relative)."""
        return self.alias if linked_there else ""

    def _home(self, here: str) -> str:
        links = "".join(
            f'<li><a href="/article/{n}?utm_source=home&amp;utm_medium=web">{html.escape(t)}</a></li>'
            for n, (t, _) in enumerate(self.articles[:10])
        )
        return self._frame(
            "Home",
            f"<h1>Welcome</h1><p>The newest articles of this site.</p><ul>{links}</ul>"
            '<p><a href="/articles?sort=date">Newest first</a></p><p>Coming up: '
            + " ".join(f'<a href="{self.month_path(m)}">{m}</a>' for m in EVENT_MONTHS)
            + "</p>",
            here,
            canonical="/",
        )

    def _list(self, sort: str, view: str, here: str) -> str:
        order = sorted(range(len(self.articles)), key=lambda n: xxhash.xxh32_intdigest(f"{sort}{n}".encode()))
        tag = "ul" if view == "list" else "div"
        items = "".join(
            f'<li><a href="{self._on_alias(n % ALIAS_EVERY == 0)}/article/{n}">'
            f"{html.escape(self.articles[n][0])}</a></li>"
            for n in order
        )
        sorts = " ".join(f'<a href="/articles?sort={s}&amp;view={view}">{s}</a>' for s in SORTS)
        views = " ".join(f'<a href="/articles?sort={sort}&amp;view={v}">{v}</a>' for v in VIEWS)
        return self._frame(
            "All articles",
            f"<h1>All articles</h1><p>Sort by {sorts}; show as {views}.</p><{tag}>{items}</{tag}>",
            here,
            canonical="/articles",
        )

    def _calendar(self, month: str, here: str) -> str:
        try:
            year, number = (int(x) for x in month.split("-"))
        except ValueError:
            year, number = 2026, 1
        before = f"{year - (number == 1)}-{12 if number == 1 else number - 1:02d}"
        after = f"{year + (number == 12)}-{1 if number == 12 else number + 1:02d}"
        if month in EVENT_MONTHS:  # a reading: a text of its own
            title, paragraphs = self.events[EVENT_MONTHS.index(month)]
            events = f"<h2>Reading: {html.escape(title)}</h2>" + "".join(
                f"<p>{html.escape(p)}</p>" for p in paragraphs[:4]
            )
        else:
            events = (
                "<p>There are no events planned for this month. Come back later to see what is on, or "
                "browse the articles.</p>"
            )
        # the query calendar reads "Events" every month; the path calendar names its month, as many real ones do
        named = "" if self.calendar == "query" else f" in {MONTH_NAMES[number - 1]} {year}"
        return self._frame(
            f"Events{named}",
            f"<h1>Events{named}</h1>{events}"
            f'<p><a href="{self.month_path(before)}">Earlier</a> '
            f'<a href="{self.month_path(after)}">Later</a></p>',
            here,
        )

    def _article(self, number: int, printed: bool, target: str, here: str) -> str:
        title, paragraphs = self.articles[number]
        text = "".join(f"<p>{html.escape(p)}</p>" for p in paragraphs)
        canonical = {"right": f"{self.main}/article/{number}", "echo": target, "none": None}[
            CANONICAL_KINDS[number % 10]
        ]
        if printed:
            return self._frame(title, f"<h1>{html.escape(title)}</h1>{text}", here, plain=True, canonical=canonical)
        sid = xxhash.xxh32_hexdigest(target.encode())  # a "session" per page view: every link differs
        neighbours = "".join(
            f'<a href="{self._on_alias(n > number and number % 2 == 1)}/article/{n}?sid={sid}">'
            f"{'Previous' if n < number else 'Next'}</a> "
            for n in (number - 1, number + 1)
            if 0 <= n < len(self.articles)
        )
        return self._frame(
            title,
            f"<article><h1>{html.escape(title)}</h1>{text}</article>"
            f'<p>{neighbours}<a href="/print/article/{number}">Print</a> '
            f'<a href="/article/{number}?utm_source=share&amp;utm_medium=email">Share</a></p>',
            here,
            canonical=canonical,
        )


@contextmanager
def serve_trap_site(
    articles: list[Article], alias_host: bool = False, calendar: str = "query"
) -> Iterator[tuple[str, TrapSite]]:
    """Serve the site on 127.0.0.1 (a free port) until the block ends; its base URL and pages.  With
    ``alias_host``, the site is ``http://localhost:PORT`` and ``http://127.0.0.1:PORT`` its other name;
    ``calendar``: the calendar's month in the query or in the path (``TrapSite``)."""
    site = TrapSite(articles, calendar=calendar)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            page = site.page(self.path)
            body = (page or "<html><body><p>Not found</p></body></html>").encode()
            self.send_response(200 if page else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    port = server.server_address[1]
    if alias_host:
        site.main, site.alias = f"http://localhost:{port}", f"http://127.0.0.1:{port}"
    try:
        yield site.main or f"http://127.0.0.1:{port}", site
    finally:
        server.shutdown()
        server.server_close()
