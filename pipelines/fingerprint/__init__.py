"""The fingerprint: a page's bytes in, its two SimHash fingerprints and its sketch out.

Holds the decoding and parse (``document``), the compiled walk that reads a page (``treewalk.pyx`` with
``readability.pxi``), its own and visible texts, name and languages (``content``, ``languages``), the
structure's features (``structure``), SimHash (``simhash``), the sketch (``sketch``), the per-word loops
(``textloops.pyx``), the IDF tables (``data/``), what a page declares as its canonical URL (``declared``),
``Fingerprinter`` (``fingerprinter``), and giving freed memory back to the system (``process_memory``);
``vendor/`` holds the xxHash header the compiled loops hash with.

May import: nothing else of this package, nor Scrapy, Twisted or Redis: it is what a worker process loads.
"""

from .fingerprinter import SCHEME_VERSION, Fingerprint, Fingerprinter

__all__ = ["SCHEME_VERSION", "Fingerprint", "Fingerprinter"]
