"""The fingerprints of the last distinct HTML documents a crawl met (a page fetched twice is fingerprinted once)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

import xxhash
from twisted.internet.defer import Deferred, succeed
from twisted.python.failure import Failure

from ..fingerprint.fingerprinter import Fingerprint
from ..fingerprint.textloops import text_digest

#: Distinct HTML documents whose fingerprints are remembered (~300 bytes each).
RECENT_PAGES = 10_000


class RecentPages:
    """Byte-identical pages are fingerprinted once: the same page under another URL (a session id
    or tracking parameter in the link, a mirror, a trap) takes the fingerprint of the last 10,000
    distinct pages (by a 128-bit hash of the HTML), or waits for it when that page is being
    fingerprinted.  The fingerprint depends on the HTML only: reusing it changes no decision."""

    def __init__(self, size: int = RECENT_PAGES) -> None:
        self.size = size
        self._fingerprints: OrderedDict[bytes, Fingerprint] = OrderedDict()
        self._waiting: dict[bytes, list[Deferred[tuple[Fingerprint, bool]]]] = {}  # being fingerprinted: its copies

    def fingerprint(
        self, key: bytes, compute: Callable[[], Deferred[Fingerprint]]
    ) -> Deferred[tuple[Fingerprint, bool]]:
        """The fingerprint of the page whose ``key`` is given (by ``compute`` unless known), and whether
        it was known; a page that fails to be fingerprinted fails its copies the same way."""
        if (known := self._fingerprints.get(key)) is not None:
            self._fingerprints.move_to_end(key)
            return succeed((known, True))
        if (copies := self._waiting.get(key)) is not None:
            copies.append(Deferred())
            return copies[-1]
        self._waiting[key] = []
        return compute().addBoth(self._computed, key)

    def _computed(self, result: Fingerprint | Failure, key: bytes) -> tuple[Fingerprint, bool] | Failure:
        copies = self._waiting.pop(key)
        if isinstance(result, Failure):
            for copy in copies:
                copy.errback(result)
            return result
        self._fingerprints[key] = result
        if len(self._fingerprints) > self.size:
            self._fingerprints.popitem(last=False)
        for copy in copies:
            copy.callback((result, True))
        return result, False

    @staticmethod
    def key(html: str | bytes, content_type: str | None = None) -> bytes:
        """A 128-bit hash of the HTML, read where it lies (no encoding); for bytes, with the header that
        may decide their encoding."""
        if isinstance(html, str):
            return text_digest(html)
        return b"b" + xxhash.xxh3_128_digest(html) + (content_type or "").encode("latin-1", "replace")
