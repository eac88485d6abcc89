"""The demo's report, opened in a real browser (Debian's chromium, driven by Playwright): what is
rendered, with no script error and no network request."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from .conftest import PROJECT
from .reports import assert_report_agrees, report_figures

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"  # `make test` installs Debian's package


def stated_demo_figures() -> dict[str, tuple[int, ...]]:
    """The pages crawled, kept and dropped that the README and the development notes say ``make demo`` prints."""
    stated = {
        "README.md": r"`make demo`\s+crawls (\d+) pages of the Debian Administrator's Handbook[^:]*: "
        r"(\d+) kept, (\d+)\s+dropped",
        "docs/internals/development.md": r"Measured here: (\d+) pages, (\d+) kept, (\d+) dropped",
    }
    found = {name: re.search(pattern, (PROJECT / name).read_text()) for name, pattern in stated.items()}
    return {name: tuple(int(figure) for figure in match.groups()) for name, match in found.items() if match}


@pytest.mark.browser
def test_the_demo_writes_a_report_that_shows_its_counts_histograms_and_diffs(tmp_path: Path):
    output = tmp_path / "demo-output"
    done = subprocess.run(
        [sys.executable, "-m", "crawler.demo", "--output", str(output)],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = output / "report.html"
    assert f"report: {report.resolve()}" in done.stdout
    checked = int(re.search(r"pages checked:\s+(\d+)", done.stdout)[1])
    dropped = int(re.search(r"dropped:\s+(\d+)", done.stdout)[1])
    assert dropped > 0
    printed = tuple(
        int(re.search(rf"{name}:\s+(\d+)", done.stdout)[1]) for name in ("pages crawled", "kept", "dropped")
    )
    assert stated_demo_figures() == {"README.md": printed, "docs/internals/development.md": printed}
    figures = report_figures(report.read_text())
    assert_report_agrees(figures)
    assert figures.copies == figures.near == dropped, "every copy in a cluster, its URL the canonical name or not"

    renamed = re.search(r"renamed:\s+(\d+) kept pages are known by the address of their original", done.stdout)
    assert renamed and int(renamed[1]) > 0
    names = subprocess.run(
        [str(Path(sys.executable).parent / "simhash-dedup"), "aliases", str(output / "seen.sqlite")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = [json.loads(line) for line in names.splitlines()]
    (apt,) = [row for row in rows if row["alias"].endswith("/en-US/apt.html")]
    assert apt["kept_url"].endswith("/da-DK/apt.html"), "the untranslated copy was met first"
    assert apt["canonical"] == apt["alias"], "the page kept is known by its original's address"
    assert sum(row["canonical"] != row["kept_url"] for row in {r["kept_url"]: r for r in rows}.values()) <= int(
        renamed[1]
    )

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page()
        requests, errors = [], []
        page.on("request", lambda request: requests.append(request.url))
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
        page.goto(report.resolve().as_uri())
        page.wait_for_load_state("load")

        counts = dict(line.split("\t") for line in page.inner_text("#counts").splitlines())
        assert int(counts["checked"].replace(",", "")) == checked
        assert int(counts["pages_dropped"].replace(",", "")) == dropped
        assert not [name for name in counts if name.startswith("items_")], "one item a page: its pages' counts only"
        plots = page.locator("figure svg")
        assert plots.count() == 2
        legends = [
            re.findall(r"dropped \(([\d,]+)(?:; ([\d,]+) more, [^)]*)?\)", plots.nth(n).inner_html()) for n in range(2)
        ]
        totals = [sum(int(count.replace(",", "")) for count in legend[0] if count) for legend in legends]
        assert totals[0] == totals[1] == dropped, "both histograms account for every drop"
        for n in range(2):
            box = plots.nth(n).bounding_box()
            assert box is not None and box["width"] > 200 and box["height"] > 100
        first_pair = page.locator("details.pair").first
        assert first_pair.locator("table.diff").is_visible()  # unfolded, side by side
        marked = first_pair.locator("table.diff del, table.diff ins")
        assert marked.count() > 0 and marked.first.is_visible()
        assert "vs kept" in first_pair.locator("summary").inner_text()
        browser.close()
    assert errors == []
    assert requests == [report.resolve().as_uri()]  # nothing fetched but the file itself


def test_both_histograms_account_for_every_pair_and_say_why_some_have_no_similarity():
    """A short page dropped on its exact text has a content distance but no sketch similarity: the similarity
    histogram says it left it out, so that its total and the distance histogram's agree."""
    from scrapy_simhash_dedup.report.plots import distance_histogram, similarity_histogram
    from scrapy_simhash_dedup.stores.records import Decision

    decisions = [
        Decision(0.0, "dropped", "https://a.test/copy", "https://a.test/page", "content", 2, 1, 0.9, 0.65),
        Decision(0.0, "dropped", "https://a.test/stub2", "https://a.test/stub", "exact_text", 0, 0, None, None),
    ]
    assert "<!-- dropped (2) -->" in distance_histogram(decisions, 8)
    assert "<!-- dropped (1; 1 more, no similarity: exact-text matches of short pages) -->" in similarity_histogram(
        decisions, 0.65
    )
