"""The decision log: drops and borderline keeps, with their texts, kept by each store within its bounds."""

from __future__ import annotations

import time

import redis

from scrapy_simhash_dedup.fingerprint.fingerprinter import Fingerprint, packed
from scrapy_simhash_dedup.matching.policy import BODY, Policy, dropped
from scrapy_simhash_dedup.stores.memory import MemoryStore
from scrapy_simhash_dedup.stores.records import BORDERLINE, DROPPED, Decision, DecisionLogEntries
from scrapy_simhash_dedup.stores.redis.keys import remove_redis_store
from scrapy_simhash_dedup.stores.redis.log import read_redis_log
from scrapy_simhash_dedup.stores.redis.store import RedisStore
from scrapy_simhash_dedup.stores.sqlite.readers import read_log
from scrapy_simhash_dedup.stores.sqlite.store import SqliteStore

from .pages import plain_sketch

SCHEME = "test-scheme"


def page(content: int, words: list[str], text: str = "") -> Fingerprint:
    """A long page whose sketch is built from ``words``' 3-grams; ``text`` its own text."""
    sketch = plain_sketch(" ".join(words[n : n + 3]) for n in range(len(words) - 2))
    return Fingerprint(content, 7, sketch=sketch, text=packed(text))


def decision(n: int, text: str | None = "a b c") -> Decision:
    return Decision(
        float(n),
        DROPPED,
        f"https://a.test/{n}",
        "https://a.test/0",
        "content",
        1,
        0,
        0.9,
        0.65,
        packed(text),
        packed(text),
    )


def test_a_near_candidate_that_fails_the_sketch_is_a_borderline_keep():
    store = MemoryStore(Policy())
    words = [f"w{n}" for n in range(300)]
    other = [f"x{n}" for n in range(300)]  # no 3-gram in common
    assert store.check_and_add("https://a.test/1", page(0xF0F0, words)) is None
    near = store.check_and_add("https://a.test/2", page(0xF0F0 ^ 0b111, other))  # 3 bits away
    assert near is not None and not dropped(near) and len(store) == 2  # kept
    assert (near.url, near.reason, near.content_distance) == ("https://a.test/1", "similarity", 3)
    assert near.similarity < near.similarity_needed == 0.65
    copy = store.check_and_add("https://a.test/3", page(0xF0F0 ^ 0b1, words))
    assert dropped(copy) and copy.url == "https://a.test/1" and len(store) == 2


def test_a_long_text_beyond_the_search_distance_is_no_candidate_at_all():
    """Two texts found beyond the search distance are neither a drop nor a borderline keep (nothing to review,
    no URL to look up), whatever their words; within it, the same large body is one document (a title of other
    words moves a text's SimHash beyond the content distance: ``Policy.the_same_body``)."""
    policy = Policy()
    store = MemoryStore(policy)
    words = [f"w{n}" for n in range(300)]
    assert store.check_and_add("https://a.test/0", page(0, words)) is None
    assert (
        store.check_and_add("https://a.test/near", page((1 << (policy.content_distance + 1)) - 1, words)).reason == BODY
    )
    store = MemoryStore(policy)
    far = (1 << (policy.search_distance + 1)) - 1  # search_distance + 1 bits away
    assert store.check_and_add("https://a.test/1", page(0, words)) is None
    assert store.check_and_add("https://a.test/2", page(far, words)) is None  # the same words: kept, not borderline
    assert store.check_and_add("https://a.test/3", page(far ^ 1, words)).reason == "content"  # 1 bit from the second


def test_the_reviewer_gives_both_texts_of_a_pair_while_it_holds_them():
    log_entries = DecisionLogEntries(keep_texts=True, recent=1)
    store = MemoryStore(Policy())
    words = [f"w{n}" for n in range(300)]
    for url, text in (("https://a.test/1", "first kept"), ("https://a.test/2", "second kept")):
        assert log_entries.kept(url, page(hash(url) & 0xFFFF_0000, words[::-1] + [url], text), None) is None
    match = store.check_and_add("https://a.test/1", page(1, words, "first kept"))
    match = store.check_and_add("https://a.test/copy", page(1, words, "the copy"))
    entry = log_entries.dropped("https://a.test/copy", page(1, words, "the copy"), match)
    assert (entry.outcome, entry.text, entry.kept_url) == (DROPPED, "the copy", "https://a.test/1")
    assert entry.kept_text is None  # only the most recent kept page's text is held (recent=1)
    entry = log_entries.decision(
        BORDERLINE, "https://a.test/x", None, match.__class__("https://a.test/2", "similarity", 5, 0, 0.1, 0.65, False)
    )
    assert entry.kept_text == "second kept" and entry.text is None


def test_sqlite_keeps_the_latest_decisions_and_the_latest_texts(tmp_path):
    store = SqliteStore(Policy(), tmp_path / "seen.sqlite", SCHEME, commit_every=3, decisions=5, texts=2)
    for n in range(1, 9):
        store.record(decision(n))
    store.save_run({"spider": "s", "counts": {"dropped": 8}})
    store.close()
    decisions, runs = read_log(tmp_path / "seen.sqlite")
    assert [d.url for d in decisions] == [f"https://a.test/{n}" for n in range(4, 9)]
    assert [d.text is not None for d in decisions] == [False, False, False, True, True]
    assert decisions[-1] == decision(8) and runs == [{"spider": "s", "counts": {"dropped": 8}}]
    reopened = SqliteStore(Policy(), tmp_path / "seen.sqlite", SCHEME)  # a store with a log opens again
    reopened.close()


def test_redis_keeps_the_log_in_capped_streams(redis_url):
    client = redis.Redis.from_url(redis_url)
    key = f"decisions-{time.monotonic_ns()}"
    store = RedisStore(Policy(), client, key, SCHEME, decisions=50, texts=3)
    store.open()
    for n in range(1, 11):
        store.record(decision(n, text=f"text {n}"))
    store.log.send()
    store.save_run({"spider": "s", "counts": {"dropped": 10}})
    decisions, runs = read_redis_log(client, key)
    assert [d.url for d in decisions] == [f"https://a.test/{n}" for n in range(1, 11)]
    assert decisions[-1] == decision(10, text="text 10")
    assert [d.text for d in decisions[-4:]] == [None, "text 8", "text 9", "text 10"]  # texts for the latest 3
    assert runs == [{"spider": "s", "counts": {"dropped": 10}}]
    assert remove_redis_store(client, key) >= 3  # the log goes with the store
