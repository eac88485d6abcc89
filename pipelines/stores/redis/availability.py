"""Redis's availability, in one place: what a Redis store does when Redis cannot be reached and when it comes back.

- A call that fails is one ``StoreUnavailable``, and no call is tried again for ``RETRY_SECONDS`` (``RetryGuard``).
- Meanwhile pages are checked against the replica and the pages kept meanwhile, and those kept are added to the
  store first when it answers again, so that their later copies are still caught, here and in the other processes
  (``LocalChecks``).
- A store Redis lost (restarted without its data) is written back from a crawler's replica: under keys of the
  crawler's own, then made the store's in one script (``heal.lua``), unless another crawler did so first or the
  store was reset meanwhile (``write_back``).

What a store raises is ``stores.errors``'s; what a crawl does while its store is unreachable, ``crawl.outage``'s.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from importlib.resources import files
from typing import Any, TypeVar

import numpy as np
import redis
from redis.exceptions import RedisClusterException

from ...fingerprint.fingerprinter import Fingerprint
from ...matching.matcher import Matcher
from ...matching.policy import Match, Policy, dropped
from ..errors import StoreUnavailable
from ..memory import MemoryStore
from .keys import CHUNK, RedisClient

RETRY_SECONDS = 1.0  # after a failure, pages are checked locally this long before Redis is tried again
MAX_UNCHECKED = 10_000  # pages kept while Redis was down, added when it answers again (the latest ones)
HEAL_STAGING_SECONDS = 3600  # how long a log being written back may take before its keys expire
_HEAL = files(__package__).joinpath("heal.lua").read_text()
T = TypeVar("T")


class RetryGuard:
    """When Redis failed last, and the calls made through ``call`` meanwhile refused at once."""

    def __init__(self) -> None:
        self._retry_at = 0.0

    def failed_recently(self) -> bool:
        return time.monotonic() < self._retry_at

    def call(self, action: Callable[..., T], *args: Any) -> T:
        if self.failed_recently():
            raise StoreUnavailable("Redis failed a moment ago; retrying soon")
        try:
            return action(*args)
        except (redis.RedisError, RedisClusterException) as error:  # (a cluster's layout unreadable: not a RedisError)
            self._retry_at = time.monotonic() + RETRY_SECONDS
            raise StoreUnavailable(f"{type(error).__name__}: {error}") from error


class LocalChecks:
    """The pages kept while Redis was down (``unchecked``, in order) and the same pages as a store that
    later pages are checked against meanwhile."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.unchecked: list[tuple[str, Fingerprint]] = []
        self._meanwhile: MemoryStore | None = None  # made at the first outage (a site's store holds one)

    def check(self, replica: Matcher, pages: list[tuple[str, Fingerprint]]) -> list[Match | None]:
        """Each page against the replica, then against the pages kept meanwhile."""
        matches = []
        if self._meanwhile is None:
            self._meanwhile = MemoryStore(self.policy)
        for url, page in pages:
            match = replica.find(url, page)
            if not dropped(match):
                meanwhile = self._meanwhile.check_and_add(url, page)
                if dropped(meanwhile):
                    match = meanwhile
                else:
                    self.unchecked.append((url, page))
            matches.append(match)
        if len(self.unchecked) > MAX_UNCHECKED:  # the oldest are forgotten; so are they here
            self.unchecked = self.unchecked[-MAX_UNCHECKED:]
            self._meanwhile = MemoryStore(self.policy)
            for url, page in self.unchecked:
                self._meanwhile.check_and_add(url, page)
        return matches

    def add_back(self, check: Callable[[list[tuple[str, Fingerprint]]], object], batch: int) -> None:
        """Redis answers: the pages kept meanwhile go through ``check`` first, ``batch`` at a time (a batch
        that fails stays for the next time)."""
        while self.unchecked:
            check(self.unchecked[:batch])
            del self.unchecked[:batch]
        self._meanwhile = None


def write_back(
    client: RedisClient,
    key: str,
    scheme: str,
    expire_seconds: int,
    records: np.ndarray,
    sketches: np.ndarray,
    urls: list[str],
) -> bytes | None:
    """Write the pages (``RECORD`` rows, their sketches and URLs) back as the store ``key``'s log; its new
    epoch, or ``None`` when the store is someone else's again (the staging keys are deleted)."""
    epoch, rows = secrets.token_hex(8), len(records)
    staging = f"{key}:heal:{epoch}"
    chunks = (rows + CHUNK - 1) // CHUNK
    for n in range(chunks):
        part = slice(n * CHUNK, min(rows, (n + 1) * CHUNK))
        pipe = client.pipeline(transaction=False)
        pipe.set(f"{staging}:fp:{n}", records[part].tobytes(), ex=HEAL_STAGING_SECONDS)
        pipe.set(f"{staging}:sk:{n}", sketches[part].tobytes(), ex=HEAL_STAGING_SECONDS)
        pipe.rpush(f"{staging}:pages:{n}", *urls[part])
        pipe.expire(f"{staging}:pages:{n}", HEAL_STAGING_SECONDS)
        pipe.execute()
    outcome = client.register_script(_HEAL)(
        keys=[f"{key}:meta"], args=[key, staging, epoch, scheme, rows, chunks, expire_seconds]
    )
    return epoch.encode() if outcome == b"healed" else None
