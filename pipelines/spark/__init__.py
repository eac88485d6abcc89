"""Deduplicating stored pages on Spark, with the crawl's own fingerprints and decisions.

``simhash-dedup spark INPUT... -o DIR`` runs ``job.run`` in Spark's local
mode (all cores), or on a cluster with ``--master URL`` or through
``spark-submit`` (``submit.py``).  Only this sub-package imports PySpark (the
extra ``[spark]``); the crawl and ``simhash-dedup dedup`` never do.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from pyspark.sql import SparkSession  # noqa: F401  (fails here, not mid-run, when PySpark is missing)

from .inputs import Fields
from .job import JobOptions, JobResult, run

__all__ = ["JobOptions", "JobResult", "run", "run_job", "session"]


def session(master: str | None = None, cores: int | None = None) -> Any:
    """A Spark session: ``master``, else spark-submit's, else local mode on every core (or ``cores``).
    Its Python workers run this interpreter, so they import this package as installed here."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName("simhash-dedup").config("spark.ui.showConsoleProgress", "false")
    if master or "PYSPARK_GATEWAY_PORT" not in os.environ:  # not under spark-submit, which names its master
        builder = builder.master(master or f"local[{cores or '*'}]")
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def run_job(arguments: argparse.Namespace, settings: Any) -> int:
    """The ``spark`` command: run the job, then one line of outcomes and one of the work done."""
    from ..batch.dedup import pages_read, summary

    options = JobOptions(Fields(settings.html_field, settings.url_field, arguments.order_field, arguments.all_statuses),
                         tuple(arguments.against), arguments.argument_order,
                         **({"shard_pages": arguments.shard_pages} if arguments.shard_pages else {}))
    spark = session(arguments.master)
    try:
        result = run(spark, arguments.inputs, arguments.output, settings, options)
    finally:
        spark.stop()
    for message in result.bad:
        print(f"simhash-dedup: {message}", file=sys.stderr)
    work = result.work
    print(f"simhash-dedup: {summary(result.happened)}", file=sys.stderr)
    print(f"simhash-dedup: {work['fingerprinted']:,} distinct pages fingerprinted, {work['compared']:,} compared "
          f"({work['against']:,} of earlier runs) in {work['shards']:,} shard(s), {work['candidate_pairs']:,} candidate "
          f"pairs, decided in {work['rounds']} round(s) of joins and {work['pairs_on_driver']:,} pairs on the driver; "
          f"output in {arguments.output}", file=sys.stderr)
    return 0 if pages_read(result.happened) else 1
