"""The labelled page pairs of ``bench/quality/detection.py``, read from ``../shared/data``.

Every pair says whether its two pages are the same content (``duplicate``),
which set it comes from and its language group.  Pages are kept as HTML bytes
(Webis pairs are text: each line becomes a ``<p>``).  Realistic changes are
applied here to real pages, deterministically (fixed seeds).
"""

from __future__ import annotations

import gzip
import html as html_escape
import itertools
import json
import random
import re
import tarfile
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import lxml.html

from bench.common import html_tree, language_of, visible_text
from crawler.trap_site import MONTH_NAMES

#: Readability's hand-made fixtures: not real pages, left out (see shared/data/README.md).
READABILITY_FIXTURES = {
    "003-metadata-preferred",
    "004-metadata-space-separated-properties",
    "base-url",
    "base-url-base-element",
    "base-url-base-element-relative",
    "basic-tags-cleaning",
    "comment-inside-script-parsing",
    "embedded-videos",
    "hidden-nodes",
    "metadata-content-missing",
    "missing-paragraphs",
    "normalize-spaces",
    "parsely-metadata",
    "remove-extra-brs",
    "remove-extra-paragraphs",
    "remove-script-tags",
    "replace-brs",
    "replace-font-tags",
    "rtl-1",
    "rtl-2",
    "rtl-3",
    "rtl-4",
    "social-buttons",
    "style-tags-removal",
    "svg-parsing",
    "title-and-h1-discrepancy",
    "title-en-dash",
    "visibility-hidden",
}
#: Same-site pairs that turn out to be one page saved twice: positives, with the reason.
SAME_ARTICLE_TWICE = {
    ("newspaper/coolhunting.com1.html", "newspaper/coolhunting.com2.html"): "byte-identical files",
    ("gne/thepaper/2.html", "gne/thepaper/4.html"): "same title and article text",
    ("gerapy/detail/netease_news1.html", "gerapy/detail/sample.html"): "byte-identical files",
    ("gerapy/list/netease_international_news.html", "gerapy/list/sample.html"): "byte-identical files",
}
#: Pool pairs whose paragraph overlap says "copy" but that were read and are not one page.
NOT_COPIES = {
    (
        "aeb/042bb7b5fedab6eac7db576522b89b93904c237d344bcbe14a6a5ab7f7335856.html.gz",
        "aeb/7ab16ade32386ece353b8d31fc3bb7e660189efd5bf3c8549aaba101ad3f5ef5.html.gz",
    ): "two WSJ paywall pages: the same subscription text around different article teasers",
}
#: Elements whose text is a paragraph, for the truth by paragraph overlap (not table cells:
#: sites lay out navigation with them); paragraphs shorter than 40 characters are labels.
PARAGRAPH_XPATH = "//p | //li | //dd | //pre | //blockquote | //div[@class='para']"
MIN_PARAGRAPH_CHARS = 40


@dataclass(frozen=True)
class Pair:
    a: str  # page ids
    b: str
    duplicate: bool
    group: str  # "same-site", "unrelated", "webis", "positive", "change:<kind>"
    source: str  # data set
    same_address: bool = False  # the second page was met at the first one's address (a re-crawl)
    #: what the real sites' judge says of the pair where it is known by construction (a chrome swap: the same
    #: body); else the judge reads the two pages (``bench/quality/detection.py``)
    judge: float | None = None


class Pages:
    """Page id -> HTML bytes, filled by the loaders below."""

    def __init__(self) -> None:
        self.html: dict[str, bytes] = {}
        self.notes: list[str] = []  # what the loaders decided about the truth, for the report

    def add(self, page_id: str, html: bytes) -> str:
        self.html[page_id] = html
        return page_id


def text_as_html(text: str) -> bytes:
    paragraphs = "".join(f"<p>{html_escape.escape(line)}</p>" for line in text.split("\n") if line.strip())
    return f"<html><body>{paragraphs}</body></html>".encode()


def all_pairs(ids: list[str], group: str, source: str, positives: dict) -> Iterator[Pair]:
    for a, b in itertools.combinations(ids, 2):
        reason = positives.get((a, b)) or positives.get((b, a))
        yield Pair(a, b, reason is not None, "positive" if reason else group, source)


def site_groups(data: Path) -> Iterator[tuple[str, str, list[Path]]]:
    """(source, language, pages) for each site of newspaper (its pair of articles) and of gne."""
    html_dir = data / "newspaper-test-pages" / "tests" / "data" / "html"
    for first in sorted(html_dir.glob("*1.html")):
        second = first.with_name(first.name[:-6] + "2.html")
        if second.exists():
            yield "newspaper", "en+", [first, second]
    for site in sorted((data / "gne-chinese-news" / "tests").iterdir()):
        yield "gne", "zh", sorted(site.glob("*.html"))


def _group_pages(source: str, group: list[Path]) -> dict[str, bytes]:
    """Page id (``newspaper/<file>``, ``gne/<site>/<file>``) -> HTML."""
    return {
        f"newspaper/{p.name}" if source == "newspaper" else f"gne/{p.parent.name}/{p.name}": p.read_bytes()
        for p in group
    }


def same_site(data: Path, pages: Pages) -> Iterator[Pair]:
    """Different articles of one site: newspaper pairs, gne sites, gerapy pages."""
    for source, _, group in site_groups(data):
        ids = [pages.add(page_id, html) for page_id, html in _group_pages(source, group).items()]
        yield from all_pairs(ids, "same-site", source, SAME_ARTICLE_TWICE)
    for kind in ("detail", "list"):
        folder = data / "gerapy-chinese-samples" / "samples" / kind
        ids = [pages.add(f"gerapy/{kind}/{p.name}", p.read_bytes()) for p in sorted(folder.glob("*.html"))]
        redesign = {("gerapy/detail/ifeng_news1.html", "gerapy/detail/ifeng_news1_detail_20220630.html"): "redesign"}
        yield from all_pairs(ids, "same-site", "gerapy", redesign | SAME_ARTICLE_TWICE)


def same_address_other_document(data: Path, pages: Pages) -> Iterator[Pair]:
    """Another document at an address a kept page had (a home page whose stories changed, an address reused):
    the same-site pairs of different articles, the second met at the first's address (call after
    ``same_site``).  Every pair must be kept."""
    for source, _, group in site_groups(data):
        ids = [pages.add(page_id, html) for page_id, html in _group_pages(source, group).items()]
        for pair in all_pairs(ids, "same-site", source, SAME_ARTICLE_TWICE):
            if not pair.duplicate:
                yield Pair(pair.a, pair.b, False, "same-site", "same-address", same_address=True)


def unrelated(data: Path, pages: Pages, source: str) -> Iterator[Pair]:
    """All pairs of a pool of pages from different sites; copies of one page are positives."""
    if source == "trafilatura":
        folder = Path(tempfile.mkdtemp(prefix="trafilatura-"))
        with tarfile.open(data / "trafilatura-eval" / "trafilatura-eval-cache-html.tar.xz") as archive:
            archive.extractall(folder, filter="data")
        files = sorted(folder.rglob("*.html"))
        ids = [pages.add(f"trafilatura/{p.relative_to(folder)}", p.read_bytes()) for p in files]
    else:
        files = sorted((data / "article-extraction-benchmark" / "html").glob("*.html.gz"))
        ids = [pages.add(f"aeb/{p.name}", gzip.decompress(p.read_bytes())) for p in files]
    yield from all_pairs(ids, "unrelated", source, copies(ids, pages))


def chinese_cross_site(pages: Pages) -> Iterator[Pair]:
    """Chinese unrelated pool: gne and gerapy pages of different sites (call after ``same_site``)."""
    chinese = sorted(i for i in pages.html if i.startswith(("gne/", "gerapy/")))
    site = {i: i.rsplit("/", 1)[0] if i.startswith("gne/") else "gerapy" for i in chinese}  # gerapy pairs: same_site
    copied = copies(chinese, pages)
    for a, b in itertools.combinations(chinese, 2):
        if site[a] != site[b]:
            reason = copied.get((a, b))
            yield Pair(a, b, reason is not None, "positive" if reason else "unrelated", "chinese-cross-site")


def copies(ids: list[str], pages: Pages) -> dict[tuple[str, str], str]:
    """Pairs of a pool that are one page saved twice: paragraph overlap >= 0.8."""
    found = {i: paragraphs(pages.html[i]) for i in ids}
    holders: dict[str, list[str]] = {}
    for page_id, texts in found.items():
        for text in texts:
            holders.setdefault(text, []).append(page_id)
    sharing = {
        tuple(sorted(p)) for group in holders.values() if len(group) < 50 for p in itertools.combinations(group, 2)
    }
    result = {}
    for a, b in sorted(sharing):
        overlap = paragraph_overlap(found[a], found[b])
        if (a, b) in NOT_COPIES:
            pages.notes.append(f"not a copy despite paragraph overlap {overlap:.2f}: {a} ~ {b} ({NOT_COPIES[(a, b)]})")
        elif overlap >= 0.8:
            result[(a, b)] = f"paragraph overlap {overlap:.2f}"
    pages.notes += [
        f"copy in an unrelated pool, counted as a duplicate: {a} ~ {b} ({why})" for (a, b), why in result.items()
    ]
    return result


def extraction_set_pages(data: Path) -> list[Path]:
    """Every page of newspaper, gne, readability (each source page) and goose3: 398 pages."""
    return [
        *sorted((data / "newspaper-test-pages" / "tests" / "data" / "html").glob("*.html")),
        *sorted((data / "gne-chinese-news" / "tests").glob("*/*.html")),
        *sorted((data / "readability-test-pages").glob("*/source.html")),
        *sorted((data / "goose3-test-pages" / "tests" / "data" / "content").glob("*.html")),
    ]


def copies_of_every_page(data: Path, pages: Pages) -> Iterator[Pair]:
    """Each page of ``extraction_set_pages`` vs a byte-identical copy."""
    for path in extraction_set_pages(data):
        page_id = str(path.relative_to(data))
        body = path.read_bytes()
        yield Pair(pages.add(page_id, body), pages.add(f"copy/{page_id}", body), True, "positive", "copies")


#: Text shared by every page of a site, outside the main content (at least 20 words).
SHARED_NOTICE = {
    "en+": "We use cookies and similar technologies to give you the best experience on our website, to personalise "
    "content and advertising and to analyse our traffic. By continuing to browse this site you agree to our "
    "use of cookies as described in our privacy policy.",
    "zh": "本网站使用cookie等技术为您提供更好的浏览体验、个性化内容和广告并分析网站流量。"
    "继续浏览本网站即表示您同意我们按照隐私政策"
    "使用cookie。本站所有内容未经书面授权不得转载，违者必究。",
}


def wrap_in_form(html: bytes, language: str) -> bytes:
    """The page as an ASP.NET WebForms page: the whole body inside one ``<form>``, a shared notice outside it."""
    root = html_tree(html)
    form = lxml.html.fragment_fromstring(
        '<form method="post" action="./Default.aspx" id="aspnetForm">'
        '<input type="hidden" name="__VIEWSTATE" id="__VIEWSTATE" '
        'value="/wEPDwUKMTY1NDU2MTA1Mg9kFgJmD2QWAgIDD2QWAg"></form>'
    )
    body = root.body
    if body.text:
        form[0].tail, body.text = body.text, None
    for child in list(body):
        form.append(child)
    body.append(form)
    body.append(lxml.html.fragment_fromstring(f'<div class="site-notice"><p>{SHARED_NOTICE[language]}</p></div>'))
    return lxml.html.tostring(root, encoding="utf-8")


def form_wrapped(data: Path, pages: Pages) -> Iterator[Pair]:
    """Each site group re-templated with ``wrap_in_form``: its pages must stay apart, a copy of each is a duplicate."""
    for source, language, group in site_groups(data):
        ids = []
        for page_id, html in _group_pages(source, group).items():
            body = wrap_in_form(html, language)
            ids.append(pages.add(f"form/{page_id}", body))
            yield Pair(ids[-1], pages.add(f"form/{page_id}/copy", body), True, "positive", "form-wrapped")
        yield from all_pairs(ids, "same-site", "form-wrapped", _prefixed("form/", SAME_ARTICLE_TWICE))


#: A short page's article: this many words of its first paragraph (characters in Chinese).
SHORT_PAGE = {"en+": 15, "zh": 30}


def short_pages(data: Path, pages: Pages) -> Iterator[Pair]:
    """Each site group with its articles cut to one sentence, too short for SimHash.

    The article keeps the first ``SHORT_PAGE`` words (characters in Chinese)
    of its first paragraph; the template stays.  Pages of one site must stay
    apart; a byte-identical copy of each, and a copy whose links carry
    tracking parameters, are duplicates.
    """
    for source, language, group in site_groups(data):
        ids = []
        for page_id, html in _group_pages(source, group).items():
            root = html_tree(html)
            paragraphs = _article_paragraphs(root)
            if not paragraphs:
                continue
            for paragraph in paragraphs[1:]:
                paragraph.drop_tree()
            text = paragraphs[0].text_content()
            for child in list(paragraphs[0]):
                paragraphs[0].remove(child)
            paragraphs[0].text = (
                text[: SHORT_PAGE[language]] if language == "zh" else " ".join(text.split()[: SHORT_PAGE[language]])
            )
            short_id = pages.add(f"short/{page_id}", lxml.html.tostring(root, encoding="utf-8"))
            ids.append(short_id)
            yield Pair(short_id, pages.add(f"{short_id}/copy", pages.html[short_id]), True, "positive", "short")
            tracking_parameters(root, random.Random(short_id), language, 1)
            tracked = pages.add(f"{short_id}/tracked", lxml.html.tostring(root, encoding="utf-8"))
            yield Pair(short_id, tracked, True, "positive", "short")
        yield from all_pairs(ids, "same-site", "short", _prefixed("short/", SAME_ARTICLE_TWICE))


def _prefixed(prefix: str, listed: dict[tuple[str, str], str]) -> dict[tuple[str, str], str]:
    return {(prefix + a, prefix + b): why for (a, b), why in listed.items()}


def webis(data: Path, pages: Pages) -> Iterator[Pair]:
    path = data / "webis-ecir20-neardup-pairs" / "ecir20-judged-pairs.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        rows = list(lines)
    for n, line in enumerate(rows):
        row = json.loads(line)
        a = pages.add(f"webis/{n}/left", text_as_html(row["left_full_text"]))
        b = pages.add(f"webis/{n}/right", text_as_html(row["right_full_text"]))
        yield Pair(a, b, row["label"] >= 1, "webis", "webis")


def content_same_structure_different(data: Path, pages: Pages) -> Iterator[Pair]:
    """Readability's source.html vs its extracted expected.html (real pages only)."""
    for folder in sorted((data / "readability-test-pages").iterdir()):
        if folder.is_dir() and folder.name not in READABILITY_FIXTURES and (folder / "expected.html").exists():
            a = pages.add(f"readability/{folder.name}/source", (folder / "source.html").read_bytes())
            b = pages.add(f"readability/{folder.name}/expected", (folder / "expected.html").read_bytes())
            yield Pair(a, b, True, "positive", "readability")


def paragraphs(html: bytes) -> set[str]:
    """Whitespace-normalised texts of the page's paragraph elements."""
    root = html_tree(html)
    found = set() if root is None else {" ".join(e.text_content().split()) for e in root.xpath(PARAGRAPH_XPATH)}
    return {p for p in found if len(p) >= MIN_PARAGRAPH_CHARS}


def paragraph_overlap(a: set[str], b: set[str]) -> float:
    """Paragraphs found verbatim in both pages, over the larger page's count."""
    return len(a & b) / max(1, len(a), len(b))


def handbook(data: Path, pages: Pages) -> Iterator[Pair]:
    """Each language's page vs its en-US page.

    Truth by paragraph overlap (``paragraph_overlap``; the handbook's
    paragraphs are ``div.para``): at least 0.8, an unfinished translation, a
    duplicate; at most 0.2, a translation, not a duplicate; in between: left
    out (counted).
    """
    folder = Path(tempfile.mkdtemp(prefix="handbook-"))
    with tarfile.open(data / "debian-handbook-site" / "debian-handbook-11.20220922-html.tar.xz") as archive:
        archive.extractall(folder, filter="data")
    root = folder / "html"
    english = {p.name: p.read_bytes() for p in (root / "en-US").glob("*.html")}
    english_paragraphs = {name: paragraphs(body) for name, body in english.items()}
    left_out = 0
    for language in sorted(p.name for p in root.iterdir() if p.is_dir() and p.name != "en-US"):
        for page in sorted((root / language).glob("*.html")):
            body = page.read_bytes()
            ours, theirs = paragraphs(body), english_paragraphs[page.name]
            overlap = paragraph_overlap(ours, theirs)
            if 0.2 < overlap < 0.8 or not (ours or theirs):
                left_out += 1
                continue
            a = pages.add(f"handbook/en-US/{page.name}", english[page.name])
            b = pages.add(f"handbook/{language}/{page.name}", body)
            yield Pair(a, b, overlap >= 0.8, "positive" if overlap >= 0.8 else "same-site", "handbook")
    pages.notes.append(
        f"handbook pairs left out as partly translated (paragraph overlap between 0.2 and 0.8): {left_out}"
    )


# --- realistic changes applied to real pages -----------------------------------------------

FILLER = {
    "en+": [
        "great",
        "article",
        "thanks",
        "for",
        "sharing",
        "this",
        "with",
        "everyone",
        "I",
        "totally",
        "agree",
        "with",
        "the",
        "author",
        "here",
        "but",
        "the",
        "second",
        "point",
        "seems",
        "weak",
        "to",
        "me",
        "and",
        "I",
        "would",
        "like",
        "to",
        "see",
        "more",
        "sources",
        "cited",
        "next",
        "time",
        "what",
        "about",
        "the",
        "costs",
        "nobody",
        "mentions",
        "them",
        "at",
        "all",
        "in",
        "this",
        "piece",
        "which",
        "is",
        "a",
        "pity",
        "really",
    ],
    "zh": list(
        "这篇文章写得很好感谢作者分享我完全同意其中的观点但是第二部分的论据不够充分希望下次能够提供更多的资料来源成本问题也没有提到"
    ),
}


def _phrase(rng: random.Random, language: str, length: int) -> str:
    words = [rng.choice(FILLER[language]) for _ in range(length)]
    return ("" if language == "zh" else " ").join(words)


def _article_paragraphs(root: lxml.html.HtmlElement) -> list[lxml.html.HtmlElement]:
    found = [p for p in root.iter("p") if len(p.text_content().strip()) >= 40]
    return found or [p for p in root.iter("div", "td", "span") if len(p.text_content().strip()) >= 40][:20]


def _longest_text(root: lxml.html.HtmlElement) -> lxml.html.HtmlElement | None:
    """The element with the longest text of its own (not counting children): a paragraph of the article."""
    candidates = [
        e
        for e in root.body.iter()
        if isinstance(e.tag, str) and e.tag not in ("script", "style") and e.text and e.text.strip()
    ]
    return max(candidates, key=lambda e: len(e.text.strip()), default=None)


def _insert_after_article(root: lxml.html.HtmlElement, html: str) -> None:
    block = lxml.html.fragment_fromstring(html)
    paras = _article_paragraphs(root)
    anchor = paras[-1] if paras else root.body
    anchor.addnext(block) if paras else anchor.append(block)


def dates_and_counters(root, rng, language, variant):
    date = (
        f"20{rng.randint(10, 23)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} "
        f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}"
    )
    byline = f'<p class="meta">{date} · {rng.randint(10, 99999):,} views · {rng.randint(0, 999)} comments</p>'
    heading = next(root.iter("h1"), None)
    block = lxml.html.fragment_fromstring(byline)
    heading.addnext(block) if heading is not None else root.body.insert(0, block)
    for time in root.iter("time"):
        time.text = date


def ad_block(root, rng, language, variant):
    text = _phrase(rng, language, 12)
    ad = (
        f'<div class="ad-container"><a href="https://ads.example.com/click?id={rng.randint(1, 10**9)}">'
        f'<img src="https://ads.example.com/{rng.randint(1, 999)}.jpg"><span>Sponsored: {text}</span></a></div>'
    )
    paras = _article_paragraphs(root)
    block = lxml.html.fragment_fromstring(ad)
    (paras[len(paras) // 2].addnext(block) if paras else root.body.append(block))


def tracking_parameters(root, rng, language, variant):
    for link in root.iter("a"):
        href = link.get("href")
        if href and href.startswith(("http", "/")):
            sep = "&" if "?" in href else "?"
            link.set(
                "href",
                f"{href}{sep}utm_source=feed{rng.randint(1, 99)}&utm_medium=social"
                f"&utm_campaign=c{rng.randint(1, 10**6)}",
            )


def edited_sentence(root, rng, language, variant):
    """Three words (four characters in Chinese) of the longest paragraph replaced."""
    target = _longest_text(root)
    if target is None or variant == 0:
        return
    if language == "zh":
        cut = rng.randint(0, max(0, len(target.text) - 4))
        target.text = target.text[:cut] + _phrase(rng, language, 4) + target.text[cut + 4 :]
    else:
        words = target.text.split()
        for _ in range(3):
            words[rng.randrange(len(words))] = rng.choice(FILLER[language])
        target.text = " ".join(words)


def added_sentence(root, rng, language, variant):
    """A sentence of 12 words (14 characters in Chinese) added to the longest paragraph."""
    target = _longest_text(root)
    if target is not None and variant == 1:
        sentence = _phrase(rng, language, 14 if language == "zh" else 12)
        target.text = f"{target.text} {sentence}."


def comments_section(root, rng, language, variant):
    if variant == 0:
        return
    comments = "".join(
        f'<li class="comment"><div class="comment-author"><a href="/u/{n}">user{n}</a></div>'
        f"<p>{_phrase(rng, language, rng.randint(15, 40))}</p></li>"
        for n in range(rng.randint(3, 8))
    )
    _insert_after_article(
        root,
        '<section id="comments" class="comments-area"><h2>Comments</h2>'
        f'<ol class="comment-list">{comments}</ol></section>',
    )


def changed_sidebar(root, rng, language, variant):
    links = "".join(f'<li><a href="/p/{rng.randint(1, 10**6)}">{_phrase(rng, language, 6)}</a></li>' for _ in range(8))
    about = _phrase(rng, language, 25)
    root.body.append(
        lxml.html.fragment_fromstring(f'<aside class="sidebar"><h3>Popular</h3><ul>{links}</ul><p>{about}</p></aside>')
    )


_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s*")


def _reword(sentence: str, rng: random.Random, language: str) -> str:
    """A paraphrase as a copy editor makes one: the two halves swapped, a third of the words replaced."""
    if language == "zh":
        chars = list(sentence.rstrip("。！？"))
        half = len(chars) // 2
        chars = chars[half:] + chars[:half]
        for i in range(0, len(chars) - 1, 6):
            chars[i : i + 2] = list(_phrase(rng, language, 2))
        return "".join(chars) + "。"
    words = sentence.rstrip(".!?").split()
    half = len(words) // 2
    words = words[half:] + words[:half]
    for i in range(1, len(words), 3):
        words[i] = rng.choice(FILLER[language])
    return " ".join(words) + "."


def _reword_one_sentence(paragraphs: list[lxml.html.HtmlElement], rng: random.Random, language: str) -> None:
    """One sentence of 8 to 30 words (16 to 90 characters in Chinese) of ``paragraphs`` reworded.

    Sentences are looked for in every text node of the paragraphs (an element's
    text, and the tails of the elements inside them).
    """
    low, high = (16, 90) if language == "zh" else (8, 30)
    found = []
    for paragraph in paragraphs:
        for node in paragraph.iter():
            for field in ("text", "tail") if node is not paragraph else ("text",):
                for sentence in _SENTENCE_END.split(getattr(node, field) or ""):
                    if low <= (len(sentence) if language == "zh" else len(sentence.split())) <= high:
                        found.append((node, field, sentence))
    if found:
        node, field, sentence = rng.choice(found)
        setattr(node, field, getattr(node, field).replace(sentence, _reword(sentence, rng, language), 1))


def reworded_sentence(root, rng, language, variant):
    """One sentence of the article reworded (a third of its words replaced, its halves swapped)."""
    if variant == 1:
        _reword_one_sentence(_article_paragraphs(root), rng, language)


#: A short article keeps its first paragraphs up to this many words (characters in Chinese).
SHORT_ARTICLE = {"en+": 150, "zh": 300}


def _shorten_article(root: lxml.html.HtmlElement, language: str) -> list[lxml.html.HtmlElement]:
    """The article cut after its first paragraphs of ``SHORT_ARTICLE`` words; returns those kept."""
    kept, size = [], 0
    for paragraph in _article_paragraphs(root):
        if size >= SHORT_ARTICLE[language]:
            paragraph.drop_tree()
            continue
        kept.append(paragraph)
        text = paragraph.text_content()
        size += len(text) if language == "zh" else len(text.split())
    return kept


def short_article_reworded(root, rng, language, variant):
    """A short article (its first paragraphs, about 150 words) with one sentence reworded."""
    kept = _shorten_article(root, language)
    if variant == 1:
        _reword_one_sentence(kept, rng, language)


def timestamp_in_text(root, rng, language, variant):
    """A timestamp at the start of the article's first paragraph, another one in each version."""
    paragraphs = _article_paragraphs(root)
    if not paragraphs:
        return
    year, month, day = rng.randint(2010, 2023), rng.randint(1, 12), rng.randint(1, 28)
    hour, minute = rng.randint(1, 12), rng.randint(0, 59)
    if language == "zh":
        stamp = f"（更新时间：{year}年{month}月{day}日 {hour:02d}:{minute:02d}）"
    else:
        stamp = (
            f"Updated {MONTH_NAMES[month - 1]} {day}, {year} at {hour}:{minute:02d} {rng.choice(['a.m.', 'p.m.'])} ET."
        )
    first = paragraphs[0]
    first.text = f"{stamp} {first.text or ''}"


def exact_copy(root, rng, language, variant):
    """Nothing changes: the same page under another URL."""


CHANGES: dict[str, Callable] = {
    "dates_counters": dates_and_counters,
    "ad_block": ad_block,
    "tracking_params": tracking_parameters,
    "edited_sentence": edited_sentence,
    "added_sentence": added_sentence,
    "comments_section": comments_section,
    "changed_sidebar": changed_sidebar,
    "reworded_sentence": reworded_sentence,
    "short_article_reworded": short_article_reworded,
    "timestamp_in_text": timestamp_in_text,
    "exact_copy": exact_copy,
}


def change_bases(data: Path) -> list[tuple[str, str, bytes]]:
    """Real article pages the changes are applied to: (page id, language, HTML).

    Newspaper's first page of each site, gne's first page of each site, and
    every page of goose3, readability (real pages only) and the article
    extraction benchmark (126 hosts): pages of many templates, most of them
    never looked at while the extraction was written.
    """
    found = [
        (f"newspaper/{p.name}", p.read_bytes())
        for p in sorted((data / "newspaper-test-pages" / "tests" / "data" / "html").glob("*1.html"))
    ]
    found += [
        (f"gne/{p.parent.name}/{p.name}", p.read_bytes())
        for p in sorted((data / "gne-chinese-news" / "tests").glob("*/1.html"))
    ]
    found += [
        (f"goose3/{p.name}", p.read_bytes())
        for p in sorted((data / "goose3-test-pages" / "tests" / "data" / "content").glob("*.html"))
    ]
    found += [
        (f"readability/{p.parent.name}", p.read_bytes())
        for p in sorted((data / "readability-test-pages").glob("*/source.html"))
        if p.parent.name not in READABILITY_FIXTURES
    ]
    found += [
        (f"aeb/{p.name}", gzip.decompress(p.read_bytes()))
        for p in sorted((data / "article-extraction-benchmark" / "html").glob("*.html.gz"))
    ]
    return [(page_id, language_of(visible_text(html)), html) for page_id, html in found]


def realistic_changes(data: Path, pages: Pages) -> Iterator[Pair]:
    """Two versions of each real article page (variant 0 and 1) per kind of change."""
    for (base_id, language, body), (kind, change) in itertools.product(change_bases(data), CHANGES.items()):
        versions = []
        for variant in (0, 1):
            root = html_tree(body)
            if root is None or root.body is None:
                break
            rng = random.Random(f"{base_id}/{kind}/{variant}")
            change(root, rng, language, variant)
            versions.append(lxml.html.tostring(root, encoding="utf-8"))
        if len(versions) == 2:
            page_id = f"change/{kind}/{base_id}"
            yield Pair(
                pages.add(page_id + "/0", versions[0]),
                pages.add(page_id + "/1", versions[1]),
                True,
                f"change:{kind}",
                "changes",
            )


def _main_container(root: lxml.html.HtmlElement) -> lxml.html.HtmlElement | None:
    """The element that holds the most of a page's paragraphs (``<p>`` of ``MIN_PARAGRAPH_CHARS`` or more): its
    article's body, for a chrome swap (found here, not by the filter's own reading)."""
    counts: dict[lxml.html.HtmlElement, int] = {}
    for paragraph in root.iter("p"):
        if len(paragraph.text_content().strip()) >= MIN_PARAGRAPH_CHARS and paragraph.getparent() is not None:
            counts[paragraph.getparent()] = counts.get(paragraph.getparent(), 0) + 1
    best = max(counts, key=counts.__getitem__, default=None)
    return best if best is not None and counts[best] >= 3 else None


_TITLE_SEPARATOR = re.compile(r"\s+[-|–—_]\s+")


def _retitled(headline: str, chrome_title: str) -> str:
    """The article's headline under the other site's name: what follows the last separator of the other site's
    title (its name), if it has one."""
    parts = _TITLE_SEPARATOR.split(chrome_title.strip()) if chrome_title else []
    return f"{headline} | {parts[-1]}" if len(parts) > 1 else headline


_CHROME_NAME = re.compile(
    r"(?:^|[\s_-])(?:header|masthead|topbar|nav|navbar|navigation|menu|footer)(?:$|[\s_-])", re.IGNORECASE
)


def _chrome(root: lxml.html.HtmlElement, body: lxml.html.HtmlElement) -> tuple[list, list]:
    """A page's site chrome: its outermost headers and navigation, and its footers (``header``, ``nav``, ``footer``
    elements, or named so by class or id), that neither hold nor sit inside the article's ``body``."""
    top, bottom = [], []
    for element in root.iter("*"):
        if not isinstance(element.tag, str) or element is body:
            continue
        names = f"{element.get('id', '')} {element.get('class', '')}"
        if element.tag not in ("header", "nav", "footer") and not _CHROME_NAME.search(names):
            continue
        ancestors = set(element.iterancestors())
        if body in ancestors or ancestors & set(top + bottom) or body in set(element.iterdescendants()):
            continue
        (bottom if element.tag == "footer" or "footer" in names.lower() else top).append(element)
    return top, bottom


def chrome_swapped(data: Path, pages: Pages) -> Iterator[Pair]:
    """The same article with another site's chrome: each real article page of ``change_bases`` against itself with
    its header, navigation and footer (``_chrome``) replaced by those of another site (another base of the same
    language, chosen with a fixed seed) and the other site's name in its title ("Headline | Other Site"), the body
    and the rest untouched: a syndicated copy, a page moved to another site's template.  The article is the same:
    the judge's figure is 1.0 by construction."""
    bases = change_bases(data)
    by_language: dict[str, list[tuple[str, bytes]]] = {}
    for page_id, language, body in bases:
        by_language.setdefault(language, []).append((page_id, body))
    for page_id, language, html in bases:
        donors = [d for d in by_language[language] if d[0].split("/")[:2] != page_id.split("/")[:2]]
        if not donors:
            continue
        donor_id, donor_html = random.Random(f"chrome/{page_id}").choice(donors)
        if (swapped := swap_chrome(html, donor_html)) is not None:
            yield Pair(
                pages.add(page_id, html),
                pages.add(f"chrome/{page_id}/in/{donor_id}", swapped),
                True,
                "chrome_swapped",
                "chrome",
                judge=1.0,
            )


def swap_chrome(html: bytes, donor_html: bytes) -> bytes | None:
    """The page with its header, navigation and footer (``_chrome``) replaced by the donor page's, and the donor's
    site name in its title ("Headline | Other Site"), the body and the rest untouched; None when either page has no
    body or no chrome to find."""
    root, donor = html_tree(html), html_tree(donor_html)
    if root is None or root.body is None or donor is None or (article := _main_container(root)) is None:
        return None
    donor_article = _main_container(donor)
    if donor_article is None or donor.find(".//title") is None or root.find(".//title") is None:
        return None
    own_top, own_bottom = _chrome(root, article)
    donor_top, donor_bottom = _chrome(donor, donor_article)
    if not (own_top or own_bottom) or not (donor_top or donor_bottom):
        return None
    for element in own_top + own_bottom:
        element.drop_tree()
    for n, element in enumerate(donor_top):
        root.body.insert(n, lxml.html.fromstring(lxml.html.tostring(element, encoding="unicode")))
    for element in donor_bottom:
        root.body.append(lxml.html.fromstring(lxml.html.tostring(element, encoding="unicode")))
    title = root.findtext(".//title") or ""
    first_heading = next(iter(article.iter("h1")), None)
    headline = " ".join(
        (
            first_heading.text_content() if first_heading is not None else _TITLE_SEPARATOR.split(title.strip())[0]
        ).split()
    )
    root.find(".//title").text = _retitled(headline, donor.findtext(".//title") or "")
    return lxml.html.tostring(root, encoding="utf-8")


#: Encyclopedic articles (real pages): the bases of the encyclopedic kinds of change: MediaWiki articles,
#: and the reference pages of MDN and WebMD.
ENCYCLOPEDIC = (
    "wikipedia",
    "wikipedia-2",
    "wikipedia-3",
    "wikipedia-4",
    "wikia",
    "mozilla-1",
    "mozilla-2",
    "webmd-1",
    "webmd-2",
)
#: Pairs per base and kind (each with its own sentence, link or place changed).
ENCYCLOPEDIC_VARIANTS = 12
#: Notices as MediaWiki writes them: a stub box and a hatnote (ARIA role "note"), maintenance boxes (a table).
NOTICES = (
    '<div role="note" class="metadata plainlinks asbox stub">'
    "<p>This article is a stub. You can help by expanding it.</p></div>",
    '<div role="note" class="hatnote navigation-not-searchable">For other uses, see the disambiguation page.</div>',
    '<table class="box-More_citations_needed plainlinks metadata ambox ambox-content" role="presentation"><tr><td>'
    "This article needs additional citations for verification. Please help improve it by adding citations to reliable"
    " sources.</td></tr></table>",
    '<table class="box-Update plainlinks metadata ambox ambox-content" role="presentation"><tr><td>'
    "This article needs to be updated. Please help update this article to reflect recent events.</td></tr></table>",
)


def _make_stub(root: lxml.html.HtmlElement) -> list[lxml.html.HtmlElement]:
    """The article cut to its lead (its first paragraph of two sentences or more) and a stub notice, in
    its own template: a title, a few sentences in which many nouns are links."""
    paragraphs = [p for p in _article_paragraphs(root) if p.tag == "p"]
    lead = next((p for p in paragraphs if len(_SENTENCE_END.split(p.text_content().strip())) >= 3), None)
    for paragraph in paragraphs:
        if paragraph is not lead:
            paragraph.drop_tree()
    for element in list(root.iter("table", "ul", "ol", "dl")):
        if element.getparent() is not None:
            element.drop_tree()
    return [lead] if lead is not None else []


def _unlink(paragraphs, rng):
    links = [a for p in paragraphs for a in p.iter("a") if (a.text_content() or "").strip()]
    if links:
        rng.choice(links).drop_tag()


def _named_ad(paragraphs, root, rng, language):
    ad = lxml.html.fragment_fromstring(
        '<div class="advertisement" aria-label="Advertisement">'
        f"<p>Special offer: {_phrase(rng, language, 12)}.</p></div>"
    )
    (paragraphs[len(paragraphs) // 2].addnext(ad) if paragraphs else root.body.append(ad))


def _notice(paragraphs, root, rng, variant):
    """Variant 0 has one notice, variant 1 another one (each pair its own two, chosen by ``rng``)."""
    first, second = rng.sample(range(len(NOTICES)), 2)
    notice = lxml.html.fragment_fromstring(NOTICES[second if variant else first])
    (paragraphs[-1].addnext(notice) if paragraphs else root.body.append(notice))


ENCYCLOPEDIC_EDITS = {
    "reworded": lambda paragraphs, root, rng, language, variant: (
        variant and _reword_one_sentence(paragraphs, rng, language)
    ),
    "unlinked": lambda paragraphs, root, rng, language, variant: variant and _unlink(paragraphs, rng),
    "ad_named": lambda paragraphs, root, rng, language, variant: variant and _named_ad(paragraphs, root, rng, language),
    "notice_changed": lambda paragraphs, root, rng, language, variant: _notice(paragraphs, root, rng, variant),
}


def encyclopedic_changes(data: Path, pages: Pages) -> Iterator[Pair]:
    """Encyclopedic articles and stubs made from them, two versions each: one sentence reworded, one link
    inside a sentence unlinked, an ad named as such injected, a notice changed (groups ``wiki_*`` and
    ``stub_*``, ``ENCYCLOPEDIC_VARIANTS`` pairs a base)."""
    for name in ENCYCLOPEDIC:
        body = (data / "readability-test-pages" / name / "source.html").read_bytes()
        for (kind, edit), form, seed in itertools.product(
            ENCYCLOPEDIC_EDITS.items(), ("wiki", "stub"), range(ENCYCLOPEDIC_VARIANTS)
        ):
            versions = []
            for variant in (0, 1):
                root = html_tree(body)
                paragraphs = (
                    _make_stub(root) if form == "stub" else [p for p in _article_paragraphs(root) if p.tag == "p"]
                )
                edit(paragraphs, root, random.Random(f"{name}/{kind}/{seed}"), "en+", variant)
                versions.append(lxml.html.tostring(root, encoding="utf-8"))
            page_id = f"change/{form}_{kind}/{name}/{seed}"
            yield Pair(
                pages.add(page_id + "/0", versions[0]),
                pages.add(page_id + "/1", versions[1]),
                True,
                f"{form}_{kind}",
                "encyclopedic",
            )


#: Elements whose text a re-saving tool leaves as it is.
_VERBATIM = {"pre", "textarea", "script", "style", "title"}
#: Words this long get soft hyphens every ``_SYLLABLE`` letters from a hyphenating tool.
_HYPHENATED = re.compile(r"[^\W\d_]{8,}")
_SYLLABLE = 4


def _texts(root: lxml.html.HtmlElement, rewrite: Callable[[str], str]) -> None:
    """Every text and tail outside ``_VERBATIM`` elements, rewritten."""
    for element in root.iter():
        if isinstance(element.tag, str) and element.tag not in _VERBATIM and element.text:
            element.text = rewrite(element.text)
        if (
            element.tail
            and isinstance(element.getparent(), lxml.html.HtmlElement)
            and element.getparent().tag not in _VERBATIM
        ):
            element.tail = rewrite(element.tail)


def prettified(root):
    """Indented as pretty-printers do: a line break before and after every tag, inside paragraphs too."""
    for element in root.iter():
        if isinstance(element.tag, str) and element.tag not in _VERBATIM and element.getparent() is not None:
            element.text = "\n  " + (element.text or "")
            element.tail = "\n" + (element.tail or "")


def wrapped(root):
    """Wrapper elements added: each paragraph's content in a ``<span>``, the body's in three ``<div>``s."""
    for paragraph in list(root.iter("p", "li", "h1", "h2", "h3", "td")):
        span = lxml.html.Element("span", {"class": "c1"})
        span.text, paragraph.text = paragraph.text, None
        for child in list(paragraph):
            span.append(child)
        paragraph.append(span)
    for _ in range(3):
        div = lxml.html.Element("div", {"class": "wrapper"})
        for child in list(root.body):
            div.append(child)
        root.body.append(div)


def with_attributes(root):
    """Attributes added to every element, as a page saver does: a ``data-`` mark and an inline style."""
    for number, element in enumerate(root.iter()):
        if isinstance(element.tag, str):
            element.set("data-saved-id", str(number))
            element.set("style", (element.get("style", "") + ";box-sizing:border-box").lstrip(";"))


def non_breaking(root):
    """Every other space a non-breaking one (``&nbsp;`` in the saved page)."""
    _texts(root, lambda text: re.sub(r"(\S+) (\S+) ", "\\1\u00a0\\2 ", text))


def soft_hyphenated(root):
    """Long words hyphenated with soft hyphens, as typesetting tools do; a reader sees the same words."""
    _texts(
        root,
        lambda text: _HYPHENATED.sub(
            lambda m: "\u00ad".join(m.group()[i : i + _SYLLABLE] for i in range(0, len(m.group()), _SYLLABLE)), text
        ),
    )


def unstyled(root):
    """Class, id, role and ``aria-``/``data-`` attributes stripped, as sanitizers do: a page without its names."""
    for element in root.iter():
        if isinstance(element.tag, str):
            for name in list(element.attrib):
                if name in ("class", "id", "role") or name.startswith(("aria-", "data-")):
                    del element.attrib[name]


#: The tools a page is saved again through; each row pairs the page as served with its saved copy.
RESAVING_TOOLS = {
    "prettified": prettified,
    "wrapped": wrapped,
    "attributes": with_attributes,
    "nbsp": non_breaking,
    "soft_hyphens": soft_hyphenated,
    "unstyled": unstyled,
}
#: Tools whose copy no longer marks what is furniture: measured, outside the realistic changes' bar.
UNMARKED_TOOLS = {"unstyled"}
#: Every this-many-th page of the trafilatura pool is saved again.
RESAVED_EVERY = 4


def resaved_pages(pages: Pages) -> Iterator[Pair]:
    """The trafilatura pool's pages (call after ``unrelated``), each against itself saved through
    every tool of ``RESAVING_TOOLS`` (serialised as UTF-8 numeric references outside ASCII, as such
    tools write; groups ``resaved_<tool>``)."""
    pool = sorted(i for i in pages.html if i.startswith("trafilatura/eval/"))[::RESAVED_EVERY]
    for page_id, (tool, rewrite) in itertools.product(pool, RESAVING_TOOLS.items()):
        root = html_tree(pages.html[page_id])
        if root is None or root.body is None:
            continue
        rewrite(root)
        saved = pages.add(f"resaved/{tool}/{page_id}", lxml.html.tostring(root, encoding="ascii"))
        yield Pair(page_id, saved, True, f"resaved_{tool}", "resaved")


# --- small pages of one site: quotes.toscrape.com's author and quote pages -------------------

#: quotes.toscrape.com's page layout, as the site serves it (every page has the same ``<title>``); the
#: spidyquotes data holds what its author and quote pages show.
QUOTES_SITE = (
    '<html lang="en"><head><meta charset="UTF-8"><title>Quotes to Scrape</title></head><body><div class="container">'
    '<div class="row header-box"><div class="col-md-8"><h1><a href="/" style="text-decoration: none">Quotes to Scrape'
    '</a></h1></div><div class="col-md-4"><p><a href="/login">Login</a></p></div></div>{main}</div>'
    '<footer class="footer"><div class="container"><p class="text-muted">Quotes by: <a href="https://www.goodreads.com'
    '/quotes">GoodReads.com</a></p><p class="copyright">Made with <span class="sh-red">&#10084;</span> by <a href='
    '"https://scrapinghub.com">Scrapinghub</a></p></div></footer></body></html>'
)
AUTHOR_DETAILS = (
    '<div class="author-details"><h3 class="author-title">{name}</h3><p><strong>Born:</strong> <span class='
    '"author-born-date">{born_at}</span> <span class="author-born-location">{born_in}</span></p><p><strong>'
    'Description:</strong></p><div class="author-description"><p>{description}</p></div></div>'
)
QUOTE = (
    '<div class="quote"><span class="text">{text}</span><span>by <small class="author">{author}</small> <a href='
    '"/author/{slug}">(about)</a></span><div class="tags">Tags: {tags}</div></div>'
)
#: A stub's description: this many sentences of the author's.
STUB_SENTENCES = 3


def author_page(author: dict, description: str) -> bytes:
    """quotes.toscrape.com's page of an author (name, born_at, born_in) with this description."""
    fields = {k: html_escape.escape(v) for k, v in author.items()} | {"description": html_escape.escape(description)}
    return QUOTES_SITE.format(main=AUTHOR_DETAILS.format(**fields)).encode()


def _templated_description(author: dict, quotes: list[dict]) -> str:
    """A profile as a site's template writes it from its database: the same sentences, other names and figures."""
    tags = sorted({tag for quote in quotes for tag in quote["tags"]})[:3] or ["none"]
    return (
        f"{author['name']} was born on {author['born_at']} {author['born_in']}. This site holds {len(quotes)} "
        f"quotes by {author['name']}, tagged {', '.join(tags)}. Read them all or browse more authors."
    )


def small_site_pages(data: Path, pages: Pages) -> Iterator[Pair]:
    """Small pages of one real site (quotes.toscrape.com, its spidyquotes data) that must stay apart.

    Three kinds, each compared within itself: author stubs (the author's first
    ``STUB_SENTENCES`` sentences), templated profiles (one template filled with
    each author's name, dates, place, counts and tags: bot-written pages, the
    hardest case for any small-text rule) and the one-quote pages.  And the
    stubs' realistic change: one sentence of the stub reworded (group
    ``profile_reworded``, in the recall bar).
    """
    folder = data / "spidyquotes-data" / "data"
    authors = [json.loads(line) for line in (folder / "authorsdb.jl").open(encoding="utf-8")]
    quotes = [json.loads(line) for line in (folder / "quotesdb.jl").open(encoding="utf-8")]
    by_author = {a["name"]: [q for q in quotes if q["author"]["name"] == a["name"]] for a in authors}
    stubs, profiles = [], []
    for n, author in enumerate(authors):
        sentences = _SENTENCE_END.split(" ".join(author["description"].split()))
        stub = " ".join(sentences[:STUB_SENTENCES])
        stubs.append(pages.add(f"quotes/author/{n}", author_page(author, stub)))
        root = html_tree(pages.html[stubs[-1]])
        _reword_one_sentence(list(root.iter("p")), random.Random(f"quotes/author/{n}"), "en+")
        yield Pair(
            stubs[-1],
            pages.add(f"quotes/author/{n}/reworded", lxml.html.tostring(root, encoding="utf-8")),
            True,
            "profile_reworded",
            "profiles",
        )
        profiles.append(
            pages.add(
                f"quotes/profile/{n}", author_page(author, _templated_description(author, by_author[author["name"]]))
            )
        )
    quote_pages = []
    for n, quote in enumerate(quotes):
        author = quote["author"]["name"]
        main = QUOTE.format(
            text=html_escape.escape(quote["text"]),
            author=html_escape.escape(author),
            slug=re.sub(r"\W+", "-", author),
            tags=" ".join(f'<a class="tag" href="/tag/{t}/">{t}</a>' for t in quote["tags"]),
        )
        quote_pages.append(pages.add(f"quotes/quote/{n}", QUOTES_SITE.format(main=main).encode()))
    for ids in (stubs, profiles, quote_pages):
        yield from all_pairs(ids, "same-site", "profiles", {})
