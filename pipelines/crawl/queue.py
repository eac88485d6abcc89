"""The pages of a crawl decided one at a time, in their order of arrival: fingerprinted (in the worker
processes, or at once when known by their bytes), then checked against the store (Redis: in batches, off
the reactor thread), then settled (``learning.Learner``)."""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from twisted.python.failure import Failure

from ..fingerprint.fingerprinter import Fingerprint, comparable, outcomes
from ..matching.policy import Match, dropped
from ..stores.errors import CheckedLocally, StoreUnavailable
from ..workers.cache import RecentPages
from ..workers.pool import FingerprintPool
from ..workers.start import WorkerTimedOut
from .counts import Counts
from .learning import Learner
from .outage import StoreOutage
from .pages import PageDecision, PageVerdict

if TYPE_CHECKING:
    from ..stores.base import Store
    from ..stores.redis.batching import StoreBatcher


class DecisionQueue:
    """Pages not decided yet, in their order of arrival.  A page of a cluster is kept because it came
    first, as without workers, whatever order the fingerprints come back in (a large page fingerprinted
    beside a small later copy of it is still the one kept); and each page is checked and added to the
    store atomically (the next one is checked after it is in the store, or in the Redis batcher's queue)."""

    def __init__(
        self, fingerprints: FingerprintPool, store: Store, learner: Learner, counts: Counts, outage: StoreOutage
    ) -> None:
        self.fingerprints = fingerprints
        self.store = store
        self.batcher: StoreBatcher | None = None  # for the Redis store: checks off the reactor thread
        self.learner = learner
        self.counts = counts
        self.outage = outage
        self._recent = RecentPages()  # byte-identical pages are fingerprinted once
        self._arrived: deque[PageDecision] = deque()

    def begin(self, page: PageDecision, html: Any, content_type: str | None = None) -> None:
        """Start fingerprinting the page; it is decided in its turn."""
        self.counts.add("checked")
        self._arrived.append(page)
        if not isinstance(html, (str, bytes)):
            self.counts.add("not_html", page.url)
            self._fingerprinted(None, page)
            return
        known = self._recent.fingerprint(
            RecentPages.key(html, content_type), lambda: self.fingerprints.fingerprint(html, page.url, content_type)
        )
        known.addBoth(self._fingerprinted, page)

    def _fingerprinted(self, result: tuple[Fingerprint, bool] | Failure | None, page: PageDecision) -> None:
        """The page's fingerprint is ready (``None``: nothing to compare; a failure: kept, counted): counted,
        and the pages whose turn it is are decided."""
        if isinstance(result, Failure) and result.check(WorkerTimedOut):  # kept (the pool logged the first)
            self.counts.add("fingerprint_timeouts")
        elif isinstance(result, Failure):  # a bug or an odd page must never lose the page
            self.counts.add("errors", page.url, exc_info=result)
        elif result is not None:
            fingerprint, known = result
            if known:
                self.counts.add("same_html")
            for outcome in outcomes(fingerprint):
                self.counts.add(outcome, "" if outcome == "short_text" else page.url)  # the first of each logged
            page.fingerprint = fingerprint if comparable(fingerprint) else None
        page.fingerprinted = True
        while self._arrived and self._arrived[0].fingerprinted:
            self._decide(self._arrived.popleft())

    def _decide(self, page: PageDecision) -> None:
        """Check the page against the store and add it if kept; then settle its verdict."""
        if page.fingerprint is None:
            self.learner.settle(page, PageVerdict(page.url))
            return
        try:
            if self.batcher is not None:  # Redis: checked off the reactor thread, in batches
                self.batcher.submit(page.url, page.fingerprint).addBoth(self._checked, page)
                return
            match = self.store.check_and_add(page.url, page.fingerprint)
        except Exception as error:
            self._checked(Failure(error), page)
            return
        row = len(self.store) - 1 if self.store.confirms and not dropped(match) else None  # written once confirmed
        self.learner.settle(page, self.learner.verdict(page.url, page.fingerprint, match, row))

    def _checked(self, result: Match | None | Failure, page: PageDecision) -> None:
        """The store's answer for the page (Redis: when it comes back), or why there is none."""
        url, fingerprint = page.url, page.fingerprint
        if not isinstance(result, Failure):
            self.outage.answered()
            verdict = self.learner.verdict(url, fingerprint, result)
        elif isinstance(error := result.value, CheckedLocally):  # Redis down: checked against this crawler's replica
            self.outage.failed(url, error)
            verdict = (
                PageVerdict(url, unchecked=True)
                if self.outage.closed
                else self.learner.verdict(url, fingerprint, error.matches[0])
            )
            self.counts.add("checked_locally")
        elif isinstance(
            error, StoreUnavailable
        ):  # kept unchecked, or with fail mode "closed" dropped as the crawl stops
            self.outage.failed(url, error)
            verdict = PageVerdict(url, unchecked=self.outage.closed)
        else:  # a bug or an odd page must never lose the page
            self.counts.add("errors", url, exc_info=result)
            verdict = PageVerdict(url)
        self.learner.settle(page, verdict)
