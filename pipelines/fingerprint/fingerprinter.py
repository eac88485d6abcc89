"""The page fingerprints: content and structure SimHash of one HTML page."""

from __future__ import annotations

import zlib
from array import array
from dataclasses import dataclass

import xxhash

from .content import SHINGLE_SIZE, PageText, content_simhash, tokens
from .declared import declared_link
from .document import EMPTY, TOO_MANY_ELEMENTS, TOO_MUCH_TEXT, prepared
from .languages import language_bits, languages
from .simhash import simhash
from .sketch import page_sketch
from .structure import DEFAULT_DECAY
from .textloops import shingle_hashes

#: Bump whenever any input to a fingerprint changes (features, weights, tables,
#: hash): stored fingerprints of another scheme are not comparable.
SCHEME_VERSION = 9
DEFAULT_MIN_FEATURES = 30
DEFAULT_MAX_BYTES = 8 * 1024 * 1024
#: Bounds on the work a page may take (~1 s at most on one core; measured in ``tests/test_hostile.py``):
#: elements walked, and visible characters read into words.
DEFAULT_MAX_ELEMENTS = 200_000
DEFAULT_MAX_TEXT_CHARS = 1_000_000


@dataclass(frozen=True)
class Fingerprint:
    """A page's two fingerprints, and the sketch that checks content matches.

    A part is ``None`` when the page has too few features for it; ``problem``
    names why the page was not fingerprinted at all (``None`` if it was).
    ``short``: the page's own text has fewer than ``min_features`` distinct
    words, too few for SimHash to tell two pages apart; ``content`` is then
    the SimHash of that own text, or, for a page without any (its sketch has
    no own part: ``sketch.has_own_text``), a hash of its whole visible text.  Two short pages are the same only when
    their words are (``Policy.content_match``); a short page and a longer one
    are compared as any two pages are, so a page near the line and its copy
    with a few words more meet.
    """

    content: int | None
    structure: int | None
    problem: str | None = None
    sketch: bytes | None = None
    short: bool = False
    text: bytes | None = None  # with ``keep_text``: the words the content was built from (``packed``)
    canonical: str | None = None  # the ``<link rel="canonical">`` the page declares (not part of the fingerprint)
    #: A short page's visible words with its dates and numbers left out (``dateless_hash``): what the guards
    #: tell empty calendar months and empty result pages apart by (not part of the fingerprint; ``None`` for a
    #: page with content of its own).
    repeat_key: int | None = None


class Fingerprinter:
    """Computes :class:`Fingerprint` objects; deterministic for the same HTML."""

    def __init__(
        self,
        *,
        structure_decay: float = DEFAULT_DECAY,
        min_features: int = DEFAULT_MIN_FEATURES,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_elements: int = DEFAULT_MAX_ELEMENTS,
        max_text_chars: int = DEFAULT_MAX_TEXT_CHARS,
        keep_text: bool = False,
    ) -> None:
        self.structure_decay = structure_decay
        self.min_features = min_features
        self.max_bytes = max_bytes
        self.max_elements = max_elements
        self.max_text_chars = max_text_chars
        self.keep_text = keep_text

    def fingerprint(self, html: str | bytes, url: str = "", content_type: str | None = None) -> Fingerprint:
        """Fingerprint one page.  ``url``: where it was fetched (it changes nothing in the fingerprint);
        ``content_type``, the header bytes came with, is one of the clues to their encoding
        (``document.decode``)."""
        source = prepared(html, self.max_bytes, content_type)
        if source.utf8 is None:
            return Fingerprint(None, None, source.outcome)
        text = PageText.parse(source.utf8, self.structure_decay, self.max_elements)
        if text is None:
            return Fingerprint(None, None, EMPTY)
        canonical = declared_link(text.canonical_link)
        if text.elements > self.max_elements:
            return Fingerprint(None, None, TOO_MANY_ELEMENTS, canonical=canonical)
        if text.characters() > self.max_text_chars:
            return Fingerprint(None, None, TOO_MUCH_TEXT, canonical=canonical)
        structure = self._simhash(text.structure)
        blocks = text.own_blocks()
        content, features = content_simhash(blocks)
        if features:
            sketch = self._sketch(text, shingle_hashes(blocks, SHINGLE_SIZE), language_bits(languages(blocks[1:])))
            short = features < self.min_features
            return Fingerprint(
                content,
                structure,
                sketch=sketch,
                short=short,
                text=self._text(blocks),
                canonical=canonical,
                repeat_key=dateless_hash(tokens(text.visible_text())) if short else None,
            )
        visible = tokens(text.visible_text())
        if not visible:
            return Fingerprint(None, structure, canonical=canonical)
        # No own text: its exact words are its content; the sketch (no own part) says what it shows, which is what
        # tells its re-crawl at its address (``Policy.recrawled``).
        return Fingerprint(
            text_hash(visible),
            structure,
            sketch=self._sketch(text, array("Q"), 0),
            short=True,
            text=self._text([visible]),
            canonical=canonical,
            repeat_key=dateless_hash(visible),
        )

    @staticmethod
    def _sketch(text: PageText, own_shingles: array, languages: int) -> bytes:
        return page_sketch(
            own_shingles,
            name_hash(text.name()),
            languages,
            text.visible_shingles(),
            text.link_share(),
            text.listing,
            text.main_share,
            text.main_shingles(),
        )

    def _text(self, blocks: list[list[str]]) -> bytes | None:
        """The words, block per line, compressed (for the decision log's side-by-side review)."""
        return packed("\n".join(" ".join(block) for block in blocks)) if self.keep_text else None

    def _simhash(self, features: dict[str, float]) -> int | None:
        if len(features) < self.min_features:
            return None
        return simhash(features)


def name_hash(name: str) -> int:
    """A page's name (``PageText.name``: its title's words, a line, its heading's, a line, its title's lead) as a
    sketch holds it: 32 bits of each line (the title's lowest), 0 for a line that is empty (and never for one that
    is not); 0 for no name."""
    title, heading, lead = (name.split("\n") + ["", "", ""])[:3]
    return _line_hash(title) | _line_hash(heading) << 32 | _line_hash(lead) << 64


def _line_hash(line: str) -> int:
    return (xxhash.xxh32_intdigest(line.encode("utf-8", "surrogatepass")) or 1) if line else 0


def text_hash(words: list[str]) -> int:
    """The fingerprint of a short page: a hash of its visible words, numbers included."""
    return xxhash.xxh3_64_intdigest(" ".join(words).encode("utf-8"))


#: Words that name a month or a day of the week (English, German, French, Spanish, Italian, Portuguese, Dutch; in
#: full and abbreviated), and the characters Chinese and Japanese dates are written with: a date, like a number,
#: is what empty calendar months differ by.
DATE_WORDS = frozenset(
    word
    for words in (
        "january february march april may june july august september october november december "  # English
        "jan feb mar apr jun jul aug sep sept oct nov dec "
        "monday tuesday wednesday thursday friday saturday sunday mon tue tues wed thu thur thurs fri sat sun",
        "januar februar märz mai juni juli oktober dezember "  # German (the months not spelled as in English)
        "montag dienstag mittwoch donnerstag freitag samstag sonntag",
        "janvier février mars avril juin juillet août septembre octobre novembre décembre "  # French
        "lundi mardi mercredi jeudi vendredi samedi dimanche",
        "enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre "  # Spanish
        "lunes martes miércoles jueves viernes sábado domingo",
        "gennaio febbraio aprile maggio giugno luglio settembre ottobre dicembre "  # Italian (not as in Spanish)
        "lunedì martedì mercoledì giovedì venerdì sabato domenica",
        "janeiro fevereiro março maio junho julho setembro outubro novembro dezembro "  # Portuguese (idem)
        "segunda terça quarta quinta sexta domingo",
        "januari februari maart mei augustus "  # Dutch (not as in English or German)
        "maandag dinsdag woensdag donderdag vrijdag zaterdag zondag",
        "年 月 日 周 星期",  # Chinese and Japanese: year, month, day, week
    )
    for word in words.split()
)


def dateless_hash(words: list[str]) -> int:
    """A hash of words with every number and date word (``DATE_WORDS``) left out: two pages that show the same but
    for a date or a number in their name (an empty calendar month, an empty page of results) hash the same."""
    kept = [word for word in words if word not in DATE_WORDS and not any(c.isdigit() for c in word)]
    return xxhash.xxh3_64_intdigest(" ".join(kept).encode("utf-8"))


def packed(text: str | None) -> bytes | None:
    """A text as fingerprints carry it and stores keep it: UTF-8, compressed (fast: made for every page)."""
    return None if text is None else zlib.compress(text.encode("utf-8"), 1)


def unpacked(data: bytes | None) -> str | None:
    return None if data is None else zlib.decompress(data).decode("utf-8")


def outcomes(fingerprint: Fingerprint) -> list[str]:
    """What a page is counted as, besides checked (the stats ``simhash_dedup/<outcome>``): why it was not
    fingerprinted, or ``short_text`` and the parts it has too few features for."""
    if fingerprint.problem:
        return [fingerprint.problem]
    parts = [f"too_few_features/{part}" for part in ("content", "structure") if getattr(fingerprint, part) is None]
    return ["short_text", *parts] if fingerprint.short else parts


def comparable(fingerprint: Fingerprint) -> bool:
    """Can the page be compared at all?  (Pages without either fingerprint are always kept.)"""
    return fingerprint.problem is None and (fingerprint.content is not None or fingerprint.structure is not None)
