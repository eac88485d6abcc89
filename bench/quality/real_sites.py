"""Real sites: documentation sets from Debian's packages, decided page after page as a crawl decides them, each
drop judged by the pages' whole visible texts.

    python -m bench.quality.real_sites [--sites python3.11-doc ...] [--out bench/results/quality/real_sites.json]

In a curated documentation set every file is a document a reader wants, so a drop is right only when the
dropped page is the kept page's bytes, or nearly all its visible words (the judge, ``judged``: the Jaccard
similarity of the two pages' word 5-shingles, over lxml's ``text_content`` with scripts and styles left out, is
``SAME_DOCUMENT`` or more); under ``OTHER_DOCUMENT`` it is another document dropped, between the two "close" (a
reader may still want it).  Each site is crawled in the order of its files' paths, then crawled again in the
same order (the same URLs, ``EDITED_SHARE`` of the pages edited as sites change between crawls: a "Last updated"
line, one sentence replaced, one sentence added), whose pages must be dropped as their first versions.

Beside the filter, in the same run: the ``simhash`` package at distance 3 over its character 4-grams of the
visible text, and the naive whole-text design (the filter's SimHash of every visible word, distance 3).  The
packages are installed with ``apt-get`` when missing (``make test`` never needs them).  ``bench/quality/detection.py``
prints this family with its other sets.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import pickle
import random
import re
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

import lxml.etree
import lxml.html
import numpy as np
import xxhash

from bench.common import CODE, PROJECT, code_version, command_line, html_tree, visible_text
from bench.quality import built_sites
from crawler.trap_site import MONTH_NAMES
from scrapy_simhash_dedup import Fingerprinter
from scrapy_simhash_dedup.crawl.settings import DedupSettings
from scrapy_simhash_dedup.fingerprint.content import content_features, tokens
from scrapy_simhash_dedup.fingerprint.fingerprinter import Fingerprint
from scrapy_simhash_dedup.fingerprint.simhash import simhash
from scrapy_simhash_dedup.matching.policy import Policy, dropped
from scrapy_simhash_dedup.stores.memory import MemoryStore

DATA = PROJECT.parent / "shared" / "data"
#: Judged the same document at this Jaccard similarity of word 5-shingles or more; another one under
#: ``OTHER_DOCUMENT``; "close" between.
SAME_DOCUMENT = 0.8
OTHER_DOCUMENT = 0.5
SHINGLE_WORDS = 5
#: Share of a re-crawl's pages that changed since the first crawl.
EDITED_SHARE = 0.05
#: The anchors' largest Hamming distance (Manku et al.'s operating point).
ANCHOR_DISTANCE = 3


@dataclass(frozen=True)
class Site:
    """A documentation set installed by a Debian package (or shipped in ``../shared/data`` as an ``archive``,
    unpacked under ``bench/.cache/sites/``, or built there from real data by ``bench/quality/built_sites.py``): its HTML
    files under ``root`` (``folders`` only, when given: a few packages' worth of a large set)."""

    package: str
    root: str
    folders: tuple[str, ...] = ()
    archive: str | None = None  # under the shared data folder
    build: Callable[[Path, Path], None] | None = None  # writes the site's pages into ``root`` (given the data)
    #: every page another document by construction (a built site): any drop is another document dropped
    distinct: bool = False
    language: str = "en"  # what a re-crawl's edits write (``NEW_SENTENCES``)

    def files(self) -> list[Path]:
        root = Path(self.root)
        tops = [root / folder for folder in self.folders] if self.folders else [root]
        found = {path for top in tops for path in top.rglob("*.html")}
        if self.folders:  # the set's own pages at its top (indexes, overviews)
            found |= set(root.glob("*.html"))
        return sorted(found)


BUILT = PROJECT / "bench" / ".cache" / "sites"
SITES = {
    "python3.11-doc": Site("python3.11-doc", "/usr/share/doc/python3.11/html"),
    "postgresql-doc-15": Site("postgresql-doc-15", "/usr/share/doc/postgresql-doc-15/html"),
    "python-scrapy-doc": Site("python-scrapy-doc", "/usr/share/doc/python-scrapy-doc/html"),
    "python-requests-doc": Site("python-requests-doc", "/usr/share/doc/python-requests-doc/html"),
    # javadoc: every page of java.base, java.sql and java.net.http (3,000 pages), the set's indexes
    "openjdk-17-doc": Site(
        "openjdk-17-doc", "/usr/share/doc/openjdk-17-doc/api", ("java.base", "java.sql", "java.net.http", "index-files")
    ),
    # rustdoc: Rust's standard library (std, core with every CPU intrinsic, alloc...), 32,000 pages
    "rust-doc": Site("rust-doc", "/usr/share/doc/rust-doc/html"),
    # Sphinx API references generated from docstrings, release notes, a Doxygen reference, manual pages
    "python-pandas-doc": Site("python-pandas-doc", "/usr/share/doc/python-pandas-doc/html"),
    "python-scipy-doc": Site("python-scipy-doc", "/usr/share/doc/python-scipy-doc/html"),
    "python-django-doc": Site("python-django-doc", "/usr/share/doc/python-django-doc/html"),
    "libstdc++-12-doc": Site("libstdc++-12-doc", "/usr/share/doc/gcc-12-base/libstdc++"),
    "git-doc": Site("git-doc", "/usr/share/doc/git-doc"),
    # a multi-language manual: 26 languages of one book, many of them partly translated
    "debian-handbook": Site(
        "",
        str(BUILT / "debian-handbook" / "html"),
        archive="debian-handbook-site/debian-handbook-11.20220922-html.tar.xz",
    ),
    # other kinds of sites: a wiki (ikiwiki's own, a family of plugin pages), a product catalogue and a wiki of
    # places' stubs and lists in several languages (bench/quality/built_sites.py)
    "ikiwiki": Site("ikiwiki", "/usr/share/doc/ikiwiki/html"),
    **{
        f"catalogue-{language}": Site(
            "",
            str(BUILT / f"catalogue-{language}"),
            build=lambda folder, data, language=language: built_sites.build_catalogue(language, folder),
            distinct=True,
            language=language,
        )
        for language in ("en", "de", "zh")
    },
    **{
        f"places-{language}": Site(
            "",
            str(BUILT / f"places-{language}"),
            build=functools.partial(built_sites.build_places, language),
            distinct=True,
            language=language,
        )
        for language in ("en", "de")
    },
    # a Q&A site: short pages of one template, each another question
    **{
        f"questions-{language}": Site(
            "",
            str(BUILT / f"questions-{language}"),
            build=lambda folder, data, language=language: built_sites.build_questions(language, folder, BUILT.parent),
            distinct=True,
            language=language,
        )
        for language in ("en", "zh", "it")
    },
}


def install(sites: list[Site], data: Path) -> None:
    """Unpack the shared archives, ``apt-get install`` the packages whose files are missing (with sudo unless
    root)."""
    for site in sites:
        if site.build is not None and not Path(site.root).is_dir():
            building = Path(f"{site.root}.building")
            shutil.rmtree(building, ignore_errors=True)
            site.build(building, data)
            building.rename(site.root)
        if site.archive and not Path(site.root).is_dir():
            folder = Path(site.root).parent
            folder.mkdir(parents=True, exist_ok=True)
            with tarfile.open(data / site.archive) as archive:
                archive.extractall(folder, filter="data")
    missing = [site.package for site in sites if not Path(site.root).is_dir()]
    if not missing:
        return
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    print(f"installing {' '.join(missing)} with apt-get...", file=sys.stderr)
    subprocess.run(
        [*sudo, "apt-get", "install", "-y", "-qq", *missing],
        check=True,
        env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
    )


# --- a re-crawl: the same pages, some edited --------------------------------------------------------------

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
#: What an edit adds, in the site's language (``Site.language``).
NEW_SENTENCES = {
    "en": (
        "This behaviour may change in a future release without notice.",
        "See the release notes of your version for the details that apply to it.",
        "Most users never need to change the default value described here.",
    ),
    "de": (
        "Dieses Verhalten kann sich in einer künftigen Version ohne Ankündigung ändern.",
        "Die Einzelheiten Ihrer Version stehen in den Hinweisen zu dieser Version.",
        "Die meisten Benutzer müssen den hier beschriebenen Standardwert nie ändern.",
    ),
    "it": (
        "Questo comportamento potrebbe cambiare in una versione futura senza preavviso.",
        "Consulta le note di rilascio della tua versione per i dettagli che la riguardano.",
        "La maggior parte degli utenti non deve mai cambiare il valore predefinito descritto qui.",
    ),
    "zh": (
        "此行为可能会在未来的版本中更改，恕不另行通知。",
        "有关适用于您的版本的详细信息，请参阅该版本的发行说明。",
        "大多数用户永远不需要更改此处描述的默认值。",
    ),
}


def _paragraph(root: lxml.html.HtmlElement) -> lxml.html.HtmlElement | None:
    """The first paragraph with a text of its own long enough to hold a sentence."""
    return next((p for p in root.iter("p") if p.text and len(p.text.split()) >= 8), None)


def last_updated(root: lxml.html.HtmlElement, rng: random.Random, language: str = "en") -> None:
    line = f"<p>Last updated on {rng.choice(MONTH_NAMES)} {rng.randint(1, 28)}, {rng.randint(2019, 2026)}.</p>"
    (root.body if root.body is not None else root).append(lxml.html.fragment_fromstring(line))


def replaced_sentence(root: lxml.html.HtmlElement, rng: random.Random, language: str = "en") -> None:
    paragraph = _paragraph(root)
    if paragraph is None:
        return last_updated(root, rng)
    sentences = _SENTENCE.split(paragraph.text)
    sentences[rng.randrange(len(sentences))] = rng.choice(NEW_SENTENCES[language])
    paragraph.text = " ".join(sentences)


def added_sentence(root: lxml.html.HtmlElement, rng: random.Random, language: str = "en") -> None:
    paragraph = _paragraph(root)
    if paragraph is None:
        return last_updated(root, rng)
    paragraph.text = f"{paragraph.text.rstrip()} {rng.choice(NEW_SENTENCES[language])} "


EDITS: dict[str, Callable[[lxml.html.HtmlElement, random.Random, str], None]] = {
    "last_updated": last_updated,
    "replaced_sentence": replaced_sentence,
    "added_sentence": added_sentence,
}


@dataclass
class Page:
    url: str
    html: bytes
    crawl: int  # 1: the first crawl, 2: the re-crawl
    edit: str | None = None  # the re-crawl's edit of the page, if any


def crawls(name: str, site: Site) -> list[Page]:
    """The site's pages in path order, then again with ``EDITED_SHARE`` of them edited (fixed seed)."""
    root = Path(site.root)
    first = [Page(f"https://{name}/{path.relative_to(root)}", path.read_bytes(), 1) for path in site.files()]
    rng = random.Random(name)
    edited = set(rng.sample(range(len(first)), round(EDITED_SHARE * len(first))))
    kinds = list(EDITS)
    again = []
    for n, page in enumerate(first):
        edit = kinds[n % len(kinds)] if n in edited else None
        html = page.html
        if edit is not None and (tree := html_tree(html)) is not None:
            EDITS[edit](tree, random.Random(f"{name}/{n}"), site.language)
            html = lxml.html.tostring(tree, encoding="utf-8")
        again.append(Page(page.url, html, 2, edit))  # at the same address: a re-crawl, as a crawl meets it
    return first + again


# --- fingerprints of every approach -------------------------------------------------------------------------


def visible_words(html: bytes) -> list[str]:
    """The judge's words: lxml's text of the page, scripts and styles left out, split into words."""
    return re.findall(r"\w+", visible_text(html).lower())


def naive(html: bytes) -> int | None:
    """The naive whole-text design: the filter's SimHash of every visible word (TF-IDF weights)."""
    words = tokens(visible_text(html))
    return simhash(content_features([words])) if words else None


def simhash_package(html: bytes) -> int | None:
    """The ``simhash`` package with its defaults (character 4-grams of the lowered text)."""
    from simhash import Simhash

    text = visible_text(html)
    try:
        return Simhash(text).value if text.strip() else None
    except OverflowError:  # numpy 2, weights above 50
        return None


def _ours(html: bytes) -> Fingerprint:
    return Fingerprinter().fingerprint(html)


def _anchors(html: bytes) -> dict[str, int | None]:
    return {"naive": naive(html), "simhash_package": simhash_package(html)}


#: What each kind of result is computed by, and the code it depends on (``bench.common.CODE``): the cache is
#: keyed on that code's bytes and on the page's.
KINDS: dict[str, tuple[Callable[[bytes], object], tuple[str, ...]]] = {
    "ours": (_ours, ("ours",)),
    "anchors": (_anchors, ("ours", "anchors")),
}


def fingerprints(pages: list[Page], workers: int, cache_path: Path | None) -> list[dict]:
    """Every page's fingerprints, ours and the anchors' (each distinct HTML once; cached)."""
    cached = pickle.loads(cache_path.read_bytes()) if cache_path and cache_path.exists() else {}
    hashes = [xxhash.xxh3_64_hexdigest(page.html) for page in pages]
    distinct = {h: page.html for h, page in zip(hashes, pages)}
    keys = {
        kind: f"{kind}/{code_version([path for name in code for path in CODE[name]])}"
        for kind, (_, code) in KINDS.items()
    }
    with ProcessPoolExecutor(workers) as pool:
        for kind, (compute, _) in KINDS.items():
            todo = [h for h in distinct if f"{keys[kind]}/{h}" not in cached]
            for h, result in zip(todo, pool.map(compute, (distinct[h] for h in todo), chunksize=8)):
                cached[f"{keys[kind]}/{h}"] = result
    if cache_path:
        cache_path.parent.mkdir(parents=True, exist_ok=True)
        cache_path.write_bytes(pickle.dumps(cached))
    return [{"ours": cached[f"{keys['ours']}/{h}"], **cached[f"{keys['anchors']}/{h}"]} for h in hashes]


# --- decisions, in arrival order ------------------------------------------------------------------------------

#: The filter at its defaults, and with what a relaxation changes (each decided as the crawl's store decides).
POLICIES = {
    "ours": DedupSettings().policy,
    "ours, small texts not searched further": replace(DedupSettings().policy, small_text_extra_bits=0),
    # what the same-body rule (own texts large and all but the same, whatever the names and the chrome) costs
    "ours, without the same-body rule": replace(DedupSettings().policy, same_body_similarity=None),
    # and what it would cost from own texts of 60 3-grams, or at 0.8 (the chrome-swapped articles it would catch:
    # docs/usage/distances.md)
    "ours, the same body from 60 3-grams": replace(DedupSettings().policy, same_body_shingles=60),
    "ours, the same body at 0.8": replace(DedupSettings().policy, same_body_similarity=0.8),
    # what a thin own text's visible text needs at the least that catches every encyclopedic stub whose notice
    # changed (bench/quality/detection.py's stub_notice_changed row)
    "ours, thin texts' visible texts at 0.57": replace(DedupSettings().policy, thin_visible_similarity=0.57),
    # what a thin own text named the same costs at 0.35 (the default) against min_similarity, and would at 0.25
    # (its visible text still at min_similarity; quality.py's stub_reworded row: a sentence of a three-sentence stub
    # reworded)
    "ours, thin texts named the same at min_similarity": replace(DedupSettings().policy, thin_own_similarity=None),
    "ours, thin texts named the same at 0.25": replace(DedupSettings().policy, thin_own_similarity=0.25),
}


def decide_ours(pages: list[Page], found: list[dict], policy: Policy) -> Iterator[tuple[int, int]]:
    """(dropped page, kept page it duplicates), as the crawl's store decides them with ``policy``: the kept page by its
    store row (a re-crawl keeps a page at an address again: the drop names the row it matched, not the address)."""
    store = MemoryStore(policy)
    page_of_row = []
    for n, (page, result) in enumerate(zip(pages, found)):
        fingerprint: Fingerprint = result["ours"]
        if fingerprint.problem is not None or (fingerprint.content is None and fingerprint.structure is None):
            continue
        match = store.check_and_add(page.url, fingerprint)
        if dropped(match):
            yield n, page_of_row[match.kept_row]
        else:
            page_of_row.append(n)


def decide_anchor(found: list[dict], name: str) -> Iterator[tuple[int, int]]:
    """(dropped page, kept page) for an anchor: a page within ``ANCHOR_DISTANCE`` of a kept one (the nearest,
    the first kept among equals) is dropped."""
    kept = np.zeros(len(found), dtype=np.uint64)
    kept_at = np.zeros(len(found), dtype=np.int64)
    size = 0
    for n, result in enumerate(found):
        value = result[name]
        if value is None:
            continue
        if size:
            distances = np.bitwise_count(kept[:size] ^ np.uint64(value))
            nearest = int(np.argmin(distances))
            if distances[nearest] <= ANCHOR_DISTANCE:
                yield n, int(kept_at[nearest])
                continue
        kept[size], kept_at[size] = value, n
        size += 1


ANCHORS = ("simhash_package", "naive")


# --- the judge -------------------------------------------------------------------------------------------------


def shingles(words: list[str]) -> set[int]:
    return (
        {
            xxhash.xxh3_64_intdigest(" ".join(words[i : i + SHINGLE_WORDS]).encode())
            for i in range(max(1, len(words) - SHINGLE_WORDS + 1))
        }
        if words
        else set()
    )


def cached_shingles() -> Callable[[bytes], set[int]]:
    """The judge's shingles of a page (``shingles`` of its ``visible_words``), each distinct page once."""
    found: dict[int, set[int]] = {}

    def shingled(html: bytes) -> set[int]:
        key = xxhash.xxh3_64_intdigest(html)
        if key not in found:
            found[key] = shingles(visible_words(html))
        return found[key]

    return shingled


def judged(a: bytes, b: bytes, shingled: Callable[[bytes], set[int]]) -> float:
    """1.0 for the same bytes, else the Jaccard similarity of the two pages' word 5-shingles."""
    if a == b:
        return 1.0
    x, y = shingled(a), shingled(b)
    return len(x & y) / len(x | y) if x or y else 1.0


@dataclass
class Row:
    """One approach on one site: the first crawl's drops, judged; the re-crawl's pages dropped, and those
    dropped as another document."""

    pages: int = 0
    drops: int = 0
    other_documents: int = 0  # judge under OTHER_DOCUMENT
    close: int = 0  # between
    recrawl_unchanged: list[int] = field(default_factory=lambda: [0, 0])  # dropped, of
    recrawl_edited: list[int] = field(default_factory=lambda: [0, 0])
    #: the edited ones whose first version was kept (met again at its address; the others' first version was dropped
    #: as a copy of another page, whose address they do not have)
    recrawl_edited_kept: list[int] = field(default_factory=lambda: [0, 0])
    recrawl_other_documents: int = 0
    examples: list[str] = field(default_factory=list)  # other documents dropped, the first ones


def evaluate(name: str, site: Site, workers: int, cache: Path | None) -> dict[str, Row]:
    pages = crawls(name, site)
    found = fingerprints(pages, workers, cache)
    shingled = cached_shingles()

    rows = {}
    for approach in (*POLICIES, *ANCHORS):
        row = Row(pages=sum(page.crawl == 1 for page in pages))
        drops = dict(
            decide_ours(pages, found, POLICIES[approach]) if approach in POLICIES else decide_anchor(found, approach)
        )
        for n, page in enumerate(pages):
            if page.crawl == 2:
                counted = row.recrawl_edited if page.edit else row.recrawl_unchanged
                counted[0] += n in drops
                counted[1] += 1
                if page.edit and n - row.pages not in drops:
                    row.recrawl_edited_kept[0] += n in drops
                    row.recrawl_edited_kept[1] += 1
            if n not in drops:
                continue
            kept = pages[drops[n]]
            similarity = 1.0 if page.url == kept.url else judged(page.html, kept.html, shingled)
            if site.distinct and page.url != kept.url and page.html != kept.html:
                similarity = 0.0  # another product, another place: another document, whatever the judge says
            if page.crawl == 1:
                row.drops += 1
                row.close += OTHER_DOCUMENT <= similarity < SAME_DOCUMENT
            if similarity < OTHER_DOCUMENT:
                row.other_documents += page.crawl == 1
                row.recrawl_other_documents += page.crawl == 2
                if len(row.examples) < 12:
                    row.examples.append(f"{page.url} as {kept.url} ({similarity:.2f})")
        rows[approach] = row
    return rows


def table(results: dict[str, dict[str, Row]]) -> None:
    print("\n## Real sites: documentation sets decided in path order, then re-crawled (5 % of pages edited)\n")
    print(
        "| site | approach | pages | drops | other documents dropped | close | re-crawl unchanged dropped "
        "| re-crawl edited dropped | of which first kept | re-crawl: other documents dropped |\n"
        "|---|---|---|---|---|---|---|---|---|---|"
    )
    for site, rows in results.items():
        for approach, row in rows.items():
            unchanged, edited, edited_kept = row.recrawl_unchanged, row.recrawl_edited, row.recrawl_edited_kept
            print(
                f"| {site} | {approach} | {row.pages:,} | {row.drops:,} | {row.other_documents:,} | {row.close:,} "
                f"| {unchanged[0] / max(1, unchanged[1]):.3f} ({unchanged[0]:,} of {unchanged[1]:,}) "
                f"| {edited[0] / max(1, edited[1]):.3f} ({edited[0]} of {edited[1]}) "
                f"| {edited_kept[0] / max(1, edited_kept[1]):.3f} ({edited_kept[0]} of {edited_kept[1]}) "
                f"| {row.recrawl_other_documents} |"
            )
    for site, rows in results.items():
        for approach in POLICIES:
            if rows[approach].examples:
                print(f"\n{site}, other documents dropped ({approach}; the first ones):")
                print("\n".join(f"- {example}" for example in rows[approach].examples))


def run(names: list[str], workers: int, cache: Path | None, data: Path = DATA) -> dict[str, dict[str, Row]]:
    sites = [SITES[name] for name in names]
    install(sites, data)
    return {name: evaluate(name, SITES[name], workers, cache) for name in names}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sites", nargs="+", default=list(SITES), choices=list(SITES))
    parser.add_argument("--data", type=Path, default=DATA, help="the shared data (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=Path("bench/results/quality/real_sites.json"))
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--cache", type=Path, default=Path("bench/.cache/real-sites-fingerprints.pkl"))
    args = parser.parse_args()
    started = time.time()
    results = run(args.sites, args.workers, args.cache, args.data)
    table(results)
    out = {
        "sites": {site: {a: row.__dict__ for a, row in rows.items()} for site, rows in results.items()},
        "command": command_line("bench.quality.real_sites"),
        "seconds": round(time.time() - started),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1))
    print(f"\nwritten {args.out} in {out['seconds']} s; reproduce with: {out['command']}")


if __name__ == "__main__":
    main()
