# cython: language_level=3, boundscheck=False, wraparound=False
# distutils: language = c++
"""One walk over a page: its visible text as blocks, and its structure features.

The walk is driven by events (an element starts, text, an element ends), from
one of two sources that give the same events for the same page:

- ``parse``: libxml2's HTML parser itself, the one lxml is built with, run with
  lxml's options but without building a tree (its SAX interface): the parse
  costs a third of lxml's, and there is no tree to free (together half of a
  page's fingerprint before);
- ``read``: a tree lxml already built, walked through its C nodes.

Compiled (Cython over libxml2's structures).  What the walk reads is exactly
what ``lxml``'s ``iterwalk`` with ``.text``, ``.tail`` and ``.get()`` gives of
the tree ``lxml.etree.fromstring`` builds, so the fingerprints are those of the
Python walk it replaced (``tests/test_scheme.py`` holds the digests of every
shared page, and ``tests/test_structure.py`` checks that both sources agree
on all of them).

Text: scripts, styles, a list box's options and elements hidden by ``hidden``,
``aria-hidden="true"`` or an inline ``display: none`` / ``visibility: hidden``
are never read.  A block is the text between two block boundaries; each one
notes its link text, the block-level element holding it and the nearest
*furniture* around it: ``nav``, ``header``, ``footer``, ``aside``, ``button``,
or an element whose class, id or role says menu, sidebar, comments, related,
sponsor... (Mozilla Readability's lists).

Structure (see :mod:`pipelines.structure`): every tag and parent>child tag
pair, summed over the tree with the weight ``decay ** depth``.
"""

import functools
import re

from cpython.unicode cimport PyUnicode_DecodeUTF8
from cython.operator cimport dereference as deref
from libc.math cimport pow
from libc.string cimport memset, strcmp, strlen, strncmp, strstr
from libcpp.string cimport string
from libcpp.unordered_map cimport unordered_map
from libcpp.vector cimport vector
from lxml.includes cimport tree
from lxml.includes.etreepublic cimport _Element, import_lxml__etree
from lxml.includes.tree cimport xmlAttr, xmlChar, xmlNode

import_lxml__etree()

#: Elements whose text a reader never sees (or that are not text: a list box's options).
INVISIBLE_TAGS = frozenset({"script", "style", "noscript", "template", "svg", "math", "select", "datalist"})
#: The page's furniture by tag: its text is never the own text of a main content that holds it.
FURNITURE_TAGS = frozenset({"nav", "header", "footer", "aside", "button"})
#: Elements that start a new block of text (the rest are inline).
BLOCK_TAGS = frozenset({
    "html", "body", "title", "div", "p", "li", "ul", "ol", "dl", "dt", "dd", "table", "tr", "td", "th",
    "h1", "h2", "h3", "h4", "h5", "h6", "section", "article", "main", "blockquote", "pre", "figure",
    "figcaption", "br", "hr", "center", "form", "fieldset", "legend", "address", "details", "summary",
    "caption", "menu", "hgroup", "dialog", "textarea", *FURNITURE_TAGS,
})
#: Block boundaries that are not elements holding content of their own.
SEPARATOR_TAGS = frozenset({"br", "hr"})
#: Elements that hold no text (HTML's void elements, but the separators); ``#node``: comments and
#: processing instructions (in trees not parsed by ``pipelines.document.load``).
EMPTY_TAGS = frozenset({"img", "meta", "link", "input", "source", "wbr", "area", "base", "col", "embed", "param",
                        "track", "#node"})



class CaselessPattern:
    """A regular expression searched with case ignored.  ASCII texts (nearly every class and id) are
    lowered and searched case-sensitively: the same matches, where ``re.IGNORECASE`` costs several
    times more.  The pattern is in lower case."""

    def __init__(self, pattern: str) -> None:
        self.exact = re.compile(pattern)
        self.caseless = re.compile(pattern, re.IGNORECASE)

    def search(self, text: str):
        return self.exact.search(text.lower()) if text.isascii() else self.caseless.search(text)


cdef class Words:
    """Words found anywhere in a text, case ignored: whether ``re.search("w1|w2|...", text, re.IGNORECASE)``
    finds a match.  A crawl of many sites meets ~70 new class and id names a page, more than the walk's
    answers remember; searched by regular expression, they were ~30% of the parse's instructions:
    scanned so, the parse takes 27% fewer (callgrind, 116 pages).  An ASCII text (nearly every name)
    is lowered and scanned with ``strstr``; any other is searched by the regular expression, whose
    case folding knows more than ASCII's (``ſ`` is an ``s`` to it)."""

    cdef vector[string] words
    cdef readonly object pattern  # the regular expression, for texts outside ASCII

    def __init__(self, str words) -> None:
        """``words``: "w1|w2|...", lower-case ASCII letters, digits and hyphens."""
        if re.fullmatch(r"[a-z0-9-]+(\|[a-z0-9-]+)*", words) is None:
            raise ValueError(f"not words: {words!r}")
        self.words = [word.encode() for word in words.split("|")]
        self.pattern = re.compile(words, re.IGNORECASE)

    cdef bint in_lowered(self, const char* text) noexcept:
        """Is one of the words in ``text`` (ASCII, in lower case)?"""
        for i in range(self.words.size()):
            if strstr(text, self.words[i].c_str()) != NULL:
                return True
        return False

    def search(self, str text) -> bool:
        if text.isascii():
            return self.in_lowered(text.lower().encode())
        return self.pattern.search(text) is not None


#: Class or id of page furniture, and the exceptions (Mozilla Readability's lists).
UNLIKELY_NAMES = Words(
    "-ad-|ai2html|banner|breadcrumbs|combx|comment|community|cover-wrap|disqus|extra|footer|gdpr"
    "|header|legends|menu|related|remark|replies|rss|shoutbox|sidebar|skyscraper|social|sponsor"
    "|supplemental|ad-break|agegate|pagination|pager|popup|yom-remote"
)
MAYBE_CONTENT_NAMES = Words("and|article|body|column|content|main|mathjax|shadow")
#: Readability's, and ARIA's "note": "a section whose content is parenthetic or ancillary to the main content"
#: (a hatnote, a stub or maintenance notice).
UNLIKELY_ROLES = frozenset({"menu", "menubar", "complementary", "navigation", "alert", "alertdialog", "dialog", "note"})
#: A word of a class or id, a role or an ``aria-label`` that says "this element is an advertisement":
#: furniture in every reading.  Whole words only: a page's ``<body class="ads-enabled">``, a column
#: ``non-ad-column`` or a category ``native-advertising-platform`` name no ad.
AD_NAMES = CaselessPattern(
    r"(?:^|\s)(?:ads?|advert|advertisement|advertising|sponsored|promo|adsbygoogle)(?=\s|$)"
    r"|(?:^|\s)(?:ads?|advert)[-_](?:container|slot|unit|wrapper|banner|box|block|placeholder|label|top|bottom|\d)"
    r"|[-_](?:ad|ads|advert|advertisement)(?:[-_]\d+)?(?=\s|$)"
)
#: Every match of ``AD_NAMES`` holds one of these: a text without them needs no search.
AD_HINTS = Words("ad|promo|sponsored")
#: A block with a larger share of its characters in links is a row of links (a menu, a list of related
#: articles): the own text reads only its text outside them (``Block.own``).
LINK_DENSE = 0.5
#: A ``data-`` attribute's name (after ``data-``) that marks an ad slot.
AD_DATA = re.compile(r"ad(?:s|-slot|-unit|-client|-format|-name|-placement|vert\w*)?$|ad-")
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)

# What a tag is, as bits (worked out once per tag name and walk).
cdef enum:
    INVISIBLE = 1
    FURNITURE = 2
    BLOCK = 4
    SEPARATOR = 8
    EMPTY = 16
    LINK = 32
    NEVER_NAMED = 64  # a and body: never furniture nor an ad by name (reading every link's names doubled a walk's cost)
    TITLE = 128
    NEVER_AD = 256  # html, body, main, article: what holds the page is never an ad, whatever its names
    HEAD_LINK = 512  # link and base: inside <head>, where the page declares its canonical URL
    HEAD = 1024


cdef class Block:
    """The text between two block boundaries: one paragraph-like element's, or a run inside a container."""

    cdef readonly str text  # outside links
    cdef readonly str link_text
    cdef readonly str prose  # all of it in document order, links in place
    cdef readonly str own  # what the own text reads of it: its prose, or for a row of links its text outside them
    cdef readonly int owner  # the block-level element holding it (its number in ``PageText.nodes``)
    cdef readonly int tag_furniture  # the innermost furniture element by tag (nav, aside...) around it, -1 if none
    cdef readonly int named_furniture  # the innermost element named as furniture (class, id or role), -1 if none
    cdef readonly int ad  # the innermost element named as an advertisement around it, -1 if none
    cdef readonly bint leaf  # the owner holds no other block: the block is its paragraph, scored from its parent up


cdef class Node:
    """A block-level element: its tag and names, where it sits, what furniture is around it, how much
    text is inside it."""

    cdef readonly str tag
    cdef readonly object class_  # the ``class`` attribute, None when it has none
    cdef readonly object id_
    cdef readonly int parent  # the block-level element holding it (its number), -1 for the root
    cdef readonly int tag_furniture  # the innermost furniture element by tag around it, itself included, -1 if none
    cdef readonly int named_furniture  # the same for furniture named by class, id or role
    cdef readonly int ad  # the same for an element named as an advertisement (furniture by tag too)
    cdef readonly long chars  # visible characters inside it, outside links and in links
    cdef readonly long link_chars
    cdef readonly int end  # the elements inside it are numbered up to ``end - 1``
    cdef readonly bint leaf  # it holds no other block-level element


cdef struct Open:  # a block-level element the walk is inside
    size_t depth  # how many elements are open once it is (1: the root)
    int number


cdef struct Attributes:  # an element's attributes, as a tree holds them or as the parser gives them
    xmlAttr* listed  # a tree's (NULL: none, or given by the parser)
    const xmlChar** pairs  # the parser's: name, value, name, value... then NULL (a value may be NULL)


cdef struct Names:  # the attributes the walk reads (NULL: absent)
    const char* class_
    const char* id_
    const char* role
    const char* style
    const char* aria_hidden
    const char* aria_label
    bint hidden
    bint ad_data  # a data- attribute named for ads (data-ad-slot, data-advertisement...)


cdef class _Walk:
    """The state of one walk, fed its events by ``read`` (a tree) or ``parse`` (the parser).

    Text comes between the events and is read at the next one, as one run: an
    element's text (up to its first child) or its tail (up to the next
    element), as lxml gives them.  Whether a run is read is decided by the
    event before it (``reading``).
    """

    cdef double decay
    cdef list blocks, nodes, text, links, prose
    cdef Node outside  # the owner of text outside the root's block (a root that is not one)
    cdef str title
    cdef long counts[2]  # characters read so far: outside links, in links
    cdef long block_chars[2]  # the same in the blocks' texts as ``PageText`` holds them (pieces joined by spaces)
    cdef object base_href  # the first <base href> in <head>, None if none yet
    cdef object canonical_link  # (base_href then, href) of the first <link rel="canonical"> in <head>, None if none
    cdef int invisible  # depth inside an invisible element
    cdef int in_link  # depth inside links
    cdef int in_head  # open <head> elements
    cdef vector[Open] open_blocks
    cdef vector[int] open_tags  # the open elements' tag ids, for the structure features
    cdef list tag_names  # tag id -> tag
    cdef vector[int] tag_kinds  # tag id -> bits
    cdef dict tag_ids  # tag -> tag id
    cdef unordered_map[size_t, int] ids_by_pointer  # libxml2 keeps one copy of each name a parse met
    cdef vector[double] tag_weights  # tag id -> summed weight
    cdef unordered_map[long, double] pair_weights  # parent id << 32 | child id -> summed weight
    cdef vector[long] pair_order  # pair keys in the order first seen
    cdef vector[double] powers  # decay ** depth
    cdef long elements, max_elements  # elements started so far; the walk stops after max_elements (0: never)
    cdef bint reading  # is the text coming read (not inside an invisible element, not a void element's)?
    cdef string run  # the text since the last event, when read
    cdef size_t title_depth  # the open elements while the page's title is read (0: it is not)
    cdef string title_text
    cdef bint done  # the root has ended, or the walk stopped at max_elements
    cdef void* parser  # the parser feeding it, if one is (``parse``)
    cdef object error  # what a walk fed by the parser raised (the parser then stops)

    def __cinit__(self):
        self.blocks, self.nodes, self.text, self.links, self.prose = [], [], [], [], []
        self.title = ""
        self.tag_names, self.tag_ids = [], {}
        self.outside = Node.__new__(Node)
        self.outside.parent = self.outside.tag_furniture = self.outside.named_furniture = self.outside.ad = -1
        self.outside.leaf = True
        self.open_blocks.push_back(Open(0, -1))  # outside any block-level element

    # -- the events ----------------------------------------------------------------------------------

    cdef void start(self, int tag, Attributes* attributes) except *:
        """An element starts (any event source)."""
        self.end_run()
        self.elements += 1
        if self.max_elements and self.elements > self.max_elements:
            self.done = True  # the caller sees elements > max_elements: a page too big to read
            return
        self.reading = False
        cdef int kind = self.tag_kinds[tag]
        cdef Names names
        self.weigh(tag)
        if kind & HEAD:
            self.in_head += 1
        if kind & EMPTY:  # no text of its own: only its tail counts
            if kind & HEAD_LINK and self.canonical_link is None and self.in_head:
                self.read_head_link(tag, attributes)
            return
        if self.invisible or kind & INVISIBLE:
            self.invisible += 1
            return
        cdef bint has_attributes = attributes.listed != NULL or attributes.pairs != NULL
        _read_names(attributes, &names)
        if has_attributes and _is_hidden(&names):
            self.invisible += 1
            return
        if kind & TITLE:  # shown in the tab, not in the page: never a block
            if not self.title:
                self.title_depth = self.open_tags.size()
                self.title_text.clear()
            self.invisible += 1
            return
        answer = _names_answer(&names) if has_attributes and not kind & NEVER_NAMED else 0
        named = answer & NAMED_FURNITURE
        ad = answer & NAMED_AD and not kind & NEVER_AD
        if ad:
            kind |= FURNITURE  # as nav or aside: never read inside the main content, however leniently
        if kind & SEPARATOR and not ad:
            self.flush()
        elif named or ad or kind & BLOCK or self.open_tags.size() == 1:  # (the root is always one)
            self.open_block(self.tag_names[tag], kind, named, ad, &names)
        if kind & LINK:
            self.in_link += 1
        self.reading = True

    cdef void characters(self, const char* text, size_t length):
        """Text (any event source; several pieces may make one run)."""
        if self.reading:
            self.run.append(text, length)
        if self.title_depth:
            self.title_text.append(text, length)

    cdef void end(self) except *:
        """The innermost open element ends (any event source)."""
        self.end_run()
        cdef size_t depth = self.open_tags.size()
        cdef int kind = self.tag_kinds[self.open_tags.back()]
        self.open_tags.pop_back()
        if kind & HEAD:
            self.in_head -= 1
        if depth == self.title_depth:
            self.title = PyUnicode_DecodeUTF8(self.title_text.data(), self.title_text.size(), NULL).strip()
            self.title_depth = 0
        if kind & EMPTY:
            self.reading = not self.invisible
        elif self.invisible:
            self.invisible -= 1
            self.reading = not self.invisible
        else:
            if self.open_blocks.back().depth == depth:
                self.close_block()
            if kind & LINK:
                self.in_link -= 1
            self.reading = True
        if depth == 1:  # the root: the walk is over, its tail is not the page's
            self.done = True
            self.reading = False

    cdef void end_run(self) except *:
        """The text since the last event, read as one run unless only whitespace."""
        if self.run.empty():
            return
        cdef bint blank = _ascii_space(self.run.c_str())
        if not blank:
            piece = PyUnicode_DecodeUTF8(self.run.data(), self.run.size(), NULL)
            if not piece.isspace():
                self.add(piece)
        self.run.clear()

    cdef void fail(self, BaseException error):
        """An event raised (fed by the parser, which cannot take exceptions): the walk stops, ``parse`` raises."""
        if self.error is None:
            self.error = error
        self.done = True

    # -- what the events make ------------------------------------------------------------------------

    cdef int tag_id(self, const xmlChar* name, str tag) except -1:
        """The id of the tag named ``name`` (``tag``: its name as lxml gives it, when not that; a name's
        answer is remembered by its pointer), and its kind worked out on its first element in this walk."""
        if tag is None:
            found = self.ids_by_pointer.find(<size_t>name)
            if found != self.ids_by_pointer.end():
                return deref(found).second
            tag = (<const char*>name).decode("utf-8")
        number = self.tag_ids.get(tag)
        if number is None:
            number = len(self.tag_names)
            self.tag_ids[tag] = number
            self.tag_names.append(tag)
            self.tag_kinds.push_back(_kind(tag))
            self.tag_weights.push_back(0.0)
        if name != NULL:
            self.ids_by_pointer[<size_t>name] = number
        return number

    cdef void weigh(self, int tag) except *:
        cdef int depth = self.open_tags.size()
        while <int>self.powers.size() <= depth:
            self.powers.push_back(pow(self.decay, <double>self.powers.size()))
        cdef double weight = self.powers[depth]
        self.tag_weights[tag] += weight
        if depth:
            key = (<long>self.open_tags.back()) << 32 | tag
            if self.pair_weights.find(key) == self.pair_weights.end():
                self.pair_order.push_back(key)
                self.pair_weights[key] = weight
            else:
                self.pair_weights[key] += weight
        self.open_tags.push_back(tag)

    cdef void add(self, str piece) except *:
        """Adds a piece of text that is not only whitespace."""
        piece = piece.strip()
        if self.in_link:
            if not self.links:  # the block's first link: its prose so far is its text
                self.prose = list(self.text)
            self.links.append(piece)
            self.prose.append(piece)
        else:
            self.text.append(piece)
            if self.links:
                self.prose.append(piece)
        self.counts[1 if self.in_link else 0] += len(piece)

    cdef void flush(self) except *:
        """Ends the block being read, when it holds anything."""
        if not (self.text or self.links):
            return
        cdef Node owner = self.owner()
        cdef Block block = Block.__new__(Block)
        block.text = " ".join(self.text)
        block.link_text = " ".join(self.links)
        self.block_chars[0] += len(block.text)
        self.block_chars[1] += len(block.link_text)
        block.prose = " ".join(self.prose) if self.links else block.text
        dense = len(block.link_text) > LINK_DENSE * (len(block.text) + len(block.link_text))
        block.own = block.text if dense else block.prose
        block.owner = self.open_blocks.back().number
        block.tag_furniture = owner.tag_furniture
        block.named_furniture = owner.named_furniture
        block.ad = owner.ad
        block.leaf = owner.leaf
        self.blocks.append(block)
        self.text.clear()
        self.links.clear()
        self.prose.clear()

    cdef Node owner(self):
        """The block-level element the walk is in."""
        cdef int number = self.open_blocks.back().number
        return self.nodes[number] if number >= 0 else self.outside

    cdef void open_block(self, str tag, int kind, bint named, bint ad, Names* names) except *:
        cdef Node outer = self.owner()
        outer.leaf = False
        self.flush()
        cdef int number = len(self.nodes)
        cdef Node node = Node.__new__(Node)
        node.tag = tag
        node.class_ = _value(names.class_)
        node.id_ = _value(names.id_)
        node.parent = self.open_blocks.back().number
        node.tag_furniture = number if kind & FURNITURE else outer.tag_furniture
        node.named_furniture = number if named else outer.named_furniture
        node.ad = number if ad else outer.ad
        node.chars, node.link_chars = self.counts[0], self.counts[1]  # at the start; what is inside once it ends
        node.leaf = True
        self.nodes.append(node)
        self.open_blocks.push_back(Open(self.open_tags.size(), number))

    cdef void close_block(self) except *:
        self.flush()
        cdef Node node = <Node>self.nodes[self.open_blocks.back().number]
        self.open_blocks.pop_back()
        node.end = len(self.nodes)
        node.chars = self.counts[0] - node.chars
        node.link_chars = self.counts[1] - node.link_chars

    cdef void read_head_link(self, int tag, Attributes* attributes) except *:
        """A ``<base href>`` or a ``<link rel="canonical" href>`` inside ``<head>`` (where browsers and search
        engines read them): the first of each, the base only when it comes before the link."""
        cdef const char* href = NULL
        cdef const char* rel = NULL
        cdef const char* name
        cdef const char* value
        cdef Attributes reader = attributes[0]
        while _next_attribute(&reader, &name, &value):
            if strcmp(name, "href") == 0:
                href = value
            elif strcmp(name, "rel") == 0:
                rel = value
        if href == NULL:
            return
        if self.tag_names[tag] == "base":
            if self.base_href is None:
                self.base_href = _value(href).strip() or None
        elif rel != NULL and strlen(rel) >= 9 and "canonical" in _value(rel).lower().split():
            if link := _value(href).strip():
                self.canonical_link = (self.base_href, link)

    cdef dict structure(self):
        found = {}
        for number, tag in enumerate(self.tag_names):
            found[tag] = self.tag_weights[number]
        for key in self.pair_order:
            feature = f"{self.tag_names[key >> 32]}>{self.tag_names[key & 0xFFFFFFFF]}"
            found[feature] = found.get(feature, 0.0) + self.pair_weights[key]
        return found

    cdef tuple result(self):
        """``read``'s and ``parse``'s answer."""
        if self.max_elements and self.elements > self.max_elements:
            return "", [], [], {}, self.elements, 0, 0, self.canonical_link
        self.end_run()
        self.flush()
        return (self.title, self.blocks, self.nodes, self.structure(), self.elements, self.block_chars[0],
                self.block_chars[1], self.canonical_link)


# -- a tree as events --------------------------------------------------------------------------------

def read(_Element root, double decay, long max_elements=0):
    """``(title, blocks, nodes, structure, elements, text_chars, link_chars, canonical_link)`` of the tree
    under ``root`` (any depth; inline
    elements do not split a block).  Block-level elements are numbered in document order (``nodes``);
    those inside node ``n`` are numbered ``n + 1`` to ``nodes[n].end - 1``.  ``elements``: how many the
    walk visited; with ``max_elements`` (above 0) it stops after that many, and the rest is unusable."""
    cdef _Walk walk = _Walk()
    walk.decay = decay
    walk.max_elements = max_elements
    _walk_tree(walk, root._c_node)
    return walk.result()


cdef void _walk_tree(_Walk walk, xmlNode* root) except *:
    """The tree's events in document order, as ``lxml.etree.iterwalk`` gives them: start and end of each
    element (comments and processing instructions too, as ``#node``), the text runs between them."""
    cdef xmlNode* node = root
    cdef xmlNode* child
    cdef Attributes attributes
    attributes.pairs = NULL
    while True:
        attributes.listed = node.properties if node.type == tree.XML_ELEMENT_NODE else NULL
        walk.start(walk.tag_id(node.name, None) if _is_plain_element(node) else walk.tag_id(NULL, _tag(node)),
                   &attributes)
        if walk.done:
            return
        child = NULL
        if node.type == tree.XML_ELEMENT_NODE:
            _text_run(walk, node.children)
            child = _first_visited(node.children)
        if child != NULL:
            node = child
            continue
        while True:
            walk.end()
            if node == root:
                return
            _text_run(walk, node.next)
            child = _first_visited(node.next)
            if child != NULL:
                node = child
                break
            node = node.parent


cdef inline bint _visited(xmlNode* node):
    """What ``iterwalk`` visits: elements, comments, processing instructions, entity references."""
    return node.type in (tree.XML_ELEMENT_NODE, tree.XML_COMMENT_NODE, tree.XML_PI_NODE, tree.XML_ENTITY_REF_NODE)


cdef inline xmlNode* _first_visited(xmlNode* node):
    while node != NULL and not _visited(node):
        node = node.next
    return node


cdef inline bint _is_plain_element(xmlNode* node):
    """An element without a namespace: its tag is its name (the pointer can stand for it)."""
    return node.type == tree.XML_ELEMENT_NODE and node.ns == NULL


cdef str _tag(xmlNode* element):
    """The tag as lxml names it (comments and processing instructions: ``#node``)."""
    if element.type != tree.XML_ELEMENT_NODE:
        return "#node"
    name = (<const char*>element.name).decode("utf-8")
    if element.ns != NULL and element.ns.href != NULL:
        return "{%s}%s" % ((<const char*>element.ns.href).decode("utf-8"), name)
    return name


cdef int _kind(str tag):
    local = tag.rpartition("}")[2]  # (a namespaced element's name)
    return (
        (INVISIBLE if tag in INVISIBLE_TAGS else 0) | (FURNITURE if tag in FURNITURE_TAGS else 0)
        | (BLOCK if tag in BLOCK_TAGS else 0) | (SEPARATOR if tag in SEPARATOR_TAGS else 0)
        | (EMPTY if tag in EMPTY_TAGS else 0) | (LINK if tag == "a" else 0)
        | (NEVER_NAMED if tag in ("a", "body") else 0) | (TITLE if tag == "title" else 0)
        | (NEVER_AD if tag in ("html", "body", "main", "article") else 0)
        | (HEAD_LINK if tag in ("link", "base") else 0) | (HEAD if local == "head" else 0)
    )


cdef inline bint _is_text(xmlNode* node):
    return node.type == tree.XML_TEXT_NODE or node.type == tree.XML_CDATA_SECTION_NODE


cdef inline bint _is_skipped(xmlNode* node):
    return node.type == tree.XML_XINCLUDE_START or node.type == tree.XML_XINCLUDE_END


cdef void _text_run(_Walk walk, xmlNode* node):
    """The text nodes from ``node`` on (lxml's ``.text`` or ``.tail``), up to the next other node."""
    while node != NULL:
        if _is_text(node):
            if node.content != NULL:
                walk.characters(<const char*>node.content, strlen(<const char*>node.content))
        elif not _is_skipped(node):
            return
        node = node.next


cdef inline bint _ascii_space(const char* text):
    while text[0]:
        if text[0] != 32 and text[0] != 10 and text[0] != 9 and text[0] != 13:  # space, newline, tab, return
            return False
        text += 1
    return True



# -- the parser as events ----------------------------------------------------------------------------

cdef extern from "libxml/parser.h":
    ctypedef struct xmlError
    ctypedef struct xmlParserCtxt
    ctypedef void (*startElementSAXFunc)(void* ctx, const xmlChar* name, const xmlChar** atts) noexcept
    ctypedef void (*endElementSAXFunc)(void* ctx, const xmlChar* name) noexcept
    ctypedef void (*charactersSAXFunc)(void* ctx, const xmlChar* ch, int length) noexcept
    ctypedef void (*xmlStructuredErrorFunc)(void* data, const xmlError* error) noexcept
    ctypedef struct xmlSAXHandler:
        startElementSAXFunc startElement
        endElementSAXFunc endElement
        charactersSAXFunc characters
        charactersSAXFunc cdataBlock
        charactersSAXFunc ignorableWhitespace
        xmlStructuredErrorFunc serror
        unsigned int initialized
    unsigned int XML_SAX2_MAGIC

cdef extern from "dlfcn.h":
    void* dlopen(const char* path, int flags)
    void* dlsym(void* handle, const char* name)
    int RTLD_NOW, RTLD_NOLOAD

ctypedef xmlParserCtxt* (*NewContext)(const xmlSAXHandler* sax, void* data) noexcept
ctypedef void* (*ReadMemory)(xmlParserCtxt* context, const char* text, int size, const char* url,
                             const char* encoding, int options) noexcept
ctypedef void (*ParserCall)(xmlParserCtxt* context) noexcept
ctypedef void (*FreeDocument)(void* document) noexcept

#: lxml's HTML parser options as ``pipelines.document`` sets them: recover, no network, compact (a tree's
#: text nodes: nothing here), huge (text over 10 MB, trees deeper than 256).
cdef int PARSE_OPTIONS = 1 | (1 << 11) | (1 << 16) | (1 << 19)
cdef NewContext _new_context = NULL
cdef ReadMemory _read_memory = NULL
cdef ParserCall _free_context = NULL
cdef ParserCall _stop_parser = NULL
cdef FreeDocument _free_document = NULL


def _link_parser():
    """Find libxml2's parser functions in the lxml that is loaded (its own libxml2, static or shared):
    the parse is then lxml's, without its tree.  False when they cannot be found (then ``parse`` is not
    used)."""
    global _new_context, _read_memory, _free_context, _stop_parser, _free_document
    import lxml.etree

    handle = dlopen(lxml.etree.__file__.encode(), RTLD_NOW | RTLD_NOLOAD)
    if handle == NULL:
        return False
    _new_context = <NewContext>dlsym(handle, "htmlNewSAXParserCtxt")
    _read_memory = <ReadMemory>dlsym(handle, "htmlCtxtReadMemory")
    _free_context = <ParserCall>dlsym(handle, "htmlFreeParserCtxt")
    _stop_parser = <ParserCall>dlsym(handle, "xmlStopParser")
    _free_document = <FreeDocument>dlsym(handle, "xmlFreeDoc")
    return not (_new_context == NULL or _read_memory == NULL or _free_context == NULL or _stop_parser == NULL
                or _free_document == NULL)


#: Can ``parse`` run (libxml2's parser found in the loaded lxml)?
PARSER_LINKED = _link_parser()


def parse(bytes utf8, double decay, long max_elements=0):
    """What ``read`` gives of the tree ``lxml.etree.fromstring(utf8)`` would build with
    ``pipelines.document``'s parser (UTF-8 bytes), the parser's events walked as they come, without a
    tree; None when that tree would have no root (no element at all)."""
    if not PARSER_LINKED:
        raise RuntimeError("libxml2's parser was not found in lxml (treewalk.PARSER_LINKED is False)")
    cdef _Walk walk = _Walk()
    walk.decay = decay
    walk.max_elements = max_elements
    cdef xmlSAXHandler handler
    memset(&handler, 0, sizeof(handler))
    handler.startElement = _parser_start
    handler.endElement = _parser_end
    handler.characters = _parser_characters
    handler.cdataBlock = _parser_characters  # (lxml turns CDATA off: script text comes as characters)
    handler.ignorableWhitespace = _parser_characters  # (lxml keeps blanks: never called)
    handler.serror = _parser_error
    handler.initialized = XML_SAX2_MAGIC
    cdef xmlParserCtxt* context = _new_context(&handler, <void*>walk)
    if context == NULL:
        raise MemoryError()
    walk.parser = context
    try:
        document = _read_memory(context, utf8, len(utf8), NULL, "utf-8", PARSE_OPTIONS)
        if document != NULL:  # (no start of document handler: none is built)
            _free_document(document)
    finally:
        _free_context(context)
        walk.parser = NULL
    if walk.error is not None:
        raise walk.error
    if walk.elements == 0:
        return None
    return walk.result()


cdef void _parser_start(void* data, const xmlChar* name, const xmlChar** pairs) noexcept:
    cdef _Walk walk = <_Walk>data
    cdef Attributes attributes
    if walk.done:
        return
    attributes.listed = NULL
    attributes.pairs = pairs
    try:
        walk.start(walk.tag_id(name, None), &attributes)
    except BaseException as error:
        walk.fail(error)
    if walk.done:
        _stop_parser(<xmlParserCtxt*>walk.parser)


cdef void _parser_end(void* data, const xmlChar* name) noexcept:
    cdef _Walk walk = <_Walk>data
    if walk.done:
        return
    try:
        walk.end()
    except BaseException as error:
        walk.fail(error)
    if walk.done:
        _stop_parser(<xmlParserCtxt*>walk.parser)


cdef void _parser_characters(void* data, const xmlChar* text, int length) noexcept:
    cdef _Walk walk = <_Walk>data
    if not walk.done:
        walk.characters(<const char*>text, length)


cdef void _parser_error(void* data, const xmlError* error) noexcept:
    """The parser's complaints about the HTML: lxml keeps them in a log, the walk needs none."""


cdef const char* _NO_VALUE = ""


cdef inline bint _next_attribute(Attributes* reader, const char** name, const char** value):
    """The next attribute without a namespace: its name and value (``""`` for an attribute without one)."""
    cdef xmlAttr* attribute
    while reader.listed != NULL:
        attribute = reader.listed
        reader.listed = attribute.next
        if attribute.ns == NULL:
            name[0] = <const char*>attribute.name
            value[0] = _NO_VALUE  # or its one text node, as the HTML parser leaves it
            if attribute.children != NULL and attribute.children.content != NULL:
                value[0] = <const char*>attribute.children.content
            return True
    if reader.pairs != NULL and reader.pairs[0] != NULL:
        name[0] = <const char*>reader.pairs[0]
        value[0] = <const char*>reader.pairs[1] if reader.pairs[1] != NULL else _NO_VALUE
        reader.pairs += 2
        return True
    return False


cdef void _read_names(Attributes* attributes, Names* names):
    memset(names, 0, sizeof(Names))
    cdef Attributes reader = attributes[0]
    cdef const char* name
    cdef const char* value
    while _next_attribute(&reader, &name, &value):
        if strcmp(name, "class") == 0:
            names.class_ = value
        elif strcmp(name, "id") == 0:
            names.id_ = value
        elif strcmp(name, "role") == 0:
            names.role = value
        elif strcmp(name, "style") == 0:
            names.style = value
        elif strcmp(name, "aria-hidden") == 0:
            names.aria_hidden = value
        elif strcmp(name, "hidden") == 0:
            names.hidden = True
        elif strcmp(name, "aria-label") == 0:
            names.aria_label = value
        elif strncmp(name, "data-ad", 7) == 0 and not names.ad_data:  # the pattern's names all start so
            names.ad_data = AD_DATA.match(_value(name + 5)) is not None


cdef inline object _value(const char* value):
    return None if value == NULL else PyUnicode_DecodeUTF8(value, strlen(value), NULL)


cdef bint _is_hidden(Names* names) except -1:
    """Hidden by the ``hidden`` attribute, ``aria-hidden`` or an inline style (what HTML alone tells)."""
    if names.hidden or (names.aria_hidden != NULL and strcmp(names.aria_hidden, "true") == 0):
        return True
    if names.style == NULL or (strstr(names.style, "none") == NULL and strstr(names.style, "hidden") == NULL):
        return False
    return _HIDDEN_STYLE.search(_value(names.style)) is not None


cdef enum:  # what an element's names say (``_names_answer``)
    NAMED_FURNITURE = 1
    NAMED_AD = 2


cdef int _names_answer(Names* names) except -1:
    """Furniture named by class, id or role (and not also as the main column), and an advertisement
    named by class, id, role, ``aria-label`` or a ``data-`` attribute's name: one cached answer."""
    cdef const char* label = names.aria_label if names.aria_label != NULL and _may_say_ad(names.aria_label) else NULL
    if names.class_ == NULL and names.id_ == NULL and names.role == NULL and label == NULL:
        return NAMED_AD if names.ad_data else 0
    cdef string key  # "class id role label", the text searched
    cdef const char* values[4]
    values[0], values[1], values[2], values[3] = names.class_, names.id_, names.role, label
    for i in range(4):
        if values[i] != NULL:
            key.append(values[i])
        key.push_back(b" ")
    cdef int answer
    found = _answers.find(key)
    if found != _answers.end():
        return deref(found).second | (NAMED_AD if names.ad_data else 0)
    found = _older_answers.find(key)
    if found != _older_answers.end():
        answer = deref(found).second
    else:
        answer = (NAMED_FURNITURE if _is_named_furniture(names) else 0) | (NAMED_AD if _names_ad(key) else 0)
    if _answers.size() >= MAX_ANSWERS:  # the recent answers become the older ones, and the oldest go
        _older_answers.swap(_answers)
        _answers.clear()
    _answers[key] = answer
    return answer | (NAMED_AD if names.ad_data else 0)


cdef bint _may_say_ad(const char* label):
    """Could ``AD_NAMES`` find an ad in this ``aria-label``?  Only if it holds "ad", "pro" or "spo" (in any
    case: every word of the pattern does); labels are often one of a kind ("Share this story"), not worth a
    search each."""
    cdef size_t i = 0
    cdef char a, b
    while label[i] != 0 and label[i + 1] != 0:
        a, b = _lower(label[i]), _lower(label[i + 1])
        if a == b"a" and b == b"d":
            return True
        if (a == b"p" and b == b"r" or a == b"s" and b == b"p") and _lower(label[i + 2]) == b"o":
            return True
        i += 1
    return False


cdef inline char _lower(char c):
    return c + 32 if b"A" <= c <= b"Z" else c


#: Answers of ``_names_answer`` by its text: a site repeats its names on every page.  Two generations of at
#: most ``MAX_ANSWERS`` each: an answer found in the older one is kept in the recent one, so the names a crawl
#: keeps meeting stay when the recent ones fill up (a crawl of many sites meets ~100 new names a page).
cdef unordered_map[string, int] _answers, _older_answers
cdef size_t MAX_ANSWERS = 16384


cdef bint _is_named_furniture(Names* names) except -1:
    """Named as menu, sidebar, comments... by class, id or role, and not also as the main column."""
    if names.role != NULL and _value(names.role) in UNLIKELY_ROLES:
        return True
    if names.class_ == NULL and names.id_ == NULL:
        return False
    cdef string lowered  # "class id"
    cdef Words unlikely = UNLIKELY_NAMES, maybe_content = MAYBE_CONTENT_NAMES
    if (_append_lowered(&lowered, names.class_) and _append_lowered(&lowered, b" ")
            and _append_lowered(&lowered, names.id_)):
        return unlikely.in_lowered(lowered.c_str()) and not maybe_content.in_lowered(lowered.c_str())
    return furniture_names(f"{_value(names.class_) or ''} {_value(names.id_) or ''}")


def furniture_names(str names):
    """Do these names ("class id") name furniture (and not the main column)?"""
    return UNLIKELY_NAMES.search(names) and not MAYBE_CONTENT_NAMES.search(names)


cdef bint _names_ad(const string& key) except -1:
    """Does ``AD_NAMES`` find an advertisement in ``key``?  Searched only when it holds one of ``AD_HINTS``."""
    cdef string lowered
    cdef Words hints = AD_HINTS
    if _append_lowered(&lowered, key.c_str()) and not hints.in_lowered(lowered.c_str()):
        return False
    return AD_NAMES.search(PyUnicode_DecodeUTF8(key.data(), key.size(), NULL)) is not None


cdef bint _append_lowered(string* into, const char* text) noexcept:
    """Append ``text`` in lower case (NULL: nothing); False, and stop, at a byte outside ASCII."""
    if text == NULL:
        return True
    cdef size_t i = 0
    while text[i] != 0:
        if <unsigned char>text[i] >= 128:
            return False
        into.push_back(_lower(text[i]))
        i += 1
    return True


# The main content's choice reads the walk's blocks and elements as C structures: it is compiled in this
# module, which owns their types (the package's second name holds a copy of each compiled module, and a
# copy's types are not the original's).
include "readability.pxi"
