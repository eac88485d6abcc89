"""The two places the filter reaches into Scrapy's private attributes (Scrapy has no public route to them),
checked in a real crawl, so that a Scrapy release that changes them fails here, loudly, rather than silently
ending "a kill never leaves a page remembered whose item is not in the output" or the add-on's page route."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

import scrapy
from packaging.version import Version

from .conftest import PROJECT
from .user_project import make_project
from .user_project import scrapy as scrapy_command_in


def scrapy_version(project: Path) -> str:
    """What ``scrapy version`` says in ``project``, run as a user runs it."""
    done = scrapy_command_in(project, "version")
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().removeprefix("Scrapy ")


def test_the_feed_exports_files_and_the_filters_pipeline_are_where_the_filter_looks(
    site: tuple[Path, str], crawl: Callable, tmp_path: Path
) -> None:
    root, base_url = site
    for name, words in (("a", "apples and pears "), ("b", "rivers and hills "), ("c", "trains and boats ")):
        (root / f"{name}.html").write_text(f"<html><body><h1>{name}</h1><p>{words * 50}</p></body></html>")
    settings = {
        "ADDONS": {"scrapy_simhash_dedup.SimhashDedupAddon": 0},
        "ITEM_PIPELINES": {"tests.crawl_runner.RecordScrapyRoutes": 100},
        "FEEDS": {
            str(tmp_path / "items.jsonl"): {"format": "jsonlines"},
            str(tmp_path / "items.csv"): {"format": "csv"},
        },
    }
    result = crawl([f"{base_url}{name}.html" for name in "abc"], settings, yield_html=False)
    # the files open at the first item's export: the last item sees them
    assert result["stats"]["test/feed_streams"] >= 2, "one file per feed (Scrapy's FeedExporter slots)"
    assert result["stats"]["test/pipeline_found"] is True, "engine.scraper.itemproc.middlewares"


def test_the_crawls_run_on_the_scrapy_make_test_asks_for(
    site: tuple[Path, str], crawl: Callable, tmp_path: Path
) -> None:
    """``make test`` runs the crawl tests twice: on the Scrapy ``requirements.txt`` pins, then on the lowest
    ``pyproject.toml`` declares (named by ``SIMHASH_DEDUP_TEST_SCRAPY``, first on ``PYTHONPATH``).  This process,
    a crawl's process and a user's ``scrapy`` command all run the one asked for."""
    pinned = re.search(r"^Scrapy==(\S+)$", (PROJECT / "requirements.txt").read_text(), re.M)[1]
    declared = re.search(r'"Scrapy>=([\d.]+)"', (PROJECT / "pyproject.toml").read_text())[1]
    expected = Version(os.environ.get("SIMHASH_DEDUP_TEST_SCRAPY", pinned))
    assert expected in (Version(pinned), Version(declared))
    assert Version(scrapy.__version__) == expected
    root, base_url = site
    (root / "a.html").write_text("<html><body><p>" + "apples and pears " * 50 + "</p></body></html>")
    result = crawl([f"{base_url}a.html"], {"ADDONS": {"scrapy_simhash_dedup.SimhashDedupAddon": 0}})
    assert Version(re.search(r"Scrapy (\S+) started", result["log"])[1]) == expected
    assert Version(scrapy_version(make_project(tmp_path / "project"))) == expected
