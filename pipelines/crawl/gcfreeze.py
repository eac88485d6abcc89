"""The objects a crawl starts with, kept out of Python's full garbage collections while it runs.

Once Scrapy, the filter and the project are loaded, a crawl process holds
some 90,000 objects that Python's cyclic garbage collector tracks (functions,
classes, their dictionaries...), and every full collection walks all of them,
one every ~100 pages of a crawl.  In ``bench/speed/crawl.py``'s saturated crawl
without the filter the collector took 0.50 of Scrapy's 1.88 ms a page, 0.36 of
them in full collections, which also evict from the caches what the crawl's
own code reads next.  ``gc.freeze`` when a spider opens moves those objects to a
permanent generation that collections skip, after a full collection, so that no
garbage is frozen.  When the last crawl of the process that froze them closes,
``gc.unfreeze`` hands them back: what became cyclic garbage meanwhile is
collected then.  Reference counting frees everything else as always; only
when cycles among those objects are found changes.

On by default (``SIMHASH_DEDUP_GC_FREEZE = False`` leaves the collector alone), because what it can cost is
bounded: only objects that exist when the spider opens are frozen (modules, classes, the crawler and its
components, which mostly live to the end anyway), so what can outlive its time is a cycle among them and
what it references when it becomes garbage, until the close collects it (``tests/test_gcfreeze.py``).
Everything the crawl makes afterwards (responses, requests, items, their cycles) is collected as always.
What it saves is measured in ``bench/results/speed/crawl.json`` and ``docs/internals/performance.md``.
"""

from __future__ import annotations

import gc


class StartupObjects:
    """Freezes the process's objects while any crawl that asked for it is open (crawls of one process may
    overlap: the first to open freezes, a later one freezes what was made since, the last to close thaws)."""

    open_crawls = 0

    @classmethod
    def freeze(cls) -> int:
        """Freeze every object tracked now; the number frozen in all."""
        cls.open_crawls += 1
        gc.collect()
        gc.freeze()
        return gc.get_freeze_count()

    @classmethod
    def thaw(cls) -> None:
        """A crawl that froze closed: the objects go back to the collector once no such crawl is open."""
        cls.open_crawls = max(0, cls.open_crawls - 1)
        if cls.open_crawls == 0:
            gc.unfreeze()
