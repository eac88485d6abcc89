"""Shared fixtures: a real local HTTP server and real Scrapy crawls in subprocesses."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from crawler.local_site import serve_directory
from crawler.trap_site import TrapSite, articles_from_html, serve_trap_site

from .redis_cluster import RedisCluster
from .redis_server import RedisServer

PROJECT = Path(__file__).resolve().parents[1]
DEMO_SITE = PROJECT / "crawler" / "demo_site" / "debian-handbook-en-da-zh.tar.xz"
CrawlResult = dict[str, Any]

#: The markers a test gets from the real services its fixtures start (``make test-fast`` leaves them out).
SERVICE_MARKERS = {"redis_url": "redis", "redis_cluster": "cluster", "spark": "spark", "dist": "slow"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test by the services it starts, so that ``-m`` selects by them without a list to keep up."""
    for item in items:
        for fixture in getattr(item, "fixturenames", ()):
            if marker := SERVICE_MARKERS.get(fixture):
                item.add_marker(marker)


@pytest.fixture
def site(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A folder served on 127.0.0.1 (free port): write pages into it, crawl the URL."""
    root = tmp_path / "site"
    root.mkdir()
    with serve_directory(root) as base_url:
        yield root, base_url


@pytest.fixture
def crawl(tmp_path: Path) -> Callable[..., CrawlResult]:
    """Run a real crawl of ``urls`` in order with ``settings``; return kept, dropped, stats."""

    def run(
        urls: list[str], settings: dict[str, Any], yield_html: bool = True, timeout: float = 600, **spider: Any
    ) -> CrawlResult:
        """``spider``: more of ``tests.crawl_runner``'s options (``all_at_once``, ``repeat``, ``html_as``)."""
        config, result = tmp_path / "crawl.json", tmp_path / "result.json"
        settings = {"SIMHASH_DEDUP_PATH": str(tmp_path / "seen.sqlite"), **settings}  # nothing in the project
        config.write_text(json.dumps({"urls": urls, "settings": settings, "yield_html": yield_html, **spider}))
        done = subprocess.run(
            [sys.executable, "-m", "tests.crawl_runner", str(config), str(result)],
            cwd=PROJECT,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert done.returncode == 0, done.stderr[-5000:]
        outcome = json.loads(result.read_text())
        outcome["log"] = done.stderr
        return outcome

    return run


@pytest.fixture
def crawls(tmp_path: Path) -> Callable[..., list[CrawlResult]]:
    """Run several real crawls at once in one process (``tests.crawl_runner``'s ``crawls``), each a dict of
    ``urls``, ``settings`` and spider options; returns each one's kept, dropped and stats, and their one log."""

    def run(configs: list[dict[str, Any]], timeout: float = 600) -> tuple[list[CrawlResult], str]:
        config, result = tmp_path / "crawls.json", tmp_path / "crawls-result.json"
        for n, one in enumerate(configs):  # nothing in the project
            one["settings"] = {"SIMHASH_DEDUP_PATH": str(tmp_path / f"seen-{n}.sqlite"), **one["settings"]}
        config.write_text(json.dumps({"crawls": configs}))
        done = subprocess.run(
            [sys.executable, "-m", "tests.crawl_runner", str(config), str(result)],
            cwd=PROJECT,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert done.returncode == 0, done.stderr[-5000:]
        return json.loads(result.read_text())["crawls"], done.stderr

    return run


def trap_articles() -> list:
    """The trap site's articles, from the demo site's English chapters (GPL / CC BY-SA, see its README)."""
    with tarfile.open(DEMO_SITE) as archive:
        pages = (
            archive.extractfile(m).read()
            for m in archive
            if m.name.startswith("html/en-US/") and m.name.endswith(".html")
        )
        return articles_from_html(pages, 14)


@pytest.fixture(scope="module")
def trap_site() -> Iterator[tuple[str, TrapSite]]:
    with serve_trap_site(trap_articles()) as served:
        yield served


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A redis-server for the session: ``SIMHASH_DEDUP_TEST_REDIS_URL`` if given, else one started here."""
    if given := os.environ.get("SIMHASH_DEDUP_TEST_REDIS_URL"):
        yield given
        return
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    yield server.url
    server.stop()


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisCluster]:
    """A Redis Cluster of 3 masters and 3 replicas for the session (per pytest-xdist worker), started here."""
    cluster = RedisCluster(tmp_path_factory.mktemp("redis-cluster"))
    cluster.start()
    yield cluster
    cluster.stop()


#: What a tree's own files are not: what ``make`` and the tests leave in it.
MADE_HERE = {".venv", ".build-venv", ".scrapy-lowest", ".scrapy", "build", "dist", "demo-output", "__pycache__"}


def checkout_files(to: Path) -> Path:
    """The checkout's tracked files (and the C++ that Cython made of its ``.pyx``, to save the wait), copied:
    what a clean clone builds, without what earlier builds left in ``build/``.  In an unpacked sdist (no git), its
    files but what ``make`` and the tests made there (``MADE_HERE``, compiled modules)."""
    if (PROJECT / ".git").exists():
        tracked = subprocess.run(["git", "ls-files"], cwd=PROJECT, capture_output=True, text=True, check=True)
        names = tracked.stdout.splitlines()
    else:
        names = [
            str(path.relative_to(PROJECT))
            for path in PROJECT.rglob("*")
            if path.is_file()
            and not MADE_HERE & set(path.relative_to(PROJECT).parts)
            and path.suffix not in (".so", ".pyc")
        ]
    generated = [
        str(path.relative_to(PROJECT)) for path in (PROJECT / "pipelines").rglob("*") if path.suffix in (".c", ".cpp")
    ]
    for name in [*names, *generated]:
        if (PROJECT / name).is_file():
            (to / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(PROJECT / name, to / name)
    return to


@pytest.fixture(scope="session")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``make dist`` run in a copy of the checkout's tracked files, with no development environment: ``dist/`` with
    the sdist and the wheel built from it in isolation, both passed by ``twine check --strict``."""
    source = checkout_files(tmp_path_factory.mktemp("release") / "source")
    done = subprocess.run(["make", "--no-print-directory", "dist"], cwd=source, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return source / "dist"


#: Chapters present in every language of the demo site: many da-DK and zh-CN pages are copies of en-US.
CHAPTERS = 14


@pytest.fixture
def handbook(site: tuple[Path, str]) -> tuple[Path, str, list[str]]:
    """Chapters of the demo site in three languages, served; their names in sorted (the folder's) order."""
    root, base_url = site
    with tarfile.open(DEMO_SITE) as archive:
        names = sorted(m.name for m in archive if m.name.startswith("html/en-US/") and m.name.endswith(".html"))
        chapters = [name.removeprefix("html/en-US/") for name in names[:CHAPTERS]]
        for language in ("da-DK", "en-US", "zh-CN"):
            for chapter in chapters:
                member = archive.getmember(f"html/{language}/{chapter}")
                (root / language).mkdir(exist_ok=True)
                (root / language / chapter).write_bytes(archive.extractfile(member).read())
    pages = sorted(str(path.relative_to(root)) for path in root.rglob("*.html"))
    return root, base_url, pages
