"""Batch mode (``simhash-dedup dedup``): the same decisions as a crawl, over files, and bad input."""

from __future__ import annotations

import functools
import gzip
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.common import write_warc
from scrapy_simhash_dedup.batch.sources import Page

from .conftest import PROJECT
from .pages import real_page
from .reports import assert_report_agrees, report_figures, write_report


def dedup(*arguments: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "scrapy_simhash_dedup", "dedup", "--no-progress", *map(str, arguments)],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=600,
    )


def kept_pages(output: Path, root: Path | None = None) -> set[str]:
    """The page names in a ``dedup -o`` output (folder sources, or URLs)."""
    names = set()
    for line in output.read_text().splitlines():
        record = json.loads(line)
        names.add(str(Path(record["source"]).relative_to(root)) if root else record["url"].split("/", 3)[3])
    return names


def test_dedup_keeps_what_a_crawl_of_the_same_pages_in_the_same_order_keeps(handbook, crawl, tmp_path):
    root, base_url, pages = handbook
    crawled = crawl(
        [base_url + page for page in pages], {"ITEM_PIPELINES": {"scrapy_simhash_dedup.SimhashDedupPipeline": 300}}
    )
    crawl_kept = {url.removeprefix(base_url) for url in crawled["kept"]}
    assert crawled["dropped"] and crawl_kept, "the chapters must hold near-duplicates and unique pages"

    lines = tmp_path / "pages.jsonl"
    lines.write_text(
        "".join(json.dumps({"url": base_url + page, "html": (root / page).read_text("utf-8")}) + "\n" for page in pages)
    )
    archive = tmp_path / "pages.warc.gz"
    write_warc(archive, [(base_url + page, (root / page).read_bytes(), "text/html") for page in pages])

    results = {}
    for name, source in (("folder", root), ("jsonl", lines), ("warc", archive)):
        done = dedup(source, "-o", tmp_path / f"{name}.jsonl", "--workers", "2")
        assert done.returncode == 0, done.stderr
        results[name] = kept_pages(tmp_path / f"{name}.jsonl", root if name == "folder" else None)
    assert results["folder"] == results["jsonl"] == results["warc"] == crawl_kept


def wget_warc(base_url: str, folder: Path, name: str) -> Path:
    """The site crawled by GNU wget into ``folder/name.warc.gz`` as an archivist crawls one (``wget --recursive
    --warc-file --warc-cdx``): WARC 1.0 target URIs in angle brackets, the error pages met, a CDX index."""
    subprocess.run(
        [
            "wget",
            "--quiet",
            "--recursive",
            "--level=4",
            f"--directory-prefix={folder / name}",
            f"--warc-file={folder / name}",
            "--warc-cdx",
            base_url,
        ],
        cwd=folder,
        timeout=300,
    )  # exit 8: the 404s
    return folder / f"{name}.warc.gz"


def cdx(path: Path) -> dict[int, tuple[str, int]]:
    """wget's CDX of a WARC file: the offset of each response record -> its URL and HTTP status."""
    lines = path.read_text().splitlines()
    fields = lines[0].split()[1:]  # " CDX a b a m s k r M V g u"
    rows = [dict(zip(fields, line.split())) for line in lines[1:]]
    return {int(row["V"]): (row["a"], int(row["s"])) for row in rows if row["s"].isdigit()}


def test_warc_files_as_wget_writes_them_are_read_as_a_crawl_sees_the_site(handbook, tmp_path):
    """A site crawled twice by wget (the re-crawl a second later): its pages are named by their URLs (no
    ``<…>``, as wget's CDX names them), its 404 pages are counted and not compared, and the first crawl's pages
    are the ones kept whatever the order of the arguments (``warcs/*.warc.gz`` sorts the re-crawl first)."""
    root, base_url, _ = handbook
    warcs = tmp_path / "warcs"
    warcs.mkdir()
    first = wget_warc(base_url, warcs, "site")
    time.sleep(1.1)  # WARC-Date counts seconds
    recrawl = wget_warc(base_url, warcs, "site-recrawl")
    index = cdx(warcs / "site.cdx")
    assert any(status == 404 for _, status in index.values()), "the chapters link to pages the site lacks"

    kept, outcomes, store = tmp_path / "kept.jsonl", tmp_path / "outcomes.jsonl", tmp_path / "seen.sqlite"
    done = dedup(recrawl, first, "-o", kept, "--outcomes", outcomes, "--store", store, "--review-texts", "3")
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in kept.read_text().splitlines()]
    assert records and all(record["source"].startswith(f"{first}@") for record in records), "the first crawl's"
    for record in records:
        assert index[int(record["source"].rsplit("@", 1)[1])] == (record["url"], 200), record
    lines = [json.loads(line) for line in outcomes.read_text().splitlines() if '"run"' not in line]
    assert all(line["url"].startswith(base_url) for line in lines)
    statuses = [status for _, status in index.values() if status == 404]
    assert re.search(rf"not compared, as a crawl would not have them: {len(statuses) * 2} of status 404", done.stderr)
    assert len(lines) == 2 * sum(1 for _, status in index.values() if status == 200), "every 2xx page, no other"
    # a drop names the kept page's record (the re-crawl's pages are dropped as the first crawl's, same URLs)
    kept_at = {line["source"]: line["url"] for line in lines if line["outcome"] in ("kept", "borderline")}
    drops = [line for line in lines if line["outcome"] == "dropped"]
    assert drops and all(kept_at[line["kept_source"]] == line["kept_url"] for line in drops)
    assert sum(1 for line in drops if line["source"].startswith(f"{recrawl}@")) == len(lines) // 2, "all its pages"
    assert sum(1 for line in lines if "text" in line) == 3, "the texts of the first --review-texts decisions only"
    plain = tmp_path / "plain.jsonl"
    assert dedup(recrawl, first, "--outcomes", plain).returncode == 0
    assert not any("text" in json.loads(line) for line in plain.read_text().splitlines()), "texts only when asked"
    # the same aliases from the outcomes file and from the store, none a URL naming itself
    from_outcomes, from_store = (
        subprocess.run(
            [sys.executable, "-m", "scrapy_simhash_dedup", "aliases", str(source)],
            cwd=PROJECT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for source in (outcomes, store)
    )
    rows = [json.loads(line) for line in from_outcomes.splitlines()]
    assert from_outcomes == from_store and rows
    assert all(row["alias"] != row["kept_url"] for row in rows)

    assert dedup(recrawl, first, "--argument-order", "-o", tmp_path / "as-given.jsonl").returncode == 0
    assert {
        json.loads(line)["source"].split("@")[0] for line in (tmp_path / "as-given.jsonl").read_text().splitlines()
    } == {str(recrawl)}
    every_status = dedup(first, "--all-statuses", "--outcomes", tmp_path / "all.jsonl")
    assert every_status.returncode == 0 and "status 404" not in every_status.stderr
    compared = [json.loads(line) for line in (tmp_path / "all.jsonl").read_text().splitlines() if '"run"' not in line]
    assert len(compared) == len(index) - sum(1 for _, status in index.values() if status not in (200, 404))


def test_dedup_adds_to_a_crawls_store_and_the_report_reads_it(handbook, crawl, tmp_path):
    root, base_url, pages = handbook
    english = [page for page in pages if page.startswith("en-US")]
    store = tmp_path / "seen.sqlite"
    crawl(
        [base_url + page for page in english],
        {"ITEM_PIPELINES": {"scrapy_simhash_dedup.SimhashDedupPipeline": 300}, "SIMHASH_DEDUP_PATH": str(store)},
    )
    done = dedup(root / "da-DK", "--store", store, "--outcomes", tmp_path / "outcomes.jsonl")
    assert done.returncode == 0, done.stderr
    outcomes = [json.loads(line) for line in (tmp_path / "outcomes.jsonl").read_text().splitlines()]
    drops = [record for record in outcomes if record.get("outcome") == "dropped"]
    assert drops and all("/en-US/" in record["kept_url"] for record in drops)  # the crawl's pages, from its store
    report = tmp_path / "report.html"
    done = subprocess.run(
        [sys.executable, "-m", "scrapy_simhash_dedup", "report", str(store), "-o", str(report)],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    html = report.read_text()
    assert html.count("<svg") == 2
    assert "one side shown" in html  # the kept pages' texts stayed in the crawl's process
    assert all(record["url"] in html for record in drops[:3])


def test_bad_input_is_named_and_the_rest_is_read(handbook, tmp_path):
    root, base_url, pages = handbook
    good = [(base_url + page, (root / page).read_bytes(), "text/html") for page in pages[:6]]
    truncated = tmp_path / "truncated.warc.gz"
    write_warc(truncated, good)
    truncated.write_bytes(truncated.read_bytes()[: truncated.stat().st_size * 2 // 3])
    mixed = tmp_path / "mixed.warc.gz"
    write_warc(mixed, [good[0], ("https://a.test/logo.png", b"\x89PNG\r\n\x1a\n" + bytes(200), "image/png")])
    broken = tmp_path / "broken.jsonl"
    broken.write_text(
        json.dumps({"url": good[1][0], "html": good[1][1].decode()})
        + "\n{not json\n"
        + json.dumps({"url": "https://a.test/no-html"})
        + "\n"
    )
    missing, empty = tmp_path / "missing.warc.gz", tmp_path / "empty.warc.gz"
    empty.write_bytes(b"")

    done = dedup(truncated, mixed, broken, missing, empty, "-o", tmp_path / "kept.jsonl")
    assert done.returncode == 0, done.stderr
    messages = done.stderr
    assert f"{truncated}@" in messages and "incomplete record" in messages
    assert f"{mixed}: 1 response record not HTML, skipped" in messages and "image/png" in messages
    assert f"{broken}:2: not a JSON line" in messages and f"{broken}:3: no 'html' field" in messages
    assert f"{missing}: cannot be read" in messages and f"{empty}: empty (0 bytes)" in messages
    kept = (tmp_path / "kept.jsonl").read_text()
    read = [json.loads(line)["url"] for line in kept.splitlines()]
    assert read == [good[0][0], good[1][0]]  # the truncated file's whole records; their copies dropped
    assert "4 pages: 2 kept, 2 dropped; 5 records unreadable; 1 record not HTML, skipped" in messages

    nothing = dedup(missing, tmp_path / "garbage.warc.gz", "-o", tmp_path / "kept.jsonl")  # a mistyped input
    assert nothing.returncode == 1 and "cannot be read" in nothing.stderr
    assert f"nothing read: {tmp_path / 'kept.jsonl'} left as it was" in nothing.stderr
    assert (tmp_path / "kept.jsonl").read_text() == kept, "a failed run leaves the earlier output as it was"
    assert sorted(path.name for path in tmp_path.iterdir() if path.name.startswith(".")) == [], "no temporary file"
    nowhere = dedup(truncated, "-o", tmp_path / "no" / "such" / "kept.jsonl")
    assert nowhere.returncode == 2 and nowhere.stderr.count("\n") == 1 and "there is no folder" in nowhere.stderr
    assert not (tmp_path / "no").exists()


def test_an_interrupted_run_says_so_in_one_line_and_goes_on_from_its_store(tmp_path):
    """Ctrl-C (SIGINT to the process group, as a terminal sends it) while ``dedup`` reads a feed still being
    written (a FIFO): one line, no traceback from it or its workers, the earlier output as it was, what it wrote
    kept beside it as ``.part1``; the same command then goes on from the store, and the two files hold what one
    run keeps."""
    bodies = [gzip.decompress(path.read_bytes()) for path in sorted((PROJECT / "tests" / "data").glob("*.html.gz"))]
    records = [
        json.dumps({"url": f"https://a.test/{number}", "html": body.decode("utf-8", "replace")}) + "\n"
        for number, body in enumerate(bodies * 2)
    ]  # each page twice: copies to drop
    half = len(records) // 2
    feed, store, kept = tmp_path / "feed.jsonl", tmp_path / "seen.sqlite", tmp_path / "kept.jsonl"
    kept.write_text("an earlier run's output\n")
    os.mkfifo(feed)
    command = [
        sys.executable,
        "-m",
        "scrapy_simhash_dedup",
        "dedup",
        "--no-progress",
        "--workers",
        "2",
        str(feed),
        "--store",
        str(store),
        "-o",
        str(kept),
    ]
    # Ctrl-C's default in the command even when this run ignores it (a background job of a script does)
    running = subprocess.Popen(
        command,
        cwd=PROJECT,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=functools.partial(signal.signal, signal.SIGINT, signal.SIG_DFL),
    )
    with feed.open("w") as writing:  # opens once dedup reads it
        writing.writelines(records[:half])
        writing.flush()
        time.sleep(1)  # dedup decides what it has, then waits for more lines
        os.killpg(running.pid, signal.SIGINT)
        running.wait(timeout=60)  # the feed still open: the run cannot end on its own
    stderr = running.stderr.read()
    assert running.returncode == 130
    assert "Traceback" not in stderr and stderr.count("\n") == 1, stderr
    assert f"written to {kept}.part1" in stderr and f"remembered in {store}" in stderr
    assert kept.read_text() == "an earlier run's output\n"
    feed.unlink()
    feed.write_text("".join(records))
    again = dedup(feed, "--store", store, "-o", kept)
    assert again.returncode == 0, again.stderr
    one_run = tmp_path / "one-run.jsonl"
    assert dedup(feed, "-o", one_run).returncode == 0

    def urls(*paths: Path) -> list[str]:
        return [json.loads(line)["url"] for path in paths for line in path.read_text().splitlines()]

    assert sorted(urls(Path(f"{kept}.part1"), kept)) == sorted(urls(one_run)) and len(urls(one_run)) == len(bodies)


def test_a_gzipped_feed_and_a_single_file_are_read(tmp_path):
    page = (PROJECT / "tests" / "data" / "newspaper-syracuse.com1.html.gz").read_bytes()
    (tmp_path / "one.html").write_bytes(gzip.decompress(page))
    with gzip.open(tmp_path / "feed.jsonl.gz", "wt") as feed:
        feed.write(json.dumps({"url": "https://a.test/1", "html": gzip.decompress(page).decode("utf-8")}) + "\n")
    done = dedup(
        tmp_path / "one.html", tmp_path / "feed.jsonl.gz", "--outcomes", tmp_path / "d.jsonl", "--workers", "0"
    )
    assert done.returncode == 0, done.stderr
    outcomes = [json.loads(line).get("outcome") for line in (tmp_path / "d.jsonl").read_text().splitlines()]
    assert outcomes[:2] == ["kept", "dropped"]  # the same page twice


@pytest.mark.parametrize(
    "content_type",
    ["text/html", "text/html; charset=utf-8", "text/html; charset=iso-8859-1", "text/html; charset=gb2312", None],
)
def test_workers_decode_bytes_with_their_content_type_as_a_crawl_does(content_type):
    """A worker gives a page read as bytes with its header the fingerprint the crawl process gives the same
    response (``Fingerprinter.fingerprint(body, url, content_type)``): one decoding for both."""
    from scrapy_simhash_dedup.batch.fingerprints import fingerprinted
    from scrapy_simhash_dedup.fingerprint.fingerprinter import Fingerprinter

    bodies = [gzip.decompress(path.read_bytes()) for path in sorted((PROJECT / "tests" / "data").glob("*.html.gz"))]
    bodies += [
        "<p>caf\xe9 \u00e0 la cr\xe8me</p>".encode("cp1252"),
        "<p>\u4e2d\u6587 \u9875\u9762</p>".encode("gb18030"),
        "\ufeff<p>bom</p>".encode("utf-16"),
        b"<meta charset='koi8-r'><p>\xf0\xd2\xc9\xd7\xc5\xd4</p>",
    ]
    pages = [Page(f"https://a.test/{n}", body, f"page {n}", content_type=content_type) for n, body in enumerate(bodies)]
    fingerprinter = Fingerprinter()
    assert [result for _, result in fingerprinted(pages, fingerprinter, processes=1)] == [
        fingerprinter.fingerprint(page.html, page.url, content_type) for page in pages
    ]


def test_a_store_that_cannot_be_read_gets_one_line_and_no_traceback(handbook, tmp_path):
    root, _, _ = handbook
    corrupt = tmp_path / "corrupt.sqlite"
    corrupt.write_bytes(b"SQLite format 3\x00" + b"garbage" * 200)
    for command in (
        ["dedup", "--no-progress", str(root / "en-US"), "--store", str(corrupt)],
        ["report", str(corrupt), "-o", str(tmp_path / "report.html")],
    ):
        done = subprocess.run(
            [sys.executable, "-m", "scrapy_simhash_dedup", *command],
            cwd=PROJECT,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 2 and "Traceback" not in done.stderr
        assert done.stderr.strip().startswith(f"simhash-dedup: {corrupt} cannot be read as a store of simhash_dedup")
    assert not (tmp_path / "report.html").exists()


def test_a_json_array_is_not_read_as_json_lines(tmp_path):
    feed = tmp_path / "items.json"  # what Scrapy writes for -O items.json
    feed.write_text('[\n{"url": "https://a.test/", "html": "<p>a page</p>"}\n]')
    done = dedup(feed)
    assert done.returncode == 1 and f"{feed}: not a folder, an HTML file, JSON Lines" in done.stderr


def test_a_worker_killed_mid_run_fails_only_its_pages_and_the_run_goes_on(handbook):
    import os
    import signal

    from scrapy_simhash_dedup.batch.fingerprints import fingerprinted
    from scrapy_simhash_dedup.batch.sources import read_folder
    from scrapy_simhash_dedup.fingerprint.fingerprinter import Fingerprint, Fingerprinter
    from scrapy_simhash_dedup.workers.start import WorkerCrashed

    root, _, pages = handbook
    read = [page for page, _ in read_folder(root)] * 4  # enough work that the killed worker still has pages to answer
    results = fingerprinted(read, Fingerprinter(), processes=2)
    answers = [next(results)]
    workers = [
        int(pid)
        for pid in Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").read_text().split()
        if b"scrapy_simhash_dedup.workers\x00" in Path(f"/proc/{pid}/cmdline").read_bytes()
    ]
    assert len(workers) == 2
    os.kill(workers[0], signal.SIGKILL)
    answers += list(results)
    assert [page for page, _ in answers] == read, "every page comes out, in input order"
    outcomes = [type(result) for _, result in answers]
    assert WorkerCrashed in outcomes, "the killed worker's pages fail"
    assert outcomes[-1] is Fingerprint and outcomes.count(Fingerprint) > len(read) // 2, "a new worker takes over"


def test_dedup_names_kept_pages_by_their_canonical_url_and_keeps_their_aliases(handbook, tmp_path):
    """Every other page arrives under a feed URL and declares its real address: the kept records carry their
    canonical URLs, and the store and the outcomes file give the same alias table (drops, canonical URLs)."""
    root, base_url, pages = handbook
    lines = tmp_path / "pages.jsonl"
    with lines.open("w") as out:
        for n, page in enumerate(pages):
            html = (root / page).read_text("utf-8")
            if n % 2:
                html = re.sub(
                    r"<head[^>]*>", lambda m, p=page: f'{m.group(0)}<link rel="canonical" href="/{p}">', html, count=1
                )
            out.write(json.dumps({"url": base_url + page + ("?ref=feed" if n % 2 else ""), "html": html}) + "\n")
    store, kept, outcomes = tmp_path / "seen.sqlite", tmp_path / "kept.jsonl", tmp_path / "outcomes.jsonl"
    done = dedup(lines, "--store", store, "-o", kept, "--outcomes", outcomes)
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in kept.read_text().splitlines()]
    assert records and all(r["canonical_url"] == r["url"].removesuffix("?ref=feed") for r in records)
    assert any(r["url"].endswith("?ref=feed") for r in records)
    tables = []
    for source in (store, outcomes):
        exported = tmp_path / "aliases.jsonl"
        done = subprocess.run(
            [sys.executable, "-m", "scrapy_simhash_dedup", "aliases", str(source), "-o", str(exported)],
            cwd=PROJECT,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        tables.append(sorted(tuple(json.loads(line).items()) for line in exported.read_text().splitlines()))
    assert tables[0] == tables[1]
    drops = [json.loads(line) for line in outcomes.read_text().splitlines() if '"outcome": "dropped"' in line]
    rows = [dict(row) for row in tables[0]]
    assert drops and {d["url"] for d in drops} <= {row["alias"] for row in rows}
    assert all(row["canonical"] == row["kept_url"].removesuffix("?ref=feed") for row in rows)


def test_a_record_that_says_not_to_filter_it_is_passed_on_as_it_is(tmp_path: Path) -> None:
    """``"simhash_dedup": false`` in a JSON Lines record, as ``Request.meta`` in a crawl: the record goes to the
    output as it is, neither compared nor remembered, and the copies after it are decided as without it."""
    html = real_page("newspaper-syracuse.com1").decode("utf-8", "replace")
    records = [
        {"url": "https://a.test/1", "html": html},
        {"url": "https://a.test/2", "html": html, "simhash_dedup": False},
        {"url": "https://a.test/3", "html": html},
    ]
    feed, kept = tmp_path / "feed.jsonl", tmp_path / "kept.jsonl"
    feed.write_text("".join(json.dumps(record) + "\n" for record in records))
    done = subprocess.run(
        [str(Path(sys.executable).parent / "simhash-dedup"), "dedup", str(feed), "-o", str(kept), "--no-progress"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["url"] for line in kept.read_text().splitlines()] == [
        "https://a.test/1",
        "https://a.test/2",
    ]
    assert json.loads(kept.read_text().splitlines()[1]) == records[1]
    assert "1 not_filtered" in done.stderr


def test_a_record_that_says_never_to_drop_it_is_compared_and_kept_and_the_next_copy_names_the_original(
    tmp_path: Path,
) -> None:
    """``"simhash_dedup_never_drop": true``, as ``Request.meta`` in a crawl: the copy is kept, a borderline keep of
    reason ``never_dropped`` naming the page it matched; the store did not add it, so the next copy is dropped as a
    copy of the original, whose record the outcome names; the report counts it so."""
    html = real_page("newspaper-syracuse.com1").decode("utf-8", "replace")
    other = real_page("newspaper-theatlanticcities.com1").decode("utf-8", "replace")
    records = [
        {"url": "https://a.test/1", "html": html},
        {"url": "https://a.test/2", "html": html, "simhash_dedup_never_drop": True},
        {"url": "https://a.test/3", "html": html},
        {"url": "https://a.test/4", "html": other},
    ]
    feed, kept, outcomes = tmp_path / "feed.jsonl", tmp_path / "kept.jsonl", tmp_path / "outcomes.jsonl"
    feed.write_text("".join(json.dumps(record) + "\n" for record in records))
    command = [str(Path(sys.executable).parent / "simhash-dedup"), "dedup", str(feed), "-o", str(kept)]
    done = subprocess.run([*command, "--outcomes", str(outcomes), "--no-progress"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["url"] for line in kept.read_text().splitlines()] == [
        "https://a.test/1",
        "https://a.test/2",
        "https://a.test/4",
    ]
    lines = {line["url"]: line for line in map(json.loads, outcomes.read_text().splitlines()) if "url" in line}
    never, copy = lines["https://a.test/2"], lines["https://a.test/3"]
    assert (never["outcome"], never["reason"], never["kept_url"]) == ("borderline", "never_dropped", "https://a.test/1")
    assert (copy["outcome"], copy["kept_url"]) == ("dropped", "https://a.test/1")
    assert copy["kept_source"] == never["kept_source"] == lines["https://a.test/1"]["source"]
    figures = report_figures(write_report(str(outcomes), tmp_path / "report.html"))
    assert_report_agrees(figures)
    assert (figures.counts["never_dropped"], figures.logged_borderline, figures.near) == (1, 1, 1)
