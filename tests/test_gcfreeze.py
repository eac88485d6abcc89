"""Freezing the objects a crawl starts with out of full garbage collections, and giving them back."""

from __future__ import annotations

import gc
import weakref

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


def test_cycles_made_while_frozen_are_collected_and_frozen_ones_wait_for_the_thaw() -> None:
    """What the freeze can cost is bounded: a cycle the crawl makes after the freeze is collected as always; a
    cycle among objects that existed at the freeze (and what it references when it becomes garbage) waits for the
    close."""

    class Cycle:
        pass

    def made_cycle() -> weakref.ref:
        cycle = Cycle()
        cycle.itself = cycle
        return weakref.ref(cycle)

    try:
        old = Cycle()
        old.itself = old
        old_alive = weakref.ref(old)
        StartupObjects.freeze()
        young_alive = made_cycle()
        old.payload = [Cycle()]  # made after the freeze, referenced from a frozen object
        payload_alive = weakref.ref(old.payload[0])
        del old
        gc.collect()
        assert young_alive() is None  # the crawl's own cycles: collected while frozen
        assert old_alive() is not None and payload_alive() is not None  # the start-up cycle waits
        StartupObjects.thaw()
        gc.collect()
        assert old_alive() is None and payload_alive() is None  # collected at the close
    finally:
        StartupObjects.open_crawls = 0
        gc.unfreeze()
