"""Checks against a networked store, off the reactor thread and in batches."""

from __future__ import annotations

from typing import Any

from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred
from twisted.internet.threads import deferToThreadPool
from twisted.python.failure import Failure
from twisted.python.threadpool import ThreadPool

from ...fingerprint.fingerprinter import Fingerprint
from ...matching.policy import Match
from ..errors import CheckedLocally
from .sites import SiteRedisStores
from .store import MAX_BATCH, RedisStore


class StoreBatcher:
    """Runs ``check_and_add_many`` in one worker thread, on every page pending when it is free.

    The reactor never waits on the network, and items that arrive while a
    batch is out share the next round trip.  One thread: the replica is
    only ever touched by it.
    """

    def __init__(self, store: RedisStore | SiteRedisStores) -> None:
        self.store = store
        self._pool = ThreadPool(minthreads=1, maxthreads=1, name="simhash_dedup")
        self._pool.start()
        self._pending: list[tuple[str, Fingerprint, Deferred[Match | None]]] = []
        self._busy = False

    def submit(self, url: str, fingerprint: Fingerprint) -> Deferred[Match | None]:
        """Queue the page for the next batch; the Deferred fires with its match (or ``None``: kept)."""
        waiting: Deferred[Match | None] = Deferred()
        self._pending.append((url, fingerprint, waiting))
        if not self._busy:
            self._send()
        return waiting

    async def run(self, function: Any, *args: Any) -> Any:
        """Run ``function`` in the worker thread (opening the store, say)."""
        from twisted.internet import reactor

        return await maybe_deferred_to_future(deferToThreadPool(reactor, self._pool, function, *args))

    def stop(self) -> None:
        self._pool.stop()

    def _send(self) -> None:
        from twisted.internet import reactor

        batch, self._pending = self._pending[:MAX_BATCH], self._pending[MAX_BATCH:]
        self._busy = True
        pages = [(url, fingerprint) for url, fingerprint, _ in batch]
        work = deferToThreadPool(reactor, self._pool, self.store.check_and_add_many, pages)
        work.addBoth(self._answer, batch)

    def _answer(self, result: list[Match | None] | Failure, batch: list) -> None:
        self._busy = False
        for n, (_, _, waiting) in enumerate(batch):
            if isinstance(result, Failure) and isinstance(result.value, CheckedLocally):
                waiting.errback(CheckedLocally(str(result.value), [result.value.matches[n]]))  # this page's
            elif isinstance(result, Failure):
                waiting.errback(result)
            else:
                waiting.callback(result[n])
        if self._pending:
            self._send()
