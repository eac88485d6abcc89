"""The Spark job: stored pages deduplicated as a crawl (and ``simhash-dedup dedup``) would.

    locate (pass 1) -> first of each digest -> fingerprint (pass 2) -> candidate pairs
    -> decisions (rounds) -> outcomes of every page, copies included -> outputs

Outputs, in ``--output DIR``:

- ``kept/``: Parquet, a row per kept page (``order``, ``url``, ``source``, ``outcome``);
- ``decisions/``: Parquet, a row per dropped page and per borderline keep: the kept page it matched,
  the distances and the similarity (``simhash-dedup report DIR`` reads it);
- ``fingerprints/``: Parquet, the kept pages' fingerprints, which ``--against DIR`` checks a later
  archive against without fingerprinting them again;
- ``run.json``: the settings, the counts (bad inputs named), the rounds.
"""

from __future__ import annotations

import json
import math
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from operator import add
from pathlib import Path
from typing import Any

from ..batch.dedup import BORDERLINE, DROPPED, FAILED, KEPT, NOT_COMPARED
from ..batch.sources import BadInput, Page
from ..decisions import run_summary
from ..fingerprint import SCHEME_VERSION, Fingerprint, Fingerprinter, comparable
from ..policy import Match
from ..settings import DedupSettings
from .candidates import Node, Pair, fingerprint_of, pairs, shard_store
from .decide import dropped_by_rounds
from .inputs import Fields, InputFile, Located, input_files, locate, read_located

#: Pages a shard of the candidate stage holds (its index is built once per later shard).
SHARD_PAGES = 1_000_000
#: Pages fingerprinted by one task.
PAGES_PER_TASK = 512
#: Duplicate pairs left undecided from which the driver decides the rest.
DRIVER_PAIRS = 2_000_000
#: Bad inputs named in ``run.json`` (all are counted).
BAD_NAMED = 20

_SIGN = 1 << 63


@dataclass(frozen=True)
class JobOptions:
    """How the job runs: where records hold pages, what earlier runs to check against, and its sizes."""

    fields: Fields = Fields()
    against: tuple[str, ...] = ()
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


def fingerprinter(settings: DedupSettings) -> Fingerprinter:
    return Fingerprinter(structure_decay=settings.structure_decay, min_features=settings.min_features,
                         max_bytes=settings.max_html_bytes, max_elements=settings.max_elements,
                         max_text_chars=settings.max_text_chars)


def run(spark: Any, inputs: Sequence[str | Path], output: str | Path, settings: DedupSettings,
        options: JobOptions = JobOptions()) -> JobResult:
    """Deduplicate ``inputs`` in order (against ``options.against``'s kept pages first) into ``output``."""
    started, out = time.time(), Path(output)
    if out.exists() and any(out.iterdir()):
        raise ValueError(f"{out} is not empty; give a new folder for the output")
    context, policy, fields = spark.sparkContext, settings.policy, options.fields
    files = input_files(inputs)
    located = context.parallelize(files, max(1, len(files))).flatMap(lambda file: locate(file, fields)).persist()
    bad = located.filter(lambda item: isinstance(item, BadInput))
    result = JobResult(Counter(dict(bad.map(_bad_kind).reduceByKey(add).collect())),
                       bad=[f"{item.source}: {item.message}" for item in bad.take(BAD_NAMED)])
    ranked = _ranked(located.filter(lambda item: isinstance(item, Located)), fields)
    pages = _with_first(ranked).persist()  # (rank, (Located, file index, rank of its first copy))
    results = _fingerprinted(pages, files, fields, fingerprinter(settings), options.pages_per_task).persist()
    nodes = results.filter(lambda r: r[1][1] is None).map(lambda r: r[1][0])
    earlier = _against(spark, options.against)
    found, work = _decided(nodes.union(earlier), policy, options)
    outcomes = _outcomes(pages, results, found, policy).persist()
    result.happened.update(dict(outcomes.map(lambda o: (o[2], 1)).reduceByKey(add).collect()))
    reasons = outcomes.filter(lambda o: o[2] == DROPPED).map(lambda o: (f"dropped/{o[4].reason}", 1))
    result.work = {"pages": pages.count(), "fingerprinted": results.count(), "against": earlier.count(), **work}
    _write(spark, out, outcomes, nodes, found)
    counts = {**_stats(result.happened), **dict(reasons.reduceByKey(add).collect()),
              **{f"spark/{name}": value for name, value in result.work.items()}}
    summary = run_summary(", ".join(map(str, inputs)), started, policy, counts)
    (out / "run.json").write_text(json.dumps({"run": summary, "scheme": SCHEME_VERSION, "bad": result.bad}, indent=1))
    for rdd in (located, pages, results, outcomes):
        rdd.unpersist()
    return result


def _bad_kind(item: BadInput) -> tuple[str, int]:
    return ("skipped" if item.kind == "not_html" else "unreadable"), item.records


def _ranked(located: Any, fields: Fields) -> Any:
    """(rank, (Located, file index)): the input order (file, record), or the order field's (records
    without one last, in input order)."""
    from .inputs import RECORD_BITS

    with_file = located.map(lambda page: (page, page.key >> RECORD_BITS))
    if fields.order is None:
        return with_file.map(lambda pf: (pf[0].key, pf))
    by_order = with_file.sortBy(lambda pf: (pf[0].order is None, pf[0].order or 0.0, pf[0].key))
    return by_order.zipWithIndex().map(lambda pfi: (pfi[1], pfi[0]))


def _with_first(ranked: Any) -> Any:
    """Each page with the rank of the first page of the same bytes (fingerprinted for all of them)."""
    by_digest = ranked.map(lambda r: (r[1][0].digest, r))
    firsts = by_digest.mapValues(lambda r: r[0]).reduceByKey(min)
    return by_digest.join(firsts).map(lambda d: (d[1][0][0], (*d[1][0][1], d[1][1])))


def _fingerprinted(pages: Any, files: list[InputFile], fields: Fields, fingerprinter: Fingerprinter,
                   per_task: int) -> Any:
    """(rank, (Node, outcome)) of every first copy, read again where it is (in file order: a task
    reads a stretch of one file) and fingerprinted; outcome ``None`` for a page compared, else
    ``not_compared/<why>`` or ``failed`` (kept, as batch mode keeps them)."""
    firsts = pages.filter(lambda p: p[0] == p[1][2]).map(lambda p: (p[1][0].key, (p[0], p[1][0], p[1][1])))
    ordered = firsts.sortByKey(numPartitions=max(1, math.ceil(firsts.count() / per_task)))

    def fingerprint_stretch(stretch: Iterable[tuple[int, tuple[int, Located, int]]]) -> Iterator[tuple[int, Any]]:
        by_file: dict[int, list[tuple[int, Located]]] = {}
        for _, (rank, page, file) in stretch:
            by_file.setdefault(file, []).append((rank, page))
        for file, located in by_file.items():
            ranks = {page.key: (rank, page) for rank, page in located}
            for key, read in read_located(files[file], [(page.key, page.locator) for _, page in located], fields):
                rank, page = ranks[key]
                yield rank, _fingerprint(rank, page, read, fingerprinter)

    return ordered.mapPartitions(fingerprint_stretch)


def _fingerprint(rank: int, page: Located, read: Page | BadInput, fingerprinter: Fingerprinter) -> tuple[Node, str | None]:
    """One page's node and outcome; a page that cannot be read again or fingerprinted fails (kept)."""
    nothing: Node = (rank, page.url, None, None, False, None)
    if isinstance(read, BadInput):
        return nothing, FAILED
    try:
        fingerprint = fingerprinter.fingerprint(read.html, read.url, read.content_type)
    except Exception:  # a page that breaks the fingerprint is kept, never the task's end
        return nothing, FAILED
    if not comparable(fingerprint):
        return nothing, NOT_COMPARED + (fingerprint.problem or "too_few_features")
    return (rank, page.url, fingerprint.content, fingerprint.structure, fingerprint.short, fingerprint.sketch), None


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
        tables.append(spark.read.parquet(str(path)).rdd.map(lambda row, n=number: ((n, row.order), _node(row))))
    nodes = context.union(tables).sortByKey().values().zipWithIndex()
    total = nodes.count()
    return nodes.map(lambda ni: (ni[1] - total, *ni[0][1:]))


def _node(row: Any) -> Node:
    return (row.order, row.url, _unsigned(row.content), _unsigned(row.structure), row.short,
            None if row.sketch is None else bytes(row.sketch))


def _signed(value: int | None) -> int | None:
    return None if value is None else value - (1 << 64) if value >= _SIGN else value


def _unsigned(value: int | None) -> int | None:
    return None if value is None else value + (1 << 64) if value < 0 else value


def _decided(nodes: Any, policy: Any, options: JobOptions) -> tuple[Any, dict[str, int]]:
    """(rank, Pair) for every page of this run dropped (the kept page it matched) or kept borderline
    (its nearest candidate among the kept pages), and what the work was."""
    count = nodes.count()
    shards = max(1, math.ceil(count / options.shard_pages))
    indexed = nodes.sortBy(lambda node: node[0], numPartitions=shards).glom().zipWithIndex() \
        .map(lambda shard: (shard[1], shard[0])).persist()
    near = indexed.cartesian(indexed).filter(lambda st: st[0][0] <= st[1][0]) \
        .flatMap(lambda st: pairs(st[0][1], [node for node in st[1][1] if node[0] >= 0], policy)).persist()
    duplicates = near.filter(lambda pair: pair.match.duplicate).map(lambda pair: (pair.later, pair.earlier))
    dropped, rounds, on_driver = dropped_by_rounds(duplicates, options.driver_pairs)
    dropped = dropped.map(lambda page: (page, True)).persist()
    # a pair counts when its earlier page is kept: a duplicate for a page dropped, a borderline candidate
    # for a page kept; of those, the one a store would meet first
    among_kept = near.map(lambda pair: (pair.earlier, pair)).subtractByKey(dropped).values() \
        .map(lambda pair: (pair.later, pair)).leftOuterJoin(dropped)
    found = among_kept.filter(lambda p: p[1][0].match.duplicate == bool(p[1][1])).mapValues(lambda p: p[0]) \
        .reduceByKey(lambda a, b: min(a, b, key=lambda pair: pair.rank)).persist()
    work = {"compared": count, "shards": shards, "candidate_pairs": near.count(), "rounds": rounds,
            "pairs_on_driver": on_driver}
    indexed.unpersist()
    return found, work


def _outcomes(pages: Any, results: Any, found: Any, policy: Any) -> Any:
    """(rank, url, outcome, source, Match or None) of every page: a first copy as decided, a later copy
    of the same bytes as its first copy, but dropped as its duplicate when the first was kept."""
    first_results = results.leftOuterJoin(found)  # (first rank, ((Node, outcome), Pair or None))
    by_first = pages.map(lambda p: (p[1][2], (p[0], p[1][0])))

    def decide(joined: Iterable[tuple[int, tuple[tuple[int, Located], tuple[tuple[Node, str | None], Pair | None]]]]
               ) -> Iterator[tuple[int, str, str, str, Match | None]]:
        copies: dict[int, Match | None] = {}  # first rank -> what a copy of it matches, if kept
        for first, ((rank, page), ((node, outcome), pair)) in joined:
            match = None if pair is None else pair.match
            if outcome is None:
                outcome = KEPT if match is None else DROPPED if match.duplicate else BORDERLINE
            if rank != first and outcome in (KEPT, BORDERLINE) and node[2:4] != (None, None):
                if first not in copies:
                    copies[first] = next((m for _, m in shard_store([node], policy).matches(fingerprint_of(node))
                                          if m.duplicate), None)
                if copies[first] is not None:
                    outcome, match = DROPPED, copies[first]
            yield rank, page.url, outcome, page.source, match

    return by_first.join(first_results).mapPartitions(decide)


def _stats(happened: Counter[str]) -> dict[str, int]:
    """The counts a crawl's stats would show for the same pages (``simhash_dedup/<name>``)."""
    pages = sum(count for name, count in happened.items() if name not in ("unreadable", "skipped"))
    return {"checked": pages, "pages_kept": pages - happened[DROPPED], "pages_dropped": happened[DROPPED],
            "kept": pages - happened[DROPPED], "dropped": happened[DROPPED], **{
                name: count for name, count in happened.items() if name not in (KEPT, DROPPED)}}


def _write(spark: Any, out: Path, outcomes: Any, nodes: Any, found: Any) -> None:
    from pyspark.sql import types as T

    now = time.time()
    kept = outcomes.filter(lambda o: o[2] != DROPPED).map(lambda o: (o[0], o[1], o[3], o[2].removeprefix(NOT_COMPARED)))
    spark.createDataFrame(kept, T.StructType([
        T.StructField("order", T.LongType()), T.StructField("url", T.StringType()),
        T.StructField("source", T.StringType()), T.StructField("outcome", T.StringType()),
    ])).write.parquet(str(out / "kept"))
    decisions = outcomes.filter(lambda o: o[4] is not None).map(lambda o: (
        now, o[2], o[1], o[4].url, o[4].reason, o[4].content_distance, o[4].structure_distance, o[4].similarity,
        o[4].similarity_needed, o[3], o[0]))
    spark.createDataFrame(decisions, T.StructType([
        T.StructField("time", T.DoubleType()), T.StructField("outcome", T.StringType()),
        T.StructField("url", T.StringType()), T.StructField("kept_url", T.StringType()),
        T.StructField("reason", T.StringType()), T.StructField("content_distance", T.IntegerType()),
        T.StructField("structure_distance", T.IntegerType()), T.StructField("similarity", T.DoubleType()),
        T.StructField("similarity_needed", T.DoubleType()), T.StructField("source", T.StringType()),
        T.StructField("order", T.LongType()),
    ])).write.parquet(str(out / "decisions"))
    dropped = found.filter(lambda f: f[1].match.duplicate)
    kept_nodes = nodes.map(lambda node: (node[0], node)).subtractByKey(dropped).values().map(
        lambda n: (n[0], n[1], _signed(n[2]), _signed(n[3]), n[4], n[5]))
    spark.createDataFrame(kept_nodes, T.StructType([
        T.StructField("order", T.LongType()), T.StructField("url", T.StringType()),
        T.StructField("content", T.LongType()), T.StructField("structure", T.LongType()),
        T.StructField("short", T.BooleanType()), T.StructField("sketch", T.BinaryType()),
    ])).write.parquet(str(out / "fingerprints"))
