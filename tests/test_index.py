"""The sub-linear index returns exactly what brute force returns, in every layout it may take."""

from __future__ import annotations

import random

import numpy as np
import pytest

from scrapy_simhash_dedup.matching.index import MAX_TABLES, SimhashIndex, choose_layout, layout_options


def planted(count: int, max_distance: int, seed: int) -> np.ndarray:
    """Random fingerprints where every tenth is followed by a neighbour 0..k+1 bits away."""
    rng, pick = np.random.default_rng(seed), random.Random(seed)
    fingerprints = rng.integers(0, 2**64, size=count, dtype=np.uint64)
    for i in range(0, count - 1, 10):
        flipped = sum(1 << bit for bit in pick.sample(range(64), pick.randint(0, max_distance + 1)))
        fingerprints[i + 1] = np.uint64(int(fingerprints[i]) ^ flipped)
    return fingerprints


def assert_exact(index: SimhashIndex, fingerprints: np.ndarray, step: int) -> None:
    """Queries return every stored key within the distance, nearest first; planted ones included."""
    checked_neighbours = 0
    for query in range(0, len(fingerprints), step):
        distances = np.bitwise_count(fingerprints ^ fingerprints[query])
        near = np.flatnonzero(distances <= index.max_distance)
        expected = sorted(zip(near.tolist(), distances[near].tolist()))
        got = index.query(int(fingerprints[query]))
        assert sorted(got) == expected
        assert [d for _, d in got] == sorted(d for _, d in got)
        checked_neighbours += len(expected) - 1
    assert checked_neighbours > 20  # planted neighbours were really found


def every_layout() -> list[tuple[int, object]]:
    return [(k, layout) for k in (0, 3, 6, 8) for layout in layout_options(k) if sum(layout.probes()) <= 5_000]


@pytest.mark.parametrize(("max_distance", "layout"), every_layout())
def test_query_equals_brute_force(max_distance: int, layout) -> None:
    fingerprints = planted(20_000, max_distance, seed=max_distance)
    index = SimhashIndex(max_distance, layout=layout)
    index.add_many(np.arange(8_000), fingerprints[:8_000])  # a loaded store, then live adds
    for key in range(8_000, len(fingerprints)):
        index.add(key, int(fingerprints[key]))
    assert len(index) == len(fingerprints)
    assert index.layout == layout
    assert_exact(index, fingerprints, step=31)


def test_a_growing_index_changes_layout_and_stays_exact() -> None:
    fingerprints = planted(400_000, 8, seed=1)  # 6 tables while small, 5 from ~370k
    index = SimhashIndex(8)
    first = index.layout
    for key, fingerprint in enumerate(fingerprints.tolist()):
        index.add(key, fingerprint)
    assert index.layout != first
    best = choose_layout(8, len(fingerprints))
    assert index.layout.cost(len(fingerprints)) <= best.cost(len(fingerprints)) / 0.8
    assert_exact(index, fingerprints, step=397)


def test_empty_index_and_buffer_only() -> None:
    index = SimhashIndex(3)
    assert index.query(12345) == []
    index.add(7, 0b1011)
    assert index.query(0b0011) == [(7, 1)]


@pytest.mark.parametrize("max_distance", range(9))
def test_chosen_layouts_stay_within_the_memory_budget(max_distance: int) -> None:
    for size in (0, 10**6, 10**8):
        assert len(choose_layout(max_distance, size).tables) <= MAX_TABLES


def test_wrong_distance_is_refused() -> None:
    with pytest.raises(ValueError):
        SimhashIndex(65)


def test_keys_need_not_be_positions() -> None:
    fingerprints = planted(5_000, 3, seed=9)
    index = SimhashIndex(3)
    for n, fingerprint in enumerate(fingerprints):
        index.add(1_000_000 + 7 * n, int(fingerprint))
    for query in range(0, len(fingerprints), 50):
        distances = np.bitwise_count(fingerprints ^ fingerprints[query])
        expected = sorted((1_000_000 + 7 * k, int(d)) for k, d in enumerate(distances) if d <= 3)
        assert sorted(index.query(int(fingerprints[query]))) == expected


def test_a_store_finds_the_same_pages_by_scanning_its_rows_as_through_its_index(monkeypatch):
    """A small store scans its rows instead of querying the index (``SCAN_ROWS``): the same matches, in
    the same order, either way."""
    from scrapy_simhash_dedup.fingerprint.fingerprinter import Fingerprint
    from scrapy_simhash_dedup.matching import matcher as matching
    from scrapy_simhash_dedup.matching.policy import Policy
    from scrapy_simhash_dedup.stores.memory import MemoryStore

    rng = random.Random(7)
    store = MemoryStore(Policy())
    kept = [rng.getrandbits(64) for _ in range(3000)]
    for n, content in enumerate(kept):
        store.check_and_add(f"https://a.test/{n}", Fingerprint(content, None, short=True))
    queries = [kept[rng.randrange(len(kept))] ^ (1 << rng.randrange(64)) for _ in range(200)]
    queries += [rng.getrandbits(64) for _ in range(200)]
    scanned = [store.matcher.near(store.matcher.content, query, None) for query in queries]
    monkeypatch.setattr(matching, "SCAN_ROWS", 0)
    indexed = [store.matcher.near(store.matcher.content, query, None) for query in queries]
    assert scanned == indexed and sum(map(len, scanned)) >= 200
