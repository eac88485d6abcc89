"""One store for many crawler processes: the log of kept pages in Redis.

Redis holds every kept page once, in order, as a log cut into chunks of
``CHUNK`` pages: ``<key>:fp:<n>`` (a string of 24-byte records: both
fingerprints, the time kept, which parts exist) and ``<key>:pages:<n>`` (a
list of sketch + URL), with ``<key>:meta`` (epoch, count, scheme).

Each process reads the log's fingerprints at open into a replica: the same
in-memory index as ``MemoryStore``.  The decision runs in the crawler
processes: a batch of pages is compared with the replica and with the pages
before it in the batch, and those found unique go to one Lua script
(``check_and_add.lua``) that appends them only if the log still ends where
the replica does.  If it grew, the script returns the new records instead;
the process compares its pages with them (a few, by brute force) and tries
again.  Redis runs scripts one at a time, so the decision is atomic across
processes and machines: of two near-duplicates checked at once by two
processes, exactly one is kept.  Redis's one thread only appends, whatever
the distances and however many processes share it.
"""

from __future__ import annotations

import json
import logging
import secrets
import struct
import time
from dataclasses import asdict
from array import array
from collections import deque
from collections.abc import Callable
from importlib.resources import files
from typing import Any, TypeVar

import numpy as np
import redis

from .decisions import Decision, Skip, packed, unpacked
from .fingerprint import Fingerprint
from .indexloops import near_any
from .policy import Match, Mode, Policy, dropped
from .stores import MemoryStore, StoreUnavailable, fingerprint_rows
from .urlrules import FETCHED_URLS, Rule

logger = logging.getLogger(__name__)

CHUNK = 4096  # pages per chunk: a 96 KB string and a list, read or expired together
RECORD = np.dtype([("content", ">u8"), ("structure", ">u8"), ("stamp", ">u4"), ("flags", "u1"), ("spare", "V3")])
_RECORD_STRUCT = struct.Struct(">QQIB3x")  # the same record, packed one at a time
_PARTS = np.array([1, 2, 4], dtype=np.uint8)  # a record's flags: has content, has structure, is short
MAX_UNCHECKED = 10_000  # pages kept while Redis was down, added when it answers again (the latest ones)
MAX_BATCH = 100  # pages per script call
MAX_TAIL = 5_000  # new records one script call returns; a replica further behind reads the log first
MAX_PAIRS = 1000  # (new record, page) pairs the script compares on a first try; more, the caller does
MAX_RUNS = 100  # runs whose counts are kept (<key>:runs)
RETRY_SECONDS = 1.0  # after a failure, items pass unchecked (fail-open) this long before Redis is tried again
T = TypeVar("T")
_SCRIPT = files(__package__).joinpath("check_and_add.lua").read_text()


class RedisStore(MemoryStore):
    """Kept pages shared by every process that uses the same Redis key."""

    def __init__(self, policy: Policy, client: redis.Redis, key: str, scheme: str, expire_seconds: int = 0,
                 decisions: int = 100_000, texts: int = 1_000) -> None:
        super().__init__(policy)
        self.client = client
        self.key = key
        self.scheme = scheme
        self.expire_seconds = expire_seconds
        self.decisions_kept = decisions
        self.texts_kept = texts
        self._log: deque[Decision | Skip | Rule] = deque(maxlen=MAX_UNCHECKED)  # recorded (reactor), to send (batch thread)
        self._script = client.register_script(_SCRIPT)
        self._epoch: bytes | None = None
        self._stamps = array("I")  # per replica row: when it was kept (server clock, seconds)
        self._clock_offset = 0.0  # the server's clock minus ours: pages age by the server's clock
        self._retry_at = 0.0
        self._unchecked: list[tuple[str, Fingerprint]] = []  # kept while Redis was down
        self._batch_pages: dict[int, tuple[str, bytes | None]] = {}  # rows of a batch's pages, for the while
        # the distances the script compares new records with pages at (-1: that part is not)
        self._limits = np.array([
            policy.content_distance if policy.mode is not Mode.STRUCTURE else -1,
            policy.structure_distance if policy.mode in (Mode.STRUCTURE, Mode.EITHER) else -1,
        ])

    def check_and_add(self, url: str, fingerprint: Fingerprint) -> Match | None:
        return self.check_and_add_many([(url, fingerprint)])[0]

    def check_and_add_many(self, pages: list[tuple[str, Fingerprint]]) -> list[Match | None]:
        """Each page's match, or ``None`` when it was kept; one script call for the batch.

        Raises ``StoreUnavailable`` when Redis fails, and for ``RETRY_SECONDS`` after; the
        pages are then kept unchecked by the caller, and added first when Redis answers again
        (up to ``MAX_UNCHECKED``), so that their later copies are still caught.
        """
        try:
            while self._unchecked:  # kept while Redis was down: added first, a batch at a time
                self._guarded(self._check_all, self._unchecked[:MAX_BATCH])
                del self._unchecked[:MAX_BATCH]
            return self._guarded(self._check_all, pages)
        except StoreUnavailable:
            self._unchecked = (self._unchecked + pages)[-MAX_UNCHECKED:]
            raise
        finally:
            self.send_log()

    def record(self, decision: Decision) -> None:
        if self.decisions_kept:
            self._log.append(decision)

    def record_skip(self, skip: Skip) -> None:
        if self.decisions_kept:
            self._log.append(skip)

    def save_rules(self, rules: list[Rule]) -> None:
        """Sent with the log: in the hash ``<key>:rules`` each rule's support as this process knows it
        (the last process to save a rule sets it); in ``<key>:refuted`` its first counterexample, for good."""
        self._log.extend(rules)

    def load_rules(self) -> tuple[list[Rule], list[str]]:
        """The rules under ``<key>:rules`` and the URLs of the last ``FETCHED_URLS`` pages kept."""
        rules = read_redis_rules(self.client, self.key)[0]
        first = max(0, self._rows - FETCHED_URLS)
        pipe = self.client.pipeline(transaction=False)
        for chunk in range(first // CHUNK, (self._rows - 1) // CHUNK + 1 if self._rows else 0):
            pipe.lrange(f"{self.key}:pages:{chunk}", 0, -1)
        entries = [entry for chunk in pipe.execute() for entry in chunk][first % CHUNK:]
        return rules, [entry[1 + entry[0]:].decode() for entry in entries if entry and entry != b"\0"]

    def save_run(self, run: dict[str, Any]) -> None:
        if not self.decisions_kept:
            return
        try:
            self.client.pipeline(transaction=False).lpush(f"{self.key}:runs", json.dumps(run)).ltrim(
                f"{self.key}:runs", 0, MAX_RUNS - 1).execute()
        except redis.RedisError as error:
            logger.warning("simhash_dedup: this run's counts could not be saved in Redis: %s", error)

    def send_log(self) -> None:
        """Append the decisions recorded since the last call to the capped streams ``<key>:decisions``
        (every field but the texts) and ``<key>:texts`` (whole decisions, the most recent
        ``texts_kept``), the skipped links and requests to ``<key>:skipped``, and save the URL rules
        that changed.  The log never fails a check: on an error the entries wait for the next call
        (at most ``MAX_UNCHECKED``)."""
        if not self._log or time.monotonic() < self._retry_at:
            return
        sending = [self._log.popleft() for _ in range(len(self._log))]
        pipe = self.client.pipeline(transaction=False)
        for decision in sending:
            if isinstance(decision, Rule):
                pipe.hset(f"{self.key}:rules", _rule_field(decision), decision.support)
                if decision.refuted_by is not None:
                    pipe.hsetnx(f"{self.key}:refuted", _rule_field(decision), decision.refuted_by)
                continue
            if isinstance(decision, Skip):
                pipe.xadd(f"{self.key}:skipped", _stream_fields(asdict(decision)), maxlen=self.decisions_kept,
                          approximate=True)
                continue
            record = decision.to_json()
            text, kept_text = record.pop("text"), record.pop("kept_text")
            pipe.xadd(f"{self.key}:decisions", _stream_fields(record), maxlen=self.decisions_kept, approximate=True)
            if (text or kept_text) and self.texts_kept:
                pipe.xadd(f"{self.key}:texts", _stream_fields(decision.to_json()), maxlen=self.texts_kept,
                          approximate=False)  # exact: a few large entries, bounded by their count
        try:
            pipe.execute()
        except redis.RedisError:
            self._log.extendleft(reversed(sending))

    def open(self) -> None:
        """Create the store if no process did and read the log (else on the first check)."""
        self._guarded(self.sync)

    def _guarded(self, action: Callable[..., T], *args: Any) -> T:
        if time.monotonic() < self._retry_at:
            raise StoreUnavailable("Redis failed a moment ago; retrying soon")
        try:
            return action(*args)
        except redis.RedisError as error:
            self._retry_at = time.monotonic() + RETRY_SECONDS
            raise StoreUnavailable(f"{type(error).__name__}: {error}") from error

    def _check_all(self, pages: list[tuple[str, Fingerprint]]) -> list[Match | None]:
        if self._epoch is None:
            self.sync()
        results: list[Match | None] = []
        for start in range(0, len(pages), MAX_BATCH):
            checked = None
            while checked is None:  # None: the replica was brought up to date first
                checked = self._check(pages[start : start + MAX_BATCH])
            results += checked
        return results

    def sync(self) -> None:
        """Read the log into the replica up to its end (and start over if the store was created again).

        Needed at open and when the replica fell behind: otherwise each script call returns
        the records the replica misses."""
        first = self._epoch is None
        if first:
            self._open()
        read: list[np.ndarray] = []  # appended at once: one sort of the replica, not one per chunk
        rows = self._rows
        while True:
            chunk, offset = divmod(rows, CHUNK)
            pipe = self.client.pipeline(transaction=False)
            pipe.hmget(self._meta, "epoch", "count")
            pipe.getrange(f"{self.key}:fp:{chunk}", offset * RECORD.itemsize, -1)
            pipe.time()
            (epoch, count), data, (seconds, _) = pipe.execute()
            self._set_clock(seconds)
            if epoch != self._epoch:  # Redis lost the store (restart without persistence, reset): start over
                self._start_over()
                read, rows = [], self._rows
                continue
            count = int(count or 0)
            missing = min(count, (chunk + 1) * CHUNK) - rows
            if missing > 0:  # a chunk that expired reads short: its pages become rows that never match
                records = np.zeros(missing, dtype=RECORD)
                data = data[: missing * RECORD.itemsize]
                records[: len(data) // RECORD.itemsize] = np.frombuffer(data, dtype=RECORD)
                read.append(records)
                rows += missing
            if rows >= count:
                break
        if read:
            self._append_records(np.concatenate(read))
        if first:  # what the store held when this crawl first read it, earlier crawls kept
            self.remembered = self._rows

    def close(self) -> None:
        try:
            self.send_log()
        except redis.RedisError:
            pass
        self.client.close()

    @property
    def _meta(self) -> str:
        return f"{self.key}:meta"

    def _open(self) -> None:
        """Create the store if no process did, check its scheme, and read the whole log."""
        pipe = self.client.pipeline(transaction=True)
        pipe.hsetnx(self._meta, "epoch", secrets.token_hex(8))  # the first process to come creates it
        pipe.hsetnx(self._meta, "scheme", self.scheme)
        pipe.hmget(self._meta, "epoch", "scheme")
        *_, (epoch, scheme) = pipe.execute()
        if scheme.decode() != self.scheme:
            raise ValueError(
                f"The Redis store {self.key} holds fingerprints of scheme {scheme.decode()}; this crawl makes "
                f"{self.scheme}. Use another SIMHASH_DEDUP_REDIS_KEY, or SIMHASH_DEDUP_RESET to empty it."
            )
        self._epoch = epoch

    def _start_over(self) -> None:
        MemoryStore.__init__(self, self.policy)
        self._stamps = array("I")
        self._open()

    def _append_records(self, records: np.ndarray) -> None:
        """Rows for pages of the log (all zeros: a page whose chunk expired, never matched)."""
        if not len(records):
            return
        fingerprints = np.empty((len(records), 2), dtype=np.uint64)
        fingerprints[:, 0], fingerprints[:, 1] = records["content"], records["structure"]
        self._load_rows(fingerprints, records["flags"][:, None] & _PARTS != 0)
        self._stamps.extend(records["stamp"].tolist())

    def _check(self, pages: list[tuple[str, Fingerprint]]) -> list[Match | None] | None:
        """Pages matched in the replica or earlier in the batch; the others appended through the
        script, once no other process appended since the replica's last read.  ``None``: the
        replica started over or read the log, check again."""
        results: list[Match | None] = [self._find(url, page) for url, page in pages]
        rows = fingerprint_rows([page for _, page in pages])
        max_pairs = MAX_PAIRS
        while True:
            seen = self._rows
            pending = [i for i, match in enumerate(results) if not dropped(match)]
            pending_rows = (rows[0][pending], rows[1][pending])
            in_batch = self._match_in_batch([pages[i] for i in pending], pending_rows)
            kept = [i for i, match in zip(pending, in_batch) if not dropped(match)]
            if not kept:
                break
            args = [self.key, self._epoch, seen, CHUNK, self.expire_seconds, MAX_TAIL, max_pairs, *self._limits.tolist()]
            args += [pack_record(pages[i][1]) + pack_entry(*pages[i]) for i in kept]
            status, *reply = self._script(keys=[self._meta], args=args)
            if status == b"epoch":
                logger.warning("simhash_dedup: the Redis store %s was created again; reloading it", self.key)
                self._start_over()
                return None
            if status == b"behind":
                self.sync()
                return None
            if status == b"kept":  # after the pages others kept meanwhile (not near these), stamped
                seconds, appended = reply
                self._set_clock(seconds)
                self._append_records(np.frombuffer(appended, dtype=RECORD))
                break
            self._append_records(np.frombuffer(reply[0], dtype=RECORD))  # "moved": others kept pages near
            max_pairs = -1  # a retry's tail is what others kept during one round trip: always compared
            new_rows = (self._fingerprints[seen : self._rows], self._present[seen : self._rows])
            near = near_any(*pending_rows, *new_rows, self._limits, False)
            for i, maybe in zip(pending, near):
                if maybe and (found := self._find(*pages[i], since=seen)) is not None:
                    results[i] = found
        for i, match in zip(pending, in_batch):
            if not dropped(results[i]) and (results[i] is None or dropped(match)):
                results[i] = match
        return results

    def _match_in_batch(
        self, batch: list[tuple[str, Fingerprint]], rows: tuple[np.ndarray, np.ndarray]
    ) -> list[Match | None]:
        """Each page's match among the pages before it in the batch that were not matched.  Only
        pages near an earlier one need the decision, made on rows appended for the while (the
        same decision as for kept rows), then removed."""
        maybe = near_any(*rows, *rows, self._limits, True)
        if not maybe.any():
            return [None] * len(batch)
        first, matches = self._rows, []
        stamp = int(time.time() + self._clock_offset)
        for n, ((url, page), near_earlier) in enumerate(zip(batch, maybe)):
            matches.append(self._find(url, page, since=first) if near_earlier else None)
            if not dropped(matches[-1]):
                self._batch_pages[self._rows] = (url, page.sketch)
                self._stamps.append(stamp)
                self._append_rows(rows[0][n : n + 1], rows[1][n : n + 1])
        self._rows = first
        del self._stamps[first:]
        self._batch_pages.clear()
        return matches

    def _set_clock(self, server_seconds: int) -> None:
        self._clock_offset = int(server_seconds) - time.time()

    def _alive(self, row: int) -> bool:
        now = time.time() + self._clock_offset
        return not self.expire_seconds or now - self._stamps[row] <= self.expire_seconds

    def _entry(self, row: int) -> bytes | None:
        chunk, position = divmod(row, CHUNK)
        entry = self.client.lindex(f"{self.key}:pages:{chunk}", position)
        return entry if entry and entry != b"\0" else None

    def _url(self, row: int) -> str:
        if row in self._batch_pages:
            return self._batch_pages[row][0]
        entry = self._entry(row) or b"\0"
        return entry[1 + entry[0] :].decode()

    def _sketch(self, row: int) -> bytes | None:
        if row in self._batch_pages:
            return self._batch_pages[row][1]
        entry = self._entry(row)
        return entry[1 : 1 + entry[0]] if entry and entry[0] else None


def read_redis_log(client: redis.Redis, key: str) -> tuple[list[Decision], list[dict[str, Any]]]:
    """The decision log and the runs kept under ``key`` (texts joined from ``<key>:texts``)."""
    texts = {}
    for _, entry in client.xrange(f"{key}:texts"):
        decision = _from_stream(entry)
        texts[(decision.time, decision.url)] = decision
    decisions = [_from_stream(entry) for _, entry in client.xrange(f"{key}:decisions")]
    decisions = [texts.get((decision.time, decision.url), decision) for decision in decisions]
    runs = [json.loads(run) for run in reversed(client.lrange(f"{key}:runs", 0, -1))]
    return decisions, runs


def read_redis_rules(client: redis.Redis, key: str) -> tuple[list[Rule], list[Skip]]:
    """The URL rules and the skipped links and requests kept under ``key``."""
    refuted = {name: by.decode() for name, by in client.hgetall(f"{key}:refuted").items()}
    rules = [Rule(*name.decode().split("\t"), int(support), refuted.get(name))
             for name, support in client.hgetall(f"{key}:rules").items()]
    skips = [Skip(float(e[b"time"]), e[b"kind"].decode(), e[b"url"].decode(), e[b"because"].decode(),
                  e.get(b"rule", b"").decode()) for _, e in client.xrange(f"{key}:skipped")]
    return rules, skips


def _rule_field(rule: Rule) -> str:
    return "\t".join(rule.ident)


def _stream_fields(record: dict[str, Any]) -> dict[str, bytes]:
    """A decision's fields as a stream entry holds them: ``None`` left out, texts compressed."""
    return {name: packed(value) if name in ("text", "kept_text") else str(value).encode()
            for name, value in record.items() if value is not None}


def _from_stream(entry: dict[bytes, bytes]) -> Decision:
    values: dict[str, Any] = {}
    for name, value in entry.items():
        field = name.decode()
        if field in ("text", "kept_text"):
            values[field] = unpacked(value)
        elif field in ("content_distance", "structure_distance"):
            values[field] = int(value)
        elif field in ("time", "similarity", "similarity_needed"):
            values[field] = float(value)
        else:
            values[field] = value.decode()
    return Decision(**{"content_distance": None, "structure_distance": None, "similarity": None,
                       "similarity_needed": None, **values})


def remove_redis_store(client: redis.Redis, key: str) -> int:
    """Delete every key of the store ``key``; returns how many."""
    keys = list(client.scan_iter(match=f"{key}:*", count=1000))
    for start in range(0, len(keys), 1000):
        client.unlink(*keys[start : start + 1000])
    return len(keys)


def pack_record(page: Fingerprint) -> bytes:
    """The page's 24-byte record (``RECORD``); the script writes the time kept."""
    flags = (page.content is not None) | (page.structure is not None) << 1 | page.short << 2
    return _RECORD_STRUCT.pack(page.content or 0, page.structure or 0, 0, flags)


def pack_entry(url: str, page: Fingerprint) -> bytes:
    """The page's entry in a ``pages`` list: sketch length (0 or 64), sketch, URL."""
    sketch = page.sketch or b""
    return bytes([len(sketch)]) + sketch + url.encode()
