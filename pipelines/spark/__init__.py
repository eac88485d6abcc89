"""Deduplicating stored pages on Spark, with the crawl's own fingerprints and decisions.

``simhash-dedup spark INPUT... -o DIR`` runs ``job.run`` in Spark's local
mode (all cores), or on a cluster with ``--master URL`` or through
``spark-submit`` (``submit``).  Only this sub-package imports PySpark (the
extra ``[spark]``); the crawl and ``simhash-dedup dedup`` never do.

The job's stages (``job``): the pages read and fingerprinted (``inputs``), the
candidate pairs within shards (``candidates``), each page's decision from its
pairs (``decide``); the JVM Spark starts (``jvm``).

May import: ``fingerprint``, ``matching``, ``stores``, ``workers``, ``guards``, ``crawl``, ``batch``, and
``extras``, ``output``, ``version``.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pyspark import SparkConf, SparkContext  # fails here, not mid-run, when PySpark is missing
from pyspark.java_gateway import launch_gateway
from pyspark.serializers import PickleSerializer
from pyspark.sql import SparkSession

from .inputs import Fields
from .job import JobOptions, JobResult, run, usable_output
from .jvm import Jvm, log_file

__all__ = ["JobOptions", "JobResult", "Jvm", "run", "run_job", "session"]


def session(master: str | None = None, cores: int | None = None, jvm: Jvm | None = None) -> Any:
    """A Spark session: ``master``, else spark-submit's, else local mode on every core (or ``cores``); the
    JVM it starts as ``jvm`` says (``jvm.Jvm``: by default its output inherited).  Its Python workers run this
    interpreter, so they import this package as installed here."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    conf = SparkConf().setAppName("simhash-dedup").set("spark.ui.showConsoleProgress", "false")
    if not master and "PYSPARK_GATEWAY_PORT" in os.environ:  # under spark-submit: its master, its JVM
        return _quiet(SparkSession.builder.config(conf=conf).getOrCreate())
    master = master or f"local[{cores or '*'}]"
    jvm = jvm or Jvm(master)
    conf.setMaster(master).setAll(list(jvm.conf().items()))
    jvm.gateway = launch_gateway(conf, popen_kwargs=jvm.popen_kwargs())
    # the pages' rows are plain data of this package's classes: pickle, not cloudpickle (functions still are)
    return _quiet(SparkSession(SparkContext(conf=conf, gateway=jvm.gateway, serializer=PickleSerializer())))


def _quiet(spark: Any) -> Any:
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def run_job(arguments: argparse.Namespace, settings: Any) -> int:
    """The ``spark`` command: run the job, then one line of outcomes and one of the work done."""
    from ..batch.dedup import pages_read

    options = JobOptions(
        Fields(settings.html_field, settings.url_field, arguments.order_field, arguments.all_statuses),
        tuple(arguments.against),
        arguments.argument_order,
        **({"shard_pages": arguments.shard_pages} if arguments.shard_pages else {}),
    )
    usable_output(arguments.output)  # before Java starts
    jvm = Jvm(arguments.master or "local[*]", log=log_file(), archive=True)
    spark, result, failed = None, None, False
    with _without_py4j_tracebacks():
        try:
            spark = session(arguments.master, jvm=jvm)
            result = run(spark, arguments.inputs, arguments.output, settings, options)
            _said(result, arguments.output)
            if jvm.writes_archive:
                print("simhash-dedup: saving Java's classes for the next runs' start (once)", file=sys.stderr)
        except KeyboardInterrupt:
            print(
                f"simhash-dedup: interrupted; nothing written to {arguments.output} (a new run starts over)",
                file=sys.stderr,
            )
            return 130
        except (ValueError, OSError):  # a wrong input or output: one line, said by the command
            raise
        except BaseException:
            print(f"simhash-dedup: the run failed; the JVM's log is {jvm.log_path}", file=sys.stderr)
            failed = True
            raise
        finally:
            jvm.stop(spark)
            if not failed:
                jvm.keep_log(Path(arguments.output) if result is not None else None)
    return 0 if pages_read(result.happened) else 1


@contextlib.contextmanager
def _without_py4j_tracebacks() -> Iterator[None]:
    """Py4J logs a traceback on the root logger for a call that Ctrl-C interrupts (PySpark's handler cancels the
    jobs, then raises ``KeyboardInterrupt``): left out, so that an interrupted run says one line.  Every other
    record is printed as Python prints it without a handler."""

    class NotPy4j(logging.StreamHandler):
        def filter(self, record: logging.LogRecord) -> bool:
            return "py4j" not in Path(record.pathname).parts and record.levelno >= logging.WARNING

    root, handler = logging.getLogger(), NotPy4j()
    root.addHandler(handler)
    try:
        yield
    finally:
        root.removeHandler(handler)


def _said(result: JobResult, output: str) -> None:
    """The bad inputs, the outcomes and the work, a line each."""
    from ..batch.dedup import summary

    for message in result.bad:
        print(f"simhash-dedup: {message}", file=sys.stderr)
    work = result.work
    print(f"simhash-dedup: {summary(result.happened)}", file=sys.stderr)
    print(
        f"simhash-dedup: {work['fingerprinted']:,} distinct pages fingerprinted, {work['compared']:,} compared "
        f"({work['against']:,} of earlier runs) in {work['shards']:,} shard(s), {work['candidate_pairs']:,} candidate "
        f"pairs, decided in {work['rounds']} round(s) of joins and {work['pairs_on_driver']:,} pairs on the driver; "
        f"output in {output}",
        file=sys.stderr,
    )
