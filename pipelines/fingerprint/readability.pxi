# Where a page's main content is: Mozilla Readability's scores of the block-level elements, compiled
# (included in treewalk.pyx, which says why).
#
# Every block of at least ``MIN_SCORED_CHARS`` characters scores 1, plus its
# commas, plus one per 100 characters (at most 3), to each of the five elements
# above it, divided by ``SCORE_DIVIDERS``; an element starts from a score set by
# its tag and name, and ends multiplied by the share of its text that is not
# links.  The best one is taken, or the element above it when several good ones
# share it or when it scores higher; then the siblings that score at least a
# fifth of it, and sibling paragraphs of text.
#
# It was Python (``PageText.main_content``), a tenth of a page's fingerprint; the
# same doubles are summed and multiplied in the same order, and ties go to the
# element scored first, as a ``dict`` kept them (``tests/test_scheme.py`` holds
# the digests of every shared page).

#: Names that make an element a likelier or an unlikelier home of the main content (Readability's): its
#: ``NEGATIVE_NAMES`` are these words, or the word "hid" alone (``^hid$| hid$| hid |^hid ``).
POSITIVE_NAMES = Words("article|body|content|entry|hentry|h-entry|main|page|pagination|post|text|blog|story")
NEGATIVE_NAMES = Words(
    "-ad-|hidden|banner|combx|comment|com-|contact|footer|gdpr|masthead|media|meta|outbrain|promo|related"
    "|scroll|share|shoutbox|sidebar|skyscraper|sponsor|shopping|tags|widget"
)
HID_ALONE = re.compile(r"^hid$| hid$| hid |^hid ", re.IGNORECASE)
HID = Words("hid")  # the names worth searching for it
#: How a candidate's tag sets its starting score (Readability's).
TAG_SCORES = {
    "div": 5, "pre": 3, "td": 3, "blockquote": 3, "address": -3, "ol": -3, "ul": -3, "dl": -3, "dd": -3,
    "dt": -3, "li": -3, "form": -3, "h1": -5, "h2": -5, "h3": -5, "h4": -5, "h5": -5, "h6": -5, "th": -5,
}
#: A block scores the elements above it to this many levels, divided by these.
SCORE_DIVIDERS = (1, 2, 6, 9, 12)
cdef int[5] _DIVIDERS = SCORE_DIVIDERS
#: Blocks with fewer characters (links included) score nothing.
MIN_SCORED_CHARS = 25
cdef double _UNSCORED = -1e9  # the score of an element no block scored, beside a sibling's


cdef class _Scores:
    """The elements' scores, and the order they were first scored in (ties go to the first)."""

    cdef list nodes
    cdef vector[double] score
    cdef vector[bint] scored
    cdef vector[int] order

    def __cinit__(self, list nodes):
        self.nodes = nodes
        self.score.resize(len(nodes))
        self.scored.resize(len(nodes), False)

    cdef void add(self, int node, double points):
        if not self.scored[node]:
            self.start(node)
        self.score[node] += points

    cdef void start(self, int node):
        cdef Node element = self.nodes[node]
        self.scored[node] = True
        self.order.push_back(node)
        self.score[node] = TAG_SCORES.get(element.tag, 0) + _name_weight(element.class_, element.id_)

    cdef double get(self, int node):
        return self.score[node] if self.scored[node] else _UNSCORED

    cdef Node at(self, int node):
        return self.nodes[node]

    cdef double link_density(self, int node):
        cdef Node element = self.nodes[node]
        cdef long total = element.chars + element.link_chars
        return <double>element.link_chars / total if total else 0.0


def main_content(list blocks, list nodes, bint read_named) -> list:
    """The elements (numbers in ``nodes``) holding the main content of the page read into ``blocks`` and
    ``nodes``; with ``read_named``, blocks inside furniture named by class, id or role score too."""
    cdef _Scores scores = _Scores(nodes)
    cdef Block block
    cdef long length, points
    cdef int node, level
    for block in blocks:
        length = len(block.text) + len(block.link_text)
        if length < MIN_SCORED_CHARS or block.ad >= 0 or (block.named_furniture >= 0 and not read_named):
            continue
        points = 1 + _commas(block.text) + _commas(block.link_text) + min(length // 100, 3)
        node = scores.at(block.owner).parent if block.leaf else block.owner
        for level in range(5):
            if node < 0:
                break
            scores.add(node, <double>points / _DIVIDERS[level])
            node = scores.at(node).parent
    if scores.order.empty():
        return []
    cdef int top = scores.order[0]
    for node in scores.order:
        scores.score[node] *= 1 - scores.link_density(node)
        if scores.score[node] > scores.score[top]:
            top = node
    top = _climb(top, scores)
    if not scores.scored[top]:  # an element above the candidates
        scores.start(top)
    return _with_siblings(top, scores)


cdef int _climb(int top, _Scores scores):
    """Readability's steps up from the best element: to an element above it that at least three
    other good candidates share, else to the first one above it that scores higher."""
    cdef double best = scores.score[top], last = best
    cdef vector[int] above = _ancestors(top, scores)
    cdef int node
    good = sorted([(scores.score[node], first, node) for first, node in enumerate(scores.order)
                   if node != top and scores.score[node] >= 0.75 * best])  # ties: the first scored first
    others = good[max(0, len(good) - 4):]  # the best four
    if len(others) >= 3:
        shared_by = [set(_ancestors(node, scores)) for _, _, node in others]
        for node in above:
            if sum(node in ancestors for ancestors in shared_by) >= 3:
                return node
    for node in above:
        if not scores.scored[node]:
            continue
        if scores.score[node] < best / 3:
            break
        if scores.score[node] > last:
            return node
        last = scores.score[node]
    return top


cdef vector[int] _ancestors(int node, _Scores scores):
    """The block-level elements above ``node``, nearest first, below ``body``."""
    cdef vector[int] found
    node = scores.at(node).parent
    while node >= 0 and scores.at(node).tag not in ("body", "html"):
        found.push_back(node)
        node = scores.at(node).parent
    return found


cdef list _with_siblings(int top, _Scores scores):
    """``top`` and the siblings that belong with it: those scoring at least a fifth of it (its class
    counting for a fifth), and sibling paragraphs of text with few links; never an advertisement."""
    cdef int parent = scores.at(top).parent
    cdef double best = scores.score[top], bonus
    cdef Node node
    cdef int number
    name = scores.at(top).class_
    chosen = []
    for number in range(parent + 1, scores.at(parent).end if parent >= 0 else len(scores.nodes)):
        node = scores.at(number)
        if node.parent != parent or node.ad == number:
            continue  # not a sibling, or an advertisement
        bonus = 0.2 * best if name and node.class_ == name else 0.0
        if (
            number == top
            or scores.get(number) + bonus >= max(10.0, 0.2 * best)
            or (node.tag == "p" and node.chars + node.link_chars > 80 and scores.link_density(number) < 0.25)
        ):
            chosen.append(number)
    return chosen


cdef long _commas(str text):
    """Commas in ``text``, in the scripts Readability knows."""
    cdef long found = 0
    cdef Py_UCS4 character
    for character in text:
        if character in "\u002c\u060c\ufe50\ufe10\ufe11\u2e41\u2e34\u2e32\uff0c\u3001":
            found += 1
    return found


@functools.lru_cache(maxsize=4096)
def _name_weight(class_: str | None, id_: str | None) -> int:
    """+25 for each of class and id that names the main content's likely home, -25 for each that names furniture."""
    return sum(25 * (POSITIVE_NAMES.search(name) - negative_name(name)) for name in (class_, id_) if name)


def negative_name(name: str) -> bool:
    """Does this class or id make its element an unlikelier home of the main content (``NEGATIVE_NAMES``)?"""
    return NEGATIVE_NAMES.search(name) or (HID.search(name) and HID_ALONE.search(name) is not None)
