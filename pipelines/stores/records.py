"""The records a store keeps beside its pages, plain data every layer above reads: the decision log (every
page dropped and why, and the kept pages a user should look at), the names of kept pages (``Alias``), the links
and requests skipped (``Skip``) and the URL rules learned (``Rule``; taught and applied by ``guards.traps``).

A *borderline* keep is a kept page whose nearest content candidate was
within the search distance but failed the sketch (or, in mode "both", the
structure): the pairs that show whether the distances are right.  Each
decision names both pages and their distances; the most recent pairs also
carry both pages' own texts (the words their content fingerprints were built
from), so a report can show them side by side without the HTML.  The stores
keep the log (``record``) and the counts of each run (``save_run``):
SQLite in tables beside the fingerprints, Redis in capped streams; and,
uncapped, the URLs that name each kept page (``Alias``, ``Store.record``).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from ..fingerprint.fingerprinter import Fingerprint, packed, unpacked
from ..matching.policy import UPDATE, Match, Policy

#: Own texts of the most recently kept pages held in memory, for the kept side of a pair (~2 KB each).
KEPT_TEXTS = 5_000

DROPPED = "dropped"
BORDERLINE = "borderline"


@dataclass(frozen=True)
class Decision:
    """One entry of the log: ``url`` was dropped as a near-duplicate of ``kept_url`` (``outcome``
    "dropped"), or kept though ``kept_url`` was near (``outcome`` "borderline").  Both pages' own
    texts are held packed (``packed``), as the worker compressed them and the stores keep them: the
    crawl never compresses or decompresses a text to log a decision; ``text`` and ``kept_text``
    unpack them for a reader."""

    time: float
    outcome: str
    url: str
    kept_url: str
    reason: str  # Match.reason: what matched, or for a borderline keep what failed
    content_distance: int | None
    structure_distance: int | None
    similarity: float | None
    similarity_needed: float | None
    packed_text: bytes | None = None
    packed_kept_text: bytes | None = None

    @property
    def text(self) -> str | None:
        return unpacked(self.packed_text)

    @property
    def kept_text(self) -> str | None:
        return unpacked(self.packed_kept_text)

    def without_texts(self) -> dict[str, Any]:
        """Every field but the texts (``DECISION_FIELDS``)."""
        return {name: getattr(self, name) for name in DECISION_FIELDS}

    def to_json(self) -> dict[str, Any]:
        """Every field, the texts unpacked (``text``, ``kept_text``)."""
        return {**self.without_texts(), "text": self.text, "kept_text": self.kept_text}

    @classmethod
    def from_json(cls, record: Mapping[str, Any]) -> Decision:
        """A decision from ``to_json``'s record (other keys ignored)."""
        values: dict[str, Any] = {name: record.get(name) for name in DECISION_FIELDS}  # as JSON gave them
        return cls(
            **values,
            packed_text=packed(record.get("text")),
            packed_kept_text=packed(record.get("kept_text")),
        )


#: A decision's fields but its texts, in order.
DECISION_FIELDS = tuple(field.name for field in fields(Decision))[:-2]


def field_values(record: Decision | Skip) -> tuple:
    """A decision's or a skip's fields in order, as a store writes them (``dataclasses.astuple`` copies every
    value deeply: it cost a flush of 100 decisions a millisecond and a half)."""
    return tuple(getattr(record, field.name) for field in fields(record))


@dataclass(frozen=True)
class Skip:
    """A request the crawl did not make: a link of a near-duplicate page (``kind`` "link", ``because``
    the duplicate page's URL), or a request a trusted URL rule rewrote to a page already fetched
    (``kind`` "request", ``because`` the rewritten URL, ``rule`` the rules applied)."""

    time: float
    kind: str
    url: str
    because: str
    rule: str = ""


@dataclass(frozen=True)
class Alias:
    """A URL that names a kept page (``kept_url``): its canonical URL (``reason`` ``CANONICAL``), a URL a
    near-duplicate of it was met under (the drop's reason: "content", "both"...), or a request a trusted URL
    rule skipped as a copy of a URL already fetched (``RULE``; ``kept_url`` is then that URL, which may be
    an alias itself: ``report.aliases`` follows it to the kept page)."""

    time: float
    url: str
    kept_url: str
    reason: str


CANONICAL = "canonical"
RULE = "rule"


def canonical_aliases(kept_url: str, canonical: str | None, when: float = 0.0) -> list[Alias]:
    """The alias a kept page's canonical URL gives: none when it is the URL the page was kept at, or unknown."""
    return [Alias(when, canonical, kept_url, CANONICAL)] if canonical and canonical != kept_url else []


class DecisionLogEntries:
    """Turns matches into decisions, with the texts of both pages while they are at hand.

    The dropped page's text comes with its fingerprint; the kept page's from
    the ``KEPT_TEXTS`` most recently kept pages (a page kept long before, or by
    another process, has none: the report then shows one side).
    """

    def __init__(self, keep_texts: bool, recent: int = KEPT_TEXTS) -> None:
        self.keep_texts = keep_texts
        self._recent = recent
        self._texts: OrderedDict[str, bytes] = OrderedDict()  # kept URL -> its own text, packed

    def kept(self, url: str, fingerprint: Fingerprint | None, match: Match | None) -> Decision | None:
        """A page was kept: remember its text; the borderline decision if it had a near candidate (an
        update of a page kept by an earlier crawl is not one)."""
        decision = (
            self.decision(BORDERLINE, url, fingerprint, match) if match is not None and match.reason != UPDATE else None
        )
        self.remember(url, fingerprint)
        return decision

    def remember(self, kept_url: str, fingerprint: Fingerprint | None) -> None:
        """The text of the page kept at ``kept_url``, for the pairs it will be the kept side of: a page kept now,
        or one an earlier run kept, met again (its drop is no pair, its text the same document's)."""
        if self.keep_texts and fingerprint is not None and fingerprint.text is not None:
            self._texts[kept_url] = fingerprint.text
            self._texts.move_to_end(kept_url)
            if len(self._texts) > self._recent:
                self._texts.popitem(last=False)

    def dropped(self, url: str, fingerprint: Fingerprint, match: Match) -> Decision:
        return self.decision(DROPPED, url, fingerprint, match)

    def decision(self, outcome: str, url: str, fingerprint: Fingerprint | None, match: Match) -> Decision:
        return Decision(
            time.time(),
            outcome,
            url,
            match.url,
            match.reason,
            match.content_distance,
            match.structure_distance,
            match.similarity,
            match.similarity_needed,
            fingerprint.text if self.keep_texts and fingerprint is not None else None,
            self._texts.get(match.url),
        )


def run_summary(name: str, started: float, policy: Policy, counts: Mapping[str, Any]) -> dict[str, Any]:
    """What the report shows of a run (a crawl, or a batch): what ran, when, the decision's settings,
    and its counts (the stats ``simhash_dedup/<name>``)."""
    return {
        "spider": name,
        "started": started,
        "finished": time.time(),
        "settings": {
            "mode": policy.mode.value,
            "content_distance": policy.content_distance,
            "structure_distance": policy.structure_distance,
            "min_similarity": policy.min_similarity,
        },
        "counts": dict(counts),
    }


#: Known URLs per host (fetched, or requested) whose rewritten forms are remembered (the most recent); a store
#: gives back as many of the pages it kept (``Store.load_rules``).
FETCHED_URLS = 50_000


@dataclass
class Rule:
    """A URL rewrite rule and what is known of it (``guards.traps.RuleBook`` learns and applies it)."""

    host: str  # the host it applies to, ``www.`` left out
    kind: str  # "param", "path_param", "segment" or "host"
    name: str  # the parameter or segment (``""`` for a host alias)
    support: int = 0  # pairs of near-duplicates it makes equal
    refuted_by: str | None = None  # "url1 url2": two kept, different pages it makes equal

    @property
    def ident(self) -> tuple[str, str, str]:
        return self.host, self.kind, self.name

    def describe(self) -> str:
        if self.kind == "host":
            return f"www.{self.host} = {self.host}"
        what = {"param": "query parameter", "path_param": "path parameter ;", "segment": "path segment"}[self.kind]
        return f"{self.host}: {what}{'' if self.kind == 'path_param' else ' '}{self.name!r} does not change the page"


#: What a store keeps beside its pages (``Store.record``).
Record = Decision | Skip | Alias | Rule
