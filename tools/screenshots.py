"""The docs' pictures of the report, made again from the demo as ``make demo`` leaves it.

    python -m tools.screenshots      (after ``make demo``; needs Debian's chromium, as ``make test`` installs it)

``docs/report-overview.png``: the top of ``demo-output/report.html`` (counts, runs, histograms), 1200 × 1000;
``docs/report-pair.png``: the first pair, side by side, at most 560 high.  Both through Playwright in Chromium,
the browser ``tests/test_report.py`` reads the report with.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from playwright.sync_api import sync_playwright

PROJECT = Path(__file__).resolve().parents[1]
REPORT = PROJECT / "demo-output" / "report.html"
PAIR_HEIGHT = 560


def main() -> None:
    if not REPORT.is_file():
        raise SystemExit(f"{REPORT} is not there: run `make demo` first")
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1200, "height": 1000})
        page.goto(REPORT.as_uri())
        page.wait_for_load_state("load")
        overview = PROJECT / "docs" / "report-overview.png"
        page.screenshot(path=str(overview))
        pair = page.locator("details.pair").first
        box = pair.bounding_box()  # (the page unscrolled: its coordinates in the page)
        assert box is not None, "the report shows no pair"
        shot = PROJECT / "docs" / "report-pair.png"
        page.screenshot(
            path=str(shot),
            full_page=True,
            clip={"x": box["x"], "y": box["y"], "width": box["width"], "height": min(box["height"], PAIR_HEIGHT)},
        )
        browser.close()
    print(f"written: {overview.relative_to(PROJECT)}, {shot.relative_to(PROJECT)}")


if __name__ == "__main__":
    main()
