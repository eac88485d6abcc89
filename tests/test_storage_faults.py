"""Storage faults: a write that fails (a full disk, an I/O error) changes nothing and is tried again, is said in one
warning line and never re-delivers a page; a store left inconsistent opens clean; a path that cannot be a store is
one line before any request.  Real crawls against a local site, real SQLite files, a real full filesystem (a tmpfs
mounted for the test when it runs as root)."""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from scrapy_simhash_dedup.cli import main as cli
from scrapy_simhash_dedup.matching.policy import Policy
from scrapy_simhash_dedup.stores.sqlite.store import SqliteStore

from .conftest import PROJECT
from .faults import FailingWrites
from .test_persistence import ARTICLES, write_clusters
from .user_project import REFUSED_EXIT_STATUS, make_project, scrapy

#: The filter, every page written as soon as one of its items is delivered: as many writes as a crawl can make.
FILTER = {"ADDONS": {"scrapy_simhash_dedup.SimhashDedupAddon": 0}}
WRITE_EACH = {**FILTER, "SIMHASH_DEDUP_COMMIT_EVERY": 1, "SIMHASH_DEDUP_PERSIST": True}


def run(tmp: Path, urls: list[str], settings: dict[str, Any], **config: Any) -> tuple[dict, str, int]:
    """One real crawl (``tests.crawl_runner``): its result, its log and its exit status."""
    path = tmp / f"crawl-{time.monotonic_ns()}.json"
    path.write_text(json.dumps({"urls": urls, "settings": settings, **config}))
    result = tmp / "result.json"
    result.unlink(missing_ok=True)
    done = subprocess.run(
        [sys.executable, "-m", "tests.crawl_runner", str(path), str(result)],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return (json.loads(result.read_text()) if result.exists() else {}), done.stderr, done.returncode


def problems(log: str) -> list[str]:
    return [line for line in log.splitlines() if " ERROR" in line or "CRITICAL" in line or "Traceback" in line]


def check(store: Path) -> int:
    return cli(["check", str(store)])


@pytest.mark.parametrize("seed", [1, 2])
def test_writes_failing_at_random_points_lose_nothing_and_re_deliver_nothing(
    site: tuple[Path, str], tmp_path: Path, seed: int
) -> None:
    """Ten writes of the crawl fail as on a full disk (each a transaction: nothing of it kept, in the file or in
    memory), at random points: the crawl keeps every original once, the re-run exports nothing (every delivered
    page remembered), no ERROR line nor traceback, and the store is sound."""
    root, base_url = site
    urls = [base_url + path for path in write_clusters(root)]
    store = tmp_path / "seen.sqlite"
    settings = {**WRITE_EACH, "SIMHASH_DEDUP_PATH": str(store)}
    failing = sorted(random.Random(seed).sample(range(1, 60, 3), 10))  # (never two in a row: a close tries 3 times)
    first, log, status = run(tmp_path, urls, settings, failing_writes=failing)
    assert status == 0 and problems(log) == [], log[-3000:]
    assert sorted(first["kept"]) == sorted(base_url + f"a{n}.html" for n in range(ARTICLES))
    assert first["stats"].get("simhash_dedup/store_write_failures", 0) >= 1
    assert "cannot be written (database or disk is full)" in log and "pages_not_remembered" not in json.dumps(
        first["stats"]
    )
    again, log, status = run(tmp_path, urls, settings)
    assert status == 0 and problems(log) == []
    assert again["kept"] == [] and len(again["dropped"]) == len(urls)
    assert check(store) == 0


def test_a_failed_write_changes_nothing_and_is_written_later(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The store's own view: a write that fails keeps its pages to be written (still matched in memory), and the
    next try writes them under the rows that follow the file's last; reopened, the file holds them all."""
    from scrapy_simhash_dedup import Fingerprinter

    from .test_persistence import article

    path = tmp_path / "seen.sqlite"
    connect = sqlite3.connect
    monkeypatch.setattr(sqlite3, "connect", lambda *args, **kwargs: connect(*args, factory=FailingWrites, **kwargs))
    monkeypatch.setattr(FailingWrites, "writes", 0)
    store = SqliteStore(Policy(), path, "test", commit_every=1)
    pages = [Fingerprinter().fingerprint(article(n)) for n in range(4)]
    FailingWrites.failing = {FailingWrites.writes + 2}  # the second statement of the next write: its batch row
    assert store.check_and_add("https://a.test/0", pages[0]) is None
    store.confirm(0)
    assert store.fault == "database or disk is full" and store.unwritten == 1
    assert store.check_and_add("https://b.test/0", pages[0]).url == "https://a.test/0"  # still matched
    assert store.check_and_add("https://a.test/1", pages[1]) is None
    store.confirm(1)  # the next commit: both written
    assert store.fault is None and store.unwritten == 0
    store.close()
    reopened = SqliteStore(Policy(), path, "test")
    assert len(reopened) == 2 and reopened.repaired == ""
    assert reopened.check_and_add("https://c.test/1", pages[1]).url == "https://a.test/1"
    reopened.close()


def wedge(store: Path) -> None:
    """What an earlier version's failed write left: a batch whose pages are missing (its transaction's rows
    numbered past a write that was rolled back)."""
    connection = sqlite3.connect(store)
    (first,) = connection.execute("SELECT max(first_row) FROM batches").fetchone()
    connection.execute("DELETE FROM pages WHERE row >= ?", (first,))
    connection.execute("INSERT INTO pages (row, url, sketch) VALUES (9999, 'https://orphan.test/', NULL)")
    connection.commit()
    connection.close()


def test_a_store_left_inconsistent_opens_clean_and_check_repairs_it(
    site: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Kept rows without their page and a page without its row: `check --dry-run` reports them (exit 1), a crawl
    opens the file with one warning and drops them (their pages are checked as new: the originals are kept again,
    no copy), and `check` then finds the store sound."""
    root, base_url = site
    urls = [base_url + path for path in write_clusters(root)]
    store = tmp_path / "seen.sqlite"
    settings = {**FILTER, "SIMHASH_DEDUP_COMMIT_EVERY": 4, "SIMHASH_DEDUP_PATH": str(store)}
    first, log, status = run(tmp_path, urls, settings)
    assert status == 0 and len(first["kept"]) == ARTICLES
    wedge(store)
    assert cli(["check", str(store), "--dry-run"]) == 1
    said = capsys.readouterr().out
    assert "4 kept pages' fingerprints without their page" in said and "1 pages without their fingerprints" in said
    again, log, status = run(tmp_path, urls, settings)
    assert status == 0 and problems(log) == [], log[-3000:]
    warnings = [line for line in log.splitlines() if "left inconsistent" in line]
    assert len(warnings) == 1 and "WARNING" in warnings[0]
    assert len(again["kept"]) == 4 and all("/a" in url for url in again["kept"])  # the four it lost, once
    assert check(store) == 0 and "sound" in capsys.readouterr().out


@pytest.fixture
def small_disk(tmp_path: Path) -> Any:
    """A real filesystem of 160 KB (a tmpfs mount: needs root)."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small filesystem needs root")
    folder = tmp_path / "small"
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=160k", "tmpfs", str(folder)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"this machine cannot mount a tmpfs: {mounted.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


@pytest.mark.slow
def test_a_full_disk_is_one_warning_and_a_re_run_delivers_only_what_was_not_remembered(
    site: tuple[Path, str], tmp_path: Path, small_disk: Path
) -> None:
    """The store on a filesystem that fills up mid-crawl: the crawl goes on, says it in one warning and at the
    close how many delivered pages it could not remember; moved to a roomy disk, the store lets a re-run export at
    most those pages; a third run exports nothing."""
    root, base_url = site
    for n in range(60):  # enough pages, with long texts kept for review, to fill 160 KB
        (root / f"p{n}.html").write_text(article_page(n))
    urls = [f"{base_url}p{n}.html" for n in range(60)]
    store = small_disk / "seen.sqlite"
    settings = {**WRITE_EACH, "SIMHASH_DEDUP_PATH": str(store), "SIMHASH_DEDUP_REVIEW_TEXTS": 1000}
    first, log, status = run(tmp_path, urls, settings)
    assert status == 0 and problems(log) == [], log[-3000:]
    assert len(first["kept"]) == 60
    warned = [line for line in log.splitlines() if "cannot be written" in line]
    assert len(warned) == 1 and "WARNING" in warned[0], log[-3000:]
    lost = first["stats"]["simhash_dedup/pages_not_remembered"]
    assert 0 < lost < 60
    assert len([line for line in log.splitlines() if f"{lost} kept pages whose items were delivered" in line]) == 1
    roomy = tmp_path / "roomy"
    roomy.mkdir()
    for file in small_disk.glob("seen.sqlite*"):
        if not file.name.endswith(".lock"):
            shutil.copy(file, roomy / file.name)
    settings["SIMHASH_DEDUP_PATH"] = str(roomy / "seen.sqlite")
    second, log, status = run(tmp_path, urls, settings)
    assert status == 0 and problems(log) == [], log[-3000:]
    assert 0 < len(second["kept"]) <= lost
    third, log, status = run(tmp_path, urls, settings)
    assert status == 0 and third["kept"] == []


def test_a_full_disk_with_fail_mode_closed_stops_the_crawl(
    site: tuple[Path, str], tmp_path: Path, small_disk: Path
) -> None:
    """Fail closed: the first write that fails stops the crawl; every item it exported was checked."""
    root, base_url = site
    for n in range(60):
        (root / f"p{n}.html").write_text(article_page(n))
    urls = [f"{base_url}p{n}.html" for n in range(60)]
    settings = {
        **WRITE_EACH,
        "SIMHASH_DEDUP_PATH": str(small_disk / "seen.sqlite"),
        "SIMHASH_DEDUP_REVIEW_TEXTS": 1000,
        "SIMHASH_DEDUP_FAIL_MODE": "closed",
    }
    result, log, status = run(tmp_path, urls, settings)
    assert status == 0 and problems(log) == [], log[-3000:]
    assert result["stats"]["finish_reason"] == "simhash_dedup_store_unavailable"
    assert len(result["kept"]) < 60 and not any(drop.get("unchecked") for drop in result["dropped"])


def article_page(n: int) -> str:
    rng = random.Random(n)
    words = [f"{a}{b}{c}" for a in "bcdfgklmnprst" for b in "aeiou" for c in ("lan", "mor", "tis", "vek")]
    paragraphs = "".join(f"<p>{' '.join(rng.choice(words) for _ in range(120))}</p>" for _ in range(6))
    return f"<html><head><title>Page {n}</title></head><body><h1>Page {n}</h1>{paragraphs}</body></html>"


@pytest.mark.parametrize("shape", ["folder missing", "under a file", "a folder", "not a store"])
def test_a_path_that_cannot_be_a_store_is_one_line_before_any_request(
    site: tuple[Path, str], tmp_path: Path, shape: str
) -> None:
    """``scrapy crawl`` as a user runs it: one ERROR line naming the setting and the path, the refused exit
    status, no traceback, no request."""
    root, base_url = site
    write_clusters(root)
    path = {
        "folder missing": tmp_path / "nowhere" / "seen.sqlite",
        "under a file": tmp_path / "file" / "seen.sqlite",
        "a folder": tmp_path / "folder",
        "not a store": tmp_path / "notes.sqlite",
    }[shape]
    if shape == "under a file":
        (tmp_path / "file").write_text("a file, not a folder")
    elif shape == "a folder":
        path.mkdir()
    elif shape == "not a store":
        path.write_text("my notes, not a database")
    project = make_project(tmp_path / "project", f"SIMHASH_DEDUP_PATH = {str(path)!r}\n")
    done = scrapy(project, "crawl", "site", "-a", f"url={base_url}a0.html", "-O", "out.jsonl")
    assert done.returncode == REFUSED_EXIT_STATUS
    errors = [line for line in done.stderr.splitlines() if "ERROR" in line or "CRITICAL" in line]
    assert len(errors) == 1 and "SIMHASH_DEDUP_PATH" in errors[0] and str(path) in errors[0], done.stderr[-3000:]
    assert "Traceback" not in done.stderr and "Crawled (" not in done.stderr


def test_a_store_file_deleted_under_a_running_crawl_is_a_fault_said_once(tmp_path: Path) -> None:
    """SQLite would go on writing to the deleted file (the next crawl would find nothing): the store sees the file
    gone at its next write, says so once and keeps the pages to be written."""
    from scrapy_simhash_dedup import Fingerprinter

    from .test_persistence import article

    said: list[str | None] = []
    path = tmp_path / "seen.sqlite"
    store = SqliteStore(Policy(), path, "test", commit_every=1)
    store.on_fault = said.append
    pages = [Fingerprinter().fingerprint(article(n)) for n in range(3)]
    assert store.check_and_add("https://a.test/0", pages[0]) is None
    store.confirm(0)
    assert store.unwritten == 0 and said == []
    path.unlink()
    for n in (1, 2):
        assert store.check_and_add(f"https://a.test/{n}", pages[n]) is None
        store.confirm(n)
    assert len(said) == 1 and "deleted or replaced" in said[0] and store.unwritten == 2
    assert store.check_and_add("https://b.test/2", pages[2]).url == "https://a.test/2"  # still compared
    store.close()
    assert store.unwritten == 2
