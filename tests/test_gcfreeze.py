"""Freezing the objects a crawl starts with out of full garbage collections, and giving them back."""

from __future__ import annotations

import gc

from scrapy_simhash_dedup.crawl.gcfreeze import StartupObjects


def test_objects_stay_frozen_until_the_last_freezing_crawl_of_the_process_closes() -> None:
    assert gc.get_freeze_count() == 0
    try:
        first = StartupObjects.freeze()
        assert first == gc.get_freeze_count() > 1_000  # this process's modules, classes and functions at least
        made_since = [[n] for n in range(500)]  # a second crawl's own objects, made while the first runs
        assert StartupObjects.freeze() >= first + len(made_since)
        StartupObjects.thaw()  # one of the two closed: the other still runs frozen
        assert gc.get_freeze_count() >= first
        StartupObjects.thaw()
        assert gc.get_freeze_count() == 0
        StartupObjects.thaw()  # a thaw with no crawl open changes nothing
        assert StartupObjects.open_crawls == 0 and gc.get_freeze_count() == 0
    finally:
        StartupObjects.open_crawls = 0
        gc.unfreeze()


def test_garbage_made_before_a_freeze_is_collected_not_frozen() -> None:
    class Cycle:
        pass

    try:
        cycle = Cycle()
        cycle.itself = cycle
        del cycle
        StartupObjects.freeze()
        gc.unfreeze()  # what was frozen is back in the oldest generation: a frozen cycle would be there
        assert not [thing for thing in gc.get_objects() if type(thing) is Cycle]
    finally:
        StartupObjects.open_crawls = 0
        gc.unfreeze()
