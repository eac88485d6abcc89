"""``simhash-dedup``: the filter over files you already have, and the report of what it dropped.

    simhash-dedup dedup INPUT... [-o kept.jsonl] [--outcomes outcomes.jsonl] [--store PATH|redis://…]
    simhash-dedup spark INPUT... -o DIR [--against DIR] [--master URL]
    simhash-dedup report STORE|OUTCOMES.jsonl|SPARK_OUTPUT_DIR|redis://… [-o report.html]
    simhash-dedup aliases STORE|redis://… [-o aliases.csv|aliases.jsonl]
    simhash-dedup check STORE [--dry-run]

The pipeline's settings are options (``--content-distance 6``…); ``--settings
myproject.settings`` reads a Scrapy settings module first, so a batch run
decides exactly as the project's crawls do.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .batch.sources import MISSING
from .extras import require
from .fingerprint.fingerprinter import SCHEME_VERSION
from .output import Output
from .version import __version__

if TYPE_CHECKING:
    from .stores.base import Store


@dataclass(frozen=True)
class SettingOption:
    """A ``dedup`` option that sets a pipeline setting."""

    setting: str
    kind: type
    meaning: str
    choices: tuple[str, ...] | None = None


#: Options that set a pipeline setting (the defaults are the pipeline's, shown by --help).
SETTING_OPTIONS: dict[str, SettingOption] = {
    "mode": SettingOption(
        "SIMHASH_DEDUP_MODE", str, "which fingerprints must be near", ("content", "both", "structure", "either")
    ),
    "content_distance": SettingOption("SIMHASH_DEDUP_CONTENT_DISTANCE", int, "largest content distance (0-64 bits)"),
    "min_similarity": SettingOption(
        "SIMHASH_DEDUP_MIN_SIMILARITY", float, "smallest sketch similarity of a content match (-1 to 1; -1: no check)"
    ),
    "structure_distance": SettingOption(
        "SIMHASH_DEDUP_STRUCTURE_DISTANCE", int, "largest structure distance (0-64 bits; modes both, structure, either)"
    ),
    "min_features": SettingOption(
        "SIMHASH_DEDUP_MIN_FEATURES",
        int,
        "own text with fewer distinct words: a short page, compared by its exact words",
    ),
    "structure_decay": SettingOption(
        "SIMHASH_DEDUP_STRUCTURE_DECAY", float, "weight factor per depth level, in (0, 1]"
    ),
    "max_html_bytes": SettingOption("SIMHASH_DEDUP_MAX_HTML_BYTES", int, "larger pages are not compared"),
    "max_elements": SettingOption("SIMHASH_DEDUP_MAX_ELEMENTS", int, "pages with more elements are not compared"),
    "max_text_chars": SettingOption(
        "SIMHASH_DEDUP_MAX_TEXT_CHARS", int, "pages with more visible characters are not compared"
    ),
    "html_field": SettingOption("SIMHASH_DEDUP_HTML_FIELD", str, "JSON Lines: the field holding the page's HTML"),
    "url_field": SettingOption("SIMHASH_DEDUP_URL_FIELD", str, "JSON Lines: the field holding the page's URL"),
    "log_size": SettingOption(
        "SIMHASH_DEDUP_LOG_SIZE", int, "drops and borderline keeps the store's decision log keeps (0: none)"
    ),
    "scope": SettingOption(
        "SIMHASH_DEDUP_SCOPE",
        str,
        "which pages a page is compared with: all, its site's or its host's",
        ("crawl", "site", "host"),
    ),
    "memory_mb": SettingOption(
        "SIMHASH_DEDUP_MEMORY_MB", float, "site or host scope: MiB of kept pages held in memory (the idle sites let go)"
    ),
    "review_texts": SettingOption(
        "SIMHASH_DEDUP_REVIEW_TEXTS", int, "the newest of them that keep both pages' texts, for the report's diffs"
    ),
}


def main(argv: list[str] | None = None) -> int:
    from .stores.errors import StoreNotOpened, StoreUnavailable

    arguments = parser().parse_args(argv)
    try:
        return arguments.run(arguments)
    except (ValueError, OSError, StoreNotOpened, StoreUnavailable) as error:  # a wrong setting, a store or a file
        print(f"simhash-dedup: {one_line(error)}", file=sys.stderr)  # that cannot be used: one line
        return 2


def one_line(error: Exception) -> str:
    """An error as the commands say it: a file that is missing or refused is named first, as ``dedup`` names its
    inputs (``batch.sources.MISSING``), without Python's ``[Errno N]``."""
    if isinstance(error, FileNotFoundError) and error.filename is not None:
        return f"{error.filename}: {MISSING}"
    if isinstance(error, OSError) and error.filename is not None and error.strerror:
        return f"{error.filename}: {error.strerror[0].lower()}{error.strerror[1:]}"
    return str(error)


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="simhash-dedup", description="The filter over files you already have, and the report of what it dropped."
    )
    top.add_argument(
        "--version", action="version", version=f"%(prog)s {__version__} (fingerprint scheme {SCHEME_VERSION})"
    )
    commands = top.add_subparsers(required=True, metavar="COMMAND")
    dedup = commands.add_parser(
        "dedup",
        help="deduplicate HTML folders, JSON Lines and WARC files",
        description="Read the pages of every INPUT in order, keep each page no page kept "
        "before is a near-duplicate of, as a crawl would.",
    )
    dedup.add_argument(
        "inputs",
        nargs="+",
        metavar="INPUT",
        help="a folder of .html files, Scrapy's HTTP cache folder (HTTPCACHE_DIR), a .jsonl[.gz] (a Scrapy feed) "
        "or a .warc[.gz]",
    )
    dedup.add_argument("-o", "--output", metavar="FILE", help="write the kept pages here (JSON Lines)")
    dedup.add_argument(
        "--outcomes",
        metavar="FILE",
        help="write every page's outcome here (JSON Lines: kept, dropped and why...; `report` reads it)",
    )
    dedup.add_argument(
        "--store", metavar="PATH|URL", help="check against and add to this store: a crawl's SQLite file, or a Redis URL"
    )
    dedup.add_argument("--key", default="simhash_dedup", help="the Redis store's key (default: %(default)s)")
    dedup.add_argument(
        "--workers",
        type=int,
        default=os.cpu_count() or 1,
        metavar="N",
        help="fingerprint worker processes (default: the number of cores, %(default)s; 0: none)",
    )
    dedup.add_argument("--no-progress", action="store_true", help="no progress bar nor progress lines")
    _reading_options(dedup)
    _setting_options(dedup)
    dedup.set_defaults(run=run_dedup)
    spark = commands.add_parser(
        "spark",
        help="deduplicate stored pages on Spark, as `dedup` does (pip install 'scrapy-simhash-dedup[spark]')",
        description="The same decisions as `dedup`, on Spark: local mode by default "
        "(all cores), a cluster with --master or spark-submit.",
    )
    spark.add_argument(
        "inputs", nargs="+", metavar="INPUT", help="a folder of .html files, a .jsonl[.gz], a .parquet or a .warc[.gz]"
    )
    spark.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="DIR",
        help="a new folder: kept/, decisions/ and fingerprints/ (Parquet), run.json",
    )
    spark.add_argument(
        "--against",
        action="append",
        default=[],
        metavar="DIR",
        help="the --output of an earlier run: its kept pages come first (repeat for several)",
    )
    spark.add_argument("--master", metavar="URL", help="Spark's master (default: local[*], or spark-submit's)")
    spark.add_argument(
        "--order-field",
        metavar="NAME",
        help="JSON Lines and Parquet: a numeric field giving the arrival order (default: file, then record)",
    )
    spark.add_argument(
        "--shard-pages",
        type=int,
        default=None,
        metavar="N",
        help="pages per shard of the candidate search (default: 1,000,000)",
    )
    _reading_options(spark)
    _setting_options(spark)
    spark.set_defaults(run=run_spark)
    report = commands.add_parser(
        "report",
        help="write the HTML report of a decision log",
        description="One HTML file, readable offline, of what a crawl, `dedup` or `spark` decided: the counts, "
        "the histograms of distance and similarity, the clusters of pages dropped as copies of one kept page, and "
        "the pairs nearest the threshold side by side.",
    )
    report.add_argument("source", help="a crawl's SQLite store, an --outcomes file of `dedup`, or a Redis URL")
    report.add_argument(
        "-o",
        "--output",
        default="simhash-dedup-report.html",
        metavar="FILE",
        help="the report file (default: %(default)s)",
    )
    report.add_argument("--key", help="the Redis store's key, e.g. myspider:simhash_dedup")
    report.add_argument(
        "--pairs",
        type=int,
        default=200,
        metavar="N",
        help="pairs shown side by side, nearest the threshold first (default: %(default)s)",
    )
    report.set_defaults(run=run_report)
    aliases = commands.add_parser(
        "aliases",
        help="export the URLs that name each kept page (CSV or JSON Lines)",
        description="Every URL that names a kept page of a store: its canonical URL, the "
        "URLs its near-duplicates were met under, the requests URL rules "
        "skipped as copies; with the page's canonical URL and the URL it was "
        "kept at. Columns: alias, canonical, kept_url, reason.",
    )
    aliases.add_argument(
        "source",
        help="a crawl's SQLite store, a Redis URL (with --key), or what `report` reads "
        "(an outcomes file, a Spark output: their drops)",
    )
    aliases.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write here (.csv: CSV, anything else: JSON Lines; default: JSON Lines to stdout)",
    )
    aliases.add_argument("--key", help="the Redis store's key, e.g. myspider:simhash_dedup")
    aliases.set_defaults(run=run_aliases)
    check = commands.add_parser(
        "check",
        help="check a crawl's SQLite store, and repair it",
        description="SQLite's integrity check, and the store's own: every kept page's "
        "fingerprints with its page (URL and sketch), every page with its "
        "fingerprints. What breaks them is dropped: those pages are checked as "
        "new by the next crawl. Not while a crawl uses the store.",
    )
    check.add_argument("store", help="a crawl's SQLite store (SIMHASH_DEDUP_PATH)")
    check.add_argument("--dry-run", action="store_true", help="report only, change nothing")
    check.set_defaults(run=run_check)
    return top


def _reading_options(command: argparse.ArgumentParser) -> None:
    """What counts as a page of the inputs, the same for ``dedup`` and ``spark``."""
    command.add_argument(
        "--all-statuses",
        action="store_true",
        help="compare responses of every HTTP status (WARC records, JSON Lines records with a "
        "status field); by default only 2xx, the responses a crawl passes to its spider",
    )
    command.add_argument(
        "--argument-order",
        action="store_true",
        help="read the inputs in the order given; by default WARC files are read in the order of "
        "their first record's WARC-Date (the other inputs keep their places)",
    )


def _setting_options(command: argparse.ArgumentParser) -> None:
    group = command.add_argument_group("the pipeline's settings (SIMHASH_DEDUP_*; the defaults are the pipeline's)")
    group.add_argument(
        "--settings", metavar="MODULE", help="a Scrapy settings module to read first, e.g. myproject.settings"
    )
    defaults = _setting_defaults()
    for option, spec in SETTING_OPTIONS.items():
        group.add_argument(
            f"--{option.replace('_', '-')}",
            dest=option,
            type=spec.kind,
            choices=spec.choices,
            metavar=None if spec.choices else spec.kind.__name__.upper(),
            help=f"{spec.meaning} ({spec.setting}; default {defaults[option]})",
        )


def _setting_defaults() -> dict[str, Any]:
    from .crawl.settings import DedupSettings

    default = DedupSettings()
    values = {
        "mode": default.policy.mode.value,
        "content_distance": default.policy.content_distance,
        "min_similarity": default.policy.min_similarity,
        "structure_distance": default.policy.structure_distance,
        "log_size": default.decisions,
        "scope": default.scope.value,
    }
    return {option: values.get(option, getattr(default, option, None)) for option in SETTING_OPTIONS}


def dedup_settings(arguments: argparse.Namespace) -> Any:
    """The pipeline's settings: the module's, then the options', checked as a crawl checks them."""
    from scrapy.settings import Settings

    from .crawl.settings import DedupSettings

    settings = Settings()
    if arguments.settings:
        sys.path.insert(0, os.getcwd())
        try:
            settings.setmodule(arguments.settings, priority="project")
        except ImportError as error:
            raise ValueError(
                f"--settings {arguments.settings} cannot be imported ({error}); give a module "
                f"importable from this folder, e.g. myproject.settings"
            ) from None
    for option, spec in SETTING_OPTIONS.items():
        if (value := getattr(arguments, option)) is not None:
            settings.set(spec.setting, value, priority="cmdline")
    return DedupSettings.from_settings(settings)


def run_dedup(arguments: argparse.Namespace) -> int:
    from .batch import dedup
    from .batch.dedup import pages_read, summary
    from .batch.progress import ProgressBar
    from .batch.sources import input_size

    settings = dedup_settings(arguments)
    named = {
        name: Output(name, resumable=arguments.store is not None)
        for name in (arguments.output, arguments.outcomes)
        if name
    }
    outputs = list(named.values())
    try:
        with contextlib.ExitStack() as files:
            kept, outcomes = (
                files.enter_context(named[name]) if name else None for name in (arguments.output, arguments.outcomes)
            )
            progress = files.enter_context(ProgressBar(input_size(arguments.inputs), enabled=not arguments.no_progress))
            files.enter_context(_messages_to(progress.say))
            # entered last, closed first: its last write flushes the outputs, still open, before it
            store = files.enter_context(_closing(open_store(arguments.store, arguments.key, settings)))
            happened = dedup(
                arguments.inputs,
                settings,
                store,
                kept,
                outcomes,
                arguments.workers,
                progress,
                arguments.all_statuses,
                arguments.argument_order,
                outcome_texts=arguments.review_texts or 0,
            )  # texts in --outcomes only when asked
            progress.finish()
            read = pages_read(happened)
            for output in outputs:
                output.done = read > 0
    except KeyboardInterrupt:
        print(f"simhash-dedup: {interrupted(outputs, arguments.store)}", file=sys.stderr)
        return 130
    print(f"simhash-dedup: {summary(happened)}", file=sys.stderr)
    if unwritten := getattr(store, "unwritten", 0):
        print(
            f"simhash-dedup: {unwritten:,} kept pages are not remembered in {arguments.store} (it could not be "
            f"written): a later run checks them as new",
            file=sys.stderr,
        )
    if not read and outputs:
        print(f"simhash-dedup: nothing read: {untouched(outputs)}", file=sys.stderr)
    return 0 if read else 1


def untouched(outputs: list[Output]) -> str:
    """What a run that read nothing left of its outputs: a file that was there is as it was; none was made."""
    there = [str(output.path) for output in outputs if output.path.exists()]
    never = [str(output.path) for output in outputs if not output.path.exists()]
    return "; ".join(
        [
            *([f"{', '.join(there)} left as it was"] if there else []),
            *([f"{', '.join(never)} not written"] if never else []),
        ]
    )


def interrupted(outputs: list[Output], store: str | None) -> str:
    """What an interrupted ``dedup`` left, and how to go on, in one line."""
    if store is None:
        return f"interrupted; nothing written ({', '.join(str(o.path) for o in outputs) or 'no output asked'})"
    parts = " and ".join(str(o.kept_as) for o in outputs if o.kept_as is not None)
    return f"interrupted; the pages decided so far are remembered in {store}" + (
        f" and written to {parts} (keep it: run again with the same --store to go on; its pages are then "
        f"dropped as seen)"
        if parts
        else "; run again with the same --store to go on"
    )


def run_spark(arguments: argparse.Namespace) -> int:
    require("pyspark", "the spark command")
    require("pyarrow", "the spark command")
    from .spark import run_job

    return run_job(arguments, dedup_settings(arguments))


def open_store(target: str | None, key: str, settings: Any) -> Store:
    """A memory store, a SQLite store (a path: a crawl's store, which a running crawl locks), or the
    Redis store at a URL."""
    from .stores.memory import MemoryStore
    from .stores.sqlite.lock import check_store_path
    from .stores.sqlite.store import SqliteStore

    if not target:
        return MemoryStore(settings.policy, settings.scope)
    if target.startswith(("redis://", "rediss://", "unix://")):
        require("redis", "a Redis store")

        from .stores.redis.connect import connect, redis_store

        store = redis_store(
            settings.policy,
            connect(target),
            key,
            settings.scheme,
            settings.scope,
            settings.memory_budget,
            0,
            settings.decisions,
            settings.review_texts,
        )
        store.open()
        return store
    check_store_path(Path(target), folder_must_exist=True)
    return SqliteStore(
        settings.policy,
        Path(target),
        settings.scheme,
        settings.commit_every,
        settings.decisions,
        settings.review_texts,
        settings.scope,
        settings.memory_budget,
    )


def run_report(arguments: argparse.Namespace) -> int:
    from .report import load_log, write_report

    path = write_report(load_log(arguments.source, arguments.key), Path(arguments.output), arguments.pairs)
    print(f"simhash-dedup: report written to {path}", file=sys.stderr)
    return 0


def run_aliases(arguments: argparse.Namespace) -> int:
    from .report import load_log
    from .report.aliases import alias_rows, write_rows

    rows = alias_rows(load_log(arguments.source, arguments.key).names())
    form = "csv" if (arguments.output or "").lower().endswith(".csv") else "jsonl"
    output = Output(arguments.output) if arguments.output else None
    with output if output is not None else contextlib.nullcontext(sys.stdout) as out:
        write_rows(rows, out, form)
        if output is not None:
            output.done = True
    print(
        f"simhash-dedup: {len(rows):,} aliases of {len({r.kept_url for r in rows}):,} kept pages"
        + (f" written to {arguments.output}" if arguments.output else ""),
        file=sys.stderr,
    )
    return 0


@contextlib.contextmanager
def _closing(store: Any) -> Iterator[Any]:
    try:
        yield store
    finally:
        store.close()


@contextlib.contextmanager
def _messages_to(say: Callable[[str], None]) -> Iterator[None]:
    """The package's warnings and errors (a worker that cannot start…) as lines of the run's output."""

    class Said(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            say(record.getMessage())

    package = logging.getLogger(__package__)
    handler, propagate = Said(logging.WARNING), package.propagate
    package.addHandler(handler)
    package.propagate = False
    try:
        yield
    finally:
        package.removeHandler(handler)
        package.propagate = propagate


def run_check(arguments: argparse.Namespace) -> int:
    """Exit 0: the store is sound (or was repaired); 1: it has problems left (SQLite's own, or a dry run's)."""
    from .stores.sqlite.repair import check_file

    found, pages = check_file(Path(arguments.store), repair=not arguments.dry_run)
    if not found:
        print(f"{arguments.store}: sound, {pages:,} kept pages")
        return 0
    if arguments.dry_run:
        print(f"{arguments.store}: {found}; nothing changed (--dry-run)")
        return 1
    print(f"{arguments.store}: {found}; dropped, {pages:,} kept pages left")
    if found.integrity:
        print(
            f"SQLite's own check failed: copy what can be read with sqlite3 {arguments.store} .recover, "
            f"or start afresh (SIMHASH_DEDUP_RESET)",
            file=sys.stderr,
        )
        return 1
    return 0
