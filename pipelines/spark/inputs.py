"""Reading stored pages in two passes, so that no page's HTML crosses the network.

Pass 1 (``locate``, a task per input file) reads every record once and keeps
only where it is, its URL and a digest of its bytes: byte-identical pages are
then fingerprinted once, and the records to fingerprint are spread over many
tasks by where they are.  Pass 2 (``read_located``) reads those records again
where they are: a WARC record by its offset (so one file is split across
tasks), a plain JSON Lines record by its line's offset, a file of a folder by
its path, a Parquet row by its row group; a gzipped JSON Lines file is read
through again.  Both passes read with batch mode's readers
(``scrapy_simhash_dedup.batch.sources``), so a page is the same page in either mode.

Nothing here imports Spark: these functions run inside the executors'
Python workers.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import xxhash

from ..batch.sources import (
    EMPTY,
    HTML_SUFFIXES,
    MISSING,
    WARC_SUFFIXES,
    BadInput,
    Page,
    json_page,
    read_folder,
    read_html_file,
    read_json_lines,
    read_warc,
)

#: The order key of a record: its input's index above these bits, its record's number below.
RECORD_BITS = 36
RECORD_MASK = (1 << RECORD_BITS) - 1
#: The JSON Lines suffixes read (not .json: Scrapy writes an array there).
JSON_LINES_SUFFIXES = (".jsonl", ".jl", ".jsonl.gz")
PARQUET_SUFFIXES = (".parquet",)


@dataclass(frozen=True)
class InputFile:
    """One input (a file, or a folder of HTML files), its place in the order, and how to read it."""

    index: int
    path: str
    kind: str  # "warc", "jsonl", "jsonl.gz", "folder", "html", "parquet", or "unknown"/"missing"/"empty"


@dataclass(frozen=True)
class Fields:
    """Where JSON Lines and Parquet records hold the page (``--html-field``, ``--url-field``) and, if
    named, the number that orders them (``--order-field``; else the file, then the record)."""

    html: str = "html"
    url: str = "url"
    order: str | None = None
    all_statuses: bool = False  # responses of every status are pages (``--all-statuses``)


@dataclass(frozen=True)
class Located:
    """A page found by pass 1: its order key, URL, where it was read (as batch mode names it), how to
    find it again, the digest of its bytes (with their Content-Type) and its order field's value."""

    key: int
    url: str
    source: str
    locator: Any
    digest: bytes
    order: float | None = None


def input_files(inputs: Iterable[str | Path]) -> list[InputFile]:
    """The inputs in order, each with the reader it needs (what cannot be read is named by pass 1)."""
    files = []
    for index, name in enumerate(inputs):
        path = Path(name)
        files.append(InputFile(index, str(path.resolve() if path.exists() else path), _kind(path)))
    return files


def _kind(path: Path) -> str:
    name = path.name
    if not path.exists():
        return "missing"
    if path.is_file() and path.stat().st_size == 0:
        return "empty"
    if path.is_dir():
        return "folder"
    for kind, suffixes in (
        ("warc", WARC_SUFFIXES),
        ("jsonl.gz", (".jsonl.gz",)),
        ("jsonl", JSON_LINES_SUFFIXES),
        ("parquet", PARQUET_SUFFIXES),
        ("html", HTML_SUFFIXES),
    ):
        if name.endswith(suffixes):
            return kind
    return "unknown"


def order_key(file: InputFile, record: int) -> int:
    return (file.index << RECORD_BITS) | record


def digest(page: Page) -> bytes:
    """What makes two records the same page for the fingerprint: their bytes and Content-Type."""
    body = page.html if isinstance(page.html, bytes) else page.html.encode("utf-8", "surrogatepass")
    return xxhash.xxh3_128_digest((page.content_type or "").encode("latin-1", "replace") + b"\0" + body)


def locate(file: InputFile, fields: Fields) -> Iterator[Located | BadInput]:
    """Pass 1 over one input: every page located, and what could not be read (as batch mode names it)."""
    try:
        yield from _locate(file, fields)
    except OSError as error:
        yield BadInput(file.path, f"cannot be read: {error.strerror or error}")


def _locate(file: InputFile, fields: Fields) -> Iterator[Located | BadInput]:
    if file.kind in ("missing", "empty"):
        yield BadInput(file.path, MISSING if file.kind == "missing" else EMPTY)
        return
    if file.kind == "unknown":
        yield BadInput(file.path, "not a folder, an HTML file, JSON Lines (.jsonl), Parquet nor WARC (.warc, .warc.gz)")
        return
    if file.kind == "parquet":
        yield from _locate_parquet(file, fields)
        return
    record, start = 0, 0
    for item, end in _batch_reader(file, fields):
        if isinstance(item, Page):
            locator = {"warc": end, "jsonl": start}.get(file.kind, item.source)
            yield Located(
                order_key(file, record), item.url, item.source, locator, digest(item), _order_value(item.record, fields)
            )
            record += 1
            start = end
        else:  # records held back while a feed's field is probed come late: the next page starts after all
            yield item
            start = max(start, end)


def _batch_reader(file: InputFile, fields: Fields) -> Iterator[tuple[Page | BadInput, Any]]:
    """Batch mode's reader of the input, each item with the offset it ends at (a WARC record's: where
    it starts)."""
    path = Path(file.path)
    if file.kind == "warc":
        return read_warc(path, all_statuses=fields.all_statuses)
    if file.kind in ("jsonl", "jsonl.gz"):
        return read_json_lines(path, fields.html, fields.url, fields.all_statuses)
    if file.kind == "folder":
        return read_folder(path)
    return iter([(read_html_file(path), 0)])


def _order_value(record: dict[str, Any] | None, fields: Fields) -> float | None:
    if fields.order is None or record is None:
        return None
    value = record.get(fields.order)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _locate_parquet(file: InputFile, fields: Fields) -> Iterator[Located | BadInput]:
    """A Parquet file's rows: HTML (string or binary) and URL columns, and the order column if named."""
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(file.path)
    except Exception as error:  # pyarrow's errors for a file that is not Parquet vary by version
        yield BadInput(file.path, f"not readable as Parquet ({error})")
        return
    missing = [name for name in (fields.html, fields.url) if name not in parquet.schema_arrow.names]
    if missing:
        yield BadInput(
            file.path,
            f"no column {', '.join(map(repr, missing))} (the columns are: "
            f"{', '.join(parquet.schema_arrow.names)}); name them with --html-field, --url-field",
            records=parquet.metadata.num_rows,
        )
        return
    record = 0
    for group in range(parquet.num_row_groups):
        for row, page in enumerate(_parquet_pages(parquet, file, group, fields)):
            if isinstance(page, BadInput):
                yield page
            else:
                yield Located(
                    order_key(file, record),
                    page.url,
                    page.source,
                    (group, row),
                    digest(page),
                    _order_value(page.record, fields),
                )
                record += 1


def _parquet_pages(parquet: Any, file: InputFile, group: int, fields: Fields) -> Iterator[Page | BadInput]:
    columns = [fields.html, fields.url] + ([fields.order] if fields.order else [])
    table = parquet.read_row_group(group, columns=list(dict.fromkeys(columns)))
    for row, values in enumerate(table.to_pylist()):
        source, html = f"{file.path}#{group}:{row}", values.get(fields.html)
        if not isinstance(html, (str, bytes)):
            yield BadInput(source, f"no HTML in column {fields.html!r}")
            continue
        order = {fields.order: values.get(fields.order)} if fields.order else None
        yield Page(
            str(values.get(fields.url) or ""),
            html,
            source,
            order,
            content_type="text/html" if isinstance(html, bytes) else None,
        )


def read_located(
    file: InputFile, locators: list[tuple[int, Any]], fields: Fields
) -> Iterator[tuple[int, Page | BadInput]]:
    """Pass 2: the pages at ``locators`` (``(key, locator)`` pairs in the file's order) read again."""
    try:
        yield from _read_located(file, locators, fields)
    except OSError as error:
        for key, _ in locators:
            yield key, BadInput(file.path, f"cannot be read again: {error.strerror or error}")


def _read_located(
    file: InputFile, locators: list[tuple[int, Any]], fields: Fields
) -> Iterator[tuple[int, Page | BadInput]]:
    if file.kind == "warc":
        with open(file.path, "rb") as stream:
            for key, offset in locators:
                stream.seek(offset)
                yield (
                    key,
                    next(
                        (page for page, _ in read_warc(Path(file.path), stream, fields.all_statuses)),
                        BadInput(file.path, "gone"),
                    ),
                )
    elif file.kind == "jsonl":
        with open(file.path, "rb") as stream:
            for key, offset in locators:
                stream.seek(offset)
                line = b""
                while not line.strip():
                    line = stream.readline()
                yield key, _json_page(line, f"{file.path}@{offset}", fields)
    elif file.kind in ("folder", "html"):
        for key, path in locators:
            yield key, read_html_file(Path(path))
    elif file.kind == "parquet":
        import pyarrow.parquet as pq

        parquet, groups = pq.ParquetFile(file.path), {}
        for key, (group, row) in locators:
            if group not in groups:
                groups = {group: list(_parquet_pages(parquet, file, group, fields))}
            yield key, groups[group][row]
    else:  # gzipped JSON Lines: read through again, taking the records located
        wanted = dict(locators)
        record = 0
        for item, _ in read_json_lines(Path(file.path), fields.html, fields.url, fields.all_statuses):
            if isinstance(item, Page):
                key = order_key(file, record)
                if key in wanted:
                    yield key, item
                record += 1


def _json_page(line: bytes, source: str, fields: Fields) -> Page | BadInput:
    try:
        page = json_page(json.loads(line.decode("utf-8", "surrogateescape")), source, fields.html, fields.url)
    except ValueError as error:
        return BadInput(source, f"changed since it was read ({error})")
    return page or BadInput(source, f"changed since it was read (no {fields.html!r} field)")
