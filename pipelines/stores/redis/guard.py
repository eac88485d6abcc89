"""Redis calls that fail: one ``StoreUnavailable``, and no call tried again for ``RETRY_SECONDS``."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

import redis
from redis.exceptions import RedisClusterException

from ..errors import StoreUnavailable

RETRY_SECONDS = 1.0  # after a failure, pages are checked locally this long before Redis is tried again
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
