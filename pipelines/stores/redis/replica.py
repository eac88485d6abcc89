"""This process's replica of a Redis store's log: every kept page's fingerprints, stamp and sketch in
memory (the same matcher as every store), the URLs of the pages it met, and its reading of the log up to
the end (``sync``), started over or written back when the store was lost."""

from __future__ import annotations

import logging
import secrets
import time
from array import array
from collections import OrderedDict

import numpy as np
import redis

from ...fingerprint.fingerprinter import Fingerprint
from ...fingerprint.sketch import SKETCH_BYTES, from_fixed_width
from ...matching.index import grown
from ...matching.indexloops import near_any
from ...matching.matcher import Matcher, address_keys
from ...matching.policy import Match, Mode, Policy, dropped
from .availability import RetryGuard, write_back
from .keys import CHUNK, LOST_URL, PARTS, RECORD, RedisClient, zero_padded

logger = logging.getLogger(__name__)

KNOWN_URLS = 100_000  # URLs of replica rows this process met, kept for writing the log back (the latest)
URL_OVERHEAD = 150  # bytes a URL met costs beyond its characters (the str, its int key, the dict's entry)


class MetUrls:
    """The URLs of the replica rows this process met (it kept the page, or read its URL for a match): the latest
    ``KNOWN_URLS``, for matches and for writing the log back; ``bytes``, what they take."""

    def __init__(self) -> None:
        self._urls: OrderedDict[int, str] = OrderedDict()  # row -> URL, the latest met last
        self.bytes = 0

    def add(self, row: int, url: str) -> None:
        if (before := self._urls.get(row)) is not None:
            self.bytes -= len(before) + URL_OVERHEAD
        self._urls[row] = url
        self.bytes += len(url) + URL_OVERHEAD
        self._urls.move_to_end(row)
        if len(self._urls) > KNOWN_URLS:
            self.bytes -= len(self._urls.popitem(last=False)[1]) + URL_OVERHEAD

    def get(self, row: int) -> str | None:
        return self._urls.get(row)

    def get_or_lost(self, row: int) -> str:
        """The URL of ``row``, or ``LOST_URL`` if this process did not meet it."""
        return self._urls.get(row, LOST_URL)


class Replica:
    """The log's pages as rows of a ``Matcher`` (whose ``KeptPages`` it is), with per row the time kept
    (server clock) and the sketch; URLs are read from Redis when a match needs one."""

    def __init__(
        self,
        policy: Policy,
        client: RedisClient,
        guard: RetryGuard,
        key: str,
        scheme: str,
        expire_seconds: int,
        started: int | None = None,
    ) -> None:
        """``started``: when the crawl started (server clock), for a replica read after it (a site's, met later
        in the crawl, or met again): its rows kept before then are the earlier crawls'; else, all it reads first."""
        self.policy = policy
        self.client = client
        self.guard = guard
        self.key = key
        self.meta = f"{key}:meta"
        self.scheme = scheme
        self.expire_seconds = expire_seconds
        self.started = started
        self.epoch: bytes | None = None  # the store's epoch this replica reads (None: not opened)
        self.lost = 0  # times the store was found lost (written back, or started over)
        self.clock_offset = 0.0  # the server's clock minus ours: pages age by the server's clock
        self._batch_pages: dict[int, tuple[str, bytes | None]] = {}  # rows of a batch's pages, for the while
        # the distances pages are compared with new records at (-1: that part is not), here and in the script
        self.limits = np.array(
            [
                policy.search_distance if policy.mode is not Mode.STRUCTURE else -1,
                policy.structure_distance if policy.mode in (Mode.STRUCTURE, Mode.EITHER) else -1,
            ]
        )
        self.reset()

    def reset(self) -> None:
        """An empty replica: rows, their stamps, sketches and the URLs met."""
        self.matcher = Matcher(self.policy, self)
        self.stamps = array("I")  # per replica row: when it was kept (server clock, seconds)
        self.sketch_rows = np.zeros((0, SKETCH_BYTES), dtype=np.uint8)  # per replica row: its sketch (or zeros)
        self.met_urls = MetUrls()

    @property
    def rows(self) -> int:
        return self.matcher.rows

    def open(self) -> None:
        """Create the store if no process did and check its scheme; the log is read by ``sync``."""
        pipe = self.client.pipeline(transaction=True)
        pipe.hsetnx(self.meta, "epoch", secrets.token_hex(8))  # the first process to come creates it
        pipe.hsetnx(self.meta, "scheme", self.scheme)
        pipe.hmget(self.meta, "epoch", "scheme")
        *_, (epoch, scheme) = pipe.execute()
        if scheme.decode() != self.scheme:
            raise ValueError(
                f"The Redis store {self.key} holds fingerprints of scheme {scheme.decode()}; this crawl makes "
                f"{self.scheme}. Use another SIMHASH_DEDUP_REDIS_KEY, or SIMHASH_DEDUP_RESET to empty it."
            )
        self.epoch = epoch

    def sync(self) -> None:
        """Read the log into the replica up to its end.  If the store is gone (Redis restarted
        without its data), write the replica back as the log, or, if another process did so first
        or the store was reset, start over from what Redis holds.

        Needed at open and when the replica fell behind: otherwise each script call returns
        the records the replica misses."""
        first = self.epoch is None
        if first:
            self.open()
        read: list[tuple[bytes, bytes]] = []  # appended at once: one sort of the replica
        rows = self.rows
        self.set_clock(self.client.time()[0])  # (not in the pipeline: a cluster's pipeline holds a slot's keys)
        while True:
            chunk, offset = divmod(rows, CHUNK)
            pipe = self.client.pipeline(transaction=False)
            pipe.hmget(self.meta, "epoch", "count")
            pipe.getrange(f"{self.key}:fp:{chunk}", offset * RECORD.itemsize, -1)
            pipe.getrange(f"{self.key}:sk:{chunk}", offset * SKETCH_BYTES, -1)
            (epoch, count), data, sketches = pipe.execute()
            if epoch != self.epoch:  # the store is gone, or was created again
                if not (self.rows and self._write_back()):
                    self._start_over()
                read, rows = [], self.rows
                continue
            count = int(count or 0)
            missing = min(count, (chunk + 1) * CHUNK) - rows
            if missing > 0:  # a chunk that expired reads short: its pages become rows that never match
                read.append((zero_padded(data, missing, RECORD.itemsize), zero_padded(sketches, missing, SKETCH_BYTES)))
                rows += missing
            if rows >= count:
                break
        if read:
            records, sketches = (b"".join(part) for part in zip(*read))
            self.append_records(np.frombuffer(records, dtype=RECORD), sketches)
        if first:  # what the store held when this crawl first read it, earlier crawls kept
            self.matcher.remembered = self.rows if self.started is None else self._stamped_before(self.started)

    def _stamped_before(self, seconds: int) -> int:
        """The first rows, those kept before ``seconds`` (server clock)."""
        later = np.flatnonzero(np.frombuffer(self.stamps, dtype=np.uint32)[: self.rows] >= seconds)
        return int(later[0]) if len(later) else self.rows

    def _start_over(self) -> None:
        self.lost += 1
        logger.warning(
            "simhash_dedup: the Redis store %s was created again (reset, or written back by another "
            "crawler); reloading it",
            self.key,
        )
        self.reset()
        self.open()

    def _write_back(self) -> bool:
        """The store is gone: this replica written back as the log (``availability.write_back``), unless another
        process did so first or the store was reset.  Whether this replica is the log now."""
        rows = self.rows
        records = np.zeros(rows, dtype=RECORD)
        records["content"], records["structure"] = (
            self.matcher.fingerprints[:rows, 0],
            self.matcher.fingerprints[:rows, 1],
        )
        records["address"] = self.matcher.addresses[:rows]
        records["stamp"] = np.frombuffer(self.stamps, dtype=np.uint32)[:rows]
        records["flags"] = self.matcher.present[:rows] @ PARTS
        urls = [self.met_urls.get_or_lost(row) for row in range(rows)]
        epoch = write_back(
            self.client, self.key, self.scheme, self.expire_seconds, records, self.sketch_rows[:rows], urls
        )
        if epoch is None:
            return False
        self.epoch = epoch
        self.lost += 1
        logger.warning(
            "simhash_dedup: the Redis store %s came back empty (Redis restarted without its data?); "
            "this crawler wrote back the %d pages it knew",
            self.key,
            rows,
        )
        return True

    def pages_from(self, row: int) -> list[tuple[str, Fingerprint]]:
        """The pages of rows ``row`` on, as pages to check (a URL this process did not meet is ``LOST_URL``)."""
        pages = []
        for n in range(row, self.rows):
            content, structure = (self.matcher.part(n, part) for part in (0, 1))
            pages.append(
                (
                    self.met_urls.get_or_lost(n),
                    Fingerprint(content, structure, sketch=self.sketch(n), short=bool(self.matcher.present[n, 2])),
                )
            )
        return pages

    def reread(self) -> None:
        """Empty the replica and read the log again (pages kept by earlier crawls stay counted as such)."""
        remembered = self.matcher.remembered
        self.reset()
        self.sync()
        self.matcher.remembered = min(remembered, self.rows)

    def memory_bytes(self) -> int:
        """What the replica holds: the matcher's arrays and indexes, the sketches, the stamps, the URLs met."""
        return (
            self.matcher.memory_bytes()
            + self.sketch_rows.nbytes
            + self.stamps.itemsize * len(self.stamps)
            + self.met_urls.bytes
        )

    def append_records(self, records: np.ndarray, sketches: bytes) -> None:
        """Rows for pages of the log, with their sketches (all zeros: a page whose chunk expired, never
        matched)."""
        if not len(records):
            return
        first = self.rows
        fingerprints = np.empty((len(records), 2), dtype=np.uint64)
        fingerprints[:, 0], fingerprints[:, 1] = records["content"], records["structure"]
        self.matcher.load_rows(
            fingerprints, records["flags"][:, None] & PARTS != 0, records["address"].astype(np.uint64)
        )
        self.stamps.extend(records["stamp"].tolist())
        if self.rows > len(self.sketch_rows):
            self.sketch_rows = grown(self.sketch_rows, first, max(self.rows, len(self.sketch_rows) * 9 // 8 + 64))
        self.sketch_rows[first : self.rows] = np.frombuffer(sketches, dtype=np.uint8).reshape(-1, SKETCH_BYTES)

    def match_in_batch(
        self, batch: list[tuple[str, Fingerprint]], rows: tuple[np.ndarray, np.ndarray]
    ) -> list[Match | None]:
        """Each page's match among the pages before it in the batch that were not matched.  Only
        pages near an earlier one need the decision, made on rows appended for the while (the
        same decision as for kept rows), then removed."""
        maybe = near_any(*rows, *rows, self.limits, True)
        if not maybe.any():
            return [None] * len(batch)
        first, matches = self.rows, []
        stamp = int(time.time() + self.clock_offset)
        for n, ((url, page), near_earlier) in enumerate(zip(batch, maybe)):
            matches.append(self.matcher.find(url, page, since=first) if near_earlier else None)
            if not dropped(matches[-1]):
                self._batch_pages[self.rows] = (url, page.sketch)
                self.stamps.append(stamp)
                self.matcher.append_rows(rows[0][n : n + 1], rows[1][n : n + 1], address_keys([url]))
        self.matcher.rows = first
        del self.stamps[first:]
        self._batch_pages.clear()
        return matches

    def set_clock(self, server_seconds: int) -> None:
        self.clock_offset = int(server_seconds) - time.time()

    def alive(self, row: int) -> bool:
        now = time.time() + self.clock_offset
        return not self.expire_seconds or now - self.stamps[row] <= self.expire_seconds

    def url(self, row: int) -> str:
        """A kept page's URL: from the batch, from the URLs met, else from Redis (a placeholder if Redis
        cannot say: the page's fingerprints and sketch are in the replica, its URL is not)."""
        if row in self._batch_pages:
            return self._batch_pages[row][0]
        if (url := self.met_urls.get(row)) is not None:
            return url
        if self.guard.failed_recently():  # Redis failed a moment ago: not waited for again
            return LOST_URL
        chunk, position = divmod(row, CHUNK)
        try:
            entry = self.client.lindex(f"{self.key}:pages:{chunk}", position)
        except redis.RedisError:
            return LOST_URL
        url = entry.decode() if isinstance(entry, bytes) and entry and entry != b"\0" else LOST_URL
        self.met_urls.add(row, url)
        return url

    def sketch(self, row: int) -> bytes | None:
        if row in self._batch_pages:
            return self._batch_pages[row][1]
        return from_fixed_width(self.sketch_rows[row].tobytes()) if self.matcher.present[row, 0] else None
