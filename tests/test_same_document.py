"""The same document, whatever the witness: a page met again at its address is judged as its re-crawl (its name and
what it shows), not as a stranger; another document at the same address is kept.  Decided alike by the crawl's
pipeline, ``simhash-dedup dedup`` and the Spark job."""

from __future__ import annotations

import io
import json
import random

import lxml.html
import pytest

from bench.common import html_tree, write_warc
from bench.quality.real_sites import replaced_sentence
from scrapy_simhash_dedup import Fingerprinter, SimhashDuplicate
from scrapy_simhash_dedup.batch import dedup
from scrapy_simhash_dedup.crawl.settings import DedupSettings
from scrapy_simhash_dedup.fingerprint.sketch import has_own_text, named_alike, named_the_same
from scrapy_simhash_dedup.matching.policy import ADDRESS, SAME_ADDRESS_VISIBLE_SIMILARITY
from scrapy_simhash_dedup.stores.memory import MemoryStore

from .pages import real_page
from .test_pipeline import make_pipeline, process, stat

#: A generated API page whose own text is one short description (pandas' reference, ``tests/data``).
API_PAGE = "pandas-doc-ExtensionDtype.empty"
#: One whose page has no own text: a signature, and a sentence every such page of the site says.
API_PAGE_WITHOUT_OWN_TEXT = "pandas-doc-PeriodIndex.second"


def edited(html: bytes) -> bytes:
    """The page with one sentence of its description replaced, as a site changes between two crawls."""
    root = html_tree(html)
    replaced_sentence(root, random.Random(1))
    return lxml.html.tostring(root, encoding="utf-8")


def test_a_templated_page_recrawled_at_its_address_with_a_sentence_changed_is_the_same_document() -> None:
    """Its own text is one sentence or two: a sentence changed is most of it, too little alone to call the pages
    one document; met at its own address, what it names and shows decides."""
    page = real_page(API_PAGE)
    pipeline = make_pipeline()
    assert process(pipeline, {"url": "https://docs.example/empty.html", "html": page})
    assert process(pipeline, {"url": "https://docs.example/other.html", "html": edited(page)}), (
        "at another address, the edited page is a stranger: its own text alone decides, and keeps it"
    )
    with pytest.raises(SimhashDuplicate, match="near-duplicate of https://docs.example/empty.html") as raised:
        process(pipeline, {"url": "https://docs.example/empty.html#top", "html": edited(page)})
    match = raised.value.match
    assert match.reason == ADDRESS and match.similarity_needed == SAME_ADDRESS_VISIBLE_SIMILARITY
    assert stat(pipeline, "items_dropped/address") == 1


def test_a_page_without_own_text_recrawled_at_its_address_with_a_sentence_changed_is_the_same_document() -> None:
    """An API page of a signature and a sentence its site repeats has no own text: its exact words are its content,
    so one sentence changed makes it a stranger anywhere but at its own address, where its name and what it shows
    decide (its sketch holds them)."""
    page = real_page(API_PAGE_WITHOUT_OWN_TEXT)
    assert not has_own_text(Fingerprinter().fingerprint(page).sketch)
    pipeline = make_pipeline()
    assert process(pipeline, {"url": "https://docs.example/second.html", "html": page})
    assert process(pipeline, {"url": "https://docs.example/other.html", "html": edited(page)})
    with pytest.raises(SimhashDuplicate, match="fetched again, .*: https://docs.example/second.html") as raised:
        process(pipeline, {"url": "https://docs.example/second.html", "html": edited(page)})  # (in the same crawl)
    assert raised.value.match.reason == ADDRESS and raised.value.match.url == "https://docs.example/second.html"
    assert stat(pipeline, "items_dropped/address") == 1


def test_another_document_at_the_same_address_is_kept() -> None:
    """A home page whose stories changed, an address given to another article: what it shows is another page's."""
    pipeline = make_pipeline()
    assert process(pipeline, {"url": "https://news.example/", "html": real_page("newspaper-syracuse.com1")})
    assert process(pipeline, {"url": "https://news.example/", "html": real_page("newspaper-syracuse.com2")})
    assert stat(pipeline, "pages_kept") == 2


@pytest.mark.spark
def test_dedup_and_spark_decide_a_recrawl_as_the_crawl_does(tmp_path) -> None:
    page = real_page(API_PAGE)
    records = [
        ("https://docs.example/empty.html", page),
        ("https://docs.example/empty.html", edited(page)),
        ("https://news.example/", real_page("newspaper-syracuse.com1")),
        ("https://news.example/", real_page("newspaper-syracuse.com2")),
    ]
    archive = tmp_path / "pages.warc.gz"
    write_warc(archive, [(url, html, "text/html") for url, html in records])
    kept = io.StringIO()
    dedup([archive], DedupSettings(), MemoryStore(DedupSettings().policy), kept, workers=0)
    expected = [0, 2, 3]
    assert [json.loads(line)["url"] for line in kept.getvalue().splitlines()] == [records[n][0] for n in expected]

    from scrapy_simhash_dedup.spark import run, session

    spark = session(cores=2)
    try:
        run(spark, [archive], tmp_path / "out", DedupSettings())
    finally:
        spark.stop()
    import pyarrow.dataset

    rows = sorted(
        pyarrow.dataset.dataset(tmp_path / "out" / "kept", format="parquet").to_table().to_pylist(),
        key=lambda row: row["order"],
    )
    assert [row["url"] for row in rows] == [records[n][0] for n in expected]
    decisions = pyarrow.dataset.dataset(tmp_path / "out" / "decisions", format="parquet").to_table().to_pylist()
    assert [row["reason"] for row in decisions if row["outcome"] == "dropped"] == [ADDRESS]


#: Andorra's parishes and Liechtenstein's municipalities (ISO 3166-2), for a wiki's family of list articles.
ANDORRA = [
    ("AD-07", "Andorra la Vella", "Parish"),
    ("AD-02", "Canillo", "Parish"),
    ("AD-03", "Encamp", "Parish"),
    ("AD-08", "Escaldes-Engordany", "Parish"),
    ("AD-04", "La Massana", "Parish"),
    ("AD-05", "Ordino", "Parish"),
    ("AD-06", "Sant Julià de Lòria", "Parish"),
]
LIECHTENSTEIN = [
    ("LI-01", "Balzers", "Commune"),
    ("LI-02", "Eschen", "Commune"),
    ("LI-03", "Gamprin", "Commune"),
    ("LI-04", "Mauren", "Commune"),
    ("LI-05", "Planken", "Commune"),
    ("LI-06", "Ruggell", "Commune"),
    ("LI-07", "Schaan", "Commune"),
    ("LI-08", "Schellenberg", "Commune"),
    ("LI-09", "Triesen", "Commune"),
    ("LI-10", "Triesenberg", "Commune"),
    ("LI-11", "Vaduz", "Commune"),
]


def test_the_same_article_in_another_site_s_chrome_is_the_same_document() -> None:
    """Another site's header, navigation and footer around the same body, under the other site's name: its own text
    and main content are the article's; its title, heading and chrome are not what the document is."""
    from bench.quality.sets import swap_chrome

    article = real_page("newspaper-theatlanticcities.com1")
    moved = swap_chrome(article, real_page("newspaper-syracuse.com1"))
    assert moved is not None and b"CityLab" not in moved.split(b"</title>")[0]
    pipeline = make_pipeline()
    assert process(pipeline, {"url": "https://citylab.example/story", "html": article})
    with pytest.raises(SimhashDuplicate, match="near-duplicate of https://citylab.example/story"):
        process(pipeline, {"url": "https://syracuse.example/story", "html": moved})


def test_the_same_headline_under_another_site_s_name_and_banner_is_the_same_article() -> None:
    """The other site shows its banner as the page's first heading, and its name in the title: title and heading
    both differ from the article's, its title's lead (the headline) does not."""
    article = real_page("newspaper-theatlanticcities.com1")
    elsewhere = article.replace(b"- CityLab</title>", b"| The Daily Planet</title>", 1).replace(
        b"<body", b'<div class="brand"><h1>The Daily Planet</h1></div><body', 1
    )
    a, b = (Fingerprinter().fingerprint(html).sketch for html in (article, elsewhere))
    assert a is not None and b is not None and not named_the_same(a, b) and named_alike(a, b)
    pipeline = make_pipeline()
    assert process(pipeline, {"url": "https://citylab.example/story", "html": article})
    with pytest.raises(SimhashDuplicate, match="near-duplicate of https://citylab.example/story"):
        process(pipeline, {"url": "https://planet.example/story", "html": elsewhere})


def test_list_articles_of_one_wiki_family_are_other_documents() -> None:
    """One lead but for the country's name, the same sections and references: the tables, which are what the pages
    hold, differ.  The wiki's chrome is a real Wikipedia page's (``tests/data``), long enough that the lists' whole
    visible texts agree on 0.87: scheme 7 dropped Liechtenstein's list as a copy of Andorra's."""
    from bench.quality.built_sites import list_page, stub_page

    chrome = real_page("readability-wikipedia-new-zealand")
    andorra, liechtenstein = (
        list_page(chrome, "en", country, places)
        for country, places in (("Andorra", ANDORRA), ("Liechtenstein", LIECHTENSTEIN))
    )
    canillo, encamp = (stub_page(chrome, "en", "Andorra", place, place[1], None) for place in ANDORRA[1:3])
    pipeline = make_pipeline()
    for url, page in (("List_AD", andorra), ("List_LI", liechtenstein), ("AD-02", canillo), ("AD-03", encamp)):
        assert process(pipeline, {"url": f"https://wiki.example/{url}", "html": page}), url
    with pytest.raises(SimhashDuplicate, match="near-duplicate of https://wiki.example/List_AD"):  # a copy is a copy
        process(pipeline, {"url": "https://mirror.example/List_AD", "html": andorra})
