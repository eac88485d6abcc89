"""The report: one self-contained HTML file that shows what was dropped and why.

    simhash-dedup report STORE|DECISIONS.jsonl|redis://… -o report.html

It reads a decision log (a crawl's SQLite store, a Redis store, or the
``--decisions`` file of ``simhash-dedup dedup``) and shows the counts, the
histograms of distance and similarity with the thresholds marked, the
clusters (a kept page and its dropped copies) largest first, and the pairs
nearest the threshold first, each as a side-by-side diff of the two texts.
Nothing in it is fetched when it is opened: no script, no stylesheet, no
font, no image from elsewhere.

Reading a log from wherever it was kept (``log``), the page (``render``) with its
histograms (``plots``) and diffs (``diff``), and the URLs that name each kept
page (``aliases``, the ``aliases`` command).

May import: ``fingerprint``, ``matching``, ``stores``, ``workers``, ``guards``, ``crawl``, ``batch``, ``spark``, and
``extras``, ``output``, ``version``.
"""

from .log import Log, load_log
from .render import render, write_report

__all__ = ["Log", "load_log", "render", "write_report"]
