"""Pages checked while Redis cannot be reached: against the replica and the pages kept meanwhile, those kept
added to the store first when it answers again, so that their later copies are still caught, here and in
the other processes."""

from __future__ import annotations

from collections.abc import Callable

from ...fingerprint.fingerprinter import Fingerprint
from ...matching.matcher import Matcher
from ...matching.policy import Match, Policy, dropped
from ..memory import MemoryStore

MAX_UNCHECKED = 10_000  # pages kept while Redis was down, added when it answers again (the latest ones)


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
