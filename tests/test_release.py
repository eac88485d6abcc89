"""The release as a user gets it: ``make dist``'s sdist and wheel hold the licence and the notices; the wheel,
installed with Scrapy into a fresh virtual environment with no compiler on ``PATH``, crawls a site with the
README's add-on line and drops its copies; the core install pulls none of the extras' libraries, a feature
whose extra is missing says so in one line, and with the extras installed the features work."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.common import write_warc

from .conftest import PROJECT, serve_directory
from .pages import real_page
from .user_project import environment, make_project

NOTICES = ("LICENSE", "THIRD_PARTY_NOTICES.md", "LICENSE.xxhash")
#: The libraries only an extra brings.
EXTRAS_ONLY = {"matplotlib", "fastwarc", "tqdm", "redis", "hiredis", "pyspark", "pyarrow"}
ARTICLES = (
    "newspaper-syracuse.com1",
    "newspaper-syracuse.com2",
    "newspaper-theatlanticcities.com1",
    "newspaper-theatlanticcities.com2",
    "postgresql-doc-sql-commit",
    "postgresql-doc-sql-end",
)


@pytest.fixture(scope="module")
def user_environment(tmp_path_factory: pytest.TempPathFactory, dist: Path) -> Iterator[Path]:
    """A new virtual environment, the wheel and Scrapy installed with nothing but the interpreter on ``PATH``
    (no compiler: a wheel needs none)."""
    venv = tmp_path_factory.mktemp("user") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    (wheel,) = dist.glob("*.whl")
    install = [
        str(venv / "bin" / "python"),
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        str(wheel),
        "scrapy",
    ]
    done = subprocess.run(install, capture_output=True, text=True, env=without_compiler(venv))
    assert done.returncode == 0, done.stderr[-3000:]
    yield venv


def without_compiler(venv: Path) -> dict[str, str]:
    """A user's environment (``user_project.environment``) whose ``PATH`` holds the virtual environment's
    commands only: no cc, c++, gcc (nor ``CC``, ``CXX``)."""
    user = environment({"PATH": str(venv / "bin"), "VIRTUAL_ENV": str(venv)})
    return {key: value for key, value in user.items() if key not in ("CC", "CXX")}


def test_the_sdist_and_the_wheel_hold_the_licence_and_the_notices(dist: Path) -> None:
    (wheel,) = dist.glob("*.whl")
    (sdist,) = dist.glob("*.tar.gz")
    in_wheel = {Path(name).name for name in zipfile.ZipFile(wheel).namelist() if ".dist-info/licenses/" in name}
    with tarfile.open(sdist) as archive:
        in_sdist = {Path(name).name for name in archive.getnames()}
    assert set(NOTICES) <= in_wheel and set(NOTICES) <= in_sdist
    metadata = (
        zipfile.ZipFile(wheel)
        .read(next(n for n in zipfile.ZipFile(wheel).namelist() if n.endswith(".dist-info/METADATA")))
        .decode()
    )
    assert "License-Expression: MIT AND CC-BY-SA-4.0 AND BSD-2-Clause" in metadata  # the code, the IDF data, xxHash
    assert "License-File: THIRD_PARTY_NOTICES.md" in metadata


def test_the_package_index_s_description_links_to_the_published_docs(dist: Path) -> None:
    """A package index shows the README alone: its links and its image lead to the docs site .readthedocs.yaml
    publishes, each to a page (or an image) the docs hold; the project's URLs name that site."""
    (wheel,) = dist.glob("*.whl")
    archive = zipfile.ZipFile(wheel)
    metadata = archive.read(next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    headers, description = metadata.split("\n\n", 1)
    urls = dict(re.findall(r"^Project-URL: (\w+), (\S+)$", headers, re.M))
    docs = urls["Documentation"]
    assert docs.startswith("https://") and urls["Changelog"] == docs + "changelog.html"
    targets = re.findall(r"\]\(([^)\s]+)\)", description)
    assert len(targets) >= 15 and not [target for target in targets if not target.startswith(("https://", "#"))]
    for target in (target.split("#")[0] for target in targets if target.startswith(docs)):
        page = target.removeprefix(docs)
        if page.startswith("_images/"):
            assert list((PROJECT / "docs").rglob(page.removeprefix("_images/"))), target
        else:
            assert (PROJECT / "docs" / page.replace(".html", ".md")).is_file(), target


def test_the_wheel_holds_only_what_runs_and_the_sdist_what_builds_and_tests_it(dist: Path, tmp_path: Path) -> None:
    """No Cython source, generated C/C++, vendored header or build-time data in the wheel, and its extension
    modules stripped of their symbols; the sdist has what builds the package and what its tests need."""
    (wheel,) = dist.glob("*.whl")
    (sdist,) = dist.glob("*.tar.gz")
    archive = zipfile.ZipFile(wheel)
    names = archive.namelist()
    assert not [name for name in names if name.endswith((".pyx", ".pxi", ".c", ".cpp", ".h", ".gz"))], names
    modules = [name for name in names if name.endswith(".so")]
    assert len(modules) == 3
    for name in modules:
        unpacked = Path(archive.extract(name, tmp_path))
        sections = subprocess.run(["readelf", "-S", "-W", str(unpacked)], capture_output=True, text=True, check=True)
        assert ".symtab" not in sections.stdout and ".debug_info" not in sections.stdout, name  # stripped
    with tarfile.open(sdist) as tar:
        inside = {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}
    assert {
        "CHANGES",
        "Makefile",
        "tests/conftest.py",
        "tests/pages.py",
        "pipelines/fingerprint/treewalk.pyx",
        "pipelines/fingerprint/vendor/xxhash.h",
        "pipelines/fingerprint/data/word_idf.tsv.gz",
    } <= inside
    assert not [name for name in inside if name.endswith((".so", ".cpp")) or name.startswith("bench/.cache")]


def test_the_wheel_installs_without_a_compiler_and_a_new_project_drops_the_copies(
    user_environment: Path, tmp_path: Path
) -> None:
    """``pip install dist/*.whl scrapy``, ``scrapy startproject``, the README's add-on line, a spider that follows
    every link: each article is kept once, its copies under other URLs dropped."""
    root = tmp_path / "site"
    root.mkdir()
    links = []
    for n, name in enumerate(ARTICLES):
        for copy in ("", "-copy"):
            (root / f"{n}{copy}.html").write_bytes(real_page(name))
            links.append(f"<a href='{n}{copy}.html'>{n}{copy}</a>")
    (root / "index.html").write_text(f"<html><body><p>{' '.join(links)}</p></body></html>")
    env = without_compiler(user_environment)
    done = subprocess.run(
        [str(user_environment / "bin" / "scrapy"), "startproject", "trial", str(tmp_path / "p")],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    project = make_project(tmp_path / "user")  # the layout startproject made, with the README's line and a spider
    with serve_directory(root) as base_url:
        done = subprocess.run(
            [
                str(user_environment / "bin" / "scrapy"),
                "crawl",
                "site",
                "-a",
                f"url={base_url}index.html",
                "-O",
                "items.jsonl",
            ],
            cwd=project,
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    urls = [json.loads(line)["url"] for line in (project / "items.jsonl").read_text().splitlines()]
    pages = [url.rsplit("/", 1)[1].removesuffix(".html").removesuffix("-copy") for url in urls if "index" not in url]
    assert sorted(pages) == sorted(str(n) for n in range(len(ARTICLES))), urls
    assert f"'simhash_dedup/items_dropped/content': {len(ARTICLES)}," in done.stderr, done.stderr[-3000:]  # the copies


def test_the_core_install_pulls_no_extra_and_a_missing_extra_says_which_in_one_line(
    user_environment: Path, tmp_path: Path
) -> None:
    """Without extras: no library of theirs installed; the Redis backend refuses to start and the report refuses
    to draw, each in one line naming the ``pip install`` that fixes it; batch mode over HTML files works."""
    env = without_compiler(user_environment)
    assert not installed(user_environment) & EXTRAS_ONLY, installed(user_environment) & EXTRAS_ONLY
    project = make_project(tmp_path / "redis", 'SIMHASH_DEDUP_BACKEND = "redis"\n')
    done = subprocess.run(
        [str(user_environment / "bin" / "scrapy"), "crawl", "site", "-a", "url=http://127.0.0.1:9/"],
        cwd=project,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode != 0
    told = [line for line in done.stderr.splitlines() if "pip install 'scrapy-simhash-dedup[redis]'" in line]
    assert len(told) == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
    outcomes = batch_run(user_environment, tmp_path)
    report = simhash_dedup(user_environment, "report", str(outcomes), "-o", str(tmp_path / "report.html"))
    assert report.returncode != 0 and not (tmp_path / "report.html").exists()
    assert report.stderr.strip().splitlines() == [
        "simhash-dedup: the report needs matplotlib, which is not installed: pip install 'scrapy-simhash-dedup[report]'"
    ], report.stderr


def test_each_extra_installs_and_works(user_environment: Path, dist: Path, tmp_path: Path, redis_url: str) -> None:
    """``[redis,warc,report]`` added to the same environment: a crawl on Redis, batch mode over a WARC file, the
    report (``[spark]`` brings PySpark and Java's world: its own tests run it from this checkout)."""
    (wheel,) = dist.glob("*.whl")
    env = without_compiler(user_environment)
    done = subprocess.run(
        [
            str(user_environment / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            f"{wheel}[redis,warc,report]",
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert {"redis", "fastwarc", "matplotlib", "tqdm"} <= installed(user_environment)
    root = tmp_path / "site"
    root.mkdir()
    (root / "a.html").write_bytes(real_page(ARTICLES[0]))
    (root / "b.html").write_bytes(real_page(ARTICLES[0]))
    (root / "index.html").write_text("<html><body><a href='a.html'>a</a> <a href='b.html'>b</a></body></html>")
    project = make_project(
        tmp_path / "redis", f'SIMHASH_DEDUP_BACKEND = "redis"\nSIMHASH_DEDUP_REDIS_URL = "{redis_url}"\n'
    )
    with serve_directory(root) as base_url:
        crawled = subprocess.run(
            [str(user_environment / "bin" / "scrapy"), "crawl", "site", "-a", f"url={base_url}index.html"],
            cwd=project,
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
    assert crawled.returncode == 0 and "'simhash_dedup/pages_dropped': 1," in crawled.stderr, crawled.stderr[-3000:]
    warc = tmp_path / "pages.warc.gz"
    write_warc(
        warc,
        [
            (f"https://a.test/{n}", real_page(name), "text/html; charset=utf-8")
            for n, name in enumerate([*ARTICLES, ARTICLES[0]])
        ],
    )
    kept = tmp_path / "kept.jsonl"
    done = simhash_dedup(
        user_environment,
        "dedup",
        str(warc),
        "-o",
        str(kept),
        "--outcomes",
        str(tmp_path / "warc-outcomes.jsonl"),
        "--no-progress",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert len(kept.read_text().splitlines()) == len(ARTICLES)
    outcomes = batch_run(user_environment, tmp_path)
    report = simhash_dedup(user_environment, "report", str(outcomes), "-o", str(tmp_path / "report.html"))
    assert report.returncode == 0 and "<svg" in (tmp_path / "report.html").read_text(), report.stderr[-3000:]


def installed(venv: Path) -> set[str]:
    listed = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "list", "--format=json"],
        capture_output=True,
        text=True,
        env=without_compiler(venv),
        check=True,
    )
    return {package["name"].lower() for package in json.loads(listed.stdout)}


def simhash_dedup(venv: Path, *arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(venv / "bin" / "simhash-dedup"), *arguments],
        capture_output=True,
        text=True,
        env=without_compiler(venv),
        timeout=300,
    )


def batch_run(venv: Path, tmp_path: Path) -> Path:
    """``simhash-dedup dedup`` over a folder of HTML files with a copy in it: its outcomes file."""
    folder = tmp_path / "files"
    folder.mkdir(exist_ok=True)
    for n, name in enumerate(ARTICLES):
        (folder / f"{n}.html").write_bytes(real_page(name))
    (folder / "copy.html").write_bytes(real_page(ARTICLES[0]))
    outcomes = tmp_path / "outcomes.jsonl"
    done = simhash_dedup(venv, "dedup", str(folder), "--outcomes", str(outcomes), "--no-progress")
    assert done.returncode == 0, done.stderr[-3000:]
    return outcomes
