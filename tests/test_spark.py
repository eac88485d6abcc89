"""The Spark job (``simhash-dedup spark``) in local mode with 2 cores: the same kept pages as
``simhash-dedup dedup`` in the same order, the crawl's decisions on a chain, incremental runs, bad input."""

from __future__ import annotations

import functools
import io
import json
import os
import random
import re
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from itertools import islice
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset
import pyarrow.parquet as pq
import pytest

from bench.common import write_warc
from scrapy_simhash_dedup.batch import dedup
from scrapy_simhash_dedup.batch.sources import read_warc
from scrapy_simhash_dedup.crawl.settings import DedupSettings
from scrapy_simhash_dedup.fingerprint.fingerprinter import Fingerprinter
from scrapy_simhash_dedup.fingerprint.simhash import hamming
from scrapy_simhash_dedup.matching.policy import Policy
from scrapy_simhash_dedup.matching.scope import Scope, site_key
from scrapy_simhash_dedup.report.aliases import alias_rows
from scrapy_simhash_dedup.report.log import load_log
from scrapy_simhash_dedup.spark import JobOptions, run, session
from scrapy_simhash_dedup.spark.inputs import Fields
from scrapy_simhash_dedup.stores.memory import MemoryStore
from tools.fingerprint_reference import shared_pages

from .conftest import PROJECT
from .pages import shared_data
from .test_batch import wget_warc

pytestmark = pytest.mark.spark  # every test here runs Spark (the fixture, or the command line)

DEMO_SITE = PROJECT / "crawler" / "demo_site" / "debian-handbook-en-da-zh.tar.xz"
#: Sizes that make a small input take the paths of a large one: several shards, rounds of joins.
AT_SCALE = JobOptions(shard_pages=1_500, driver_pairs=0, pages_per_task=300)


@pytest.fixture(scope="module")
def spark() -> Iterator[object]:
    spark = session(cores=2)
    yield spark
    spark.stop()


def batch_kept(inputs: list[Path]) -> list[str]:
    """URLs kept by ``simhash-dedup dedup`` (2 workers), in order."""
    kept = io.StringIO()
    dedup(inputs, DedupSettings(), MemoryStore(DedupSettings().policy), kept, workers=2)
    return [json.loads(line)["url"] for line in kept.getvalue().splitlines()]


def table(folder: Path, name: str) -> list[dict]:
    rows = pyarrow.dataset.dataset(folder / name, format="parquet").to_table().to_pylist()
    return sorted(rows, key=lambda row: row["order"])


def spark_kept(folder: Path) -> list[str]:
    return [row["url"] for row in table(folder, "kept")]


def demo_pages(folder: Path) -> Path:
    """The demo site's pages as a folder of HTML files."""
    with tarfile.open(DEMO_SITE) as archive:
        for member in archive:
            if member.isfile() and member.name.endswith(".html"):
                path = folder / member.name
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(archive.extractfile(member).read())
    return folder


def test_the_demo_sites_pages_are_kept_as_dedup_keeps_them(spark, tmp_path):
    pages = demo_pages(tmp_path / "site")
    result = run(spark, [pages], tmp_path / "out", DedupSettings())
    expected = batch_kept([pages])
    assert result.happened["dropped"] > 50, "the demo site holds many near-duplicates"
    assert spark_kept(tmp_path / "out") == expected
    decided = {row["url"]: row for row in table(tmp_path / "out", "decisions")}
    assert all(row["kept_url"] in expected for row in decided.values() if row["outcome"] == "dropped")


def test_warc_files_as_wget_writes_them_are_read_as_dedup_reads_them(spark, handbook, tmp_path):
    """wget's WARCs (``<…>`` target URIs, 404 pages, a re-crawl given first): the same pages kept, under the
    same URLs and sources, and the same records counted and not compared, as ``dedup``."""
    _, base_url, _ = handbook
    warcs = tmp_path / "warcs"
    warcs.mkdir()
    first = wget_warc(base_url, warcs, "site")
    time.sleep(1.1)  # WARC-Date counts seconds
    inputs = [wget_warc(base_url, warcs, "site-recrawl"), first]
    result = run(spark, inputs, tmp_path / "out", DedupSettings())
    kept = io.StringIO()
    happened = dedup(inputs, DedupSettings(), MemoryStore(DedupSettings().policy), kept, workers=2)
    expected = [(record["url"], record["source"]) for record in map(json.loads, kept.getvalue().splitlines())]
    assert expected and all(source.startswith(f"{first}@") and url.startswith(base_url) for url, source in expected)
    assert [(row["url"], row["source"]) for row in table(tmp_path / "out", "kept")] == expected
    assert happened["status/404"] > 0
    assert {name: count for name, count in result.happened.items() if name.startswith(("status/", "revisit"))} == {
        name: count for name, count in happened.items() if name.startswith(("status/", "revisit"))
    }


def shared_with_copies(path: Path, every: int = 1) -> Path:
    """Every shared page (or every ``every``-th), then an exact copy of every 9th of them and an edited copy of
    every 11th, as WARC.gz."""
    pages = [(f"https://shared.example/{name}", html) for name, html in shared_pages(shared_data())][::every]
    copies = [(f"{url}?copy", html) for url, html in pages[::9]]
    edited = [
        (f"{url}?edited", html.replace(b"</body>", b"<p>Updated: a sentence added at the end.</p></body>", 1))
        for url, html in pages[::11]
    ]
    write_warc(path, ((url, html, "text/html") for url, html in pages + copies + edited))
    return path


def test_all_shared_pages_with_copies_are_kept_as_dedup_keeps_them_in_shards_and_rounds(spark, tmp_path):
    archive = shared_with_copies(tmp_path / "shared.warc.gz")
    expected = batch_kept([archive])
    result = run(spark, [archive], tmp_path / "out", DedupSettings(), AT_SCALE)
    assert result.work["shards"] >= 4 and result.work["rounds"] >= 1
    assert result.work["fingerprinted"] < result.work["pages"], "byte-identical pages are fingerprinted once"
    assert spark_kept(tmp_path / "out") == expected
    assert sum(1 for url in expected if url.endswith("?copy")) == 0, "exact copies are all dropped"


def chain_pages() -> tuple[bytes, bytes, bytes]:
    """A, B, C: B a near-duplicate of A and of C, C not of A (checked by the policy itself)."""
    syllables = ["ka", "lo", "mi", "ne", "ru", "ta", "vo", "zi", "pe", "sa", "do", "fu"]
    rng = random.Random(7)
    vocabulary = sorted({"".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))) for _ in range(600)})

    def sentence() -> str:
        return " ".join(rng.choice(vocabulary) for _ in range(12)).capitalize() + "."

    def page(sentences: list[str]) -> bytes:
        return (
            "<html><body><article>" + "".join(f"<p>{s}</p>" for s in sentences) + "</article></body></html>"
        ).encode()

    fingerprinter, policy = Fingerprinter(), Policy()

    def near(a: bytes, b: bytes) -> bool:
        x, y = fingerprinter.fingerprint(a), fingerprinter.fingerprint(b)
        distance = hamming(x.content, y.content)
        verdict = policy.content_verdict(distance, (x.sketch, y.sketch), False, False, None)
        return distance <= policy.content_distance and verdict is not None and verdict[1]

    base = [sentence() for _ in range(60)]
    for edits in range(4, 20, 2):
        b = [sentence() if i < edits else s for i, s in enumerate(base)]
        c = [sentence() if i >= 60 - edits else s for i, s in enumerate(b)]
        pages = page(base), page(b), page(c)
        if near(pages[0], pages[1]) and near(pages[1], pages[2]) and not near(pages[0], pages[2]):
            return pages
    raise AssertionError("no chain found")


def test_a_chain_keeps_its_ends_as_a_crawl_does_not_its_first_page_alone(spark, tmp_path):
    a, b, c = chain_pages()
    archive = tmp_path / "chain.warc.gz"
    write_warc(
        archive,
        [
            ("https://x.example/a", a, "text/html"),
            ("https://x.example/b", b, "text/html"),
            ("https://x.example/c", c, "text/html"),
        ],
    )
    for options, folder in ((JobOptions(), "local"), (AT_SCALE, "rounds")):
        run(spark, [archive], tmp_path / folder, DedupSettings(), options)
        assert spark_kept(tmp_path / folder) == ["https://x.example/a", "https://x.example/c"]  # components: a alone
    assert batch_kept([archive]) == ["https://x.example/a", "https://x.example/c"]


def test_a_run_against_an_earlier_one_keeps_what_one_run_over_both_keeps(spark, tmp_path):
    archive = shared_with_copies(tmp_path / "all.warc.gz", every=3)  # three runs: a third of the pages will do
    records = list(read_records(archive))
    first, second = tmp_path / "first.warc.gz", tmp_path / "second.warc.gz"
    write_warc(first, records[: len(records) // 2])
    write_warc(second, records[len(records) // 2 :])
    run(spark, [first, second], tmp_path / "both", DedupSettings())
    run(spark, [first], tmp_path / "month1", DedupSettings())
    later = run(spark, [second], tmp_path / "month2", DedupSettings(), JobOptions(against=(str(tmp_path / "month1"),)))
    assert spark_kept(tmp_path / "month1") + spark_kept(tmp_path / "month2") == spark_kept(tmp_path / "both")
    assert later.work["against"] == len(table(tmp_path / "month1", "fingerprints"))
    distinct_second = len({html for _, html, _ in records[len(records) // 2 :]})
    assert later.work["fingerprinted"] == distinct_second, "no page of the earlier run is fingerprinted again"
    # and a month's decisions name the earlier month's pages it dropped pages for
    earlier_urls = set(spark_kept(tmp_path / "month1"))
    assert any(row["kept_url"] in earlier_urls for row in table(tmp_path / "month2", "decisions"))
    # fingerprints of another scheme are not compared: one line says so
    run_file = tmp_path / "month1" / "run.json"
    record = json.loads(run_file.read_text())
    record["scheme"] = -1
    run_file.write_text(json.dumps(record))
    with pytest.raises(ValueError, match="scheme -1"):
        run(
            spark, [second], tmp_path / "month2-again", DedupSettings(), JobOptions(against=(str(tmp_path / "month1"),))
        )


def read_records(archive: Path) -> Iterator[tuple[str, bytes, str]]:
    for page, _ in read_warc(archive):
        yield page.url, page.html, page.content_type


def test_bad_inputs_are_named_and_counted_and_the_rest_is_processed(spark, tmp_path):
    pages = [(f"https://shared.example/{name}", html) for name, html in islice(shared_pages(shared_data()), 40)]
    good = tmp_path / "good.warc.gz"
    write_warc(
        good,
        [(url, html, "text/html") for url, html in pages[:20]]
        + [
            ("https://x.example/empty", b"", "text/html"),
            ("https://x.example/binary", bytes(range(256)) * 40, "text/html"),
            ("https://x.example/logo.png", b"\x89PNG\r\n\x1a\n" + bytes(500), "image/png"),
        ],
    )
    truncated = tmp_path / "truncated.warc.gz"
    write_warc(truncated, [(url, html, "text/html") for url, html in pages[20:30]])
    truncated.write_bytes(truncated.read_bytes()[: truncated.stat().st_size * 2 // 3])
    feed = tmp_path / "feed.jsonl"
    feed.write_text(
        "".join(json.dumps({"url": url, "html": html.decode("utf-8", "replace")}) + "\n" for url, html in pages[30:35])
        + "{not json\n"
    )
    parquet = tmp_path / "pages.parquet"
    pq.write_table(pa.table({"url": [url for url, _ in pages[35:]], "html": [html for _, html in pages[35:]]}), parquet)
    missing, unknown, empty = tmp_path / "gone.warc.gz", tmp_path / "notes.txt", tmp_path / "empty.warc.gz"
    unknown.write_text("not pages")
    empty.write_bytes(b"")

    result = run(spark, [good, truncated, feed, parquet, missing, unknown, empty], tmp_path / "out", DedupSettings())
    named = "\n".join(result.bad)
    assert "truncated.warc.gz" in named and "incomplete record" in named
    assert "feed.jsonl:6" in named and "not a JSON line" in named
    assert "gone.warc.gz" in named and "notes.txt" in named and "image/png" in named
    assert f"{empty}: empty (0 bytes)" in named
    assert result.happened["skipped"] == 1  # the PNG
    assert result.happened["unreadable"] == 5  # the truncated record, the broken line, the missing, unknown, empty file
    assert result.happened["not_compared/empty_html"] == 1 and result.happened["not_compared/not_html"] == 1
    kept = spark_kept(tmp_path / "out")
    assert "https://x.example/empty" in kept and "https://x.example/binary" in kept, "bad pages are kept, not lost"
    assert set(kept) - {"https://x.example/empty", "https://x.example/binary"} <= {url for url, _ in pages}
    from_each = [{url for url, _ in part} & set(kept) for part in (pages[:20], pages[20:30], pages[30:35], pages[35:])]
    assert all(from_each), "the good inputs, the truncated file's whole records, the feed's good lines are read"
    run_file = json.loads((tmp_path / "out" / "run.json").read_text())
    assert run_file["bad"] == result.bad


def test_parquet_with_an_order_column_is_decided_in_that_order(spark, tmp_path):
    original, copy = next(iter((html, html) for _, html in islice(shared_pages(shared_data()), 5, 6)))
    parquet = tmp_path / "pages.parquet"
    pq.write_table(
        pa.table(
            {
                "url": ["https://x.example/second", "https://x.example/first"],
                "html": [copy, original],
                "fetched": [20, 10],
            }
        ),
        parquet,
    )
    run(spark, [parquet], tmp_path / "by-order", DedupSettings(), JobOptions(fields=Fields(order="fetched")))
    assert spark_kept(tmp_path / "by-order") == ["https://x.example/first"]
    run(spark, [parquet], tmp_path / "by-row", DedupSettings())
    assert spark_kept(tmp_path / "by-row") == ["https://x.example/second"]


def test_the_command_line_runs_the_job_and_report_reads_its_output(tmp_path):
    """The command says its lines and nothing else (the JVM's output goes to ``spark.log``); its first run
    saves Java's classes for the next; an output that is not empty is refused before Java starts."""
    pages = [(f"https://shared.example/{name}", html) for name, html in islice(shared_pages(shared_data()), 30)]
    archive = tmp_path / "in.warc.gz"
    write_warc(archive, [(url, html, "text/html") for url, html in pages + [(f"{u}?again", h) for u, h in pages[:10]]])
    command = [
        sys.executable,
        "-m",
        "scrapy_simhash_dedup",
        "spark",
        str(archive),
        "-o",
        str(tmp_path / "out"),
        "--master",
        "local[2]",
    ]
    cache = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    done = subprocess.run(command, cwd=PROJECT, capture_output=True, text=True, timeout=300, env=cache)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "40 pages: 30 kept" in done.stderr and "10 dropped" in done.stderr
    assert all(line.startswith("simhash-dedup: ") for line in done.stderr.splitlines()), done.stderr
    assert "NativeCodeLoader" in (tmp_path / "out" / "spark.log").read_text(), "Spark's WARN lines are in its log"
    assert len(list((tmp_path / "cache" / "scrapy-simhash-dedup").glob("spark-classes-*.jsa"))) == 1
    again = subprocess.run(command, cwd=PROJECT, capture_output=True, text=True, timeout=300, env=cache)
    assert again.returncode == 2 and again.stderr.splitlines() == [
        f"simhash-dedup: {tmp_path / 'out'} is not empty; give a new folder for the output"
    ]
    report = subprocess.run(
        [sys.executable, "-m", "scrapy_simhash_dedup", "report", str(tmp_path / "out"), "-o", str(tmp_path / "r.html")],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert report.returncode == 0, report.stderr
    html = (tmp_path / "r.html").read_text()
    assert all(f"{url}?again" in html for url, _ in pages[:10]), "every dropped copy is in the report"


def test_an_interrupted_run_says_one_line_and_leaves_no_output(tmp_path):
    """Ctrl-C (SIGINT to the process group) while the job reads a feed still being written: one line, exit 130,
    no folder, no log left behind; the run started with the class archive an earlier run saved, if any."""
    feed = tmp_path / "feed.jsonl"
    os.mkfifo(feed)
    command = [
        sys.executable,
        "-m",
        "scrapy_simhash_dedup",
        "spark",
        str(feed),
        "-o",
        str(tmp_path / "out"),
        "--master",
        "local[2]",
    ]
    logs_before = set(Path(tempfile.gettempdir()).glob("simhash-dedup-spark-*.log"))
    running = subprocess.Popen(
        command,
        cwd=PROJECT,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=functools.partial(signal.signal, signal.SIGINT, signal.SIG_DFL),
    )
    with feed.open("w") as writing:  # opens once a task of the job reads it
        writing.write(json.dumps({"url": "https://a.test/1", "html": "<html><body><p>One page</p></body></html>"}))
        writing.flush()
        os.killpg(running.pid, signal.SIGINT)
        running.wait(timeout=120)  # the feed still open: the job cannot end on its own
    stderr = running.stderr.read()
    assert running.returncode == 130, stderr
    assert stderr.splitlines() == [
        f"simhash-dedup: interrupted; nothing written to {tmp_path / 'out'} (a new run starts over)"
    ], stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == ["feed.jsonl"]
    assert set(Path(tempfile.gettempdir()).glob("simhash-dedup-spark-*.log")) == logs_before


def test_a_run_of_bad_inputs_only_names_them(spark, tmp_path):
    result = run(spark, [tmp_path / "gone.warc.gz"], tmp_path / "out", DedupSettings())
    assert result.happened["unreadable"] == 1 and "gone.warc.gz" in "\n".join(result.bad)


def test_kept_pages_carry_the_canonical_urls_and_aliases_that_dedup_gives_them(spark, tmp_path):
    """Pages under feed URLs declare their real address, or a template's home page (shared by many), or an
    address on another host; some come twice.  Spark's kept table and alias table are batch mode's."""
    pages = [(f"https://shared.example/{name}", html) for name, html in islice(shared_pages(shared_data()), 60)]
    lines = tmp_path / "pages.jsonl"
    with lines.open("w") as out:
        for n, (url, html) in enumerate(pages + pages[:10]):
            declared = (url, "https://shared.example/", "https://elsewhere.example/x")[n % 3]
            link = f'<link rel="canonical" href="{declared}">'.encode()
            html = re.sub(rb"<head[^>]*>", lambda m, link=link: m.group(0) + link, html, count=1)
            out.write(json.dumps({"url": f"{url}?ref=feed", "html": html.decode("utf-8", "replace")}) + "\n")
    outcomes, kept = tmp_path / "outcomes.jsonl", io.StringIO()
    with outcomes.open("w") as outcomes_file:
        dedup([lines], DedupSettings(), MemoryStore(DedupSettings().policy), kept, outcomes_file, workers=2)
    run(spark, [lines], tmp_path / "out", DedupSettings())
    batch_named = {(r := json.loads(line))["url"]: r["canonical_url"] for line in kept.getvalue().splitlines()}
    assert {row["url"]: row["canonical_url"] for row in table(tmp_path / "out", "kept")} == batch_named
    assert sum(url.removesuffix("?ref=feed") == name for url, name in batch_named.items()) > 10
    assert sum(name == "https://shared.example/" for name in batch_named.values()) == 1, "a shared canonical names one"
    assert not any("elsewhere" in name for name in batch_named.values())
    tables = [sorted(alias_rows(load_log(str(source)).names())) for source in (outcomes, tmp_path / "out")]
    assert tables[0] == tables[1] and any(row.reason == "canonical" for row in tables[0])


def test_site_scope_keeps_what_dedup_keeps_per_site_in_shards_and_rounds(spark, tmp_path):
    """Pages on two sites, a third of them copied byte for byte to the other site, edited copies on their own:
    in site scope the copies on the other site are kept (one filter per site), in shards and rounds too."""
    pages = [
        (f"https://{('docs.example.com', 'www.example.org')[n % 2]}/{name}", html)
        for n, (name, html) in enumerate(list(shared_pages(shared_data()))[::4])
    ]
    copies = [
        (url.replace("example.com", "example.net").replace("example.org", "example.com"), html)
        for url, html in pages[::3]
    ]
    edited = [
        (f"{url}?edited", html.replace(b"</body>", b"<p>Updated: a sentence added at the end.</p></body>", 1))
        for url, html in pages[::7]
    ]
    archive = tmp_path / "sites.warc.gz"
    write_warc(archive, ((url, html, "text/html") for url, html in pages + copies + edited))
    site = DedupSettings(scope=Scope.SITE)
    kept = io.StringIO()
    dedup([archive], site, MemoryStore(site.policy, site.scope), kept, workers=2)
    expected = [json.loads(line)["url"] for line in kept.getvalue().splitlines()]
    per_site = set()
    for name in ("example.com", "example.org", "example.net"):
        mine = tmp_path / f"{name}.warc.gz"
        write_warc(
            mine,
            ((url, html, "text/html") for url, html in pages + copies + edited if site_key(url, Scope.SITE) == name),
        )
        per_site |= set(batch_kept([mine]))
    assert set(expected) == per_site and len(per_site) > len(batch_kept([archive]))
    assert any(url in per_site for url, _ in copies)  # a copy on another site is that site's page
    run(spark, [archive], tmp_path / "out", site, AT_SCALE)
    assert spark_kept(tmp_path / "out") == expected
