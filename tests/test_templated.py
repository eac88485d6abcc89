"""Real templated sites: pages of one template that are about different things are other documents, kept;
copies stay duplicates.  Each pair is decided by the crawl's pipeline, then by ``simhash-dedup dedup``'s store
and checked against the judge of ``bench/quality/real_sites.py`` (the Jaccard similarity of the pages' word
5-shingles)."""

from __future__ import annotations

import tarfile

import pytest

from bench.quality.real_sites import OTHER_DOCUMENT, SAME_DOCUMENT, judged, shingles, visible_words
from scrapy_simhash_dedup import Fingerprinter, SimhashDuplicate
from scrapy_simhash_dedup.fingerprint.sketch import same_name, similarity
from scrapy_simhash_dedup.matching.policy import NAMED_APART_SIMILARITY, Policy

from .conftest import DEMO_SITE
from .pages import real_page
from .test_pipeline import make_pipeline, process, stat

#: Sibling pages of real documentation sets (``tests/data``), each pair dropped by the scheme-6 filter; the
#: shape each stands for.
SIBLINGS = {
    "link-dense index pages: one title, other letters": ("python-doc-genindex-J", "python-doc-genindex-K"),
    "two commands of a manual": ("postgresql-doc-sql-commit", "postgresql-doc-sql-end"),
    "two enum classes of a javadoc reference": ("openjdk-doc-AccessMode", "openjdk-doc-CryptoPrimitive"),
    "two sibling intrinsics of a rustdoc reference": ("rust-doc-vcopyq_laneq_f64", "rust-doc-vcopyq_laneq_s64"),
}


def judge(a: bytes, b: bytes) -> float:
    return judged(a, b, lambda html: shingles(visible_words(html)))


@pytest.mark.parametrize("shape", list(SIBLINGS))
def test_sibling_pages_of_a_template_are_other_documents_and_kept(shape: str) -> None:
    first, second = (real_page(name) for name in SIBLINGS[shape])
    assert judge(first, second) < OTHER_DOCUMENT  # other documents, by the judge
    pipeline = make_pipeline()
    assert process(pipeline, {"url": "first", "html": first})
    assert process(pipeline, {"url": "second", "html": second})
    with pytest.raises(SimhashDuplicate, match="near-duplicate of second"):  # a copy is still a copy
        process(pipeline, {"url": "copy", "html": second})
    assert (stat(pipeline, "pages_kept"), stat(pipeline, "pages_dropped")) == (2, 1)


def test_what_keeps_sibling_pages_apart_is_their_names_and_what_they_show() -> None:
    """The pairs' own texts alone would match (their template's notices, summaries, footers); their names
    differ, and what they show does not agree on what pages of other names need."""
    fingerprinter, policy = Fingerprinter(), Policy()
    for shape, names in SIBLINGS.items():
        a, b = (fingerprinter.fingerprint(real_page(name)).sketch for name in names)
        assert not same_name(a, b), shape
        found, needed = policy.evidence(0, a, b)
        assert needed == NAMED_APART_SIMILARITY and found < needed, shape
    own = [
        similarity(*(fingerprinter.fingerprint(real_page(name)).sketch for name in names))
        for names in SIBLINGS.values()
    ]
    assert max(own) >= policy.min_similarity  # the own texts of at least one pair agree on what decided before


def handbook_pages(name: str) -> tuple[bytes, bytes]:
    """A page of the Debian handbook in English and in Danish (the demo site: GPL-2+ or CC BY-SA 3.0)."""
    with tarfile.open(DEMO_SITE) as archive:
        return tuple(archive.extractfile(f"html/{language}/{name}").read() for language in ("en-US", "da-DK"))


def test_an_untranslated_chapter_whose_heading_alone_is_translated_is_a_copy() -> None:
    """Danish ``Kapitel 5`` over the English chapter: the names differ, everything else is the same page."""
    english, danish = handbook_pages("packaging-system.html")
    assert judge(english, danish) >= SAME_DOCUMENT
    pipeline = make_pipeline()
    process(pipeline, {"url": "en-US", "html": english})
    with pytest.raises(SimhashDuplicate, match="near-duplicate of en-US"):
        process(pipeline, {"url": "da-DK", "html": danish})


def test_a_partial_translation_is_another_document() -> None:
    """The Danish handbook's front page: its title and introduction translated, its table of contents still
    English.  Text in one page's language that the other lacks is not negligible: kept."""
    english, danish = handbook_pages("index.html")
    pipeline = make_pipeline()
    process(pipeline, {"url": "en-US", "html": english})
    assert process(pipeline, {"url": "da-DK", "html": danish})
    assert stat(pipeline, "pages_kept") == 2
