"""Deduplicate pages read from files, with the pipeline's fingerprints, store classes and policy."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, Protocol

from ..crawl.settings import DedupSettings
from ..fingerprint.fingerprinter import Fingerprint, comparable, outcomes
from ..guards.canonical import CanonicalUrls
from ..matching.policy import Match, dropped, never_dropped, never_to_drop, not_filtered
from ..stores.base import Store
from ..stores.records import Alias, Decision, DecisionLogEntries, canonical_aliases, run_summary
from ..stores.sqlite.store import SqliteStore
from .fingerprints import fingerprinted
from .sources import STATUS, BadInput, Page, in_arrival_order, is_page_count, plural, read_inputs

#: A page's outcome when it was compared (else why not: ``not_compared/<reason>``, or ``failed``).
KEPT, BORDERLINE, DROPPED, FAILED = "kept", "borderline", "dropped", "failed"
NOT_COMPARED = "not_compared/"
NOT_FILTERED = NOT_COMPARED + "not_filtered"  # its record said so (``FILTER_META``): passed on as it is


class ShowsProgress(Protocol):
    """Where a run shows how far it is and says what went wrong (``scrapy_simhash_dedup.batch.progress``)."""

    def advance(self, read: int, pages: int) -> None: ...

    def say(self, message: str) -> None: ...


def dedup(
    inputs: Sequence[str | Path],
    settings: DedupSettings,
    store: Store,
    kept: IO[str] | None = None,
    outcomes_file: IO[str] | None = None,
    workers: int = 1,
    progress: ShowsProgress | None = None,
    all_statuses: bool = False,
    argument_order: bool = False,
    outcome_texts: int = 0,
) -> Counter[str]:
    """Read, fingerprint and decide every page of ``inputs`` in order; write each kept page to ``kept``
    (a JSON Lines record: the input's record, or its URL and source) and each page's outcome to
    ``outcomes_file``; return what happened: pages by outcome (``kept``, ``borderline``, ``dropped``,
    ``failed``, ``not_compared/<reason>``) and records that are not pages (``unreadable``, ``skipped``,
    ``status/<code>``, ``revisit``; ``all_statuses``: responses of every status are pages).  WARC files are
    read in the order of their dates (``in_arrival_order``) unless ``argument_order``.  The first
    ``outcome_texts`` decisions of ``outcomes_file`` carry both pages' texts (the store's log keeps its own,
    ``SIMHASH_DEDUP_REVIEW_TEXTS``)."""
    fingerprinter = settings.fingerprinter(keep_text=settings.keep_texts)
    log_entries = DecisionLogEntries(settings.keep_texts)
    names = Names(settings.canonical_field, store)
    lines = OutcomeLines(outcomes_file, outcome_texts)
    happened: Counter[str] = Counter()
    stats: Counter[str] = Counter()  # the pipeline's stats, for the run's record (the report reads them)
    started = time.time()
    if isinstance(store, SqliteStore) and kept is not None:
        store.before_write = kept.flush  # a page is remembered only once its record is in the output
    if isinstance(store, SqliteStore) and progress is not None:
        store.on_fault = lambda fault: progress.say(
            f"{store.path} cannot be written ({fault}); pages are still compared, and remembered once it can be"
            if fault is not None
            else f"{store.path} is written again"
        )
    pages = read_inputs(
        inputs if argument_order else in_arrival_order(inputs), settings.html_field, settings.url_field, all_statuses
    )
    for item, result in fingerprinted(pages, fingerprinter, workers):
        if isinstance(item, BadInput):
            happened[item.counted_as] += item.records
            if progress is not None:
                progress.say(f"{item.source}: {item.message}")
        else:
            outcome, decision, match = _decide(item, result, store, log_entries, stats)
            happened[outcome] += 1
            canonical = names.named(item, outcome, decision, result)
            lines.write(item, outcome, decision, match, canonical)
            remembered = outcome in (KEPT, BORDERLINE) and not dropped(match)  # the store added it (its last row)
            _write(item, outcome, store, kept, canonical, settings.canonical_field, remembered)
            if remembered:
                lines.kept(len(store) - 1, item)
            if outcome == FAILED and progress is not None:
                progress.say(f"{item.source}: fingerprinting failed ({result}); kept")
        if progress is not None:
            progress.advance(item.read, pages_read(happened))
    summary = run_summary(", ".join(map(str, inputs)), started, settings.policy, dict(stats))
    lines.finish(summary)
    store.save_run(summary)
    return happened


def _decide(
    page: Page,
    result: Fingerprint | Exception | None,
    store: Store,
    log_entries: DecisionLogEntries,
    stats: Counter[str],
) -> tuple[str, Decision | None, Match | None]:
    """The page's outcome, its decision (for the log) and match, counted in ``stats`` as a crawl counts it.  A
    record read as a request's ``meta`` is (``policy.not_filtered``, ``policy.never_to_drop``): one that says
    ``"simhash_dedup": false`` is passed on as it is, neither compared nor remembered; one that says
    ``"simhash_dedup_never_drop": true`` is compared and kept whatever it matches, a borderline keep of reason
    ``never_dropped`` (the store did not add it: the page it matched stands for it)."""
    said = page.record if isinstance(page.record, dict) else {}
    if not_filtered(said):
        stats.update(["not_filtered", "items_kept"])
        return NOT_FILTERED, None, None
    stats["checked"] += 1
    if not isinstance(result, Fingerprint):
        stats.update(["errors", "pages_kept", "items_kept"])
        return FAILED, None, None
    stats.update(outcomes(result))
    if not comparable(result):
        stats.update(["pages_kept", "items_kept"])
        return NOT_COMPARED + (result.problem or "too_few_features"), None, None
    match = store.check_and_add(page.url, result)
    if dropped(match) and never_to_drop(said):
        stats.update(["never_dropped", "pages_kept", "items_kept"])
        decision = log_entries.kept(page.url, result, never_dropped(match))
        assert decision is not None  # (a match named: a borderline keep)
        store.record(decision)
        return BORDERLINE, decision, match
    if dropped(match):
        stats.update(["pages_dropped", "items_dropped", f"items_dropped/{match.reason}"])
        decision = log_entries.dropped(page.url, result, match)
        store.record(decision)
        return DROPPED, decision, match
    stats.update(["pages_kept", "items_kept"])
    borderline = log_entries.kept(page.url, result, match)
    if borderline is not None:
        stats["borderline"] += 1
        store.record(borderline)
        return BORDERLINE, borderline, match
    return KEPT, None, match


class OutcomeLines:
    """The ``--outcomes`` file: a line per page read, its outcome; a drop's or a borderline keep's names the
    kept page's record (``kept_source``: where this run read it; None for a page an earlier run kept) and, for
    the first ``texts`` of them, both pages' texts (the report's diffs: ~4 KB a line, where the rest are
    ~0.3 KB); then the run's record."""

    def __init__(self, file: IO[str] | None, texts: int) -> None:
        self.file = file
        self.texts = texts
        self.sources: dict[int, str] = {}  # the store's row of each page this run kept -> its record

    def kept(self, row: int, page: Page) -> None:
        if self.file is not None:
            self.sources[row] = page.source

    def write(
        self, page: Page, outcome: str, decision: Decision | None, match: Match | None, canonical: str | None
    ) -> None:
        if self.file is None:
            return
        record: dict[str, Any] = {"source": page.source, "url": page.url, "outcome": outcome.removeprefix(NOT_COMPARED)}
        if canonical is not None:
            record["canonical_url"] = canonical
        if decision is not None:
            fields = decision.to_json() if self.texts > 0 else decision.without_texts()
            self.texts -= self.texts > 0
            record.update({k: v for k, v in fields.items() if k not in ("url", "outcome")})
            kept_row = match.kept_row if match is not None else None
            record["kept_source"] = self.sources.get(kept_row) if kept_row is not None else None
        self.file.write(json.dumps(record, ensure_ascii=False) + "\n")

    def finish(self, summary: dict[str, Any]) -> None:
        if self.file is not None:
            self.file.write(json.dumps({"run": summary}) + "\n")


class Names:
    """A batch's canonical URLs and aliases, as a crawl's (``guards.canonical``, ``records.Alias``): a kept
    page's canonical URL is the one it declares when believable, else its URL (a batch learns no URL rules); the
    store keeps the aliases (a SQLite or Redis store)."""

    def __init__(self, field: str, store: Store) -> None:
        self.field = field
        self.store = store
        self.canonicals = CanonicalUrls(None)

    def named(self, page: Page, outcome: str, decision: Decision | None, result: Any) -> str | None:
        """A kept page's canonical URL (None for a drop, or without a field); a drop's alias and a kept page's
        canonical URL recorded in the store."""
        if outcome == DROPPED:
            assert decision is not None, "a drop has its decision (_decide)"
            self.store.record(Alias(decision.time, page.url, decision.kept_url, decision.reason))
            return None
        if not self.field or outcome == NOT_FILTERED:
            return None
        declared = result.canonical if isinstance(result, Fingerprint) else None
        canonical = self.canonicals.choose(page.url, declared).url
        self.store.record(*canonical_aliases(page.url, canonical, time.time()))
        return canonical


def _write(
    page: Page, outcome: str, store: Store, kept: IO[str] | None, canonical: str | None, field: str, remembered: bool
) -> None:
    """A kept page's record (with its canonical URL in ``field``, unless the record has one); a kept page the
    store added (``remembered``) is then confirmed in it."""
    if outcome == DROPPED:
        return
    if kept is not None:
        record = page.record or {"url": page.url, "source": page.source}
        if canonical is not None and not record.get(field):
            record = {**record, field: canonical}
        kept.write(json.dumps(record, ensure_ascii=False) + "\n")
    if store.confirms and remembered:
        store.confirm(len(store) - 1)


def pages_read(happened: Counter[str]) -> int:
    return sum(count for outcome, count in happened.items() if is_page_count(outcome))


def summary(happened: Counter[str]) -> str:
    """Every outcome once: ``289 pages: 148 kept (12 of them borderline), 139 dropped, 2 not compared (1
    empty_html, 1 too_large), kept too; 1 record unreadable``."""
    parts = [
        f"{happened[KEPT] + happened[BORDERLINE]:,} kept"
        + (f" ({happened[BORDERLINE]:,} of them borderline)" if happened[BORDERLINE] else ""),
        f"{happened[DROPPED]:,} dropped",
    ]
    reasons = {
        outcome.removeprefix(NOT_COMPARED): count
        for outcome, count in sorted(happened.items())
        if outcome.startswith(NOT_COMPARED)
    }
    if reasons:
        parts.append(
            f"{sum(reasons.values()):,} not compared ("
            + ", ".join(f"{count:,} {reason}" for reason, count in reasons.items())
            + "), kept too"
        )
    if happened[FAILED]:
        parts.append(f"{happened[FAILED]:,} failed, kept too")
    line = f"{plural(pages_read(happened), 'page')}: " + ", ".join(parts)
    if happened["unreadable"]:
        line += f"; {plural(happened['unreadable'], 'record')} unreadable"
    if happened["skipped"]:
        line += f"; {plural(happened['skipped'], 'record')} not HTML, skipped"
    statuses = {
        outcome.removeprefix(STATUS): count for outcome, count in sorted(happened.items()) if outcome.startswith(STATUS)
    }
    if statuses or happened["revisit"]:
        parts = [f"{count:,} of status {status}" for status, count in statuses.items()]
        if happened["revisit"]:
            parts.append(plural(happened["revisit"], "revisit record"))
        line += f"; not compared, as a crawl would not have them: {', '.join(parts)}"
    return line
