"""The demo's report, opened in a real browser (Debian's chromium, driven by Playwright): what is
rendered, with no script error and no network request."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

from .conftest import PROJECT

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"  # `make test` installs Debian's package


def test_the_demo_writes_a_report_that_shows_its_counts_histograms_and_diffs(tmp_path: Path):
    output = tmp_path / "demo-output"
    done = subprocess.run([sys.executable, "-m", "crawler.demo", "--output", str(output)], cwd=PROJECT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    report = output / "report.html"
    assert f"report: {report.resolve()}" in done.stdout
    checked = int(re.search(r"pages checked:\s+(\d+)", done.stdout)[1])
    dropped = int(re.search(r"dropped:\s+(\d+)", done.stdout)[1])
    assert dropped > 0

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
        plots = page.locator("figure svg")
        assert plots.count() == 2
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
