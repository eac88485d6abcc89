"""Content: the page's own text, as weighted words (for SimHash) and shingles (for the sketch).

The own text is the page's main content, wherever it sits.  One walk over the
tree reads the visible text as blocks, one per paragraph-like element, never
reading what a reader does not see (scripts, styles, the options of a list
box, elements hidden by the ``hidden`` attribute, ``aria-hidden`` or an inline
``display: none`` / ``visibility: hidden``).  Each block notes its link text,
the element that holds it and the nearest *furniture* around it: ``nav``,
``header``, ``footer``, ``aside``, ``button``, or an element whose class, id or
role says menu, sidebar, comments, related, sponsor... (Mozilla Readability's
lists).  Then, as Readability does, the main content is found where the text
mass is (``PageText.main_content``).  The own text is the page's title, the
main content's blocks of at least ``MIN_BLOCK_WORDS`` words, less their links
and less the furniture *inside* it, and such blocks elsewhere outside any
furniture (``PageText.own_blocks``).  Furniture *around* the main content does
not matter: an article inside a page-wide ``<form>`` (ASP.NET), a ``<nav>``
left open or an ``<aside>`` is read.

Chinese runs are segmented as jieba 0.42.1 does, by rjieba (jieba-rs: the same words on every Han run of the
shared pages, tested, at a fifteenth of the cost; words a project adds to the global jieba never change our
fingerprints), and weighted with jieba's IDF table; both load with the first Chinese page.  Kana, Thai and other
scripts without spaces become character bigrams.  Every other script is split into words and weighted with a
table built from wordfreq frequencies (both tables in ``data/idf_*.bin``, see ``tools/build_idf.py``).

One-character words and numbers (dates, counters, prices) are not SimHash features.  Shingles keep every token:
people judge two pages whose figures differ as different pages (counting numbers as one token in shingles cost 6
false drops of 358 Webis pairs).
"""

from __future__ import annotations

import functools
import importlib.resources
import re
import unicodedata
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field

import lxml.etree

from . import treewalk
from .document import tree
from .simhash import WEIGHT_SCALE
from .structure import DEFAULT_DECAY
from .textloops import (
    IdfTable,
    alnum_runs,
    ascii_tokens,
    has_invisible,
    has_unspaced,
    only_words,
    surface_shingle_hashes,
    tf_idf,
    tf_idf_simhash,
    word_counts,
)
from .treewalk import Block, Node

#: Blocks with fewer words than this are page furniture (labels, menus, bylines).
MIN_BLOCK_WORDS = 8
#: Own text with fewer distinct words is read again, letting named furniture hold the main content.
MIN_OWN_WORDS = 20
#: Own text with a smaller share of the page's characters outside links is read again too.
MIN_OWN_SHARE = 0.15
#: How many times a word of the page's title counts in the content features: the title names what the
#: page is; on a short text one edited sentence outweighs it otherwise (measured in ``bench/quality.py``).
TITLE_WEIGHT = 3
#: Characters that show nothing inside a word (soft hyphen, zero-width space, joiners, BOM): a tool that
#: hyphenates or re-saves a page adds or drops them, and a reader sees the same words.
_INVISIBLE = re.compile("[\u00ad\u200b\u200c\u200d\u2060\ufeff]")
#: Tokens per shingle in the sketch: of the own text, of the whole visible text.  What a page shows is compared
#: in longer shingles: a template repeats its phrases in every row and box, and only a word that changes in
#: each of them tells two of its pages apart (``bench/real_sites.py``: member lists of two C++ classes agree on
#: 0.73 of their 3-grams, 0.39 of their 5-grams, the judge's measure).
SHINGLE_SIZE = 3
VISIBLE_SHINGLE_SIZE = 5

#: Han characters (CJK ideographs and their extensions): the text jieba segments and weighs.
HAN_RANGES: tuple[tuple[int, int], ...] = ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x2EBEF))
_HAN = "".join(f"{chr(first)}-{chr(last)}" for first, last in HAN_RANGES)
#: Scripts written without spaces that jieba does not segment: kana, Thai, Lao, Khmer, Myanmar.
_UNSPACED = "\u3040-\u30ff\u0e00-\u0eff\u1780-\u17ff\u1000-\u109f"
_TOKEN = re.compile(f"([{_HAN}]+)|([{_UNSPACED}]+)|([^\\W_{_HAN}{_UNSPACED}]+)")


@dataclass
class PageText:
    """A page's visible text as blocks, with the block-level elements that hold them.

    Block-level elements are numbered in document order (``nodes``); those
    inside node ``n`` are numbered ``n + 1`` to ``nodes[n].end - 1``.
    """

    title: str = ""
    blocks: list[Block] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    structure: dict[str, float] = field(default_factory=dict)  # the structure features
    elements: int = 0  # elements the walk visited (one more than the limit when it stopped there)
    text_chars: int = 0  # characters of the blocks' texts outside links
    link_chars: int = 0  # and in links
    canonical_link: tuple[str | None, str] | None = (
        None  # the <head>'s first canonical link: (<base href> before it, href)
    )
    _tokens: dict[str, list[str]] = field(default_factory=dict, repr=False)  # text -> its tokens, each text once
    listing: bool = False  # ``own_blocks`` read the main content's short blocks too: the page is a list or a table
    #: ``own_blocks``: the share of the main content's characters in its own text's blocks (1: all prose; low: its
    #: tables, lists and captions are most of what it holds)
    main_share: float = 1.0
    main_texts: list[str] = field(default_factory=list)  # ``own_blocks``: the main content's blocks, tables included

    @classmethod
    def read(cls, root: lxml.etree._Element, decay: float = DEFAULT_DECAY, max_elements: int = 0) -> PageText:
        """Read the tree in one walk (any depth; see :mod:`scrapy_simhash_dedup.fingerprint.treewalk`).  The
        same walk weighs the tag tree for the structure fingerprint: one pass over the tree serves both
        fingerprints.  With ``max_elements``, a tree of more elements is not read (``elements`` says so)."""
        return cls(*treewalk.read(root, decay, max_elements))

    @classmethod
    def parse(cls, utf8: bytes, decay: float = DEFAULT_DECAY, max_elements: int = 0) -> PageText | None:
        """Read the page from its UTF-8 bytes as ``read`` reads the tree lxml would build of them, but
        from the parser's events, with no tree (``treewalk.parse``; through a tree where libxml2's parser
        is not found in lxml); None when the page has no element."""
        if treewalk.PARSER_LINKED:
            found = treewalk.parse(utf8, decay, max_elements)
            return None if found is None else cls(*found)
        root = tree(utf8)
        return None if root is None else cls.read(root, decay, max_elements)

    def link_share(self) -> float:
        """The share of the page's visible characters (title aside) that are in links."""
        return self.link_chars / (self.text_chars + self.link_chars) if self.link_chars else 0.0

    def characters(self) -> int:
        """Visible characters of the page: the title, and the blocks' text in and outside links."""
        return len(self.title) + self.text_chars + self.link_chars

    def own_blocks(self) -> list[list[str]]:
        """The tokens of the own text's blocks, the title's first, then in page order; empty when the
        page has no main content.

        The own text is the page's title, the main content's blocks of at least
        ``MIN_BLOCK_WORDS`` words, less the furniture inside it, and every other
        such block outside any furniture.  The main content is looked for first among the blocks
        outside named furniture.  When its own text holds fewer than
        ``MIN_OWN_WORDS`` distinct words, or less than ``MIN_OWN_SHARE`` of the
        page's text outside links, the page is read again letting named
        furniture in (some sites name the article's element "header", or its
        body "banners-contenido"): it scores, and inside the main content it is
        read; only nav, header, footer, aside and buttons stay out.  When even
        that leaves too few words, the main content's short blocks count too
        (lists, captions, table cells), and ``listing`` says so.
        """
        page_chars = self.text_chars
        words_of: dict[int, list[str]] = {}  # block -> its words (a plain dict: ``functools.cache`` costs more a call)

        def block_tokens(n: int) -> list[str]:
            return self._tokens_of(self.blocks[n].own)  # (tokenised once a text: ``_tokens_of``)

        def block_words(n: int) -> list[str]:
            if (found := words_of.get(n)) is None:
                found = words_of[n] = only_words(block_tokens(n))
            return found

        def long(n: int) -> bool:  # a word has two characters or more: shorter texts need no tokenising
            return len(self.blocks[n].own) >= 2 * MIN_BLOCK_WORDS and len(block_words(n)) >= MIN_BLOCK_WORDS

        for read_named in (False, True):
            containers = self.main_content(read_named)
            main = self._blocks_inside(containers, read_named)
            main_own = [n for n in main if long(n)]
            if len(set().union(*map(block_words, main_own))) < MIN_OWN_WORDS:
                continue
            chosen = set(main_own) | {
                n
                for n, block in enumerate(self.blocks)
                if block.tag_furniture == block.named_furniture == -1 and long(n)
            }
            if read_named or sum(len(self.blocks[n].text) for n in chosen) >= MIN_OWN_SHARE * page_chars:
                self.main_texts = [self.blocks[n].prose for n in main]
                main_chars = sum(map(len, self.main_texts))
                self.main_share = sum(len(self.blocks[n].prose) for n in main_own) / main_chars if main_chars else 1.0
                return [self._tokens_of(self.title)] + [block_tokens(n) for n in sorted(chosen)]
        if len(set().union(*map(block_words, main))) < MIN_OWN_WORDS:
            return []
        self.listing = True
        self.main_texts = [self.blocks[n].prose for n in main]
        return [self._tokens_of(self.title)] + [block_tokens(n) for n in main]

    def visible_text(self) -> str:
        """Every visible word of the page, the title, links and furniture included, in document order."""
        return " ".join(self._visible_texts())

    def _visible_texts(self) -> list[str]:
        return [self.title, *(block.prose for block in self.blocks)]

    def visible_shingles(self) -> array:
        """The hashes of the visible text's shingles (``visible_text``): runs of ``VISIBLE_SHINGLE_SIZE`` surface
        tokens (``textloops.surface_shingle_hashes``: words, and each Han or unspaced character alone, not
        segmented), across the blocks' bounds, so that a page made of one text repeated (a print view of
        redirect stubs) does not read as that text.  Read in one compiled pass: tokenising every menu and
        sidebar as the own text is tokenised cost a fifth of the fingerprint."""
        return surface_shingle_hashes(self._visible_texts(), VISIBLE_SHINGLE_SIZE)

    def main_shingles(self) -> array:
        """The hashes of the main content's shingles, its tables, lists and captions included (``own_blocks`` finds
        it), read as ``visible_shingles`` reads the whole page: what a page's body shows, without its chrome."""
        return surface_shingle_hashes(self.main_texts, VISIBLE_SHINGLE_SIZE)

    def name(self) -> str:
        """What the page says it is about: the words of its title and of its heading, one line each; "" when it
        has neither.  Pages of one template name their subjects there (``Index – J``, ``COMMIT``, ``Class
        ArrayList<E>``, ``std::atomic<char> Member List``).  The heading is the first ``h1`` outside the page's
        furniture, else the first block-level element outside it named as a title (``HEADING_NAMES`` in its class
        or id: Doxygen's ``div.title``, many CMSs' ``entry-title``).  Not a lower heading: a section added to a
        page (comments, related articles) often starts with the first ``h2``.  Of the title, only what names the
        page (``own_title``): the same article under another site's name is named as it was.  A third line: the
        title's lead (``title_lead``), what names a page whose heading does not (none, or another site's banner)."""
        heading, named = "", ""
        for block in self.blocks:
            if block.tag_furniture != -1:
                continue
            node = self.nodes[block.owner]
            if node.tag == "h1" and block.prose.strip():
                heading = block.prose
                break
            if not named and _named_heading(node) and block.prose.strip():
                named = block.prose
        heading_tokens = self._tokens_of(heading or named)
        title = self._tokens_of(own_title(self.title, set(heading_tokens)))
        lead = title_lead(self.title)
        return f"{' '.join(title)}\n{' '.join(heading_tokens)}\n{lead}" if title or heading_tokens else ""

    def _tokens_of(self, text: str) -> list[str]:
        """``tokens(text)``, once for each distinct text of the page (a block's own text is most often its prose)."""
        if (found := self._tokens.get(text)) is None:
            found = self._tokens[text] = tokens(text)
        return found

    def main_content(self, read_named: bool) -> list[int]:
        """The elements holding the main content, found as Mozilla Readability does (compiled:
        ``readability.pxi``)."""
        return treewalk.main_content(self.blocks, self.nodes, read_named)

    def _blocks_inside(self, containers: list[int], read_named: bool) -> list[int]:
        """The blocks in one of ``containers`` and outside the furniture inside it (but the named
        furniture, with ``read_named``), in page order."""
        inside: set[int] = set()
        for c in containers:
            end = self.nodes[c].end
            inside.update(
                n
                for n, block in enumerate(self.blocks)
                if c <= block.owner < end and block.tag_furniture <= c and (read_named or block.named_furniture <= c)
            )
        return sorted(inside)


#: Words that name an element as a page's heading (in its class or id), when it has no ``h1``.
HEADING_NAMES = treewalk.Words("title|headline|heading")
#: What separates the parts of a title ("Headline | Site", "Index — Python 3.11 documentation", "Site :: Page").
TITLE_SEPARATOR = re.compile(r"\s+(?:[|\-–—·:»«/]{1,2})\s+")


def own_title(title: str, heading: set[str]) -> str:
    """A page's title without its site's name: when the heading names the title's first part (has at least half its
    words, ``tokens``), the trailing parts it does not name are the site's ("Headline | The Site", "Index — Python
    3.11 documentation"); else the whole title (a page whose heading is the site's banner names itself in its title
    only)."""
    parts = TITLE_SEPARATOR.split(title)
    if len(parts) < 2 or not heading:
        return title

    def named(part: str) -> bool:
        words = tokens(part)
        return bool(words) and 2 * sum(word in heading for word in words) >= len(words)

    if not named(parts[0]):
        return title
    while len(parts) > 1 and not named(parts[-1]):
        parts.pop()
    return " ".join(parts)


#: The fewest words a title's first part has to be a headline (``title_lead``), not a site's or a section's name.
LEAD_WORDS = 4


def title_lead(title: str) -> str:
    """The words of a title's first part when it is a headline: at least ``LEAD_WORDS`` words and more than the
    other parts hold ("Headline of the story | Site"; a title of one part, when long enough); else "" (a site's
    name before its page's, "Site | Contact"; a short name, "Index – J").  The same headline under two sites' names
    names one article whatever heading each page shows (``sketch.named_alike``)."""
    first, *rest = TITLE_SEPARATOR.split(title)
    words = tokens(first)
    return " ".join(words) if len(words) >= LEAD_WORDS and len(words) > len(tokens(" ".join(rest))) else ""


def _named_heading(node: Node) -> bool:
    return any(name and HEADING_NAMES.search(name) for name in (node.class_, node.id_))


def tokens(text: str) -> list[str]:
    """Normalised tokens of ``text``: jieba for Chinese runs, word split elsewhere; characters that show
    nothing (``_INVISIBLE``) are read as a reader sees them, as nothing."""
    if text.isascii():  # NFKC leaves ASCII as it is, and casefolds it as lower() does
        return ascii_tokens(text)
    if has_invisible(text):
        text = _INVISIBLE.sub("", text)
    text = unicodedata.normalize("NFKC", text).casefold()
    if not has_unspaced(text):
        return alnum_runs(text)
    found: list[str] = []
    for match in _TOKEN.finditer(text):
        han, unspaced, other = match.groups()
        if han:
            found.extend(_segmenter()(han))
        elif unspaced:  # character bigrams stand in for words
            found.extend(unspaced[i : i + 2] for i in range(max(1, len(unspaced) - 1)))
        else:
            found.append(other)
    return found


def words(text: str) -> list[str]:
    return only_words(tokens(text))


def content_features(blocks: list[list[str]]) -> dict[str, float]:
    """Word -> count x IDF (jieba's table for words that start with a Han character, the word table
    for the rest; compiled, ``textloops.tf_idf``).  The first block is the page's title (``own_blocks``):
    its words count ``TITLE_WEIGHT`` times."""
    return tf_idf(_word_counts(blocks), HAN_RANGES, _word_idf, _chinese_idf)


def content_simhash(blocks: list[list[str]]) -> tuple[int, int]:
    """``simhash(content_features(blocks))`` and how many features there are, in one compiled pass that hashes
    each word once and makes no mapping of weights (``textloops.tf_idf_simhash``): what a fingerprint needs of
    the features."""
    counts = _word_counts(blocks)
    return tf_idf_simhash(counts, HAN_RANGES, _word_idf, _chinese_idf, WEIGHT_SCALE), len(counts)


def _word_counts(blocks: list[list[str]]) -> dict[str, int]:
    return word_counts(blocks[:1] * (TITLE_WEIGHT - 1) + blocks)


@functools.cache
def _segmenter() -> Callable[[str], list[str]]:
    import rjieba  # loads its dictionary: only once a page has Chinese text

    return functools.partial(rjieba.cut, hmm=True)


@functools.cache
def _idf_table(name: str) -> IdfTable:
    """One IDF table, ``data/idf_<name>.bin`` (built by ``tools/build_idf.py``): ``"words"``, the word
    table (unknown words get the rarest known word's IDF), or ``"chinese"``, jieba 0.42.1's table
    (unknown words get its median, as ``jieba.analyse`` does; loaded with the first Chinese word).
    Held as arrays: no Python object per word."""
    return IdfTable.from_bytes(importlib.resources.files(__package__).joinpath("data", f"idf_{name}.bin").read_bytes())


def _word_idf() -> IdfTable:
    return _idf_table("words")


def _chinese_idf() -> IdfTable:
    return _idf_table("chinese")
