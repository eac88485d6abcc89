"""One store for many crawler processes: the log of kept pages in Redis.

Redis holds every kept page once, in order, as a log cut into chunks of
``CHUNK`` pages: ``<key>:fp:<n>`` (a string of 32-byte records: both
fingerprints, the key of the page's address, the time kept, which parts exist), ``<key>:sk:<n>`` (a string of
the pages' sketches, ``SKETCH_BYTES`` each: ``sketch.fixed_width``) and ``<key>:pages:<n>`` (a list of their URLs),
with ``<key>:meta`` (epoch, count, scheme): ``keys``.

Each process reads the log's fingerprints and sketches at open into a replica
(``replica``): the same matcher as every store.  The decision runs in the crawler
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
pages kept meanwhile (``CheckedLocally``, ``availability.LocalChecks``), and
those kept are added first when it answers.  If it comes back without the
store (restarted without its data), the replica is written back as the log
(``availability.write_back``): the first process to do so wins, the others
reload it.  The decision log, rules, aliases and runs go with each batch
(``log``).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Generator, Iterable
from functools import partial
from importlib.resources import files

import numpy as np
import redis
from redis.cluster import RedisCluster
from redis.exceptions import RedisClusterException

from ...fingerprint.fingerprinter import Fingerprint
from ...fingerprint.sketch import SKETCH_BYTES, fixed_width
from ...matching.indexloops import near_any
from ...matching.matcher import fingerprint_rows
from ...matching.policy import Match, Policy, dropped
from ..errors import CheckedLocally, StoreUnavailable
from ..records import FETCHED_URLS, Rule
from .availability import LocalChecks, RetryGuard
from .keys import CHUNK, LAYOUT, RECORD, RedisClient, pack_record
from .log import RedisLog, RedisLogMethods, read_redis_rules
from .replica import Replica

logger = logging.getLogger(__name__)

MAX_BATCH = 100  # pages per script call
MAX_TAIL = 5_000  # new records one script call returns; a replica further behind reads the log first
MAX_PAIRS = 1000  # (new record, page) pairs the script compares on a first try; more, the caller does
_SCRIPT = files(__package__).joinpath("check_and_add.lua").read_text()
_SHA = hashlib.sha1(_SCRIPT.encode()).hexdigest()
#: A store's check-and-add as steps: it yields a script call's arguments (the meta key first), is sent the reply.
Steps = Generator[list, list, list[Match | None]]


class RedisStore(RedisLogMethods):
    """A ``Store`` shared by every process that uses the same Redis key: the check-and-add protocol with
    ``check_and_add.lua``, over the parts that keep the replica, the outage's pages and the log."""

    confirms = False  # a kept page is in Redis at once (its items' fate is not waited for)

    def __init__(
        self,
        policy: Policy,
        client: RedisClient,
        key: str,
        scheme: str,
        expire_seconds: int = 0,
        decisions: int = 100_000,
        texts: int = 1_000,
        guard: RetryGuard | None = None,
        log: RedisLog | None = None,
        started: int | None = None,
    ) -> None:
        """``guard``, ``log`` and ``started`` (``Replica``): the crawl's, when this store is one of its sites'
        (``sites``)."""
        self.client = client
        self.key = key
        self.scheme = f"{scheme}/redis-layout={LAYOUT}"
        self.guard = guard or RetryGuard()
        self.replica = Replica(policy, client, self.guard, key, self.scheme, expire_seconds, started)
        self.log = log or RedisLog(client, self.guard, key, decisions, texts)
        self.local = LocalChecks(policy)

    def __len__(self) -> int:
        return self.replica.rows

    @property
    def remembered(self) -> int:
        return self.replica.matcher.remembered

    def open(self) -> None:
        """Create the store if no process did and read the log (else on the first check)."""
        self.guard.call(self.replica.sync)

    def check_and_add(self, url: str, fingerprint: Fingerprint) -> Match | None:
        return self.check_and_add_many([(url, fingerprint)])[0]

    def check_and_add_many(self, pages: list[tuple[str, Fingerprint]]) -> list[Match | None]:
        """Each page's match, or ``None`` when it was kept; one script call for the batch.

        When Redis fails (and for ``RETRY_SECONDS`` after), raises ``CheckedLocally`` with each
        page's match against the replica and the pages kept meanwhile: the pages it keeps are
        added first when Redis answers again (up to ``MAX_UNCHECKED``), so that their later copies
        are still caught, here and in the other processes.
        """
        return check_in_stores([(self, pages)], self.guard, self.log)[0]

    def load_rules(self) -> tuple[list[Rule], list[str]]:
        """The rules under ``<key>:rules`` and the URLs of the last ``FETCHED_URLS`` pages kept."""
        rules = read_redis_rules(self.client, self.key)[0]
        rows = self.replica.rows
        first = max(0, rows - FETCHED_URLS)
        pipe = self.client.pipeline(transaction=False)
        for chunk in range(first // CHUNK, (rows - 1) // CHUNK + 1 if rows else 0):
            pipe.lrange(f"{self.key}:pages:{chunk}", 0, -1)
        urls = [url for chunk in pipe.execute() for url in chunk][first % CHUNK :]
        return rules, [url.decode() for url in urls if url and url != b"\0"]

    def close(self) -> None:
        try:
            self.log.send()
        except redis.RedisError:
            pass
        self.client.close()

    def checks(self, pages: list[tuple[str, Fingerprint]], decided: list[Match | None]) -> Steps:
        """The check-and-add of ``pages`` as steps: each yields the script's arguments and takes its reply
        (``run_steps`` runs the steps of several stores in one round trip); returns each page's match, appended
        to ``decided`` as soon as Redis decided it (if a later step fails, those pages are in Redis)."""
        if self.replica.epoch is None:
            self.replica.sync()
        for start in range(0, len(pages), MAX_BATCH):
            checked = None
            while checked is None:  # None: the replica was brought up to date first
                checked = yield from self._check(pages[start : start + MAX_BATCH])
            decided += checked
        return decided

    def _check_all(self, pages: list[tuple[str, Fingerprint]]) -> list[Match | None]:
        return run_steps(self.client, [self.checks(pages, [])])[0]

    def _add_lost(self, count: int) -> None:
        """The log ends at ``count``, before pages this replica read (a replica promoted without them, its master
        lost): the replica reads the log again, and those pages are added back to it as pages to check."""
        lost = self.replica.pages_from(count)
        self.replica.reread()
        logger.warning(
            "simhash_dedup: the Redis store %s lost its last %d pages (a failover?); this crawler adds them again",
            self.key,
            len(lost),
        )
        self._check_all(lost)

    def _check(self, pages: list[tuple[str, Fingerprint]]) -> Generator[list, list, list[Match | None] | None]:
        """Pages matched in the replica or earlier in the batch; the others appended through the
        script, once no other process appended since the replica's last read.  ``None``: the
        replica started over or read the log, check again."""
        replica, matcher = self.replica, self.replica.matcher
        results: list[Match | None] = [matcher.find(url, page) for url, page in pages]
        rows = fingerprint_rows([page for _, page in pages])
        max_pairs = MAX_PAIRS
        while True:
            seen = replica.rows
            pending = [i for i, match in enumerate(results) if not dropped(match)]
            pending_rows = (rows[0][pending], rows[1][pending])
            in_batch = replica.match_in_batch([pages[i] for i in pending], pending_rows)
            kept = [i for i, match in zip(pending, in_batch) if not dropped(match)]
            if not kept:
                break
            args = [
                replica.meta,
                self.key,
                replica.epoch,
                seen,
                CHUNK,
                replica.expire_seconds,
                MAX_TAIL,
                max_pairs,
                *replica.limits.tolist(),
                SKETCH_BYTES,
            ]
            args += [
                pack_record(pages[i][1], pages[i][0]) + fixed_width(pages[i][1].sketch) + pages[i][0].encode()
                for i in kept
            ]
            status, *reply = yield args
            if status in (b"epoch", b"behind"):  # the store is gone or was created again; or the replica is far behind
                replica.sync()
                return None
            if status == b"lost":
                self._add_lost(int(reply[0]))
                return None
            if status == b"kept":  # after the pages others kept meanwhile (not near these), stamped
                seconds, appended, sketches = reply
                replica.set_clock(seconds)
                replica.append_records(np.frombuffer(appended, dtype=RECORD), sketches)
                for n, i in enumerate(kept):  # its own pages come last
                    replica.met_urls.add(replica.rows - len(kept) + n, pages[i][0])
                break
            replica.append_records(np.frombuffer(reply[0], dtype=RECORD), reply[1])  # "moved": others kept pages near
            max_pairs = -1  # a retry's tail is what others kept during one round trip: always compared
            new_rows = (matcher.fingerprints[seen : replica.rows], matcher.present[seen : replica.rows])
            near = near_any(*pending_rows, *new_rows, replica.limits, False)
            for i, maybe in zip(pending, near):
                if maybe and (found := matcher.find(*pages[i], since=seen)) is not None:
                    results[i] = found
        for i, match in zip(pending, in_batch):
            if not dropped(results[i]) and (results[i] is None or dropped(match)):
                results[i] = match
        return results


def check_in_stores(
    work: list[tuple[RedisStore, list[tuple[str, Fingerprint]]]],
    guard: RetryGuard,
    log: RedisLog,
    waiting: Iterable[RedisStore] = (),
) -> list[list[Match | None]]:
    """Each store's pages checked and added (``RedisStore.checks``), the script calls of all stores sent together;
    first, the pages kept while Redis was down are added, those of the stores of ``work`` and of ``waiting``.

    When Redis fails (and for ``RETRY_SECONDS`` after), raises ``CheckedLocally`` with each page's match (in
    order, store after store): the pages a store decided in Redis before the failure keep their matches, the
    others are checked against its replica and the pages it kept meanwhile, which are added first when Redis
    answers again (up to ``MAX_UNCHECKED`` a store), so that their later copies are still caught, here and in
    the other processes."""
    decided: list[list[Match | None]] = [[] for _ in work]
    try:
        for store in {id(store): store for store in [*(store for store, _ in work), *waiting]}.values():
            store.local.add_back(partial(guard.call, store._check_all), MAX_BATCH)
        if not work:
            return []
        return guard.call(
            lambda: run_steps(
                work[0][0].client, [store.checks(pages, done) for (store, pages), done in zip(work, decided)]
            )
        )
    except StoreUnavailable as error:
        matches = [
            match
            for (store, pages), done in zip(work, decided)
            for match in done + store.local.check(store.replica.matcher, pages[len(done) :])
        ]
        raise CheckedLocally(str(error), matches) from None
    finally:
        log.send()


#: Times the script is loaded again in one ``run_steps`` (a node without it: restarted, or a replica promoted).
SCRIPT_LOADS = 2


def run_steps(client: RedisClient, steps: list[Steps]) -> list[list[Match | None]]:
    """Run the stores' steps together: each round, one pipeline of the script calls they wait on (on a cluster,
    one per node), until every store has its matches.  A call that failed raises its error once every call
    answered has been taken in (their pages are in Redis: their replicas know it)."""
    results: list[list[Match | None] | None] = [None] * len(steps)
    waiting: dict[int, list] = {}
    for n, step in enumerate(steps):
        _advance(step, None, n, waiting, results)
    loads = 0
    while waiting:
        answered, waiting = waiting, {}
        failure: Exception | None = None
        without_script = False
        for (n, args), reply in zip(answered.items(), _script_calls(client, list(answered.values()))):
            if isinstance(reply, redis.exceptions.NoScriptError):
                waiting[n], without_script = args, True  # sent again once the script is loaded
            elif isinstance(reply, Exception):
                failure = failure or reply
            else:
                _advance(steps[n], reply, n, waiting, results)
        if failure is not None:
            raise failure
        if without_script:
            if loads == SCRIPT_LOADS:
                raise redis.exceptions.NoScriptError("the check-and-add script cannot be loaded")
            loads += 1
            client.script_load(_SCRIPT)  # (scripts are not replicated: a promoted replica lacks it)
    return results  # type: ignore[return-value]  # redis-py types a pipeline's replies as a list of anything


def _script_calls(client: RedisClient, calls: list[list]) -> list:
    """The script's replies to ``calls`` (errors as values): one pipeline to one server, or one per node of a
    cluster (whose client pipelines no script); a call a node does not take (its slot moved, the node gone) is
    made again through the cluster client, which follows the cluster."""
    if not isinstance(client, RedisCluster):
        pipe = client.pipeline(transaction=False)
        for args in calls:
            pipe.evalsha(_SHA, 1, *args)
        return pipe.execute(raise_on_error=False)
    by_node: dict[str, list[int]] = {}
    for n, args in enumerate(calls):
        by_node.setdefault(client.get_node_from_key(args[0]).name, []).append(n)
    replies: list = [None] * len(calls)
    for name, numbers in by_node.items():
        pipe = client.get_redis_connection(client.get_node(node_name=name)).pipeline(transaction=False)
        for n in numbers:
            pipe.evalsha(_SHA, 1, *calls[n])
        try:
            answered = pipe.execute(raise_on_error=False)
        except (redis.ConnectionError, redis.TimeoutError) as error:
            answered = [error] * len(numbers)
        for n, reply in zip(numbers, answered):
            replies[n] = reply
    for n, reply in enumerate(replies):
        if isinstance(reply, redis.RedisError) and not isinstance(reply, redis.exceptions.NoScriptError):
            try:
                replies[n] = client.evalsha(_SHA, 1, *calls[n])
            except (redis.RedisError, RedisClusterException) as error:  # the cluster cannot take it either
                replies[n] = error
    return replies


def _advance(
    step: Steps, reply: list | None, n: int, waiting: dict[int, list], results: list[list[Match | None] | None]
) -> None:
    try:
        waiting[n] = next(step) if reply is None else step.send(reply)  # (the first step: sent nothing)
    except StopIteration as done:
        results[n] = done.value
