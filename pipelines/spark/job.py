"""The Spark job: stored pages deduplicated as a crawl (and ``simhash-dedup dedup``) would.

    locate (pass 1) -> first of each digest -> fingerprint (pass 2) -> candidate pairs
    -> decisions (rounds) -> outcomes of every page, copies included -> outputs

Outputs, in ``--output DIR``:

- ``kept/``: Parquet, a row per kept page (``order``, ``url``, ``source``, ``outcome``, ``canonical_url``);
- ``decisions/``: Parquet, a row per dropped page and per borderline keep: the kept page it matched,
  the distances and the similarity (``simhash-dedup report DIR`` reads it);
- ``fingerprints/``: Parquet, the kept pages' fingerprints, which ``--against DIR`` checks a later
  archive against without fingerprinting them again;
- ``run.json``: the settings, the counts (bad inputs named), the rounds.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from operator import add
from pathlib import Path
from typing import Any

from ..batch.dedup import BORDERLINE, DROPPED, FAILED, KEPT, NOT_COMPARED, pages_read
from ..batch.sources import BadInput, Page, in_arrival_order
from ..crawl.settings import DedupSettings
from ..fingerprint.fingerprinter import SCHEME_VERSION, Fingerprinter, comparable
from ..guards.canonical import on_its_host
from ..guards.traps import url_key
from ..matching.policy import Match
from ..matching.scope import Scope, site_key
from ..stores.records import run_summary
from .candidates import Node, Pair, fingerprint_of, pairs, shard_store, shard_tasks
from .decide import dropped_by_rounds, dropped_locally
from .inputs import RECORD_BITS, RECORD_MASK, Fields, InputFile, Located, input_files, locate, read_located

#: Pages a shard of the candidate stage holds (its index is built once per later shard).
SHARD_PAGES = 1_000_000
#: Pages fingerprinted by one task.
PAGES_PER_TASK = 512
#: Pages of a one-shard job per task of its candidate stage (each task builds the whole shard's index).
PAGES_PER_SHARE = 5_000
#: Candidate pairs the driver decides at once (else rounds of joins until as few duplicate pairs are left).
DRIVER_PAIRS = 1_000_000
#: Rows of a shuffle's partition (pages, pairs).
ROWS_PER_PARTITION = 200_000
#: Bad inputs named in ``run.json`` (all are counted).
BAD_NAMED = 20

_SIGN = 1 << 63


@dataclass(frozen=True)
class JobOptions:
    """How the job runs: where records hold pages, what earlier runs to check against, and its sizes."""

    fields: Fields = Fields()
    against: tuple[str, ...] = ()
    argument_order: bool = False  # else WARC files in the order of their dates, as batch mode reads them
    shard_pages: int = SHARD_PAGES
    pages_per_task: int = PAGES_PER_TASK
    driver_pairs: int = DRIVER_PAIRS


@dataclass
class JobResult:
    """What happened: pages by outcome and bad records (as ``batch.dedup.summary`` reads them), and
    the work: pages compared, shards, candidate pairs, rounds of joins, pairs decided on the driver."""

    happened: Counter[str]
    work: dict[str, int] = field(default_factory=dict)
    bad: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)  # wall time per phase
    cpu: dict[str, float] = field(default_factory=dict)  # executors' CPU time of fingerprints, candidates


def run(
    spark: Any,
    inputs: Sequence[str | Path],
    output: str | Path,
    settings: DedupSettings,
    options: JobOptions = JobOptions(),
) -> JobResult:
    """Deduplicate ``inputs`` in order (against ``options.against``'s kept pages first) into ``output``, a new
    folder (or an empty one): written under a temporary name beside it, moved into place once complete."""
    started, final = time.time(), usable_output(output)
    out = final.with_name(f".{final.name}.{os.getpid()}.tmp")  # moved into place when the run succeeds
    try:
        result = _run(spark, inputs, out, settings, options, started)
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)
        raise
    os.replace(out, final)
    return result


def usable_output(output: str | Path) -> Path:
    """``output`` as a folder a run can be moved into (new, or empty, in an existing folder), else ValueError."""
    final = Path(output)
    if final.exists() and (not final.is_dir() or any(final.iterdir())):
        raise ValueError(f"{final} is not empty; give a new folder for the output")
    if not final.parent.is_dir():
        raise ValueError(f"{final.parent} is not a folder; the output goes in an existing one")
    return final


def _run(
    spark: Any, inputs: Sequence[str | Path], out: Path, settings: DedupSettings, options: JobOptions, started: float
) -> JobResult:
    context, policy, fields = spark.sparkContext, settings.policy, options.fields
    clock = Clock(context)
    files = input_files(inputs if options.argument_order else in_arrival_order(inputs))
    located = context.parallelize(files, max(1, len(files))).flatMap(lambda file: locate(file, fields)).persist()
    read = Counter(dict(located.map(_what_was_read).reduceByKey(add).collect()))
    bad = located.filter(lambda item: isinstance(item, BadInput))
    result = JobResult(
        Counter({kind: count for kind, count in read.items() if kind != "page"}),
        bad=[f"{item.source}: {item.message}" for item in bad.take(BAD_NAMED)] if set(read) - {"page"} else [],
    )
    result.work["pages"] = read["page"]
    clock.lap("read")
    groups = _copies(_ranked(located.filter(lambda item: isinstance(item, Located)), fields), settings.scope)
    tasks = max(context.defaultParallelism, math.ceil(read["page"] / options.pages_per_task))
    results = _fingerprinted(
        groups, files, fields, settings.fingerprinter(keep_text=False), options.pages_per_task, tasks, clock
    ).persist()
    compared = results.map(lambda r: r[1][2] is None).countByValue()
    result.work["fingerprinted"] = sum(compared.values())
    located.unpersist()
    clock.lap("fingerprint")
    nodes = results.filter(lambda r: r[1][2] is None).map(lambda r: r[1][1])
    earlier = _against(spark, options.against)
    result.work["against"] = earlier.count()
    decided, work = _decided(
        nodes.union(earlier), compared[True] + result.work["against"], policy, settings.scope, options, clock
    )
    parts = _partitions(context, result.work["pages"])
    outcomes = _outcomes(results, decided, policy, parts).coalesce(parts).persist()
    counted = Counter(dict(outcomes.flatMap(_counted).reduceByKey(add, parts).collect()))
    reasons = {name: count for name, count in counted.items() if name.startswith("dropped/")}
    result.happened.update(counted - Counter(reasons))
    clock.lap("outcomes")
    _write(spark, out, outcomes)
    clock.lap("write")
    result.work.update(work)
    result.seconds, result.cpu = clock.seconds, clock.cpu_seconds()
    counts = {
        **_stats(result.happened),
        **{f"items_{name}": count for name, count in reasons.items()},
        **{f"spark/{name}": value for name, value in result.work.items()},
    }
    summary = run_summary(", ".join(map(str, inputs)), started, policy, counts)
    (out / "run.json").write_text(
        json.dumps(
            {
                "run": summary,
                "scheme": SCHEME_VERSION,
                "bad": result.bad,
                "seconds": result.seconds,
                "cpu_seconds": result.cpu,
            },
            indent=1,
        )
    )
    for rdd in (results, decided.near, decided.dropped, outcomes):
        if rdd is not None:
            rdd.unpersist()
    return result


class Clock:
    """Wall time of each phase, on the driver (each ends with an action), and CPU time spent in the
    executors' Python workers by the heavy steps (accumulators: what ``bench/spark.py`` projects)."""

    def __init__(self, context: Any) -> None:
        self.seconds: dict[str, float] = {}
        self._last = time.perf_counter()
        self._cpu = {name: context.accumulator(0.0) for name in ("fingerprint", "candidates")}

    def lap(self, phase: str) -> None:
        now = time.perf_counter()
        self.seconds[phase] = round(now - self._last, 3)
        self._last = now

    def timed(
        self, step: str, work: Callable[[Iterable[Any]], Iterator[Any]]
    ) -> Callable[[Iterable[Any]], Iterator[Any]]:
        """``work`` over a partition, its CPU time (of this worker process) added to ``step``'s."""
        total = self._cpu[step]

        def measured(partition: Iterable[Any]) -> Iterator[Any]:
            started = time.process_time()
            yield from work(partition)
            total.add(time.process_time() - started)

        return measured

    def cpu_seconds(self) -> dict[str, float]:
        return {name: round(total.value, 3) for name, total in self._cpu.items()}


def _what_was_read(item: Located | BadInput) -> tuple[str, int]:
    """``page``, or what a bad input counts as (batch mode's names), and how many records."""
    return ("page", 1) if isinstance(item, Located) else (item.counted_as, item.records)


def _ranked(located: Any, fields: Fields) -> Any:
    """(rank, Located): the input order (file, record), or the order field's (records without one
    last, in input order)."""
    if fields.order is None:
        return located.map(lambda page: (page.key, page))
    by_order = located.sortBy(lambda page: (page.order is None, page.order or 0.0, page.key))
    return by_order.zipWithIndex().map(lambda page_rank: (page_rank[1], page_rank[0]))


#: A page of the same bytes as an earlier one: its rank, URL and source.
Copy = tuple[int, str, str]


def _copies(ranked: Any, scope: Scope) -> Any:
    """(first rank, (first page, later copies)): pages of the same bytes (and of one site, in "site" or "host"
    scope), fingerprinted once."""

    def first_and_copies(same: Iterable[tuple[int, Located]]) -> tuple[int, tuple[Located, list[Copy]]]:
        (rank, first), *copies = sorted(same, key=lambda rank_page: rank_page[0])
        return rank, (first, [(copy_rank, copy.url, copy.source) for copy_rank, copy in copies])

    return (
        ranked.map(lambda rank_page: ((site_key(rank_page[1].url, scope), rank_page[1].digest), rank_page))
        .groupByKey()
        .values()
        .map(first_and_copies)
    )


def _fingerprinted(
    groups: Any,
    files: list[InputFile],
    fields: Fields,
    fingerprinter: Fingerprinter,
    per_task: int,
    tasks: int,
    clock: Clock,
) -> Any:
    """(rank, ((source, later copies), Node, outcome)) of every first copy, read again where it is and fingerprinted;
    outcome ``None`` for a page compared, else ``not_compared/<why>`` or ``failed`` (kept, as batch
    mode keeps them).  Stretches of ``per_task`` records of one file go to the same task, which reads
    them in file order."""
    by_stretch = groups.map(lambda g: ((g[1][0].key >> RECORD_BITS, (g[1][0].key & RECORD_MASK) // per_task), g))

    def fingerprint_stretch(
        stretch: Iterable[tuple[Any, tuple[int, tuple[Located, list[Copy]]]]],
    ) -> Iterator[tuple[int, Any]]:
        by_file: dict[int, list[tuple[int, Located, list[Copy]]]] = {}
        for _, (rank, (page, copies)) in stretch:
            by_file.setdefault(page.key >> RECORD_BITS, []).append((rank, page, copies))
        for file, pages in sorted(by_file.items()):
            pages.sort(key=lambda page: page[1].key)
            wanted = {page.key: (rank, page, copies) for rank, page, copies in pages}
            for key, read in read_located(files[file], [(page.key, page.locator) for _, page, _ in pages], fields):
                rank, page, copies = wanted[key]
                node, outcome, declared = _fingerprint(rank, page, read, fingerprinter)
                yield rank, ((page.source, copies, declared), node, outcome)

    # a file's stretches go to tasks in turn (hashing them would give some tasks two and others none)
    return by_stretch.partitionBy(tasks, lambda stretch: stretch[0] * 1_000_003 + stretch[1]).mapPartitions(
        clock.timed("fingerprint", fingerprint_stretch)
    )


def _fingerprint(
    rank: int, page: Located, read: Page | BadInput, fingerprinter: Fingerprinter
) -> tuple[Node, str | None, str | None]:
    """One page's node, outcome and declared canonical URL; a page that cannot be read again or fingerprinted
    fails (kept)."""
    nothing: Node = (rank, page.url, None, None, False, None)
    if isinstance(read, BadInput):
        return nothing, FAILED, None
    try:
        fingerprint = fingerprinter.fingerprint(read.html, read.url, read.content_type)
    except Exception:  # a page that breaks the fingerprint is kept, never the task's end
        return nothing, FAILED, None
    if not comparable(fingerprint):
        return nothing, NOT_COMPARED + (fingerprint.problem or "too_few_features"), fingerprint.canonical
    node = (rank, page.url, fingerprint.content, fingerprint.structure, fingerprint.short, fingerprint.sketch)
    return node, None, fingerprint.canonical


def _against(spark: Any, folders: Sequence[str]) -> Any:
    """The kept pages of earlier runs (their ``fingerprints/``), before every page of this run: ranks
    below 0, in the folders' order, then each run's order."""
    context = spark.sparkContext
    if not folders:
        return context.emptyRDD()
    tables = []
    for number, folder in enumerate(folders):
        path = Path(folder) / "fingerprints"
        if not path.is_dir():
            raise ValueError(f"--against {folder}: no fingerprints/ folder; give the --output of an earlier run")
        scheme = json.loads((Path(folder) / "run.json").read_text()).get("scheme")
        if scheme != SCHEME_VERSION:
            raise ValueError(
                f"--against {folder}: its fingerprints are of scheme {scheme}, this version makes scheme "
                f"{SCHEME_VERSION}; run the earlier archives again, or without --against"
            )
        tables.append(spark.read.parquet(str(path)).rdd.map(lambda row, n=number: ((n, row.order), _node(row))))
    nodes = context.union(tables).sortByKey().values().zipWithIndex()
    total = nodes.count()
    return nodes.map(lambda ni: (ni[1] - total, *ni[0][1:]))


def _node(row: Any) -> Node:
    return (
        row.order,
        row.url,
        _unsigned(row.content),
        _unsigned(row.structure),
        row.short,
        None if row.sketch is None else bytes(row.sketch),
    )


def _signed(value: int | None) -> int | None:
    return None if value is None else value - (1 << 64) if value >= _SIGN else value


def _unsigned(value: int | None) -> int | None:
    return None if value is None else value + (1 << 64) if value < 0 else value


@dataclass
class Decided:
    """The decisions on the pages compared: on the driver when the candidate pairs are few (``local``:
    rank -> (dropped, the match chosen)), else as RDDs (the ``near`` pairs, the ``dropped`` ranks)."""

    local: dict[int, tuple[bool, Match | None]] | None = None
    near: Any = None
    dropped: Any = None


def _decided(
    nodes: Any, count: int, policy: Any, scope: Scope, options: JobOptions, clock: Clock
) -> tuple[Decided, dict[str, int]]:
    """The decisions on the ``count`` pages to compare (``nodes``), and what the work was: pages
    compared, shards, candidate pairs, rounds of joins, duplicate pairs decided on the driver."""
    shards = max(1, math.ceil(count / options.shard_pages))
    tasks = shard_tasks(shards)
    task_of = {task: number for number, task in enumerate(tasks)}

    def routed(shard: tuple[list[Node], int]) -> Iterator[tuple[int, tuple[int, list[Node]]]]:
        """A shard, to every task that needs it: as the earlier side of the shards from it on, as the
        later side of the shards up to it (its pages of earlier runs are never a later side)."""
        nodes, number = shard
        yield from ((task_of[number, later], (0, nodes)) for later in range(number, shards))
        later_side = [node for node in nodes if node[0] >= 0]
        yield from ((task_of[earlier, number], (1, later_side)) for earlier in range(number + 1))

    def search(task: Iterable[tuple[int, tuple[int, list[Node]]]]) -> Iterator[Pair]:
        sides = dict(side for _, side in task)
        return pairs(sides.get(0, []), sides.get(1, []), policy, scope)

    if shards == 1:  # one shard: each task holds it all (a broadcast) and asks it for its share of the pages
        context = nodes.context
        everything = context.broadcast(sorted(nodes.collect()))
        shares = max(1, min(context.defaultParallelism, count // PAGES_PER_SHARE))
        near = context.parallelize(range(shares), shares).mapPartitions(
            clock.timed(
                "candidates", lambda share: _share_pairs(everything.value, next(iter(share)), shares, policy, scope)
            )
        )
    else:
        near = (
            nodes.sortBy(lambda node: node[0], numPartitions=shards)
            .glom()
            .zipWithIndex()
            .flatMap(routed)
            .partitionBy(len(tasks), lambda number: number)
            .mapPartitions(clock.timed("candidates", search))
        )
    near = near.persist()
    candidates = near.count()
    clock.lap("candidates")
    duplicates = near.filter(lambda pair: pair.match.duplicate).map(lambda pair: (pair.later, pair.earlier))
    edges = duplicates.count()
    if edges <= options.driver_pairs:  # a small graph: decided on the driver, each page's match chosen in the tasks
        dropped = dropped_locally(duplicates.collect())
        decided, rounds, on_driver = Decided(local=_chosen_locally(near, dropped)), 0, edges
        near.unpersist()
    else:
        dropped, rounds, on_driver = dropped_by_rounds(
            duplicates, options.driver_pairs, _partitions(nodes.context, count)
        )
        decided = Decided(near=near, dropped=dropped.map(lambda page: (page, True)).persist())
        decided.dropped.count()
    clock.lap("decide")
    return decided, {
        "compared": count,
        "shards": shards,
        "candidate_pairs": candidates,
        "rounds": rounds,
        "pairs_on_driver": on_driver,
    }


def _chosen_locally(near: Any, dropped: set[int]) -> dict[int, tuple[bool, Match | None]]:
    """Every page with a pair with a kept page: dropped or not, and the match chosen among those pairs (as
    ``chosen`` chooses, each task's pairs reduced first: only a page's chosen pair reaches the driver)."""
    gone = near.context.broadcast(dropped)

    def candidate(pair: Pair) -> bool:
        return pair.earlier not in gone.value and pair.match.duplicate == (pair.later in gone.value)

    first = (
        near.filter(candidate)
        .map(lambda pair: (pair.later, pair))
        .reduceByKey(lambda a, b: a if a.rank <= b.rank else b)
    )
    return {later: (later in dropped, pair.match) for later, pair in first.collect()}


def chosen(pairs_of: Iterable[Pair], dropped: bool) -> Match | None:
    """A page's match among its pairs with kept pages: for a page dropped, the duplicate a store meets
    first; for a page kept, its borderline candidate a store meets first (if any)."""
    candidates = [pair for pair in pairs_of if pair.match.duplicate == dropped]
    return min(candidates, key=lambda pair: pair.rank).match if candidates else None


def _partitions(context: Any, rows: int) -> int:
    """Partitions of a shuffle of ``rows`` pages' rows: every core busy, a task's rows in its memory (a
    task costs ~40 ms in local mode: a small job is not cut finer)."""
    return max(context.defaultParallelism, math.ceil(rows / ROWS_PER_PARTITION))


def _share_pairs(nodes: list[Node], share: int, shares: int, policy: Any, scope: Scope) -> Iterator[Pair]:
    """The pairs of every ``shares``-th page of ``nodes`` (sorted), from the ``share``-th on, with the pages
    before it (pages of earlier runs are never a later side)."""
    return pairs(nodes, [node for node in nodes[share::shares] if node[0] >= 0], policy, scope)


def _outcomes(results: Any, decided: Decided, policy: Any, parts: int) -> Any:
    """(rank, url, source, outcome, Match or None, Node of a kept page compared or None, the canonical URL a
    kept page declares on its host or None) of every page."""
    if decided.local is not None:
        table = results.context.broadcast(decided.local)

        def page_rows(result: tuple[int, Any]) -> Iterator[tuple]:
            dropped, match = table.value.get(result[0], (False, None))
            return _page_rows(result[0], result[1], dropped, match, policy)

        return results.flatMap(page_rows)
    kept_earlier = (
        decided.near.map(lambda pair: (pair.earlier, pair))
        .subtractByKey(decided.dropped, parts)
        .values()
        .map(lambda pair: (pair.later, pair))
    )

    def rows(grouped: tuple[int, tuple[Iterable[Any], Iterable[Pair], Iterable[bool]]]) -> Iterator[tuple]:
        rank, (firsts, pairs_of, dropped_flag) = grouped
        dropped = any(dropped_flag)
        for first in firsts:  # one, or none for a page of an earlier run
            yield from _page_rows(rank, first, dropped, chosen(pairs_of, dropped), policy)

    return results.coalesce(parts).groupWith(kept_earlier, decided.dropped).flatMap(rows)


def _page_rows(
    rank: int,
    first: tuple[tuple[str, list[Copy], str | None], Node, str | None],
    dropped: bool,
    match: Match | None,
    policy: Any,
) -> Iterator[tuple]:
    """The rows of a first copy and its later copies.  A later copy of the same bytes takes its first
    copy's outcome, but is dropped as its duplicate when the first was kept."""
    (source, copies, declared), node, outcome = first
    if outcome is None:
        outcome = DROPPED if dropped else BORDERLINE if match is not None else KEPT
    kept = outcome in (KEPT, BORDERLINE)
    yield rank, node[1], source, outcome, match, node if kept else None, on_its_host(node[1], declared)
    as_copy = _copy_match(node, policy) if kept and copies else None
    for copy_rank, url, copy_source in copies:
        if as_copy is not None:
            yield copy_rank, url, copy_source, DROPPED, as_copy, None, None
        else:
            yield copy_rank, url, copy_source, outcome, match, None, on_its_host(url, declared)


def _copy_match(node: Node, policy: Any) -> Match | None:
    """What a later copy of a kept page matches: the page itself, if a store calls them duplicates (a
    page without content never is, in mode "content")."""
    if node[2:4] == (None, None):
        return None
    return next(
        (match for _, match in shard_store([node], policy).matches(fingerprint_of(node)) if match.duplicate), None
    )


def _counted(row: tuple) -> list[tuple[str, int]]:
    """A page's outcome, and for a page dropped ``dropped/<reason>``: what ``run.json`` counts."""
    outcome, match = row[3], row[4]
    return [(outcome, 1), (f"dropped/{match.reason}", 1)] if outcome == DROPPED else [(outcome, 1)]


def _stats(happened: Counter[str]) -> dict[str, int]:
    """The counts a crawl's stats would show for the same pages (``simhash_dedup/<name>``)."""
    pages = pages_read(happened)
    return {
        "checked": pages,
        "pages_kept": pages - happened[DROPPED],
        "pages_dropped": happened[DROPPED],
        "items_kept": pages - happened[DROPPED],
        "items_dropped": happened[DROPPED],
        **{name: count for name, count in happened.items() if name not in (KEPT, DROPPED)},
    }


def _canonical_urls(kept: Any) -> Any:
    """(rank, canonical URL) of every kept page, as a crawl of the pages in rank order chooses it without URL
    rules (``canonical.CanonicalUrls``): the URL it declares on its host, unless a page kept before it has that
    URL or declared it; else its own URL."""

    def names(row: tuple) -> list[tuple[int, int]]:  # (normal form of a URL, rank) for the URLs a page holds
        return [(key, row[0]) for key in (_key(row[1]), _key(row[6]) if row[6] else None) if key is not None]

    first = kept.flatMap(names).reduceByKey(min)  # a URL -> the first kept page to hold it
    believed = (
        kept.filter(lambda row: row[6])
        .map(lambda row: (_key(row[6]), (row[0], row[1], row[6])))
        .join(first)
        .map(lambda joined: (joined[1][0][0], joined[1][0][2] if joined[1][1] == joined[1][0][0] else joined[1][0][1]))
    )
    return believed.union(kept.filter(lambda row: not row[6]).map(lambda row: (row[0], row[1])))


def _key(url: str) -> int | None:
    """``traps.url_key``; None for a URL that cannot be parsed (a declared one on the page's host always can)."""
    try:
        return url_key(url)
    except ValueError:
        return None


def _write(spark: Any, out: Path, outcomes: Any) -> None:
    """The three tables, in Parquet (Spark writes them, on a cluster to any file system it reaches)."""
    from pyspark.sql import types as T

    now = time.time()
    kept_rows = outcomes.filter(lambda o: o[3] != DROPPED)
    kept = (
        kept_rows.map(lambda o: (o[0], (o[1], o[2], o[3].removeprefix(NOT_COMPARED))))
        .join(_canonical_urls(kept_rows))
        .map(lambda row: (row[0], *row[1][0], row[1][1]))
    )
    spark.createDataFrame(
        kept,
        T.StructType(
            [
                T.StructField("order", T.LongType()),
                T.StructField("url", T.StringType()),
                T.StructField("source", T.StringType()),
                T.StructField("outcome", T.StringType()),
                T.StructField("canonical_url", T.StringType()),
            ]
        ),
    ).write.parquet(str(out / "kept"))
    decisions = outcomes.filter(lambda o: o[4] is not None and o[3] in (DROPPED, BORDERLINE)).map(
        lambda o: (
            now,
            o[3],
            o[1],
            o[4].url,
            o[4].reason,
            o[4].content_distance,
            o[4].structure_distance,
            o[4].similarity,
            o[4].similarity_needed,
            o[2],
            o[0],
        )
    )
    spark.createDataFrame(
        decisions,
        T.StructType(
            [
                T.StructField("time", T.DoubleType()),
                T.StructField("outcome", T.StringType()),
                T.StructField("url", T.StringType()),
                T.StructField("kept_url", T.StringType()),
                T.StructField("reason", T.StringType()),
                T.StructField("content_distance", T.IntegerType()),
                T.StructField("structure_distance", T.IntegerType()),
                T.StructField("similarity", T.DoubleType()),
                T.StructField("similarity_needed", T.DoubleType()),
                T.StructField("source", T.StringType()),
                T.StructField("order", T.LongType()),
            ]
        ),
    ).write.parquet(str(out / "decisions"))
    kept_nodes = (
        outcomes.filter(lambda o: o[5] is not None and o[5][2:4] != (None, None))
        .map(lambda o: o[5])
        .map(lambda n: (n[0], n[1], _signed(n[2]), _signed(n[3]), n[4], n[5]))
    )
    spark.createDataFrame(
        kept_nodes,
        T.StructType(
            [
                T.StructField("order", T.LongType()),
                T.StructField("url", T.StringType()),
                T.StructField("content", T.LongType()),
                T.StructField("structure", T.LongType()),
                T.StructField("short", T.BooleanType()),
                T.StructField("sketch", T.BinaryType()),
            ]
        ),
    ).write.parquet(str(out / "fingerprints"))
