"""Pages from files: folders of HTML files, JSON Lines (a Scrapy feed), WARC and WARC.gz.

Each reader yields the pages it can read and, for what it cannot, a
``BadInput`` naming the file and the record: one bad record never stops the
rest.  A page read as bytes keeps its ``Content-Type``: it is decoded (in a
worker) as a crawl with the add-on decodes a response's body and header
(``document.decode``), so a page gives the same fingerprint here as there.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
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
        """What a run counts its records as: ``skipped`` (not pages: images, scripts...) or ``unreadable``."""
        return "skipped" if self.kind == "not_html" else "unreadable"


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


def read_inputs(inputs: Iterable[str | Path], html_field: str = "html", url_field: str = "url") -> Iterator[Page | BadInput]:
    """Every page of every input, in order: a folder's HTML files sorted by path, a JSON Lines file's
    lines, a WARC file's HTML response records.  Each item says how many bytes of the inputs were read
    up to it (``read``)."""
    done = 0
    for name in inputs:
        path = Path(name)
        for item, position in _read(path, html_field, url_field):
            item.read = done + position
            yield item
        done += input_size([path])


def _read(path: Path, html_field: str, url_field: str) -> Iterator[tuple[Page | BadInput, int]]:
    """The items of one input, each with the bytes of the input read up to it."""
    try:
        if not path.exists():
            yield BadInput(str(path), "cannot be read: no such file or folder"), 0
        elif path.is_dir():
            yield from read_folder(path)
        elif path.name.endswith(WARC_SUFFIXES):
            yield from read_warc(path)
        elif path.name.endswith((".jsonl", ".jl", ".jsonl.gz")):  # not .json: Scrapy writes an array there
            yield from read_json_lines(path, html_field, url_field)
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


def read_html_file(path: Path) -> Page:
    """A file as a static web server would serve it (``text/html``, no charset)."""
    return Page(path.resolve().as_uri(), path.read_bytes(), str(path), content_type="text/html")


def read_json_lines(path: Path, html_field: str, url_field: str) -> Iterator[tuple[Page | BadInput, int]]:
    """A Scrapy feed in JSON Lines: the HTML and URL in the fields the pipeline reads (gzip allowed).  A
    file whose first ``FIELD_PROBE`` records have no such field (or all, if fewer) is one message
    naming the fields they have, and is not read further."""
    import gzip

    with path.open("rb") as raw:
        lines = gzip.open(raw) if path.name.endswith(".gz") else raw
        held: list[tuple[BadInput, int]] = []  # records without the HTML, while no record had it
        fields: dict[str, None] = {}  # theirs
        found_html = False
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            source = f"{path}:{number}"
            try:
                record = json.loads(line.decode("utf-8", "surrogateescape"))
            except ValueError as error:
                yield BadInput(source, f"not a JSON line ({error})"), raw.tell()
                continue
            page = json_page(record, source, html_field, url_field)
            if page is not None:
                if not found_html:
                    found_html = True
                    yield from held
                yield page, raw.tell()
                continue
            missing = BadInput(source, f"no {html_field!r} field holding the page's HTML"), raw.tell()
            if found_html:
                yield missing
                continue
            held.append(missing)
            fields.update(dict.fromkeys(record if isinstance(record, dict) else ()))
            if len(held) == FIELD_PROBE:
                break
        if held and not found_html:
            yield BadInput(str(path), f"no record has a {html_field!r} field holding the page's HTML (the first "
                                      f"{plural(len(held), 'record')} have: {', '.join(fields) or 'no field'}); "
                                      f"name it with --html-field", records=len(held)), raw.tell()


def json_page(record: Any, source: str, html_field: str, url_field: str) -> Page | None:
    """A JSON record as a page (its HTML field's string, its URL field), or None when it has no HTML."""
    html = record.get(html_field) if isinstance(record, dict) else None
    return Page(str(record.get(url_field) or ""), html, source, record) if isinstance(html, str) else None


def read_warc(path: Path, stream: IO[bytes] | None = None) -> Iterator[tuple[Page | BadInput, int]]:
    """The HTML response records of a WARC file (gzip or not; FastWARC, ~1.9x warcio's speed here,
    ``bench/batch.py``), each with its offset; from ``stream``'s position on if given (a record's
    offset: the Spark job reads a record again there).  A truncated file yields its whole records and
    one ``BadInput``."""
    warc = require("fastwarc.warc", "reading WARC files")
    ArchiveIterator, WarcRecordType = warc.ArchiveIterator, warc.WarcRecordType  # noqa: N806 (FastWARC's names)

    skipped: list[str] = []  # records of images, scripts, PDFs…: not pages, summed up in one message
    try:
        for record in ArchiveIterator(stream or str(path), record_types=WarcRecordType.response, parse_http=True):
            source = f"{path}@{record.stream_pos}"
            url = record.headers.get("WARC-Target-URI")
            body = record.reader.read()
            if url is None or len(body) < record.content_length:
                yield BadInput(source, "incomplete record (the file is truncated?); the records before it were read"), \
                    record.stream_pos
                break
            content_type = record.http_headers.get("Content-Type") or ""
            if content_type.split(";")[0].strip().lower() not in HTML_TYPES:
                skipped.append(f"{source} ({content_type or 'no Content-Type'})")
                continue
            yield Page(url, body, source, content_type=content_type), record.stream_pos
    except OSError as error:  # FastWARC reports a broken or foreign file so
        yield BadInput(str(path), f"not readable as WARC ({error})"), 0
    if skipped:
        yield BadInput(str(path), f"{plural(len(skipped), 'response record')} not HTML, skipped; the first at "
                                  f"{skipped[0]}", "not_html", len(skipped)), path.stat().st_size


def plural(count: int, noun: str) -> str:
    """``1 page``, ``2 pages``, ``1,234 pages``."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def write_warc(path: Path, pages: Iterable[tuple[str, bytes, str]]) -> None:
    """A WARC.gz of HTTP 200 responses (URL, body, Content-Type), one gzip member per record as crawlers
    write them: for tests and benchmarks of ``read_warc``."""
    from fastwarc.stream_io import GzipWriter
    from fastwarc.warc import WarcRecord, WarcRecordType

    with GzipWriter(str(path)) as out:
        for url, body, content_type in pages:
            record = WarcRecord()
            record.init_headers(WarcRecordType.response)
            record.headers["WARC-Target-URI"] = url
            record.headers["Content-Type"] = "application/http; msgtype=response"
            record.set_bytes_content(
                f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n".encode()
                + body)
            record.write(out)
            out.finish()
