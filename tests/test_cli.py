"""``simhash-dedup`` as a new user meets it: the command that ``make`` installs, a store that keeps what
was kept, errors that say what to do, help, progress and a summary that names every outcome once."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from collections import Counter
from pathlib import Path

import pytest

from bench.common import write_warc
from scrapy_simhash_dedup.batch.dedup import summary
from scrapy_simhash_dedup.report.plots import similarity_histogram
from scrapy_simhash_dedup.stores.records import Decision

from .pages import real_page

COMMAND = Path(sys.executable).parent / "simhash-dedup"  # what `make` installs into .venv
NAMES = [
    "newspaper-syracuse.com1",
    "newspaper-syracuse.com2",
    "newspaper-theatlanticcities.com1",
    "newspaper-theatlanticcities.com2",
    "gne-163-1",
    "gne-163-2",
    "gne-sina-1",
    "gne-sina-2",
]


def simhash_dedup(*arguments: str | Path, stderr_tty: bool = False) -> subprocess.CompletedProcess:
    """The installed command, run from a folder that is not this checkout (as a user runs it)."""
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    if not stderr_tty:
        return subprocess.run(
            [str(COMMAND), *map(str, arguments)], capture_output=True, text=True, timeout=300, cwd="/", env=environment
        )
    mine, theirs = pty.openpty()
    fcntl.ioctl(theirs, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))  # a terminal 120 columns wide
    process = subprocess.Popen(
        [str(COMMAND), *map(str, arguments)], stdout=subprocess.PIPE, stderr=theirs, cwd="/", env=environment, text=True
    )
    os.close(theirs)
    chunks = []
    while True:
        try:
            chunk = os.read(mine, 65536)
        except OSError:  # the other end closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(mine)
    stdout = process.stdout.read()
    process.wait(timeout=300)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, b"".join(chunks).decode())


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    """A WARC.gz of 8 real pages, each twice under two URLs (the copies after the originals)."""
    path = tmp_path / "pages.warc.gz"
    write_warc(
        path,
        [
            (f"https://{host}/{name}", real_page(name), "text/html; charset=utf-8")
            for host in ("a.test", "b.test")
            for name in NAMES
        ],
    )
    return path


def test_make_installs_the_command() -> None:
    done = simhash_dedup("--version")
    assert done.returncode == 0 and re.fullmatch(r"simhash-dedup \S+ \(fingerprint scheme \d+\)\n", done.stdout)


def test_a_run_with_a_store_and_an_output_leaves_every_kept_page_in_the_store(archive: Path, tmp_path: Path) -> None:
    """The store writes its last pages (after the output's, which it flushes first) before the output closes:
    the same run again keeps nothing new."""
    store, kept = tmp_path / "seen.sqlite", tmp_path / "kept.jsonl"
    first = simhash_dedup("dedup", archive, "--store", store, "-o", kept, "--no-progress")
    assert first.returncode == 0, first.stderr
    assert first.stderr.strip().endswith(f"simhash-dedup: 16 pages: {len(NAMES)} kept, {len(NAMES)} dropped")
    assert len(kept.read_text().splitlines()) == len(NAMES)
    again = simhash_dedup("dedup", archive, "--store", store, "-o", kept, "--no-progress")
    assert again.returncode == 0, again.stderr
    assert again.stderr.strip().endswith("simhash-dedup: 16 pages: 0 kept, 16 dropped")
    assert kept.read_text() == ""


def test_a_feed_without_the_html_field_is_one_line_naming_the_fields_it_has(tmp_path: Path) -> None:
    feed = tmp_path / "items.jsonl"
    feed.write_text(
        "".join(
            json.dumps({"url": f"https://a.test/{n}", "body": "<p>page</p>", "title": "t"}) + "\n" for n in range(300)
        )
    )
    done = simhash_dedup("dedup", feed, "--no-progress")
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert len(lines) == 2, done.stderr
    assert lines[0] == (
        f"simhash-dedup: {feed}: no record has a 'html' field holding the page's HTML (the first 5 "
        f"records have: url, body, title); name it with --html-field"
    )
    assert lines[1] == "simhash-dedup: 0 pages: 0 kept, 0 dropped; 5 records unreadable"
    assert simhash_dedup("dedup", feed, "--no-progress", "--html-field", "body").returncode == 0


def test_report_on_something_else_than_a_log_is_one_line_and_exit_status_2(archive: Path, tmp_path: Path) -> None:
    kept, outcomes, report = tmp_path / "kept.jsonl", tmp_path / "outcomes.jsonl", tmp_path / "report.html"
    assert simhash_dedup("dedup", archive, "-o", kept, "--outcomes", outcomes, "--no-progress").returncode == 0
    wrong = simhash_dedup("report", kept, "-o", report)
    assert wrong.returncode == 2 and not report.exists()
    assert wrong.stderr.splitlines() == [
        f"simhash-dedup: {kept} is neither a store of simhash_dedup (a SQLite file) nor an outcomes file of "
        f'`simhash-dedup dedup --outcomes` (records with an "outcome"); give one of them, or a Redis URL and its --key'
    ]
    lines = outcomes.read_text().splitlines()
    outcomes.write_text("\n".join([*lines[:2], "{broken", *lines[2:]]) + "\n")
    broken = simhash_dedup("report", outcomes, "-o", report)
    assert broken.returncode == 2 and not report.exists()
    assert (
        broken.stderr.startswith(f"simhash-dedup: {outcomes}:3: not a JSON line")
        and len(broken.stderr.splitlines()) == 1
    )


def test_a_missing_file_is_named_alike_by_every_command_and_nothing_is_made_of_it(tmp_path: Path) -> None:
    """``report`` and ``dedup`` say a missing file as one another, without Python's ``[Errno 2]``; an output a run
    that read nothing never made is "not written", one that was there "left as it was"."""
    missing, output, there = tmp_path / "nope.sqlite", tmp_path / "kept.jsonl", tmp_path / "there.jsonl"
    report = simhash_dedup("report", missing, "-o", tmp_path / "report.html")
    assert report.returncode == 2
    assert report.stderr.splitlines() == [f"simhash-dedup: {missing}: cannot be read: no such file or folder"]
    there.write_text("as it was\n")
    dedup = simhash_dedup("dedup", tmp_path / "nope.jsonl", "-o", output, "--no-progress")
    assert dedup.returncode == 1 and not output.exists()
    assert (
        dedup.stderr.splitlines()[0]
        == f"simhash-dedup: {tmp_path / 'nope.jsonl'}: cannot be read: no such file or folder"
    )
    assert dedup.stderr.splitlines()[-1] == f"simhash-dedup: nothing read: {output} not written"
    again = simhash_dedup("dedup", tmp_path / "nope.jsonl", "-o", there, "--no-progress")
    assert again.stderr.splitlines()[-1] == f"simhash-dedup: nothing read: {there} left as it was"
    assert there.read_text() == "as it was\n"


def test_a_file_that_is_not_json_lines_is_one_line_and_a_count(tmp_path: Path) -> None:
    """A binary file named ``.jsonl`` is one message with how many lines it has, not one per line; a JSON Lines
    file with a bad line among good ones names that line."""
    binary = tmp_path / "photo.jsonl"
    binary.write_bytes(bytes(range(256)) * 64 + b"\n" + os.urandom(4096).replace(b"{", b"(") + b"\n" * 40)
    lines = [line for line in binary.read_bytes().split(b"\n") if line.strip()]
    done = simhash_dedup("dedup", binary, "--no-progress")
    assert done.returncode == 1
    said = done.stderr.splitlines()
    assert len(said) == 2, done.stderr
    assert said[0].startswith(f"simhash-dedup: {binary}: not JSON Lines: none of its first 5 lines is JSON (")
    assert said[0].endswith(f"none of its {len(lines)} lines is read as a page")
    assert said[1] == f"simhash-dedup: 0 pages: 0 kept, 0 dropped; {len(lines)} records unreadable"
    mixed = tmp_path / "mixed.jsonl"
    page = {"url": "https://a.test/", "html": real_page(NAMES[0]).decode("utf-8", "replace")}
    mixed.write_text("not json\n" + json.dumps(page) + "\n")
    done = simhash_dedup("dedup", mixed, "--no-progress")
    assert done.returncode == 0
    assert done.stderr.splitlines()[0].startswith(f"simhash-dedup: {mixed}:1: not a JSON line")


def test_settings_that_cannot_be_imported_are_one_line_and_exit_status_2(archive: Path) -> None:
    done = simhash_dedup("dedup", archive, "--settings", "nosuch.settings", "--no-progress")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines() == [
        "simhash-dedup: --settings nosuch.settings cannot be imported (No module named 'nosuch'); give a module "
        "importable from this folder, e.g. myproject.settings"
    ]


def test_help_shows_choices_and_defaults_and_report_takes_only_what_changes_it() -> None:
    dedup = simhash_dedup("dedup", "--help").stdout
    assert "--mode {content,both,structure,either}" in dedup and "default content)" in dedup
    assert re.search(
        r"--content-distance INT\s+largest content distance \(0-64 bits\)\s+\(SIMHASH_DEDUP_CONTENT_DISTANCE;"
        r"\s+default 8\)",
        dedup,
    )
    assert "--outcomes FILE" in dedup and "--log-size INT" in dedup and "--decisions" not in dedup
    report = simhash_dedup("report", "--help").stdout
    assert "--pairs N" in report and "--mode" not in report and "--settings" not in report
    assert "One HTML file, readable offline" in report  # what it makes, before its options
    top = simhash_dedup("--help").stdout
    assert "``" not in top and "The filter over files you already have" in top
    assert "pip install 'scrapy-simhash-dedup[spark]'" in " ".join(top.split())  # quoted: zsh globs brackets


def test_progress_on_a_terminal_has_a_total_and_messages_above_it(archive: Path, tmp_path: Path) -> None:
    missing = tmp_path / "missing.warc.gz"
    done = simhash_dedup("dedup", missing, archive, "-o", tmp_path / "kept.jsonl", stderr_tty=True)
    assert done.returncode == 0, done.stderr
    from tqdm import tqdm

    total = tqdm.format_sizeof(archive.stat().st_size, divisor=1024)  # the inputs' size, in bytes
    assert f" 0.00/{total} [" in done.stderr and "100%" in done.stderr and f"{total}/{total} [" in done.stderr
    assert "16 pages" in done.stderr and "<" in done.stderr  # pages so far, and the time left
    segments = [segment.strip() for line in done.stderr.splitlines() for segment in line.split("\r")]
    assert f"simhash-dedup: {missing}: cannot be read: no such file or folder" in segments  # a line of its own


def test_progress_elsewhere_is_no_bar(archive: Path, tmp_path: Path) -> None:
    done = simhash_dedup("dedup", archive, "-o", tmp_path / "kept.jsonl")
    assert done.returncode == 0 and "\r" not in done.stderr and "|" not in done.stderr
    assert done.stderr.splitlines() == [f"simhash-dedup: 16 pages: {len(NAMES)} kept, {len(NAMES)} dropped"]


def test_the_summary_names_every_outcome_once() -> None:
    happened = Counter(
        {
            "kept": 140,
            "borderline": 12,
            "dropped": 139,
            "not_compared/empty_html": 1,
            "not_compared/too_large": 2,
            "failed": 1,
            "unreadable": 1,
            "skipped": 3,
        }
    )
    assert summary(happened) == (
        "295 pages: 152 kept (12 of them borderline), 139 dropped, 3 not compared "
        "(1 empty_html, 2 too_large), kept too, 1 failed, kept too; 1 record unreadable; "
        "3 records not HTML, skipped"
    )
    assert summary(Counter({"kept": 1})) == "1 page: 1 kept, 0 dropped"


def bars(svg: str, color: str) -> list[float]:
    """The visible heights (pixels) of the histogram's bars of ``color`` that are not empty."""
    ((top, height),) = [
        (float(y), float(h))
        for y, h in re.findall(
            r'<clipPath id="[^"]+">\s*<rect x="[\d.]+" y="([\d.]+)" width="[\d.]+" height="([\d.]+)"', svg
        )
    ]
    heights = []
    for path in re.findall(r'<path d="([^"]+)"[^>]*clip-path="[^"]+"[^>]*style="fill: ' + color, svg):
        ys = [float(y) for y in re.findall(r"[ML] [-\d.]+ ([-\d.]+)", path)]
        visible = min(max(ys), top + height) - min(ys)
        if visible > 0:
            heights.append(visible)
    return heights


def test_the_similarity_axis_is_0_to_1_and_a_bar_of_one_pair_is_seen() -> None:
    drops = [
        Decision(0, "dropped", f"https://a.test/{n}", "https://a.test/", "content", 1, 0, 0.9, 0.65) for n in range(200)
    ]
    borderline = [
        Decision(0, "borderline", f"https://b.test/{n}", "https://a.test/", "similarity", 5, 0, similarity, 0.65)
        for n, similarity in enumerate((-0.15, 0.01))
    ]
    svg = similarity_histogram(drops + borderline, 0.65)
    assert len(bars(svg, "#2471a3")) == 1, "an estimate below 0 is drawn at 0, with the pair at 0.01"
    (one_bar,), (tall,) = bars(svg, "#2471a3"), bars(svg, "#c0392b")
    assert one_bar >= 5 and tall > one_bar  # two pairs beside two hundred: seen
    alone = similarity_histogram(drops + borderline[1:], 0.65)
    assert min(bars(alone, "#2471a3")) >= 5
