"""Turning an item's HTML (``str`` or ``bytes``) into the UTF-8 bytes the parser reads (or an lxml tree
of them), or a reason why not.

Everything a crawl can put in the HTML field must end here with either bytes
to parse or a named outcome; nothing raises.  The outcome names double as
stats keys.  The fingerprint walks the parser's events (``treewalk.parse``);
the tree is for callers who want one (``load``), and parses the same bytes
with the same parser, libxml2's as lxml runs it.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

import lxml.etree
from w3lib.encoding import html_to_unicode

from .textloops import has_visible_ascii, is_utf8, utf8_length

#: Outcome names for pages that cannot be fingerprinted (stats ``simhash_dedup/<name>``).
EMPTY = "empty_html"
NOT_HTML = "not_html"
TOO_LARGE = "too_large"  # more bytes than SIMHASH_DEDUP_MAX_HTML_BYTES (a string: its UTF-8 bytes)
TOO_MANY_ELEMENTS = "too_many_elements"  # more than SIMHASH_DEDUP_MAX_ELEMENTS
TOO_MUCH_TEXT = "too_much_text"  # more visible characters than SIMHASH_DEDUP_MAX_TEXT_CHARS

_SNIFF_BYTES = 8192
_WIDE_BOMS = (b"\xff\xfe", b"\xfe\xff")  # UTF-16 (and UTF-32 little-endian) byte order marks
# libxml2: allow text nodes over 10 MB and trees deeper than 256 (it stops at 2048); no table of the
# ids (nothing looks elements up by id: 8% of the parse).  A plain etree tree: lxml.html's element
# classes give the same tree at twice the cost of walking it.  ``treewalk.PARSE_OPTIONS`` are these.
_PARSER = lxml.etree.HTMLParser(
    encoding="utf-8", remove_comments=True, remove_pis=True, huge_tree=True, no_network=True, collect_ids=False
)


@dataclass(frozen=True)
class Source:
    """A page as the parser reads it (UTF-8), or the reason it is not read (``utf8 is None``)."""

    utf8: bytes | None
    outcome: str | None = None


@dataclass(frozen=True)
class Document:
    """A parsed page, or the reason it has no tree (``root is None``)."""

    root: lxml.etree._Element | None
    outcome: str | None = None


def prepared(html: str | bytes, max_bytes: int, content_type: str | None = None) -> Source:
    """``html`` decoded (bytes with the ``Content-Type`` header they came with, if any) and given as UTF-8;
    pages over ``max_bytes`` are not decoded at all."""
    if too_large(html, max_bytes):
        return Source(None, TOO_LARGE)
    if isinstance(html, bytes):
        if b"\x00" in html[:_SNIFF_BYTES] and not html.startswith(_WIDE_BOMS):  # UTF-16/32 have NULs
            return Source(None, NOT_HTML)
        if not _is_plain_utf8(html):
            text, utf8 = _legacy_decoded(html, content_type)
        elif has_visible_ascii(html):  # most pages: parsed as they are, never decoded
            return Source(html)
        else:
            text, utf8 = html.decode("utf-8"), html
    elif "\x00" in html[:_SNIFF_BYTES]:
        return Source(None, NOT_HTML)
    else:
        text, utf8 = html, None
    if not text or text.isspace():
        return Source(None, EMPTY)
    return Source(utf8 or text.encode("utf-8", "replace"))


def load(html: str | bytes, max_bytes: int, content_type: str | None = None) -> Document:
    """Decode and parse ``html`` into an lxml tree (see ``prepared``)."""
    source = prepared(html, max_bytes, content_type)
    if source.utf8 is None:
        return Document(None, source.outcome)
    root = tree(source.utf8)
    return Document(root) if root is not None else Document(None, EMPTY)


def tree(utf8: bytes) -> lxml.etree._Element | None:
    """The root of the tree lxml builds of ``utf8`` with the fingerprint's parser; None if it has none."""
    try:
        return lxml.etree.fromstring(utf8, parser=_PARSER)
    except (lxml.etree.ParserError, lxml.etree.XMLSyntaxError, ValueError):
        return None


def too_large(html: str | bytes, max_bytes: int) -> bool:
    """Has ``html`` more than ``max_bytes`` bytes (a string: in UTF-8)?  Counted without encoding."""
    if isinstance(html, bytes) or len(html) > max_bytes or 4 * len(html) <= max_bytes:
        return len(html) > max_bytes
    return utf8_length(html) > max_bytes


def decode(body: bytes, content_type: str | None = None) -> str:
    """Decode like a browser, but trust valid UTF-8 over a declared charset.

    Order: BOM, valid UTF-8 (pages re-saved as UTF-8 often keep their old
    GBK declaration, servers often declare ISO-8859-1 by default; legacy text
    is almost never valid UTF-8), the charset of the ``Content-Type`` header,
    the ``<meta>`` charset, then a deterministic guess (GBK pages without a
    charset are common).
    """
    return _decoded(body, content_type)[0]


def _decoded(body: bytes, content_type: str | None) -> tuple[str, bytes | None]:
    """``body`` as text (see ``decode``), and as UTF-8 when it already is: the bytes to parse, no
    copy made (None: encode the text)."""
    return (body.decode("utf-8"), body) if _is_plain_utf8(body) else _legacy_decoded(body, content_type)


def _legacy_decoded(body: bytes, content_type: str | None) -> tuple[str, None]:
    """``body``, not plain UTF-8, decoded by its byte order mark, its charsets or a guess (``decode``)."""
    _, text = html_to_unicode(content_type, body, auto_detect_fun=_guess_encoding)
    return text, None


def _is_plain_utf8(body: bytes) -> bool:
    """UTF-8 without a byte order mark: valid UTF-8 is trusted over any charset declared (``decode``)."""
    return not body.startswith((b"\xef\xbb\xbf", *_WIDE_BOMS)) and is_utf8(body)


def _guess_encoding(body: bytes) -> str:
    """charset-normalizer's guess, except that among the Latin single-byte encodings windows-1252 (what
    browsers assume for Western pages) wins unless it would put symbols inside words: on a short
    text the guesser often takes Latin-1 French or Spanish for cp1250 or cp1257 (``à`` -> ``ą``)."""
    import charset_normalizer  # ~4 MB: only for the rare page that is neither UTF-8 nor declared

    sample = body[:65536]
    best = charset_normalizer.from_bytes(sample).best()
    guess = best.encoding if best else "cp1252"
    if guess != "cp1252" and _latin_letters_only(sample.decode(guess, "replace")) and _fits_cp1252(sample):
        return "cp1252"
    return guess


def _latin_letters_only(text: str) -> bool:
    return all(unicodedata.name(ch, "").startswith("LATIN") for ch in set(text) if ord(ch) > 127 and ch.isalpha())


_SYMBOL_IN_WORD = re.compile(r"(?<=[^\W\d_])[^\w\s\u2019](?=[^\W\d_])")  # "Za¿ó³æ"; an apostrophe is fine


def _fits_cp1252(sample: bytes) -> bool:
    try:
        text = sample.decode("cp1252")
    except UnicodeDecodeError:  # bytes cp1252 leaves undefined
        return False
    return not any(_SYMBOL_IN_WORD.search(text[m.start() - 1 : m.end() + 1]) for m in re.finditer(r"[\x80-\xff]", text))
