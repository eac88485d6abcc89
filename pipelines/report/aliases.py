"""The alias table: every URL that names a kept page, with the page's canonical URL.

A store keeps each naming as it happened (``records.Alias``): a kept page's
canonical URL, the URLs its near-duplicates were met under, the requests a URL
rule skipped as copies of a URL already fetched (which may itself be an alias).
The table resolves them: each row says which kept page an alias names and
under which canonical URL, as ``simhash-dedup aliases`` exports it and the
report lists it per cluster.
"""

from __future__ import annotations

import csv
import json
from typing import IO, NamedTuple

from ..stores.records import CANONICAL, RULE, Alias

#: Rule-skipped requests name a URL already fetched, which may itself name another: followed this far at most.
MAX_HOPS = 10


class AliasRow(NamedTuple):
    """``alias`` names the page kept at ``kept_url``, whose canonical URL is ``canonical``; ``reason``: how
    (see ``records.Alias``)."""

    alias: str
    canonical: str
    kept_url: str
    reason: str


def alias_rows(aliases: list[Alias]) -> list[AliasRow]:
    """One row per aliased URL, in the order they were met, its first naming (as the stores keep it) unless that
    was only a canonical name: a URL dropped as a copy (or skipped by a rule) that became its kept page's canonical
    URL is a copy all the same, whichever came first.  A kept page's canonical URL is its last naming, its own when
    none was recorded (it was its URL).  A rule skip names the URL it was rewritten to, which is followed to the
    kept page; a drop and a canonical URL name the kept page itself.
    A URL that names itself (a re-crawl's page dropped as the copy kept under its own URL) is no alias."""
    canonical = canonical_names(aliases)
    named = {a.url: a.kept_url for a in aliases}  # a canonical URL too names its page: a rule skip may lead there
    rows: dict[str, AliasRow] = {}
    for alias in aliases:
        kept = _kept_page(alias.kept_url, named) if alias.reason == RULE else alias.kept_url
        if alias.url == kept:
            continue
        row = rows.get(alias.url)
        if row is None or (row.reason == CANONICAL and alias.reason != CANONICAL):
            rows[alias.url] = AliasRow(alias.url, canonical.get(kept, kept), kept, alias.reason)
    return list(rows.values())


def canonical_names(aliases: list[Alias]) -> dict[str, str]:
    """Each kept page's canonical URL, by the URL it was kept at: its last naming (a crawl renames a page when it
    learns more of the site: ``guards.canonical``)."""
    return {a.kept_url: a.url for a in aliases if a.reason == CANONICAL}


def _kept_page(url: str, named: dict[str, str]) -> str:
    """The kept page ``url`` leads to: itself, or what it names, followed."""
    for _ in range(MAX_HOPS):
        if (next_url := named.get(url)) is None or next_url == url:
            break
        url = next_url
    return url


def write_rows(rows: list[AliasRow], out: IO[str], form: str) -> None:
    """The rows as ``"csv"`` (a header line, then one line each) or ``"jsonl"`` (one JSON object each)."""
    if form == "csv":
        writer = csv.writer(out)
        writer.writerow(AliasRow._fields)
        writer.writerows(rows)
        return
    for row in rows:
        out.write(json.dumps(row._asdict(), ensure_ascii=False) + "\n")
