# cython: language_level=3, boundscheck=False, wraparound=False
# distutils: language = c++
"""One walk over a parsed page: its visible text as blocks, and its structure features.

Compiled (Cython over lxml's C API): the walk reads libxml2's nodes directly,
where a Python walk paid for an element object, its tag and its attributes at
every element (60 % of the fingerprint's time).  What it reads is exactly what
``lxml``'s ``iterwalk`` with ``.text``, ``.tail`` and ``.get()`` gives, so the
fingerprints are those of the Python walk it replaced (``tests/test_scheme.py``
holds the digests of every shared page).

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

import re

from cpython.unicode cimport PyUnicode_DecodeUTF8
from cython.operator cimport dereference as deref
from libc.math cimport pow
from libc.string cimport strcmp, strlen, strncmp, strstr
from libcpp.string cimport string
from libcpp.unordered_map cimport unordered_map
from libcpp.vector cimport vector
from lxml.includes cimport tree
from lxml.includes.etreepublic cimport _Element, import_lxml__etree
from lxml.includes.tree cimport xmlAttr, xmlNode

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


#: Class or id of page furniture, and the exceptions (Mozilla Readability's lists).
UNLIKELY_NAMES = CaselessPattern(
    r"-ad-|ai2html|banner|breadcrumbs|combx|comment|community|cover-wrap|disqus|extra|footer|gdpr"
    r"|header|legends|menu|related|remark|replies|rss|shoutbox|sidebar|skyscraper|social|sponsor"
    r"|supplemental|ad-break|agegate|pagination|pager|popup|yom-remote"
)
MAYBE_CONTENT_NAMES = CaselessPattern(r"and|article|body|column|content|main|mathjax|shadow")
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
    xmlNode* element
    int number


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
    """The state of one walk; ``read`` runs it."""

    cdef xmlNode* root
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

    def __cinit__(self):
        self.blocks, self.nodes, self.text, self.links, self.prose = [], [], [], [], []
        self.title = ""
        self.tag_names, self.tag_ids = [], {}
        self.outside = Node.__new__(Node)
        self.outside.parent = self.outside.tag_furniture = self.outside.named_furniture = self.outside.ad = -1
        self.outside.leaf = True

    cdef int tag_id(self, xmlNode* element) except -1:
        """The tag's id, and its kind worked out on its first element in this walk."""
        found = self.ids_by_pointer.find(<size_t>element.name)
        if found != self.ids_by_pointer.end():
            return deref(found).second
        tag = _tag(element)
        number = self.tag_ids.get(tag)
        if number is None:
            number = len(self.tag_names)
            self.tag_ids[tag] = number
            self.tag_names.append(tag)
            self.tag_kinds.push_back(_kind(tag))
            self.tag_weights.push_back(0.0)
        if element.type == tree.XML_ELEMENT_NODE:  # names of other nodes are not per tag
            self.ids_by_pointer[<size_t>element.name] = number
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

    cdef void add_run(self, xmlNode* first) except *:
        """Adds the text nodes from ``first`` on (an element's text, or its tail) unless only whitespace."""
        piece = _text_run(first)
        if piece and not piece.isspace():
            self.add(piece)

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

    cdef void open_block(self, xmlNode* element, str tag, int kind, bint named, bint ad, Names* names) except *:
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
        self.open_blocks.push_back(Open(element, number))

    cdef void close_block(self) except *:
        self.flush()
        cdef Node node = <Node>self.nodes[self.open_blocks.back().number]
        self.open_blocks.pop_back()
        node.end = len(self.nodes)
        node.chars = self.counts[0] - node.chars
        node.link_chars = self.counts[1] - node.link_chars

    cdef void start(self, xmlNode* element) except *:
        cdef int tag = self.tag_id(element)
        cdef int kind = self.tag_kinds[tag]
        cdef Names names
        self.weigh(tag)
        if kind & EMPTY:  # no text of its own: only its tail counts
            if kind & HEAD_LINK and self.canonical_link is None:
                self.read_head_link(element)
            return
        if self.invisible or kind & INVISIBLE:
            self.invisible += 1
            return
        _read_names(element, &names)
        if element.properties != NULL and _is_hidden(&names):
            self.invisible += 1
            return
        if kind & TITLE:  # shown in the tab, not in the page: never a block
            if not self.title:
                self.title = _all_text(element).strip()
            self.invisible += 1
            return
        answer = _names_answer(&names) if element.properties != NULL and not kind & NEVER_NAMED else 0
        named = answer & NAMED_FURNITURE
        ad = answer & NAMED_AD and not kind & NEVER_AD
        if ad:
            kind |= FURNITURE  # as nav or aside: never read inside the main content, however leniently
        if kind & SEPARATOR and not ad:
            self.flush()
        elif named or ad or kind & BLOCK or element == self.root:
            self.open_block(element, self.tag_names[tag], kind, named, ad, &names)
        if kind & LINK:
            self.in_link += 1
        self.add_run(element.children)

    cdef void read_head_link(self, xmlNode* element) except *:
        """A ``<base href>`` or a ``<link rel="canonical" href>`` inside ``<head>`` (where browsers and search
        engines read them): the first of each, the base only when it comes before the link."""
        if not _in_head(element):
            return
        cdef const char* href = NULL
        cdef const char* rel = NULL
        cdef xmlAttr* attribute = element.properties
        while attribute != NULL:
            if attribute.ns == NULL and strcmp(<const char*>attribute.name, "href") == 0:
                href = _attribute_value(attribute)
            elif attribute.ns == NULL and strcmp(<const char*>attribute.name, "rel") == 0:
                rel = _attribute_value(attribute)
            attribute = attribute.next
        if href == NULL:
            return
        if strcmp(<const char*>element.name, "base") == 0:
            if self.base_href is None:
                self.base_href = _value(href).strip() or None
        elif rel != NULL and strlen(rel) >= 9 and "canonical" in _value(rel).lower().split():
            if value := _value(href).strip():
                self.canonical_link = (self.base_href, value)

    cdef void end(self, xmlNode* element) except *:
        cdef int kind = self.tag_kinds[self.open_tags.back()]
        self.open_tags.pop_back()
        if kind & EMPTY:
            if not self.invisible:
                self.add_run(element.next)
            return
        if self.invisible:
            self.invisible -= 1
            if self.invisible:
                return
        else:
            if self.open_blocks.back().element == element:
                self.close_block()
            if kind & LINK:
                self.in_link -= 1
        if element != self.root:
            self.add_run(element.next)

    cdef void walk(self) except *:
        """Start and end events in document order, as ``lxml.etree.iterwalk`` gives them."""
        cdef xmlNode* node = self.root
        cdef xmlNode* child
        while True:
            self.elements += 1
            if self.max_elements and self.elements > self.max_elements:
                return  # the caller sees elements > max_elements: a page too big to read
            self.start(node)
            child = _first_visited(node.children) if node.type == tree.XML_ELEMENT_NODE else NULL
            if child != NULL:
                node = child
                continue
            while True:
                self.end(node)
                if node == self.root:
                    return
                child = _first_visited(node.next)
                if child != NULL:
                    node = child
                    break
                node = node.parent

    cdef dict structure(self):
        found = {}
        for number, tag in enumerate(self.tag_names):
            found[tag] = self.tag_weights[number]
        for key in self.pair_order:
            feature = f"{self.tag_names[key >> 32]}>{self.tag_names[key & 0xFFFFFFFF]}"
            found[feature] = found.get(feature, 0.0) + self.pair_weights[key]
        return found


def read(_Element root, double decay, long max_elements=0):
    """``(title, blocks, nodes, structure, elements, text_chars, link_chars, canonical_link)`` of the tree
    under ``root`` (any depth; inline
    elements do not split a block).  Block-level elements are numbered in document order (``nodes``);
    those inside node ``n`` are numbered ``n + 1`` to ``nodes[n].end - 1``.  ``elements``: how many the
    walk visited; with ``max_elements`` (above 0) it stops after that many, and the rest is unusable."""
    cdef _Walk walk = _Walk()
    walk.root = root._c_node
    walk.decay = decay
    walk.max_elements = max_elements
    walk.open_blocks.push_back(Open(NULL, -1))  # outside any block-level element
    walk.walk()
    if max_elements and walk.elements > max_elements:
        return "", [], [], {}, walk.elements, 0, 0, walk.canonical_link
    walk.flush()
    return (walk.title, walk.blocks, walk.nodes, walk.structure(), walk.elements, walk.block_chars[0],
            walk.block_chars[1], walk.canonical_link)


cdef inline bint _visited(xmlNode* node):
    """What ``iterwalk`` visits: elements, comments, processing instructions, entity references."""
    return node.type in (tree.XML_ELEMENT_NODE, tree.XML_COMMENT_NODE, tree.XML_PI_NODE, tree.XML_ENTITY_REF_NODE)


cdef inline xmlNode* _first_visited(xmlNode* node):
    while node != NULL and not _visited(node):
        node = node.next
    return node


cdef str _tag(xmlNode* element):
    """The tag as lxml names it (comments and processing instructions: ``#node``)."""
    if element.type != tree.XML_ELEMENT_NODE:
        return "#node"
    name = (<const char*>element.name).decode("utf-8")
    if element.ns != NULL and element.ns.href != NULL:
        return "{%s}%s" % ((<const char*>element.ns.href).decode("utf-8"), name)
    return name


cdef int _kind(str tag):
    return (
        (INVISIBLE if tag in INVISIBLE_TAGS else 0) | (FURNITURE if tag in FURNITURE_TAGS else 0)
        | (BLOCK if tag in BLOCK_TAGS else 0) | (SEPARATOR if tag in SEPARATOR_TAGS else 0)
        | (EMPTY if tag in EMPTY_TAGS else 0) | (LINK if tag == "a" else 0)
        | (NEVER_NAMED if tag in ("a", "body") else 0) | (TITLE if tag == "title" else 0)
        | (NEVER_AD if tag in ("html", "body", "main", "article") else 0)
        | (HEAD_LINK if tag in ("link", "base") else 0)
    )


cdef bint _in_head(xmlNode* element):
    """Is the element inside a ``<head>``?"""
    cdef xmlNode* node = element.parent
    while node != NULL and node.type == tree.XML_ELEMENT_NODE:
        if strcmp(<const char*>node.name, "head") == 0:
            return True
        node = node.parent
    return False


cdef inline bint _is_text(xmlNode* node):
    return node.type == tree.XML_TEXT_NODE or node.type == tree.XML_CDATA_SECTION_NODE


cdef inline bint _is_skipped(xmlNode* node):
    return node.type == tree.XML_XINCLUDE_START or node.type == tree.XML_XINCLUDE_END


cdef object _text_run(xmlNode* node):
    """The text of the text nodes from ``node`` on, as lxml's ``.text`` / ``.tail`` (None: none).
    Runs of ASCII whitespace (most of them: indentation) come back as ``""``, never decoded."""
    cdef xmlNode* first = _next_text(node)
    if first == NULL:
        return None
    cdef xmlNode* second = _next_text(first.next)
    cdef const char* content = _content(first)
    if second == NULL:  # one node, nearly always: its text as it is
        return "" if _ascii_space(content) else PyUnicode_DecodeUTF8(content, strlen(content), NULL)
    cdef bytes joined = content
    while second != NULL:
        joined += _content(second)
        second = _next_text(second.next)
    return "" if _ascii_space(joined) else PyUnicode_DecodeUTF8(joined, len(joined), NULL)


cdef inline xmlNode* _next_text(xmlNode* node):
    """``node`` if it is a text node, past lxml's skipped nodes; else NULL (the run has ended)."""
    while node != NULL and _is_skipped(node):
        node = node.next
    return node if node != NULL and _is_text(node) else NULL


cdef inline const char* _content(xmlNode* node):
    if node.content == NULL:
        return b""
    return <const char*>node.content


cdef inline bint _ascii_space(const char* text):
    while text[0]:
        if text[0] != 32 and text[0] != 10 and text[0] != 9 and text[0] != 13:  # space, newline, tab, return
            return False
        text += 1
    return True


cdef str _all_text(xmlNode* element):
    """Every text inside ``element``, as ``"".join(element.itertext())``."""
    parts = []
    cdef xmlNode* node = element.children
    while node != NULL and node != element:
        if _is_text(node):
            parts.append(PyUnicode_DecodeUTF8(<const char*>node.content, strlen(<const char*>node.content), NULL)
                         if node.content != NULL else "")
        if node.type == tree.XML_ELEMENT_NODE and node.children != NULL:
            node = node.children
            continue
        while node.next == NULL and node.parent != element:
            node = node.parent
        node = node.next
    return "".join(parts)


cdef void _read_names(xmlNode* element, Names* names):
    names.class_ = names.id_ = names.role = names.style = names.aria_hidden = names.aria_label = NULL
    names.hidden = names.ad_data = False
    cdef xmlAttr* attribute = element.properties
    cdef const char* name
    while attribute != NULL:
        if attribute.ns == NULL:
            name = <const char*>attribute.name
            if strcmp(name, "class") == 0:
                names.class_ = _attribute_value(attribute)
            elif strcmp(name, "id") == 0:
                names.id_ = _attribute_value(attribute)
            elif strcmp(name, "role") == 0:
                names.role = _attribute_value(attribute)
            elif strcmp(name, "style") == 0:
                names.style = _attribute_value(attribute)
            elif strcmp(name, "aria-hidden") == 0:
                names.aria_hidden = _attribute_value(attribute)
            elif strcmp(name, "hidden") == 0:
                names.hidden = True
            elif strcmp(name, "aria-label") == 0:
                names.aria_label = _attribute_value(attribute)
            elif strncmp(name, "data-ad", 7) == 0 and not names.ad_data:  # the pattern's names all start so
                names.ad_data = AD_DATA.match(_value(name + 5)) is not None
        attribute = attribute.next


cdef inline const char* _attribute_value(xmlAttr* attribute):
    """An attribute's value as the HTML parser leaves it: one text node, or none (``""``)."""
    if attribute.children == NULL or attribute.children.content == NULL:
        return ""
    return <const char*>attribute.children.content


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
        answer = (NAMED_FURNITURE if _is_named_furniture(names) else 0) | (
            NAMED_AD if AD_NAMES.search(PyUnicode_DecodeUTF8(key.data(), key.size(), NULL)) is not None else 0)
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
    return furniture_names(f"{_value(names.class_) or ''} {_value(names.id_) or ''}")


def furniture_names(str names):
    """Do these names ("class id") name furniture (and not the main column)?"""
    return UNLIKELY_NAMES.search(names) is not None and MAYBE_CONTENT_NAMES.search(names) is None
