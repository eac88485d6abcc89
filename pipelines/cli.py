"""``simhash-dedup``: the filter over files you already have, and the report of what it dropped.

    simhash-dedup dedup INPUT... [-o kept.jsonl] [--decisions decisions.jsonl] [--store PATH|redis://…]
    simhash-dedup report STORE|DECISIONS.jsonl|redis://… -o report.html

The pipeline's settings are options (``--content-distance 6``…); ``--settings
myproject.settings`` reads a Scrapy settings module first, so a batch run
decides exactly as the project's crawls do.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path
from typing import Any

#: Options that set a pipeline setting: option -> (setting, type).
SETTING_OPTIONS: dict[str, tuple[str, type]] = {
    "mode": ("SIMHASH_DEDUP_MODE", str),
    "content_distance": ("SIMHASH_DEDUP_CONTENT_DISTANCE", int),
    "structure_distance": ("SIMHASH_DEDUP_STRUCTURE_DISTANCE", int),
    "min_similarity": ("SIMHASH_DEDUP_MIN_SIMILARITY", float),
    "min_features": ("SIMHASH_DEDUP_MIN_FEATURES", int),
    "structure_decay": ("SIMHASH_DEDUP_STRUCTURE_DECAY", float),
    "max_html_bytes": ("SIMHASH_DEDUP_MAX_HTML_BYTES", int),
    "max_elements": ("SIMHASH_DEDUP_MAX_ELEMENTS", int),
    "max_text_chars": ("SIMHASH_DEDUP_MAX_TEXT_CHARS", int),
    "html_field": ("SIMHASH_DEDUP_HTML_FIELD", str),
    "url_field": ("SIMHASH_DEDUP_URL_FIELD", str),
    "log_decisions": ("SIMHASH_DEDUP_DECISIONS", int),
    "review_texts": ("SIMHASH_DEDUP_REVIEW_TEXTS", int),
}


def main(argv: list[str] | None = None) -> int:
    from .stores import StoreNotOpened, StoreUnavailable

    arguments = parser().parse_args(argv)
    try:
        return arguments.run(arguments)
    except (ValueError, OSError, StoreNotOpened, StoreUnavailable) as error:  # a wrong setting, a store that
        print(f"simhash-dedup: {error}", file=sys.stderr)                      # cannot be opened: one line
        return 2


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="simhash-dedup", description=__doc__.split("\n\n")[0])
    commands = top.add_subparsers(required=True, metavar="COMMAND")
    dedup = commands.add_parser("dedup", help="deduplicate HTML folders, JSON Lines and WARC files")
    dedup.add_argument("inputs", nargs="+", metavar="INPUT", help="a folder of .html files, a .jsonl or a .warc[.gz]")
    dedup.add_argument("-o", "--output", help="write the kept pages here (JSON Lines)")
    dedup.add_argument("--decisions", help="write every page's outcome here (JSON Lines; `report` reads it)")
    dedup.add_argument("--store", help="check against and add to this store: a crawl's SQLite file or a Redis URL")
    dedup.add_argument("--key", help="the Redis store's key (default: simhash_dedup)", default="simhash_dedup")
    dedup.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="fingerprint worker processes")
    dedup.add_argument("--no-progress", action="store_true", help="no progress bar")
    dedup.set_defaults(run=run_dedup)
    report = commands.add_parser("report", help="write the HTML report of a decision log")
    report.add_argument("source", help="a crawl's SQLite store, a decisions file of `dedup`, or a Redis URL")
    report.add_argument("-o", "--output", default="simhash-dedup-report.html", help="the report file")
    report.add_argument("--key", help="the Redis store's key, e.g. myspider:simhash_dedup")
    report.set_defaults(run=run_report)
    for command in (dedup, report):
        group = command.add_argument_group("the pipeline's settings (SIMHASH_DEDUP_*)")
        group.add_argument("--settings", help="a Scrapy settings module to read first, e.g. myproject.settings")
        for option, (setting, kind) in SETTING_OPTIONS.items():
            group.add_argument(f"--{option.replace('_', '-')}", dest=option, type=kind, metavar=kind.__name__.upper(),
                               help=setting)
    return top


def dedup_settings(arguments: argparse.Namespace) -> Any:
    """The pipeline's settings: the module's, then the options', checked as a crawl checks them."""
    from scrapy.settings import Settings

    from .settings import DedupSettings

    settings = Settings()
    if arguments.settings:
        sys.path.insert(0, os.getcwd())
        settings.setmodule(arguments.settings, priority="project")
    for option, (setting, _) in SETTING_OPTIONS.items():
        if (value := getattr(arguments, option)) is not None:
            settings.set(setting, value, priority="cmdline")
    return DedupSettings.from_settings(settings)


def run_dedup(arguments: argparse.Namespace) -> int:
    from .batch import dedup

    settings = dedup_settings(arguments)
    with contextlib.ExitStack() as files:
        store = files.enter_context(_closing(open_store(arguments.store, arguments.key, settings)))
        kept = files.enter_context(open(arguments.output, "w", encoding="utf-8")) if arguments.output else None
        decisions = files.enter_context(open(arguments.decisions, "w", encoding="utf-8")) if arguments.decisions else None
        counts = dedup(arguments.inputs, settings, store, kept, decisions, arguments.workers,
                       progress=not arguments.no_progress)
    summary = ", ".join(f"{name} {counts[name]:,}" for name in ("checked", "kept", "dropped", "borderline", "not_html", "unreadable", "errors")
                        if counts[name] or name in ("kept", "dropped"))
    print(f"simhash-dedup: {summary}", file=sys.stderr)
    return 1 if not counts["checked"] else 0


def open_store(target: str | None, key: str, settings: Any) -> Any:
    """A memory store, a SQLite store (a path: a crawl's store, which a running crawl locks), or the
    Redis store at a URL."""
    from .stores import MemoryStore, SqliteStore

    if not target:
        return MemoryStore(settings.policy)
    if target.startswith(("redis://", "rediss://", "unix://")):
        import redis

        from .redis_store import RedisStore

        store = RedisStore(settings.policy, redis.Redis.from_url(target), key, settings.scheme, 0,
                           settings.decisions, settings.review_texts)
        store.open()
        return store
    return SqliteStore(settings.policy, Path(target), settings.scheme, settings.commit_every,
                       settings.decisions, settings.review_texts)


def run_report(arguments: argparse.Namespace) -> int:
    from .report import load_log, write_report

    settings = dedup_settings(arguments)
    path = write_report(load_log(arguments.source, arguments.key, settings.policy), Path(arguments.output))
    print(f"simhash-dedup: report written to {path}", file=sys.stderr)
    return 0


@contextlib.contextmanager
def _closing(store: Any) -> Any:
    try:
        yield store
    finally:
        store.close()
