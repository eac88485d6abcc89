"""One store for many crawler processes: the log of kept pages in Redis.

Redis holds every kept page once, in order, as a log cut into chunks of
``CHUNK`` pages: ``<key>:fp:<n>`` (a string of 24-byte records: both
fingerprints, the time kept, which parts exist), ``<key>:sk:<n>`` (a string of
the pages' sketches, 140 bytes each: ``sketch.fixed_width``) and ``<key>:pages:<n>`` (a list of their URLs),
with ``<key>:meta`` (epoch, count, scheme).

Each process reads the log's fingerprints and sketches at open into a replica:
the same in-memory index as ``MemoryStore``.  The decision runs in the crawler
processes: a batch of pages is compared with the replica and with the pages
before it in the batch, and those found unique go to one Lua script
(``check_and_add.lua``) that appends them only if the log still ends where
the replica does.  If it grew, the script returns the new records instead;
the process compares its pages with them (a few, by brute force) and tries
again.  Redis runs scripts one at a time, so the decision is atomic across
processes and machines: of two near-duplicates checked at once by two
processes, exactly one is kept.  Redis's one thread only appends, whatever
the distances and however many processes share it.

While Redis cannot be reached, pages are checked against the replica and the
pages kept meanwhile (``CheckedLocally``), and those kept are added first when
it answers.  If it comes back without the store (restarted without its data),
the replica is written back as the log (``heal.lua``): the first process to
do so wins, the others reload it.
"""

from __future__ import annotations

import json
import logging
import secrets
import struct
import time
from array import array
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import asdict
from importlib.resources import files
from typing import Any, TypeVar

import numpy as np
import redis

from ...fingerprint.fingerprinter import Fingerprint
from ...fingerprint.sketch import SKETCH_BYTES, fixed_width, from_fixed_width
from ...matching.decision_log import Alias, Decision, Skip
from ...matching.index import grown
from ...matching.indexloops import near_any
from ...matching.policy import Match, Mode, Policy, dropped
from ...matching.urlrules import FETCHED_URLS, Rule
from ..errors import CheckedLocally, StoreUnavailable
from ..memory import MemoryStore, fingerprint_rows

logger = logging.getLogger(__name__)

CHUNK = 4096  # pages per chunk: a 96 KB string of records, a 520 KB string of sketches and a list, read or expired together
RECORD = np.dtype([("content", ">u8"), ("structure", ">u8"), ("stamp", ">u4"), ("flags", "u1"), ("spare", "V3")])
_RECORD_STRUCT = struct.Struct(">QQIB3x")  # the same record, packed one at a time
_PARTS = np.array([1, 2, 4], dtype=np.uint8)  # a record's flags: has content, has structure, is short
#: The keys a store is made of, beside its meta hash; bumped when they change (stores of another layout are refused).
LAYOUT = 3
MAX_UNCHECKED = 10_000  # pages kept while Redis was down, added when it answers again (the latest ones)
MAX_BATCH = 100  # pages per script call
MAX_TAIL = 5_000  # new records one script call returns; a replica further behind reads the log first
MAX_PAIRS = 1000  # (new record, page) pairs the script compares on a first try; more, the caller does
MAX_RUNS = 100  # runs whose counts are kept (<key>:runs)
RETRY_SECONDS = 1.0  # after a failure, pages are checked locally this long before Redis is tried again
KNOWN_URLS = 100_000  # URLs of replica rows this process met, kept for writing the log back (the latest)
HEAL_STAGING_SECONDS = 3600  # how long a log being written back may take before its keys expire
#: The URL a page written back gets when this process never met it (its URL was lost with the store).
LOST_URL = "(a page kept before Redis lost the store)"
T = TypeVar("T")
_SCRIPT = files(__package__).joinpath("check_and_add.lua").read_text()
_HEAL = files(__package__).joinpath("heal.lua").read_text()


class RedisStore(MemoryStore):
    """Kept pages shared by every process that uses the same Redis key."""

    def __init__(self, policy: Policy, client: redis.Redis, key: str, scheme: str, expire_seconds: int = 0,
                 decisions: int = 100_000, texts: int = 1_000) -> None:
        super().__init__(policy)
        self.client = client
        self.key = key
        self.scheme = f"{scheme}/redis-layout={LAYOUT}"
        self.expire_seconds = expire_seconds
        self.decisions_kept = decisions
        self.texts_kept = texts
        self._log: deque[Decision | Skip | Rule] = deque(maxlen=MAX_UNCHECKED)  # recorded (reactor), to send (batch thread)
        self._script = client.register_script(_SCRIPT)
        self._heal_script = client.register_script(_HEAL)
        self._epoch: bytes | None = None
        self._replica_reset()
        self._clock_offset = 0.0  # the server's clock minus ours: pages age by the server's clock
        self._retry_at = 0.0
        self._unchecked: list[tuple[str, Fingerprint]] = []  # kept while Redis was down, to add when it answers
        self._outage = MemoryStore(policy)  # the same pages: later pages are checked against them meanwhile
        self._batch_pages: dict[int, tuple[str, bytes | None]] = {}  # rows of a batch's pages, for the while
        # the distances the script compares new records with pages at (-1: that part is not)
        self._limits = np.array([
            policy.search_distance if policy.mode is not Mode.STRUCTURE else -1,
            policy.structure_distance if policy.mode in (Mode.STRUCTURE, Mode.EITHER) else -1,
        ])

    def _replica_reset(self) -> None:
        """An empty replica: rows, their stamps, sketches and the URLs met."""
        MemoryStore.__init__(self, self.policy)
        self._stamps = array("I")  # per replica row: when it was kept (server clock, seconds)
        self._sketch_rows = np.zeros((0, SKETCH_BYTES), dtype=np.uint8)  # per replica row: its sketch (or zeros)
        self._known_urls: OrderedDict[int, str] = OrderedDict()  # row -> URL, for the rows this process met

    def check_and_add(self, url: str, fingerprint: Fingerprint) -> Match | None:
        return self.check_and_add_many([(url, fingerprint)])[0]

    def check_and_add_many(self, pages: list[tuple[str, Fingerprint]]) -> list[Match | None]:
        """Each page's match, or ``None`` when it was kept; one script call for the batch.

        When Redis fails (and for ``RETRY_SECONDS`` after), raises ``CheckedLocally`` with each
        page's match against the replica and the pages kept meanwhile: the pages it keeps are
        added first when Redis answers again (up to ``MAX_UNCHECKED``), so that their later copies
        are still caught, here and in the other processes.
        """
        try:
            while self._unchecked:  # kept while Redis was down: added first, a batch at a time
                self._guarded(self._check_all, self._unchecked[:MAX_BATCH])
                del self._unchecked[:MAX_BATCH]
            self._outage = MemoryStore(self.policy) if len(self._outage) else self._outage
            return self._guarded(self._check_all, pages)
        except StoreUnavailable as error:
            raise CheckedLocally(str(error), self._check_locally(pages)) from None
        finally:
            self.send_log()

    def _check_locally(self, pages: list[tuple[str, Fingerprint]]) -> list[Match | None]:
        """Redis is down: each page against the replica, then against the pages kept meanwhile."""
        matches = []
        for url, page in pages:
            match = self._find(url, page)
            if not dropped(match):
                outage = self._outage.check_and_add(url, page)
                if dropped(outage):
                    match = outage
                else:
                    self._unchecked.append((url, page))
            matches.append(match)
        if len(self._unchecked) > MAX_UNCHECKED:  # the oldest are forgotten; so are they here
            self._unchecked = self._unchecked[-MAX_UNCHECKED:]
            self._outage = MemoryStore(self.policy)
            for url, page in self._unchecked:
                self._outage.check_and_add(url, page)
        return matches

    def record(self, decision: Decision) -> None:
        if self.decisions_kept:
            self._log.append(decision)

    def record_skip(self, skip: Skip) -> None:
        if self.decisions_kept:
            self._log.append(skip)

    def record_alias(self, alias: Alias) -> None:
        """Sent with the log, to the hash ``<key>:aliases`` (a URL's first naming stays): the page is in
        Redis already."""
        self._log.append(alias)

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
        urls = [url for chunk in pipe.execute() for url in chunk][first % CHUNK:]
        return rules, [url.decode() for url in urls if url and url != b"\0"]

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
        ``texts_kept``), the skipped links and requests to ``<key>:skipped``, the aliases to
        ``<key>:aliases``, and save the URL rules that changed.  The log never fails a check: on an error
        the entries wait for the next call (at most ``MAX_UNCHECKED``)."""
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
            if isinstance(decision, Alias):
                pipe.hsetnx(f"{self.key}:aliases", decision.url,
                            json.dumps([decision.kept_url, decision.reason, decision.time]))
                continue
            if isinstance(decision, Skip):
                pipe.xadd(f"{self.key}:skipped", _stream_fields(asdict(decision)), maxlen=self.decisions_kept,
                          approximate=True)
                continue
            record = decision.without_texts()
            pipe.xadd(f"{self.key}:decisions", _stream_fields(record), maxlen=self.decisions_kept, approximate=True)
            if (decision.packed_text or decision.packed_kept_text) and self.texts_kept:
                texts = {**record, "text": decision.packed_text, "kept_text": decision.packed_kept_text}
                pipe.xadd(f"{self.key}:texts", _stream_fields(texts), maxlen=self.texts_kept,
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
        """Read the log into the replica up to its end.  If the store is gone (Redis restarted
        without its data), write the replica back as the log, or, if another process did so first
        or the store was reset, start over from what Redis holds.

        Needed at open and when the replica fell behind: otherwise each script call returns
        the records the replica misses."""
        first = self._epoch is None
        if first:
            self._open()
        read: list[tuple[np.ndarray, np.ndarray]] = []  # appended at once: one sort of the replica
        rows = self._rows
        while True:
            chunk, offset = divmod(rows, CHUNK)
            pipe = self.client.pipeline(transaction=False)
            pipe.hmget(self._meta, "epoch", "count")
            pipe.getrange(f"{self.key}:fp:{chunk}", offset * RECORD.itemsize, -1)
            pipe.getrange(f"{self.key}:sk:{chunk}", offset * SKETCH_BYTES, -1)
            pipe.time()
            (epoch, count), data, sketches, (seconds, _) = pipe.execute()
            self._set_clock(seconds)
            if epoch != self._epoch:  # the store is gone, or was created again
                if not (self._rows and self._heal()):
                    self._start_over()
                read, rows = [], self._rows
                continue
            count = int(count or 0)
            missing = min(count, (chunk + 1) * CHUNK) - rows
            if missing > 0:  # a chunk that expired reads short: its pages become rows that never match
                read.append((_fixed(data, missing, RECORD.itemsize), _fixed(sketches, missing, SKETCH_BYTES)))
                rows += missing
            if rows >= count:
                break
        if read:
            records, sketches = (b"".join(part) for part in zip(*read))
            self._append_records(np.frombuffer(records, dtype=RECORD), sketches)
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
        logger.warning("simhash_dedup: the Redis store %s was created again (reset, or written back by another "
                       "crawler); reloading it", self.key)
        self._replica_reset()
        self._open()

    def _heal(self) -> bool:
        """The store is gone: write the replica back as the log (rows, stamps, sketches, the URLs this
        process met), under keys of its own, then make them the store's in one script, unless another
        process did so first or the store was reset meanwhile.  Whether this replica is the log now."""
        epoch, rows = secrets.token_hex(8), self._rows
        staging = f"{self.key}:heal:{epoch}"
        records = np.zeros(rows, dtype=RECORD)
        records["content"], records["structure"] = self._fingerprints[:rows, 0], self._fingerprints[:rows, 1]
        records["stamp"] = np.frombuffer(self._stamps, dtype=np.uint32)[:rows]
        records["flags"] = self._present[:rows] @ _PARTS
        chunks = (rows + CHUNK - 1) // CHUNK
        for n in range(chunks):
            part = slice(n * CHUNK, min(rows, (n + 1) * CHUNK))
            pipe = self.client.pipeline(transaction=False)
            pipe.set(f"{staging}:fp:{n}", records[part].tobytes(), ex=HEAL_STAGING_SECONDS)
            pipe.set(f"{staging}:sk:{n}", self._sketch_rows[part].tobytes(), ex=HEAL_STAGING_SECONDS)
            pipe.rpush(f"{staging}:pages:{n}", *(self._known_urls.get(row, LOST_URL) for row in range(part.start, part.stop)))
            pipe.expire(f"{staging}:pages:{n}", HEAL_STAGING_SECONDS)
            pipe.execute()
        outcome = self._heal_script(keys=[self._meta], args=[self.key, staging, epoch, self.scheme, rows, chunks,
                                                            self.expire_seconds])
        if outcome != b"healed":
            return False
        self._epoch = epoch.encode()
        logger.warning("simhash_dedup: the Redis store %s came back empty (Redis restarted without its data?); "
                       "this crawler wrote back the %d pages it knew", self.key, rows)
        return True

    def _append_records(self, records: np.ndarray, sketches: bytes) -> None:
        """Rows for pages of the log, with their sketches (all zeros: a page whose chunk expired, never
        matched)."""
        if not len(records):
            return
        first = self._rows
        fingerprints = np.empty((len(records), 2), dtype=np.uint64)
        fingerprints[:, 0], fingerprints[:, 1] = records["content"], records["structure"]
        self._load_rows(fingerprints, records["flags"][:, None] & _PARTS != 0)
        self._stamps.extend(records["stamp"].tolist())
        if self._rows > len(self._sketch_rows):
            self._sketch_rows = grown(self._sketch_rows, first, max(self._rows, len(self._sketch_rows) * 9 // 8 + 1024))
        self._sketch_rows[first : self._rows] = np.frombuffer(sketches, dtype=np.uint8).reshape(-1, SKETCH_BYTES)

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
            args = [self.key, self._epoch, seen, CHUNK, self.expire_seconds, MAX_TAIL, max_pairs, *self._limits.tolist(),
                    SKETCH_BYTES]
            args += [pack_record(pages[i][1]) + fixed_width(pages[i][1].sketch) + pages[i][0].encode()
                     for i in kept]
            status, *reply = self._script(keys=[self._meta], args=args)
            if status in (b"epoch", b"behind"):  # the store is gone or was created again; or the replica is far behind
                self.sync()
                return None
            if status == b"kept":  # after the pages others kept meanwhile (not near these), stamped
                seconds, appended, sketches = reply
                self._set_clock(seconds)
                self._append_records(np.frombuffer(appended, dtype=RECORD), sketches)
                for n, i in enumerate(kept):  # its own pages come last
                    self._known(self._rows - len(kept) + n, pages[i][0])
                break
            self._append_records(np.frombuffer(reply[0], dtype=RECORD), reply[1])  # "moved": others kept pages near
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

    def _known(self, row: int, url: str) -> None:
        self._known_urls[row] = url
        self._known_urls.move_to_end(row)
        if len(self._known_urls) > KNOWN_URLS:
            self._known_urls.popitem(last=False)

    def _url(self, row: int) -> str:
        """A kept page's URL: from the batch, from the URLs met, else from Redis (a placeholder if Redis
        cannot say: the page's fingerprints and sketch are in the replica, its URL is not)."""
        if row in self._batch_pages:
            return self._batch_pages[row][0]
        if (url := self._known_urls.get(row)) is not None:
            return url
        if time.monotonic() < self._retry_at:  # Redis failed a moment ago: not waited for again
            return LOST_URL
        chunk, position = divmod(row, CHUNK)
        try:
            entry = self.client.lindex(f"{self.key}:pages:{chunk}", position)
        except redis.RedisError:
            return LOST_URL
        url = entry.decode() if entry and entry != b"\0" else LOST_URL
        self._known(row, url)
        return url

    def _sketch(self, row: int) -> bytes | None:
        if row in self._batch_pages:
            return self._batch_pages[row][1]
        return from_fixed_width(self._sketch_rows[row].tobytes()) if self._present[row, 0] else None


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


def read_redis_aliases(client: redis.Redis, key: str) -> list[Alias]:
    """The URLs that name the kept pages of the store ``key``, oldest first."""
    aliases = [Alias(time, url.decode(), kept_url, reason) for url, value in client.hgetall(f"{key}:aliases").items()
               for kept_url, reason, time in [json.loads(value)]]
    return sorted(aliases, key=lambda alias: alias.time)


def _rule_field(rule: Rule) -> str:
    return "\t".join(rule.ident)


def _stream_fields(record: dict[str, Any]) -> dict[str, bytes]:
    """A decision's fields as a stream entry holds them: ``None`` left out, the texts packed as they are."""
    return {name: value if isinstance(value, bytes) else str(value).encode()
            for name, value in record.items() if value is not None}


def _from_stream(entry: dict[bytes, bytes]) -> Decision:
    values: dict[str, Any] = {}
    for name, value in entry.items():
        field = name.decode()
        if field in ("text", "kept_text"):
            values[f"packed_{field}"] = value
        elif field in ("content_distance", "structure_distance"):
            values[field] = int(value)
        elif field in ("time", "similarity", "similarity_needed"):
            values[field] = float(value)
        else:
            values[field] = value.decode()
    return Decision(**{"content_distance": None, "structure_distance": None, "similarity": None,
                       "similarity_needed": None, **values})


def remove_redis_store(client: redis.Redis, key: str) -> int:
    """Delete every key of the store ``key`` (a reset), leaving a mark that says so: the processes still
    using it start over, they do not write their replicas back (see ``heal.lua``).  Returns how many keys."""
    keys = list(client.scan_iter(match=f"{key}:*", count=1000))
    for start in range(0, len(keys), 1000):
        client.unlink(*keys[start : start + 1000])
    client.hset(f"{key}:meta", "reset", int(time.time()))
    return len(keys)


def pack_record(page: Fingerprint) -> bytes:
    """The page's 24-byte record (``RECORD``); the script writes the time kept."""
    flags = (page.content is not None) | (page.structure is not None) << 1 | page.short << 2
    return _RECORD_STRUCT.pack(page.content or 0, page.structure or 0, 0, flags)


def _fixed(data: bytes, count: int, size: int) -> bytes:
    """``count`` items of ``size`` bytes from ``data``, zeros where it is short (a chunk that expired)."""
    return data[: count * size].ljust(count * size, b"\0")
