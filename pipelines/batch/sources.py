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
from typing import Any

HTML_SUFFIXES = (".html", ".htm", ".xhtml")
WARC_SUFFIXES = (".warc", ".warc.gz")
HTML_TYPES = ("text/html", "application/xhtml+xml")


@dataclass
class Page:
    """One page read: its URL, its HTML (bytes: with their ``content_type``, a clue to their
    encoding), where it was read (``source``), and for JSON Lines the record as it was (written to the
    kept output unchanged)."""

    url: str
    html: str | bytes
    source: str
    record: dict[str, Any] | None = None
    content_type: str | None = None


@dataclass
class BadInput:
    """What could not be read, and where; ``kind`` and ``records``: what it is counted as, how many."""

    source: str
    message: str
    kind: str = "unreadable"
    records: int = 1


def read_inputs(inputs: Iterable[str | Path], html_field: str = "html", url_field: str = "url") -> Iterator[Page | BadInput]:
    """Every page of every input, in order: a folder's HTML files sorted by path, a JSON Lines file's
    lines, a WARC file's HTML response records."""
    for name in inputs:
        path = Path(name)
        try:
            if not path.exists():
                yield BadInput(str(path), "cannot be read: no such file or folder")
            elif path.is_dir():
                yield from read_folder(path)
            elif path.name.endswith(WARC_SUFFIXES):
                yield from read_warc(path)
            elif path.name.endswith((".jsonl", ".jl", ".jsonl.gz")):  # not .json: Scrapy writes an array there
                yield from read_json_lines(path, html_field, url_field)
            elif path.name.endswith(HTML_SUFFIXES):
                yield read_html_file(path)
            else:
                yield BadInput(str(path), "not a folder, an HTML file, JSON Lines (.jsonl) nor WARC (.warc, .warc.gz)")
        except OSError as error:
            yield BadInput(str(path), f"cannot be read: {error.strerror or error}")


def read_folder(folder: Path) -> Iterator[Page | BadInput]:
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.name.endswith(HTML_SUFFIXES)):
        try:
            yield read_html_file(path)
        except OSError as error:
            yield BadInput(str(path), f"cannot be read: {error.strerror or error}")


def read_html_file(path: Path) -> Page:
    """A file as a static web server would serve it (``text/html``, no charset)."""
    return Page(path.resolve().as_uri(), path.read_bytes(), str(path), content_type="text/html")


def read_json_lines(path: Path, html_field: str, url_field: str) -> Iterator[Page | BadInput]:
    """A Scrapy feed in JSON Lines: the HTML and URL in the fields the pipeline reads (gzip allowed)."""
    import gzip

    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", errors="surrogateescape") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            source = f"{path}:{number}"
            try:
                record = json.loads(line)
            except ValueError as error:
                yield BadInput(source, f"not a JSON line ({error})")
                continue
            html = record.get(html_field) if isinstance(record, dict) else None
            if not isinstance(html, str):
                yield BadInput(source, f"no {html_field!r} field holding the page's HTML")
                continue
            yield Page(str(record.get(url_field) or ""), html, source, record)


def read_warc(path: Path) -> Iterator[Page | BadInput]:
    """The HTML response records of a WARC file (gzip or not; FastWARC, ~1.9x warcio's speed here,
    ``bench/batch.py``).  A truncated file yields its whole records and one ``BadInput``."""
    from fastwarc.warc import ArchiveIterator, WarcRecordType

    skipped: list[str] = []  # records of images, scripts, PDFs…: not pages, summed up in one message
    try:
        for record in ArchiveIterator(str(path), record_types=WarcRecordType.response, parse_http=True):
            source = f"{path}@{record.stream_pos}"
            url = record.headers.get("WARC-Target-URI")
            body = record.reader.read()
            if url is None or len(body) < record.content_length:
                yield BadInput(source, "incomplete record (the file is truncated?); the records before it were read")
                break
            content_type = record.http_headers.get("Content-Type") or ""
            if content_type.split(";")[0].strip().lower() not in HTML_TYPES:
                skipped.append(f"{source} ({content_type or 'no Content-Type'})")
                continue
            yield Page(url, body, source, content_type=content_type)
    except OSError as error:  # FastWARC reports a broken or foreign file so
        yield BadInput(str(path), f"not readable as WARC ({error})")
    if skipped:
        yield BadInput(str(path), f"{len(skipped)} response records are not HTML and were skipped, the first at "
                                  f"{skipped[0]}", "not_html", len(skipped))


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
