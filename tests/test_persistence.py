"""Kept pages are remembered across a graceful stop, a kill -9, a resume and a re-run."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from scrapy_simhash_dedup.fingerprint.fingerprinter import Fingerprint
from scrapy_simhash_dedup.fingerprint.sketch import SKETCH_BYTES
from scrapy_simhash_dedup.matching.policy import Policy
from scrapy_simhash_dedup.stores.sqlite.lock import StoreLock
from scrapy_simhash_dedup.stores.sqlite.store import SqliteStore

from .conftest import PROJECT
from .user_project import REFUSED_EXIT_STATUS, make_project, scrapy

ARTICLES = 12
VOCABULARY = [f"{a}{b}{c}" for a in "bcdfgklmnprst" for b in "aeiou" for c in ("lan", "mor", "tis", "vek", "dun")]


def article(seed: int) -> str:
    rng = random.Random(seed)
    paragraphs = "".join(f"<p>{' '.join(rng.choice(VOCABULARY) for _ in range(60))}</p>" for _ in range(4))
    return f"<html><head><title>Article {seed}</title></head><body><h1>Article {seed}</h1>{paragraphs}</body></html>"


def write_clusters(root: Path) -> list[str]:
    """Originals a0..a11 then near-duplicates c0..c11 (another byline); returns paths in crawl order."""
    for n in range(ARTICLES):
        text = article(n)
        (root / f"a{n}.html").write_text(text.replace("</h1>", "</h1><p>By Ann, May 1</p>"))
        (root / f"c{n}.html").write_text(text.replace("</h1>", "</h1><p>Updated June 9 by Bob</p>"))
    return [f"a{n}.html" for n in range(ARTICLES)] + [f"c{n}.html" for n in range(ARTICLES)]


def start_crawl(
    tmp: Path, urls: list[str], settings: dict, spider_args: dict | None = None, repeat: int = 1
) -> subprocess.Popen:
    config = tmp / f"crawl-{time.monotonic_ns()}.json"
    config.write_text(
        json.dumps(
            {
                "urls": urls,
                "settings": settings,
                "kept_log": str(tmp / "kept.log"),
                "spider_args": spider_args or {},
                "repeat": repeat,
            }
        )
    )
    return subprocess.Popen(
        [sys.executable, "-m", "tests.crawl_runner", str(config), str(tmp / "result.json")],
        cwd=PROJECT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def kept_clusters(tmp: Path) -> list[str]:
    kept = (tmp / "kept.log").read_text().split()
    return [Path(url).stem[1:] for url in kept]


def wait_for_kept(tmp: Path, count: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if (tmp / "kept.log").exists() and len(kept_clusters(tmp)) >= count:
            return
        time.sleep(0.05)
    raise AssertionError("the crawl kept nothing in time")


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "kill -9"])
def test_stopped_crawl_resumed_with_jobdir_keeps_no_near_duplicate(
    stop: signal.Signals, site: tuple[Path, str], tmp_path: Path
) -> None:
    root, base_url = site
    urls = [base_url + path for path in write_clusters(root)]
    settings = {
        "JOBDIR": str(tmp_path / "job"),
        "DOWNLOAD_DELAY": 0.2,
        "CONCURRENT_REQUESTS": 1,
        "ITEM_PIPELINES": {"scrapy_simhash_dedup.SimhashDedupPipeline": 300},
        "SIMHASH_DEDUP_COMMIT_EVERY": 1,  # kill -9 may then lose only the item in flight
    }
    first = start_crawl(tmp_path, urls, settings)
    wait_for_kept(tmp_path, 4)
    first.send_signal(stop)
    first.communicate(timeout=60)
    before = kept_clusters(tmp_path)
    assert 4 <= len(before) < ARTICLES  # stopped among the originals

    second = start_crawl(tmp_path, urls, settings)
    out, err = second.communicate(timeout=120)
    assert second.returncode == 0, err[-3000:]
    kept = kept_clusters(tmp_path)
    assert len(kept) == len(set(kept)), f"a near-duplicate was kept again: {kept}"
    assert len(kept) == ARTICLES  # none lost: the page in flight at a kill was not remembered yet
    assert (tmp_path / "job" / "simhash_dedup.sqlite").exists()


def test_a_page_whose_item_a_later_pipeline_drops_is_not_remembered(site: tuple[Path, str], tmp_path: Path) -> None:
    """Within the crawl its copies are still dropped (it was kept here); the next run, which finds it
    in no output, keeps a copy."""
    root, base_url = site
    paths = write_clusters(root)
    originals = [base_url + p for p in paths[:ARTICLES]]
    copies = [base_url + p for p in paths[ARTICLES:]]
    settings = {
        "ITEM_PIPELINES": {"scrapy_simhash_dedup.SimhashDedupPipeline": 300, "tests.crawl_runner.DropSomeItems": 400},
        "TEST_DROP_AT": "/a3.html",
        "SIMHASH_DEDUP_PATH": str(tmp_path / "seen.sqlite"),
        "SIMHASH_DEDUP_COMMIT_EVERY": 1,
    }
    first = crawl_to_end(tmp_path, originals, settings)
    assert len(first["kept"]) == ARTICLES - 1
    second = crawl_to_end(tmp_path, copies, {**settings, "TEST_DROP_AT": "nothing"})
    assert [Path(url).name for url in second["kept"]] == ["c3.html"]
    assert second["stats"]["simhash_dedup/remembered"] == ARTICLES - 1
    assert all(Path(d["duplicate_of"]).name != "a3.html" for d in second["dropped"])


@pytest.mark.slow
@pytest.mark.parametrize("commit_every", [100, 10])
def test_a_crawl_killed_at_random_moments_loses_no_page(
    site: tuple[Path, str], tmp_path: Path, commit_every: int
) -> None:
    """kill -9 at a random moment, then the crawl run again: every cluster is in one of the two feed
    exports.  The store remembers a page only once its item is past every pipeline and the feed's
    buffer is on disk, so a killed crawl costs pages re-checked as new, never pages lost."""
    root, base_url = site
    urls = [base_url + path for path in write_clusters(root)]
    rng = random.Random(commit_every)
    for attempt in range(6):  # x 2 commit sizes: 12 kills at random moments
        work = tmp_path / f"try-{attempt}"
        work.mkdir()
        outputs = [work / "first.jsonl", work / "again.jsonl"]
        settings = {
            "DOWNLOAD_DELAY": 0.05,
            "CONCURRENT_REQUESTS": 1,
            "ITEM_PIPELINES": {"scrapy_simhash_dedup.SimhashDedupPipeline": 300},
            "SIMHASH_DEDUP_PATH": str(work / "seen.sqlite"),
            "SIMHASH_DEDUP_COMMIT_EVERY": commit_every,
        }
        feed = {"format": "jsonlines", "fields": ["url"]}  # small items: Scrapy's export holds many in memory
        first = start_crawl(work, urls, {**settings, "FEEDS": {str(outputs[0]): feed}})
        time.sleep(rng.uniform(0.5, 3.0))
        first.kill()
        first.communicate(timeout=60)
        again = start_crawl(work, urls, {**settings, "FEEDS": {str(outputs[1]): feed}})
        _, err = again.communicate(timeout=120)
        assert again.returncode == 0, err[-3000:]
        exported = [
            json.loads(line)["url"]
            for output in outputs
            if output.exists()
            for line in output.read_text().splitlines()
            if line.endswith("}")
        ]  # a killed write: cut off
        clusters = {Path(url).stem[1:] for url in exported}
        assert clusters == {str(n) for n in range(ARTICLES)}, f"try {attempt}: clusters lost"


def crawl_to_end(tmp: Path, urls: list[str], settings: dict, spider_args: dict | None = None, repeat: int = 1) -> dict:
    process = start_crawl(tmp, urls, settings, spider_args, repeat)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 0, err[-3000:]
    return json.loads((tmp / "result.json").read_text())


def test_second_run_remembers_the_first_unless_reset(site: tuple[Path, str], tmp_path: Path) -> None:
    root, base_url = site
    paths = write_clusters(root)
    originals = [base_url + p for p in paths[:ARTICLES]]
    copies = [base_url + p for p in paths[ARTICLES:]]
    (tmp_path / "data").mkdir()
    project_store = {
        "SIMHASH_DEDUP_PATH": str(tmp_path / "data" / "seen.sqlite"),
        "ITEM_PIPELINES": {"scrapy_simhash_dedup.SimhashDedupPipeline": 300},
    }
    first = crawl_to_end(tmp_path, originals, project_store)
    assert len(first["kept"]) == ARTICLES

    second = crawl_to_end(tmp_path, copies, project_store)
    assert second["kept"] == []
    assert second["stats"]["simhash_dedup/remembered"] == ARTICLES
    assert {Path(d["duplicate_of"]).name for d in second["dropped"]} == {Path(u).name for u in originals}

    third = crawl_to_end(tmp_path, copies, project_store, spider_args={"simhash_dedup_reset": "1"})
    assert len(third["kept"]) == ARTICLES
    fourth = crawl_to_end(tmp_path, originals, {**project_store, "SIMHASH_DEDUP_RESET": True})
    assert len(fourth["kept"]) == ARTICLES


def test_the_default_store_is_the_last_crawl_s_unless_asked_to_remember(site: tuple[Path, str], tmp_path: Path) -> None:
    """Like Scrapy's own duplicate filter, a crawl starts afresh unless it asks to remember (or has a JOBDIR):
    its store, ``.scrapy/simhash_dedup/<spider>.last-crawl.sqlite``, holds only its own pages (for the report),
    and never touches the store of the crawls that do remember, ``<spider>.sqlite``."""
    root, base_url = site
    urls = [base_url + p for p in write_clusters(root)]
    project = tmp_path / "project"
    project.mkdir()
    pipeline = {"ITEM_PIPELINES": {"scrapy_simhash_dedup.SimhashDedupPipeline": 300}}
    stores = project / ".scrapy" / "simhash_dedup"
    for _ in range(2):
        result, _ = run_in_project(project, tmp_path, urls[:ARTICLES], pipeline)
        assert len(result["kept"]) == ARTICLES and result["stats"]["simhash_dedup/remembered"] == 0
    assert [p.name for p in stores.glob("*.sqlite")] == ["in_order.last-crawl.sqlite"]
    remembering = {**pipeline, "SIMHASH_DEDUP_PERSIST": True}
    first, _ = run_in_project(project, tmp_path, urls[:ARTICLES], remembering)
    again, _ = run_in_project(project, tmp_path, urls, remembering)
    assert len(first["kept"]) == ARTICLES and again["kept"] == []
    assert again["stats"]["simhash_dedup/remembered"] == ARTICLES
    once_more, _ = run_in_project(project, tmp_path, urls[:ARTICLES], pipeline)  # not remembering: its own store
    assert len(once_more["kept"]) == ARTICLES
    assert sorted(p.name for p in stores.glob("*.sqlite")) == ["in_order.last-crawl.sqlite", "in_order.sqlite"]
    remembered, _ = run_in_project(project, tmp_path, urls[ARTICLES:], remembering)
    assert remembered["kept"] == [] and remembered["stats"]["simhash_dedup/remembered"] == ARTICLES


def run_in_project(project: Path, tmp: Path, urls: list[str], settings: dict, **config: object) -> tuple[dict, str]:
    """A crawl started in ``project`` (a Scrapy project folder): its result, and its log."""
    (project / "scrapy.cfg").write_text("[settings]\ndefault = crawler.settings\n")
    path = tmp / f"crawl-{time.monotonic_ns()}.json"
    path.write_text(json.dumps({"urls": urls, "settings": settings, **config}))
    done = subprocess.run(
        [sys.executable, "-m", "tests.crawl_runner", str(path), str(tmp / "result.json")],
        cwd=project,
        env={**os.environ, "PYTHONPATH": str(PROJECT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((tmp / "result.json").read_text()), done.stderr


def files_outside_data_dir(project: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(project)): path.read_bytes()
        for path in project.rglob("*")
        if path.is_file() and ".scrapy" not in path.parts and path.name != "scrapy.cfg"
    }


@pytest.mark.parametrize("name", ["../../x", "../precious", "a/b", "C:\\x", ".."])
def test_a_spider_name_never_puts_the_store_outside_the_data_dir(
    site: tuple[Path, str], tmp_path: Path, name: str
) -> None:
    """Spider names become safe file names, and a reset deletes only the spider's own store."""
    root, base_url = site
    paths = write_clusters(root)
    world = tmp_path / "world"  # everything a crawl could reach from its project with ../
    project = world / "deep" / "er" / "project"
    (project / ".scrapy" / "simhash_dedup").mkdir(parents=True)
    for where in (project, project.parent, project.parent.parent, project / ".scrapy"):
        for victim in ("x.sqlite", "precious.sqlite", "b.sqlite", ".sqlite", "..sqlite"):
            (where / victim).write_bytes(b"someone else's data")
    before = files_outside_data_dir(world)
    settings = {"ITEM_PIPELINES": {"scrapy_simhash_dedup.SimhashDedupPipeline": 300}}
    for reset in ("0", "1"):
        result, _ = run_in_project(
            project,
            tmp_path,
            [base_url + paths[0]],
            settings,
            spider_name=name,
            spider_args={"simhash_dedup_reset": reset},
        )
        assert len(result["kept"]) == 1
    assert files_outside_data_dir(world) == before
    assert (project / ".scrapy" / "x.sqlite").read_bytes() == b"someone else's data"
    stores = list((project / ".scrapy" / "simhash_dedup").glob("*.sqlite"))
    assert len(stores) == 1 and stores[0].parent == project / ".scrapy" / "simhash_dedup"


def foreign_sqlite(path: Path) -> None:
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE customers (name TEXT)")
    connection.execute("INSERT INTO customers VALUES ('Ann')")
    connection.commit()
    connection.close()


@pytest.mark.parametrize("problem", ["corrupt", "foreign", "foreign, reset", "in use"])
def test_a_store_that_cannot_be_opened_refuses_the_crawl_before_anything_is_written(
    site: tuple[Path, str], tmp_path: Path, problem: str
) -> None:
    """``scrapy crawl -O out.jsonl`` as a user runs it: one ERROR line that names the file and the way out,
    exit status 1, no traceback; the feed (another crawl's output) and the store are left as they were."""
    root, base_url = site
    write_clusters(root)
    store = tmp_path / "stores" / "seen.sqlite"
    store.parent.mkdir()
    if problem == "corrupt":
        store.write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 40)
    elif problem.startswith("foreign"):
        foreign_sqlite(store)
    before = store.read_bytes() if store.exists() else None
    project = make_project(tmp_path / "project", f"SIMHASH_DEDUP_PATH = {str(store)!r}\n")
    (project / "out.jsonl").write_text('{"url": "an item another crawl exported"}\n')
    lock = StoreLock(store) if problem == "in use" else None  # as a running crawl holds it
    try:
        done = scrapy(
            project,
            "crawl",
            "site",
            "-a",
            f"url={base_url}a0.html",
            "-O",
            "out.jsonl",
            *(["-a", "simhash_dedup_reset=1"] if "reset" in problem else []),
        )
    finally:
        if lock:
            lock.close()
    assert done.returncode == REFUSED_EXIT_STATUS
    errors = [line for line in done.stderr.splitlines() if "ERROR" in line or "CRITICAL" in line]
    assert len(errors) == 1 and str(store) in errors[0], done.stderr[-3000:]
    assert ("another running crawl" if problem == "in use" else "move it aside") in errors[0]
    assert "Traceback" not in done.stderr
    assert (project / "out.jsonl").read_text() == '{"url": "an item another crawl exported"}\n'
    assert (store.read_bytes() if store.exists() else None) == before  # left as it was


def test_a_reopened_file_still_tells_short_pages_apart(tmp_path: Path) -> None:
    """Short pages match only equal short pages, after a reopen too: a page without own text (a hash of its
    visible words, no sketch) never meets a page with own text, and two short stubs whose sketches differ
    in one bit stay apart (as two long pages they would be near-duplicates)."""
    path, scheme = tmp_path / "seen.sqlite", "test"
    sketch = bytes(64) + (12).to_bytes(2, "little") + bytes(SKETCH_BYTES - 66)  # an own text of 12 shingles
    other_sketch = b"\x01" + sketch[1:]
    visible_words = Fingerprint(0x5EED, 1, short=True)
    stub = Fingerprint(0xFFFF_FFFF_0000_0000, 2, sketch=sketch, short=True)
    store = SqliteStore(Policy(), path, scheme)
    for row, page in enumerate((visible_words, stub)):
        assert store.check_and_add(f"https://a.test/{row}", page) is None
        store.confirm(row)  # its item got past every pipeline
    store.close()
    reopened = SqliteStore(Policy(), path, scheme)
    assert reopened.check_and_add("https://a.test/long", Fingerprint(0x5EED, 3, sketch=sketch)) is None
    match = reopened.check_and_add("https://a.test/copy", visible_words)
    assert match is not None and (match.url, match.reason) == ("https://a.test/0", "exact_text")
    assert (
        reopened.check_and_add(
            "https://a.test/stub", Fingerprint(0xFFFF_FFFF_0000_0000, 2, sketch=other_sketch, short=True)
        )
        is None
    )
    match = reopened.check_and_add("https://a.test/stub-copy", stub)
    assert match is not None and (match.url, match.reason) == ("https://a.test/1", "exact_text")
    reopened.close()


@pytest.mark.parametrize("updates", [False, True])
def test_a_page_changed_since_the_last_crawl_is_dropped_or_passed_as_an_update(
    site: tuple[Path, str], tmp_path: Path, updates: bool
) -> None:
    """A re-crawl meets its pages again.  One of them gained a sentence since: by default a near-duplicate
    of its old self, dropped; with ``SIMHASH_DEDUP_UPDATES`` kept and marked as an update.  The unchanged
    pages, and a copy of the old page under another URL, are dropped either way."""
    root, base_url = site
    paths = write_clusters(root)
    originals = [base_url + p for p in paths[:ARTICLES]]
    feed = tmp_path / "items.jsonl"
    settings = {
        "ITEM_PIPELINES": {"scrapy_simhash_dedup.SimhashDedupPipeline": 300},
        "SIMHASH_DEDUP_PERSIST": True,
        "SIMHASH_DEDUP_PATH": str(tmp_path / "seen.sqlite"),
        "SIMHASH_DEDUP_UPDATES": updates,
        "FEEDS": {str(feed): {"format": "jsonlines", "fields": ["url", "simhash_dedup_update"], "overwrite": True}},
    }
    assert len(crawl_to_end(tmp_path, originals, settings)["kept"]) == ARTICLES
    edited = root / "a0.html"
    edited.write_text(
        edited.read_text().replace(
            "</h1>", "</h1><p>Correction: an earlier version of this article gave the wrong date for the meeting.</p>"
        )
    )
    again = crawl_to_end(tmp_path, [*originals, base_url + "c0.html"], settings)
    assert again["kept"] == ([originals[0]] if updates else [])
    assert len(again["dropped"]) == ARTICLES + (0 if updates else 1)
    exported = [json.loads(line) for line in feed.read_text().splitlines()]
    assert exported == ([{"url": originals[0], "simhash_dedup_update": True}] if updates else [])
    assert again["stats"].get("simhash_dedup/updated", 0) == int(updates)
