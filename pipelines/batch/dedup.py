"""Deduplicate pages read from files, with the pipeline's fingerprints, store classes and policy."""

from __future__ import annotations

import json
import logging
import sys
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import IO, Any

from ..decisions import Reviewer, run_summary
from ..fingerprint import Fingerprint, Fingerprinter, comparable, outcomes
from ..settings import DedupSettings
from ..policy import dropped
from ..stores import MemoryStore, SqliteStore
from .fingerprints import fingerprinted
from .sources import BadInput, Page, read_inputs

logger = logging.getLogger(__name__)


def dedup(
    inputs: Sequence[str | Path],
    settings: DedupSettings,
    store: MemoryStore,
    kept: IO[str] | None = None,
    decisions: IO[str] | None = None,
    workers: int = 1,
    progress: bool = False,
) -> Counter[str]:
    """Read, fingerprint and decide every page of ``inputs`` in order; write each kept page to ``kept``
    (a JSON Lines record: the input's record, or its URL and source) and each page's outcome to
    ``decisions``; return the counts (the pipeline's stats names, plus ``unreadable``)."""
    fingerprinter = Fingerprinter(
        structure_decay=settings.structure_decay, min_features=settings.min_features,
        max_bytes=settings.max_html_bytes, max_elements=settings.max_elements,
        max_text_chars=settings.max_text_chars, keep_text=settings.keep_texts,
    )
    reviewer = Reviewer(settings.keep_texts)
    counts: Counter[str] = Counter()
    started = time.time()
    if isinstance(store, SqliteStore) and kept is not None:
        store.before_write = kept.flush  # a page is remembered only once its record is in the output
    pages = read_inputs(inputs, settings.html_field, settings.url_field)
    for item, result in _progress(fingerprinted(pages, fingerprinter, workers), progress):
        if isinstance(item, BadInput):
            counts[item.kind] += item.records
            print(f"simhash-dedup: {item.source}: {item.message}", file=sys.stderr)
            continue
        counts["checked"] += 1
        outcome, decision = _decide(item, result, store, reviewer, counts)
        if decision is not None:
            store.record(decision)
        if decisions is not None:
            record = {"source": item.source, "url": item.url, "outcome": outcome}
            if decision is not None:
                record.update({k: v for k, v in decision.to_json().items() if k not in ("url", "outcome")})
            decisions.write(json.dumps(record, ensure_ascii=False) + "\n")
        if outcome != "dropped":
            if kept is not None:
                kept.write(json.dumps(item.record or {"url": item.url, "source": item.source}, ensure_ascii=False) + "\n")
            if isinstance(store, SqliteStore) and isinstance(result, Fingerprint) and comparable(result):
                store.confirm(len(store) - 1)
    summary = run_summary(", ".join(map(str, inputs)), started, settings.policy, counts)
    if decisions is not None:
        decisions.write(json.dumps({"run": summary}) + "\n")
    store.save_run(summary)
    return counts


def _decide(page: Page, result: Fingerprint | Exception | None, store: MemoryStore, reviewer: Reviewer,
            counts: Counter[str]) -> tuple[str, Any]:
    """The page's outcome (kept, dropped, borderline, or why it was not compared) and its decision."""
    if not isinstance(result, Fingerprint):
        counts.update(["errors", "kept"])
        print(f"simhash-dedup: {page.source}: fingerprinting failed ({result}); kept", file=sys.stderr)
        return "errors", None
    counts.update(outcomes(result))
    match = store.check_and_add(page.url, result) if comparable(result) else None
    if dropped(match):
        counts.update(["dropped", f"dropped/{match.reason}"])
        return "dropped", reviewer.dropped(page.url, result, match)
    counts["kept"] += 1
    decision = reviewer.kept(page.url, result, match)
    if match is not None:
        counts["borderline"] += 1
        return "borderline", decision
    return (result.problem or "kept"), decision


def _progress(items: Iterable[Any], show: bool) -> Iterable[Any]:
    if not show:
        return items
    from tqdm import tqdm

    return tqdm(items, unit=" pages", file=sys.stderr, mininterval=0.5, dynamic_ncols=True)
