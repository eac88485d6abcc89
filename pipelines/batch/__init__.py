"""Batch mode: the pipeline's decisions over pages already on disk (HTML folders, JSON Lines, WARC).

    simhash-dedup dedup INPUT... [-o kept.jsonl] [--decisions decisions.jsonl] [--store PATH|redis://…]

Pages are read in input order, fingerprinted in the pipeline's worker
processes, and decided in that order by the same store classes and policy as
in a crawl: a folder deduplicated here keeps the pages a crawl of the same
pages in the same order keeps.

The inputs read (``sources``), the worker processes driven without a reactor
(``fingerprints``), the run and its outcomes (``dedup``), the progress bar
(``progress``).

May import: ``fingerprint``, ``matching``, ``stores``, ``workers``, ``guards``, ``crawl``, and ``extras``,
``output``, ``version``.
"""

from .dedup import dedup
from .sources import BadInput, Page, read_inputs

__all__ = ["BadInput", "Page", "dedup", "read_inputs"]
