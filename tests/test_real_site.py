"""A real site crawled as a new user crawls it: a project made as ``scrapy startproject`` makes one, the README's
add-on line, a spider that follows every link and yields ``scrapy.Item`` objects declaring no field for the
filter, run with the ``scrapy`` command.  The site has the shape that once lost pages: language folders whose
index pages are the same untranslated page, and translated chapters reachable only through such an index."""

from __future__ import annotations

import json
import re
import subprocess
import tarfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from crawler.local_site import serve_directory

from .conftest import PROJECT
from .pages import CHINESE_ARTICLE, real_page
from .reports import ReportFigures, assert_report_agrees, report_figures, write_report
from .user_project import (
    REDIS_SPIDER,
    REFUSED_EXIT_STATUS,
    SCRAPY_REDIS_SETTINGS,
    environment,
    make_project,
    scrapy,
    scrapy_command,
)

DEMO_SITE = PROJECT / "crawler" / "demo_site" / "debian-handbook-en-da-zh.tar.xz"
CHAPTERS = 16
#: Folder -> where its index and its chapters come from.  Every index is the English one (untranslated), so
#: the four are near-duplicates of each other; zh-CN's chapters are translated (unique), da-DK's only its
#: preface, ko-KR's none (a mirror of en-US).  The root page lists them in this order.
FOLDERS = {"en-US": "en-US", "da-DK": "da-DK", "ko-KR": "en-US", "zh-CN": "zh-CN"}
ITEMS_PER_PAGE = 3


def build_site(root: Path) -> list[str]:
    """The site's pages under ``root``; their paths.  Links to pages left out become ``#``."""
    with tarfile.open(DEMO_SITE) as archive:

        def page(language: str, name: str) -> str:
            return archive.extractfile(f"html/{language}/{name}").read().decode("utf-8")

        index = page("en-US", "index.html")
        chapters = [
            name for name in dict.fromkeys(re.findall(r'href="([a-z][^"#:/]*\.html)', index)) if name != "index.html"
        ][:CHAPTERS]
        keep = {"index.html", *chapters}

        def local(html: str) -> str:
            return re.sub(
                r'href="([a-z][^"#:/]*\.html)[^"]*"', lambda m: m.group(0) if m.group(1) in keep else 'href="#"', html
            )

        paths = ["index.html"]
        (root / "index.html").write_text(
            "<html><head><title>The handbook</title></head><body><ul>"
            + "".join(f'<li><a href="{folder}/">{folder}</a></li>' for folder in FOLDERS)
            + "</ul></body></html>"
        )
        for folder, source in FOLDERS.items():
            (root / folder).mkdir()
            (root / folder / "index.html").write_text(local(index))
            for name in chapters:
                (root / folder / name).write_text(local(page(source, name)))
            paths += [f"{folder}/{name}" for name in ("index.html", *chapters)]
    return paths


@pytest.fixture
def languages(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """The site (a fresh copy: tests add pages to it), served on 127.0.0.1; its folder and start URL."""
    root = tmp_path / "site"
    root.mkdir()
    build_site(root)
    with serve_directory(root) as base_url:
        yield root, base_url


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "project")


def crawl(project: Path, url: str, output: str, *settings: str, per_page: int = 1) -> dict:
    """``scrapy crawl site -a url=URL -O OUTPUT -s NAME=VALUE...``: the exported items, the stats, the log."""
    done = scrapy(
        project,
        "crawl",
        "site",
        "-a",
        f"url={url}",
        "-a",
        f"per_page={per_page}",
        "-O",
        output,
        *(part for setting in settings for part in ("-s", setting)),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ERROR" not in done.stderr and "Traceback" not in done.stderr, done.stderr[-3000:]
    items = [json.loads(line) for line in (project / output).read_text().splitlines()]
    return {"items": items, "stats": stats_of(done.stderr), "log": done.stderr}


def stats_of(log: str) -> dict[str, int]:
    """The integer stats Scrapy dumps at the end of a crawl."""
    return {name: int(value) for name, value in re.findall(r"'([\w/_.-]+)': (\d+),?\n", log)}


def test_a_spider_yielding_several_items_per_page_keeps_all_of_a_kept_page_and_none_of_a_dropped_one(
    languages: tuple[Path, str], project: Path
) -> None:
    _, base_url = languages
    result = crawl(project, base_url, "items.jsonl", per_page=ITEMS_PER_PAGE)
    per_page = Counter(item["url"] for item in result["items"])
    stats = result["stats"]
    assert set(per_page.values()) == {ITEMS_PER_PAGE}, "every item of a kept page"
    assert len(per_page) == stats["simhash_dedup/pages_kept"] > 0
    assert stats["simhash_dedup/pages_dropped"] > 0
    assert stats["simhash_dedup/items_kept"] == ITEMS_PER_PAGE * stats["simhash_dedup/pages_kept"]
    assert stats["simhash_dedup/items_dropped"] == ITEMS_PER_PAGE * stats["simhash_dedup/pages_dropped"]
    assert stats["simhash_dedup/checked"] == stats["simhash_dedup/pages_kept"] + stats["simhash_dedup/pages_dropped"]
    assert "simhash_dedup/no_html" not in stats, "the page comes from the response: no item field needed"
    dropped = re.findall(r"near-duplicate of \S+ \(.*?\): (\S+)", result["log"])
    assert Counter(dropped) == dict.fromkeys(set(dropped), ITEMS_PER_PAGE), "every item of a dropped page"
    assert not set(dropped) & set(per_page)


def test_the_link_guard_loses_no_page_that_a_crawl_without_it_would_keep(
    languages: tuple[Path, str], project: Path
) -> None:
    """Crawled with the add-on's defaults, then again with the guards off and the same store: the second
    crawl finds nothing the first did not have.  The guard off still deduplicates (the add-on decides from
    the response, whatever the items hold)."""
    _, base_url = languages
    guarded = crawl(project, base_url, "guarded.jsonl", "SIMHASH_DEDUP_PERSIST=True")
    assert guarded["stats"]["simhash_dedup/pages_dropped"] > 0
    unguarded = crawl(
        project,
        base_url,
        "unguarded.jsonl",
        "SIMHASH_DEDUP_PERSIST=True",
        "SIMHASH_DEDUP_SKIP_LINKS=False",
        "SIMHASH_DEDUP_URL_RULES=False",
    )
    assert unguarded["items"] == [], "pages the guarded crawl never reached"
    assert unguarded["stats"]["simhash_dedup/pages_dropped"] == unguarded["stats"]["simhash_dedup/checked"] > 0
    alone = crawl(project, base_url, "alone.jsonl", "SIMHASH_DEDUP_SKIP_LINKS=False", "SIMHASH_DEDUP_URL_RULES=False")
    assert alone["stats"]["simhash_dedup/pages_dropped"] > 0 and "simhash_dedup/no_html" not in alone["stats"]
    assert len(alone["items"]) == len(guarded["items"])


def test_a_rerun_with_the_same_store_finds_every_page_added_since(languages: tuple[Path, str], project: Path) -> None:
    root, base_url = languages
    first = crawl(project, base_url, "first.jsonl", "SIMHASH_DEDUP_PERSIST=True")
    assert first["items"]
    added = {
        "da-DK/news.html": "newspaper-syracuse.com1",
        "da-DK/more-news.html": "gne-sina-1",
        "ko-KR/news.html": "newspaper-theatlanticcities.com1",
    }
    for path, page in added.items():
        (root / path).write_bytes(real_page(page))
        index = root / path.split("/")[0] / "index.html"  # linked from the folder's near-duplicate index
        index.write_text(index.read_text().replace("</body>", f'<a href="{path.split("/")[1]}">new</a></body>'))
    again = crawl(project, base_url, "again.jsonl", "SIMHASH_DEDUP_PERSIST=True")
    assert sorted(item["url"] for item in again["items"]) == sorted(base_url + path for path in added)


def links_not_followed(run: dict) -> list[str]:
    return [line for line in run["log"].splitlines() if "link not followed" in line]


def test_links_not_followed_are_logged_as_scrapy_s_duplicate_filter_logs_requests(
    languages: tuple[Path, str], project: Path
) -> None:
    """At Scrapy's default log level (DEBUG) the first link not followed is logged, saying which setting shows all;
    the rest are counted; with ``SIMHASH_DEDUP_DEBUG`` each is logged.  A link to a URL already requested is no link
    the guard skips (Scrapy's duplicate filter drops it): a budget of one near-duplicate a URL shape makes the
    guard skip the links of the mirror folder's pages that were not requested yet."""
    _, base_url = languages
    budget = "SIMHASH_DEDUP_LINK_BUDGET=1"
    first = crawl(project, base_url, "first.jsonl", "LOG_LEVEL=DEBUG", budget)
    assert first["stats"]["simhash_dedup/links_skipped"] > 1
    (line,) = links_not_followed(first)
    assert "no more will be shown" in line and "SIMHASH_DEDUP_DEBUG" in line
    assert "already requested" not in line and "led to 1 near-duplicates in a row" in line
    loud = crawl(project, base_url, "loud.jsonl", "LOG_LEVEL=DEBUG", budget, "SIMHASH_DEDUP_DEBUG=True")
    assert len(links_not_followed(loud)) == loud["stats"]["simhash_dedup/links_skipped"] > 1
    assert not [line for line in links_not_followed(loud) if "no more" in line or "already requested" in line]
    skipped = {line.rsplit(": ", 1)[1] for line in links_not_followed(loud)}
    assert len(skipped) == len(links_not_followed(loud)), "each link skipped once: the rest are Scrapy's duplicates"


def test_a_rerun_s_drops_are_logged_as_scrapy_s_duplicate_filter_logs_requests(
    languages: tuple[Path, str], project: Path
) -> None:
    """At Scrapy's default log level (DEBUG): the first drop of a page an earlier run kept under the same URL is
    logged, saying which setting shows all; the rest are counted.  With ``SIMHASH_DEDUP_DEBUG`` each is logged.
    Other drops keep their line."""
    _, base_url = languages
    first = crawl(project, base_url, "first.jsonl", "SIMHASH_DEDUP_PERSIST=True", "LOG_LEVEL=DEBUG")
    rerun = crawl(project, base_url, "rerun.jsonl", "SIMHASH_DEDUP_PERSIST=True", "LOG_LEVEL=DEBUG")
    loud = crawl(
        project, base_url, "loud.jsonl", "SIMHASH_DEDUP_PERSIST=True", "LOG_LEVEL=DEBUG", "SIMHASH_DEDUP_DEBUG=True"
    )

    def drops(run: dict) -> dict[str, list[str]]:
        """The log's drop lines: of a page an earlier run kept, met again at its URL (a re-run's), or of a
        near-duplicate of another page."""
        return {
            "rerun": re.findall(
                r"Dropped: kept by an earlier run, met again \(matched on address.*?\): (\S+.*)", run["log"]
            ),
            "other": [
                own
                for kept, own in re.findall(r"Dropped: near-duplicate of (\S+) \(.*?\): (\S+)", run["log"])
                if kept != own
            ],
        }

    assert first["stats"]["simhash_dedup/pages_dropped"] == len(drops(first)["other"]) > 0

    reruns = rerun["stats"]["simhash_dedup/pages_dropped/rerun"]
    assert reruns == first["stats"]["simhash_dedup/pages_kept"] > 1, "every page kept before is met again"
    (line,) = drops(rerun)["rerun"]
    assert "no more such drops will be shown" in line and "SIMHASH_DEDUP_DEBUG" in line
    assert len(drops(rerun)["other"]) == rerun["stats"]["simhash_dedup/pages_dropped"] - reruns > 0
    assert rerun["stats"]["item_dropped_count"] == rerun["stats"]["simhash_dedup/items_dropped"], "all still dropped"
    (summary,) = re.findall(r"simhash_dedup: [\d,]+ pages kept, .*", rerun["log"])
    near = rerun["stats"]["simhash_dedup/pages_dropped"] - reruns
    assert f"{near:,} dropped as near-duplicates" in summary  # the close's line tells the re-run's own pages apart
    assert summary.endswith(f"; {reruns:,} dropped as pages an earlier run kept, met again"), summary

    assert len(drops(loud)["rerun"]) == loud["stats"]["simhash_dedup/pages_dropped/rerun"] == reruns
    assert not [line for line in drops(loud)["rerun"] if "no more" in line]


def test_a_rerun_without_memory_exports_what_it_scraped(languages: tuple[Path, str], project: Path) -> None:
    """As with Scrapy's own duplicate filter: no JOBDIR, no SIMHASH_DEDUP_PERSIST, each run starts afresh."""
    _, base_url = languages
    first = crawl(project, base_url, "out.jsonl")
    again = crawl(project, base_url, "out.jsonl")
    assert len(again["items"]) == len(first["items"]) > 0  # (which copy of a page comes first may differ)
    assert again["stats"].get("simhash_dedup/remembered", 0) == 0


def test_a_second_crawl_at_once_is_refused_and_touches_nothing(languages: tuple[Path, str], project: Path) -> None:
    """Started beside a running crawl with the same ``-O`` file: one ERROR line, exit status 1, and the first
    crawl's file holds every item it scraped."""
    _, base_url = languages
    log = project / "first.log"
    command = scrapy_command(
        "crawl",
        "site",
        "-a",
        f"url={base_url}",
        "-O",
        "out.jsonl",
        "-s",
        "DOWNLOAD_DELAY=0.05",
        "-s",
        "CONCURRENT_REQUESTS=1",
    )
    with log.open("w") as stderr:
        first = subprocess.Popen(command, cwd=project, stderr=stderr, env=environment())
        deadline = time.monotonic() + 60
        while "Spider opened" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        second = scrapy(project, "crawl", "site", "-a", f"url={base_url}", "-O", "out.jsonl")
        assert first.poll() is None, "the first crawl was still running"
        first.wait(timeout=300)
    assert second.returncode == REFUSED_EXIT_STATUS
    errors = [line for line in second.stderr.splitlines() if " ERROR: " in line or " CRITICAL: " in line]
    assert len(errors) == 1 and "in use by another running crawl" in errors[0]
    assert "Traceback" not in second.stderr
    assert first.returncode == 0
    output = (project / "out.jsonl").read_bytes()
    scraped = stats_of(log.read_text())["item_scraped_count"]
    assert b"\x00" not in output and len(output.splitlines()) == scraped > 0


def test_a_project_with_its_own_pipelines_py_is_deduplicated_as_usual(
    languages: tuple[Path, str], tmp_path: Path
) -> None:
    """A project's own top-level ``pipelines.py`` (some keep one there) and the plugin's worker processes."""
    _, base_url = languages
    project = make_project(tmp_path / "own", top_level_pipelines=True)
    result = crawl(project, base_url, "out.jsonl", "SIMHASH_DEDUP_WORKERS=2")
    stats = result["stats"]
    assert stats["simhash_dedup/pages_dropped"] > 0 and "simhash_dedup/errors" not in stats


def test_a_wrong_setting_is_one_error_line_and_exit_status_1(project: Path, languages: tuple[Path, str]) -> None:
    _, base_url = languages
    done = scrapy(
        project, "crawl", "site", "-a", f"url={base_url}", "-O", "out.jsonl", "-s", "SIMHASH_DEDUP_MODE=sometimes"
    )
    assert done.returncode == REFUSED_EXIT_STATUS
    errors = [line for line in done.stderr.splitlines() if " ERROR: " in line or " CRITICAL: " in line]
    assert len(errors) == 1
    assert "SIMHASH_DEDUP_MODE must be one of both, content, structure, either; got 'sometimes'" in errors[0]
    assert "Traceback" not in done.stderr and not (project / "out.jsonl").exists()


def test_a_utf8_page_declaring_another_charset_is_read_as_utf8(site: tuple[Path, str], project: Path) -> None:
    """The add-on decodes the response's bytes as docs/usage/notes.md says: valid UTF-8 wins over a contradicting
    ``<meta charset>``.  The article's print view (declared UTF-8) is then a near-duplicate of it (read as
    gb2312, as Scrapy's ``response.text`` reads it, the article would be other words and both were kept)."""
    root, base_url = site
    (root / "index.html").write_text(
        '<html><body><a href="article.html">a</a> <a href="print.html">p</a></body></html>'
    )
    article = CHINESE_ARTICLE.replace("<head>", '<head><meta charset="gb2312">').replace(
        "<body>", '<body><nav><a href="/">首页</a> <a href="/news">新闻</a> <a href="/sport">体育</a></nav>'
    )
    (root / "article.html").write_bytes(article.encode("utf-8"))
    (root / "print.html").write_bytes(CHINESE_ARTICLE.replace("<head>", '<head><meta charset="utf-8">').encode("utf-8"))
    result = crawl(project, base_url + "index.html", "out.jsonl", "CONCURRENT_REQUESTS=1")
    kept = {item["url"].removeprefix(base_url) for item in result["items"]}
    assert len(kept & {"article.html", "print.html"}) == 1, "one is a near-duplicate of the other"


def test_the_readme_s_redis_settings_deduplicate_items_without_html(
    languages: tuple[Path, str], tmp_path: Path, redis_url: str
) -> None:
    """The settings of docs/usage/redis.md for several crawlers (scrapy-redis's scheduler, the add-on, the Redis
    store) in a new project whose RedisSpider yields ``{url, title}``, seeded through its start-URLs key."""
    import redis

    _, base_url = languages
    database = f"{redis_url}/7"
    client = redis.Redis.from_url(database)
    client.flushdb()
    client.lpush("site:start_urls", base_url)
    project = make_project(tmp_path / "redis", SCRAPY_REDIS_SETTINGS.format(redis_url=database), spider=REDIS_SPIDER)
    done = scrapy(project, "crawl", "site", "-O", "out.jsonl")
    assert done.returncode == 0, done.stderr[-3000:]
    stats = stats_of(done.stderr)
    assert stats["simhash_dedup/pages_dropped"] > 0 and "simhash_dedup/no_html" not in stats
    assert len((project / "out.jsonl").read_text().splitlines()) == stats["simhash_dedup/pages_kept"]
    assert int(client.hget("site:simhash_dedup:meta", "count")) == stats["simhash_dedup/pages_kept"]


def test_items_without_html_and_no_add_on_get_one_warning(languages: tuple[Path, str], tmp_path: Path) -> None:
    _, base_url = languages
    project = make_project(
        tmp_path / "pipeline", 'ADDONS = {}\nITEM_PIPELINES = {"scrapy_simhash_dedup.SimhashDedupPipeline": 200}\n'
    )
    done = scrapy(project, "crawl", "site", "-a", f"url={base_url}", "-O", "out.jsonl")
    assert done.returncode == 0, done.stderr[-3000:]
    warnings = [line for line in done.stderr.splitlines() if "simhash_dedup" in line and " WARNING: " in line]
    assert len(warnings) == 1 and "the first 20 items carry no HTML" in warnings[0]
    assert "ADDONS = {'scrapy_simhash_dedup.SimhashDedupAddon': 0}" in warnings[0]


def crawl_twice_and_report(project: Path, base_url: str, source: str, *settings: str) -> tuple[dict, ReportFigures]:
    """A crawl and its re-run with the same store (``settings``), each followed by ``simhash-dedup report
    SOURCE``: both reports agree with themselves, and the re-run's with the two runs."""
    first = crawl(project, base_url, "first.jsonl", "SIMHASH_DEDUP_PERSIST=True", *settings)
    after_first = report_figures(write_report(source, project / "first.html", *report_options(source)))
    assert_report_agrees(after_first)
    assert after_first.near == first["stats"]["simhash_dedup/pages_dropped"] > 0
    assert after_first.copies == after_first.near, "one crawl drops each URL once"
    assert after_first.met_again == 0

    rerun = crawl(project, base_url, "rerun.jsonl", "SIMHASH_DEDUP_PERSIST=True", *settings)
    after_rerun = report_figures(write_report(source, project / "rerun.html", *report_options(source)))
    assert_report_agrees(after_rerun)
    assert after_rerun.met_again == rerun["stats"]["simhash_dedup/pages_dropped/rerun"] > 0
    assert (
        after_rerun.dropped
        == first["stats"]["simhash_dedup/pages_dropped"] + rerun["stats"]["simhash_dedup/pages_dropped"]
    )
    assert after_rerun.copies == after_first.copies, "the re-run met the same copies again: listed once"
    return rerun, after_rerun


def report_options(source: str) -> list[str]:
    return ["--key", "site:simhash_dedup"] if source.startswith("redis://") else []


def test_a_report_s_counts_clusters_and_pairs_agree_after_a_crawl_and_its_rerun(
    languages: tuple[Path, str], project: Path
) -> None:
    _, base_url = languages
    crawl_twice_and_report(project, base_url, str(project / ".scrapy" / "simhash_dedup" / "site.sqlite"))


def test_a_redis_store_s_report_agrees_with_itself_and_the_runs(
    languages: tuple[Path, str], project: Path, redis_url: str
) -> None:
    import redis

    _, base_url = languages
    database = f"{redis_url}/8"
    redis.Redis.from_url(database).flushdb()
    crawl_twice_and_report(project, base_url, database, f"SIMHASH_DEDUP_REDIS_URL={database}")
