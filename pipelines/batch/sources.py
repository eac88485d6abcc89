"""Pages from files: folders of HTML files, JSON Lines (a Scrapy feed), WARC and WARC.gz.

Each reader yields the pages it can read and, for what it cannot, a
``BadInput`` naming the file and the record: one bad record never stops the
rest.  A page is what a crawl would have handed its spider: a response of
status 2xx (Scrapy's ``HttpErrorMiddleware`` keeps the others from it), so
error pages, redirects and WARC revisit records are counted, by status, and
not compared (``all_statuses`` compares every response that has a body).
A page read as bytes keeps its ``Content-Type``: it is decoded (in a worker)
as a crawl with the add-on decodes a response's body and header
(``document.decode``), so a page gives the same fingerprint here as there.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from ..extras import require

HTML_SUFFIXES = (".html", ".htm", ".xhtml")
WARC_SUFFIXES = (".warc", ".warc.gz")
HTML_TYPES = ("text/html", "application/xhtml+xml")


@dataclass
class Page:
    """One page read: its URL, its HTML (bytes: with their ``content_type``, a clue to their
    encoding), where it was read (``source``), and for JSON Lines the record as it was (written to the
    kept output unchanged).  ``read``: bytes of all the inputs read up to it (for progress)."""

    url: str
    html: str | bytes
    source: str
    record: dict[str, Any] | None = None
    content_type: str | None = None
    read: int = 0


@dataclass
class BadInput:
    """What could not be read, and where; ``kind`` and ``records``: what it is counted as, how many."""

    source: str
    message: str
    kind: str = "unreadable"
    records: int = 1
    read: int = 0

    @property
    def counted_as(self) -> str:
        """What a run counts its records as: ``unreadable``, ``skipped`` (not pages: images, scripts...),
        ``status/<code>`` (a response a crawl would not have passed on) or ``revisit`` (a WARC revisit record)."""
        return "skipped" if self.kind == "not_html" else self.kind


#: Counts of records that are not pages (``BadInput.counted_as``): the rest of a run's counts are pages.
NOT_PAGES = ("unreadable", "skipped", "revisit")
STATUS = "status/"


def is_page_count(counted: str) -> bool:
    """Does a run's count ``counted`` count pages (not unreadable, skipped, revisit or other-status records)?"""
    return counted not in NOT_PAGES and not counted.startswith(STATUS)


def passed_on(status: Any) -> bool:
    """Would a crawl have passed a response of ``status`` to its spider?  2xx, or no status known."""
    return not isinstance(status, int) or isinstance(status, bool) or 200 <= status < 300


def target_uri(value: str) -> str:
    """A ``WARC-Target-URI`` as the URL it names: WARC 1.0's grammar writes it in angle brackets, as GNU wget
    and others do (``<http://…>``); WARC 1.1's without."""
    value = value.strip()
    return value[1:-1].strip() if value.startswith("<") and value.endswith(">") else value


def not_passed_on(source: str, statuses: Counter[int], revisits: int, size: int) -> Iterator[tuple[BadInput, int]]:
    """One ``BadInput`` per status a file's responses had that a crawl would not have passed on, one for its
    revisit records: counted, not compared."""
    for status, count in sorted(statuses.items()):
        yield (
            BadInput(
                source,
                f"{plural(count, 'response')} of HTTP status {status}, not compared (a crawl would "
                f"not have passed them on; --all-statuses compares them)",
                f"{STATUS}{status}",
                count,
            ),
            size,
        )
    if revisits:
        yield (
            BadInput(
                source,
                f"{plural(revisits, 'revisit record')} (a page the archive holds earlier), not compared",
                "revisit",
                revisits,
            ),
            size,
        )


#: What a run says of an input it cannot read at all (counted as one record ``unreadable``).
MISSING = "cannot be read: no such file or folder"
EMPTY = "empty (0 bytes): nothing to read"

#: Records of a JSON Lines file read before it counts as having no field with the HTML.
FIELD_PROBE = 5


def input_size(inputs: Iterable[str | Path]) -> int:
    """The bytes ``read_inputs`` reads: every file's size, a folder's HTML files' (what progress counts)."""
    total = 0
    for name in inputs:
        path = Path(name)
        if path.is_dir():
            total += sum(file.stat().st_size for file in _html_files(path))
        elif path.is_file():
            total += path.stat().st_size
    return total


def in_arrival_order(inputs: Sequence[str | Path]) -> list[str | Path]:
    """The inputs with their WARC files in the order the archive's crawls fetched them: by the ``WARC-Date`` of
    each file's first record (a file's records are read front to back, as its crawler wrote them); the other
    inputs keep their places.  Arguments in any order (``warcs/*.warc.gz`` sorts ``site-recrawl`` before
    ``site``) then give the same run; a WARC file with no readable date comes after the dated ones."""
    inputs = list(inputs)
    places = [index for index, name in enumerate(inputs) if str(name).endswith(WARC_SUFFIXES)]
    dates = {index: first_warc_date(Path(inputs[index])) for index in places}
    ordered = sorted(places, key=lambda index: (dates[index] is None, dates[index] or 0.0, index))
    arranged = list(inputs)
    for place, index in zip(places, ordered):
        arranged[place] = inputs[index]
    return arranged


def first_warc_date(path: Path) -> float | None:
    """The ``WARC-Date`` of a WARC file's first record (a POSIX time), or None when it has none readable."""
    try:
        warc = require("fastwarc.warc", "reading WARC files")
        for record in warc.ArchiveIterator(str(path), parse_http=False):
            return warc_date(record.headers.get("WARC-Date"))
    except OSError:
        return None
    return None


def warc_date(value: str | None) -> float | None:
    """A ``WARC-Date`` (W3C-ISO8601, UTC: ``2026-11-27T10:00:00Z``, fractions allowed) as a POSIX time."""
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def read_inputs(
    inputs: Iterable[str | Path], html_field: str = "html", url_field: str = "url", all_statuses: bool = False
) -> Iterator[Page | BadInput]:
    """Every page of every input, in order: a folder's HTML files sorted by path, a JSON Lines file's
    lines, a WARC file's HTML response records.  Each item says how many bytes of the inputs were read
    up to it (``read``)."""
    done = 0
    for name in inputs:
        path = Path(name)
        for item, position in _read(path, html_field, url_field, all_statuses):
            item.read = done + position
            yield item
        done += input_size([path])


def _read(path: Path, html_field: str, url_field: str, all_statuses: bool) -> Iterator[tuple[Page | BadInput, int]]:
    """The items of one input, each with the bytes of the input read up to it."""
    try:
        if not path.exists():
            yield BadInput(str(path), MISSING), 0
        elif path.is_file() and path.stat().st_size == 0:
            yield BadInput(str(path), EMPTY), 0
        elif path.is_dir() and (responses := http_cache_entries(path)):
            yield from read_http_cache(path, responses, all_statuses)
        elif path.is_dir():
            yield from read_folder(path)
        elif path.name.endswith(WARC_SUFFIXES):
            yield from read_warc(path, all_statuses=all_statuses)
        elif path.name.endswith((".jsonl", ".jl", ".jsonl.gz")):  # not .json: Scrapy writes an array there
            yield from read_json_lines(path, html_field, url_field, all_statuses)
        elif path.name.endswith(HTML_SUFFIXES):
            yield read_html_file(path), path.stat().st_size
        else:
            yield BadInput(str(path), "not a folder, an HTML file, JSON Lines (.jsonl) nor WARC (.warc, .warc.gz)"), 0
    except OSError as error:
        yield BadInput(str(path), f"cannot be read: {error.strerror or error}"), 0


def _html_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.name.endswith(HTML_SUFFIXES))


def read_folder(folder: Path) -> Iterator[tuple[Page | BadInput, int]]:
    read = 0
    for path in _html_files(folder):
        try:
            read += path.stat().st_size
            yield read_html_file(path), read
        except OSError as error:
            yield BadInput(str(path), f"cannot be read: {error.strerror or error}"), read


def http_cache_entries(folder: Path) -> list[Path]:
    """The responses of Scrapy's HTTP cache (``HTTPCACHE_DIR``, the filesystem storage) in ``folder``: a folder per
    response holding its ``meta`` and ``response_body``, as ``SPIDER/XX/FINGERPRINT/`` (``folder`` the cache) or
    ``XX/FINGERPRINT/`` (``folder`` a spider's); none for a folder of another kind."""
    metas = [*folder.glob("*/*/meta"), *folder.glob("*/*/*/meta")]
    return sorted(meta.parent for meta in metas if (meta.parent / "response_body").is_file())


def read_http_cache(
    folder: Path, entries: list[Path], all_statuses: bool = False
) -> Iterator[tuple[Page | BadInput, int]]:
    """The responses of Scrapy's HTTP cache in ``folder`` (``http_cache_entries``, gzipped or not) in the order they
    were fetched (the ``timestamp`` of their ``meta``), each at its response URL with its body and
    ``Content-Type``.  Only the text files are read (``meta``, a Python literal, read as one; ``response_headers``;
    ``response_body``): the cache's ``pickled_meta`` is never unpickled.  Responses a crawl would not have passed
    on (a status outside 2xx) are counted, not compared, unless ``all_statuses``."""
    import ast

    responses = []
    for entry in entries:
        try:
            meta = ast.literal_eval(_cached(entry / "meta").decode("utf-8"))
        except (ValueError, SyntaxError, UnicodeDecodeError):
            yield BadInput(str(entry), "not a response of Scrapy's HTTP cache (its meta cannot be read)"), 0
            continue
        if isinstance(meta, dict):
            responses.append((float(meta.get("timestamp") or 0.0), str(entry), meta))
    statuses: Counter[int] = Counter()
    read = 0
    for _, source, meta in sorted(responses, key=lambda response: response[:2]):
        files = Path(source)
        body = _cached(files / "response_body")
        read += len(body)
        status = meta.get("status")
        if not all_statuses and not passed_on(status) and isinstance(status, int):  # (not passed on: a status)
            statuses[status] += 1
            continue
        headers = _cached(files / "response_headers") if (files / "response_headers").is_file() else b""
        url = str(meta.get("response_url") or meta.get("url") or "")
        yield Page(url, body, source, content_type=_content_type(headers)), read
    yield from not_passed_on(str(folder), statuses, 0, read)


def _cached(path: Path) -> bytes:
    """A file of the HTTP cache, gunzipped when ``HTTPCACHE_GZIP`` wrote it so."""
    import gzip

    data = path.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def _content_type(raw_headers: bytes) -> str | None:
    """The ``Content-Type`` of raw header lines (``name: value``, as the cache writes them), or None."""
    for line in raw_headers.splitlines():
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-type":
            return value.strip().decode("latin-1")
    return None


def read_html_file(path: Path) -> Page:
    """A file as a static web server would serve it (``text/html``, no charset)."""
    return Page(path.resolve().as_uri(), path.read_bytes(), str(path), content_type="text/html")


def read_json_lines(
    path: Path, html_field: str, url_field: str, all_statuses: bool = False
) -> Iterator[tuple[Page | BadInput, int]]:
    """A Scrapy feed in JSON Lines: the HTML and URL in the fields the pipeline reads (gzip allowed).  A
    file whose first ``FIELD_PROBE`` records have no such field (or all, if fewer) is one message
    naming the fields they have, and is not read further.  A record whose ``status`` field is an HTTP
    status a crawl would not pass on is counted, not compared, unless ``all_statuses``."""
    import gzip

    with path.open("rb") as raw, gzip.open(raw) if path.name.endswith(".gz") else raw as lines:
        zipped = lines is not raw
        held: list[tuple[BadInput, int]] = []  # records without the HTML, while no record had it
        fields: dict[str, None] = {}  # theirs
        found_html = False
        statuses: Counter[int] = Counter()
        consumed = 0  # bytes of the file read: a line's end (counted, not told: a feed may come through a pipe)
        not_json: list[tuple[BadInput, int]] = []  # the first lines, while none was JSON
        parsed = False  # a line was JSON
        for number, line in enumerate(lines, 1):
            consumed = raw.tell() if zipped else consumed + len(line)
            if not line.strip():
                continue
            source = f"{path}:{number}"
            try:
                record = json.loads(line.decode("utf-8", "surrogateescape"))
            except ValueError as error:
                bad = BadInput(source, f"not a JSON line ({error})"), consumed
                if parsed:
                    yield bad
                    continue
                not_json.append(bad)
                if len(not_json) == FIELD_PROBE:  # a file of another kind (binary, HTML...): one message
                    others = sum(1 for rest in lines if rest.strip())
                    yield (
                        BadInput(
                            str(path),
                            f"not JSON Lines: none of its first {FIELD_PROBE} lines is JSON ({error}); none of "
                            f"its {plural(FIELD_PROBE + others, 'line')} is read as a page",
                            records=FIELD_PROBE + others,
                        ),
                        raw.tell(),
                    )
                    return
                continue
            if not parsed:  # a JSON Lines file: its first lines that were not JSON are told one by one
                parsed = True
                yield from not_json
            page = json_page(record, source, html_field, url_field)
            if page is not None and not all_statuses and not passed_on(status := record.get("status")):
                statuses[status] += 1
                continue
            if page is not None:
                if not found_html:
                    found_html = True
                    yield from held
                yield page, consumed
                continue
            missing = BadInput(source, f"no {html_field!r} field holding the page's HTML"), consumed
            if found_html:
                yield missing
                continue
            held.append(missing)
            fields.update(dict.fromkeys(record if isinstance(record, dict) else ()))
            if len(held) == FIELD_PROBE:
                break
        yield from not_passed_on(str(path), statuses, 0, consumed)
        if held and not found_html:
            yield (
                BadInput(
                    str(path),
                    f"no record has a {html_field!r} field holding the page's HTML (the first "
                    f"{plural(len(held), 'record')} have: {', '.join(fields) or 'no field'}); "
                    f"name it with --html-field",
                    records=len(held),
                ),
                consumed,
            )


def json_page(record: Any, source: str, html_field: str, url_field: str) -> Page | None:
    """A JSON record as a page (its HTML field's string, its URL field), or None when it has no HTML."""
    html = record.get(html_field) if isinstance(record, dict) else None
    return Page(str(record.get(url_field) or ""), html, source, record) if isinstance(html, str) else None


def read_warc(
    path: Path, stream: IO[bytes] | None = None, all_statuses: bool = False
) -> Iterator[tuple[Page | BadInput, int]]:
    """The HTML response records of a WARC file (gzip or not; FastWARC, ~1.9x warcio's speed here,
    ``bench/batch.py``), each with its offset; from ``stream``'s position on if given (a record's
    offset: the Spark job reads a record again there).  A truncated file yields its whole records and
    one ``BadInput``; responses of a status a crawl would not pass on (unless ``all_statuses``) and revisit
    records are counted (``not_passed_on``)."""
    warc = require("fastwarc.warc", "reading WARC files")
    ArchiveIterator, WarcRecordType = warc.ArchiveIterator, warc.WarcRecordType

    skipped: list[str] = []  # records of images, scripts, PDFs…: not pages, summed up in one message
    statuses: Counter[int] = Counter()
    revisits = 0
    try:
        for record in ArchiveIterator(
            stream or str(path), record_types=WarcRecordType.response | WarcRecordType.revisit, parse_http=True
        ):
            if record.record_type == WarcRecordType.revisit:
                revisits += 1
                continue
            source = f"{path}@{record.stream_pos}"
            url = record.headers.get("WARC-Target-URI")
            body = record.reader.read()
            if url is None or len(body) < record.content_length:
                yield (
                    BadInput(source, "incomplete record (the file is truncated?); the records before it were read"),
                    record.stream_pos,
                )
                break
            if not all_statuses and not passed_on(status := record.http_headers.status_code):
                statuses[status] += 1
                continue
            content_type = record.http_headers.get("Content-Type") or ""
            if content_type.split(";")[0].strip().lower() not in HTML_TYPES:
                skipped.append(f"{source} ({content_type or 'no Content-Type'})")
                continue
            yield Page(target_uri(url), body, source, content_type=content_type), record.stream_pos
    except OSError as error:  # FastWARC reports a broken or foreign file so
        yield BadInput(str(path), f"not readable as WARC ({error})"), 0
    yield from not_passed_on(str(path), statuses, revisits, path.stat().st_size)
    if skipped:
        yield (
            BadInput(
                str(path),
                f"{plural(len(skipped), 'response record')} not HTML, skipped; the first at {skipped[0]}",
                "not_html",
                len(skipped),
            ),
            path.stat().st_size,
        )


def plural(count: int, noun: str) -> str:
    """``1 page``, ``2 pages``, ``1,234 pages``."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"
