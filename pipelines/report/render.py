"""The report's HTML: counts, histograms, clusters and pairs, in one file with its style inline."""

from __future__ import annotations

import time
from collections import defaultdict
from html import escape
from pathlib import Path

from ..crawl.settings import DedupSettings
from ..crawl.stats import current_names
from ..matching.policy import ADDRESS, BODY, NEVER_DROPPED, Policy
from ..output import Output
from ..stores.records import BORDERLINE, CANONICAL, DROPPED, RULE, Decision
from .aliases import AliasRow, alias_rows
from .diff import side_by_side
from .log import Log
from .plots import distance_histogram, similarity_histogram

#: Pairs shown with their diff (nearest the threshold first), and clusters listed.
MAX_PAIRS = 200
MAX_CLUSTERS = 100
OPEN_PAIRS = 5  # the first pairs are shown unfolded

#: The counts shown first, in this order; any other count follows.
MAIN_COUNTS = (
    "checked",
    "pages_kept",
    "pages_dropped",
    "pages_dropped/rerun",
    "items_kept",
    "items_dropped",
    "borderline",
    "links_skipped",
    "requests_skipped",
    "short_text",
    "same_html",
)


def write_report(log: Log, path: Path, pairs: int = MAX_PAIRS) -> Path:
    """The report written to ``path`` whole or not at all (``Output``: an earlier report stays as it was if
    anything fails); its folder must exist: a mistyped folder is said, not made."""
    html = render(log, pairs)
    output = Output(str(path))
    with output as file:
        file.write(html)
        output.done = True
    return path


def render(log: Log, pairs: int = MAX_PAIRS) -> str:
    settings = log.settings
    decisions = log.pairs()
    policy = Policy(content_distance=int(settings["content_distance"]))  # the search distance follows from it
    search = policy.search_distance
    sections = [
        _counts(log),
        _runs(log),
        "<h2>Distances of the pairs</h2>"
        "<p>Every drop and every borderline keep (a kept page whose nearest content candidate was within "
        "the search distance but failed the similarity check or the mode). Drops just inside a threshold, "
        "and borderline keeps just outside it, are the pairs to look at when tuning. "
        f"Two small texts, and two large ones holding the same body, are compared up to {search} bits; a page met "
        "again at a kept page's address (<i>address</i>) is judged on its name and what it shows, at any distance."
        "</p>"
        f"<div class='plots'><figure>{distance_histogram(decisions, settings['content_distance'], search)}</figure>"
        f"<figure>{similarity_histogram(decisions, settings['min_similarity'])}</figure></div>",
        _clusters(log, decisions, policy),
        _pairs(decisions, policy, pairs),
        _rules(log),
        _skips(log),
    ]
    return _PAGE.format(
        style=_STYLE,
        source=escape(log.source),
        generated=time.strftime("%Y-%m-%d %H:%M"),
        settings=escape(", ".join(f"{k} {v}" for k, v in settings.items())),
        body="".join(sections),
    )


def _rules(log: Log) -> str:
    """The URL rules: trusted ones apply to requests, candidates wait for support, withdrawn ones name
    the two kept pages that refuted them."""
    if not log.rules:
        return ""
    support = int(log.settings.get("rule_support") or DedupSettings().rule_support)
    rows = "".join(
        f"<tr><td>{escape(rule.describe())}</td><td>{rule.support}</td><td>"
        + (
            "withdrawn: " + " and ".join(_link(u) for u in rule.refuted_by.split(" ", 1)) + " were both kept"
            if rule.refuted_by
            else "trusted"
            if support and rule.support >= support
            else "candidate"
        )
        + "</td></tr>"
        for rule in sorted(log.rules, key=lambda r: (r.refuted_by is not None, -r.support))
    )
    return (
        "<h2>URL rules</h2><p>Learned from the drops: each pair (dropped URL, kept URL) a rule makes equal "
        "supports it; a trusted rule skips requests whose rewritten URL was already fetched.</p>"
        f"<table class='runs'><tr><th>rule</th><th>pairs</th><th>state</th></tr>{rows}</table>"
    )


def _skips(log: Log, shown: int = 200) -> str:
    if not log.skips:
        return ""
    links = sum(skip.kind == "link" for skip in log.skips)
    rows = "".join(
        f"<tr><td>{skip.kind}</td><td>{_link(skip.url)}</td><td>"
        + (
            f"on {_link(skip.because)}, {escape(skip.rule)}"
            if skip.kind == "link"
            else f"is {_link(skip.because)} by {escape(skip.rule)}"
        )
        + "</td></tr>"
        for skip in log.skips[-shown:][::-1]
    )
    return (
        f"<h2>Not followed</h2><p>{links:,} links of near-duplicate pages and {len(log.skips) - links:,} "
        f"requests skipped by the URL rules (the log keeps the newest; the last {min(shown, len(log.skips))} "
        f"below).</p><table class='runs'><tr><th>what</th><th>URL</th><th>why</th></tr>{rows}</table>"
    )


def _counts(log: Log) -> str:
    counts = dict(log.counts) or {
        DROPPED: sum(d.outcome == DROPPED for d in log.decisions),
        BORDERLINE: sum(d.outcome == BORDERLINE for d in log.decisions),
    }
    if all(counts.get(f"items_{what}") == counts.get(f"pages_{what}") for what in ("kept", "dropped")):
        counts = {name: count for name, count in counts.items() if not name.startswith("items_")}  # one item a page
    names = [name for name in MAIN_COUNTS if name in counts] + sorted(set(counts) - set(MAIN_COUNTS))
    rows = "".join(f"<tr><th>{escape(name)}</th><td class='num'>{counts[name]:,}</td></tr>" for name in names)
    return (
        f"<h2>Counts</h2><p>Pages by outcome over the {len(log.runs) or 'logged'} run(s) "
        f"(the stats <code>simhash_dedup/…</code>); <code>items_…</code> count the items of those pages, "
        f"shown when a page had several.</p><table class='counts' id='counts'>{rows}</table>"
    )


def _runs(log: Log) -> str:
    if not log.runs:
        return ""
    rows = "".join(
        f"<tr><td>{escape(str(run.get('spider', run.get('input', ''))))}</td><td>{_when(run.get('started'))}</td>"
        f"<td>{_when(run.get('finished'))}</td>"
        + "".join(
            f"<td class='num'>{current_names(run.get('counts', {})).get(name, 0):,}</td>"
            for name in ("checked", "items_kept", "items_dropped", "borderline")
        )
        + "</tr>"
        for run in log.runs[-20:]
    )
    return (
        "<h2>Runs</h2><table class='runs'><tr><th>spider / input</th><th>started</th><th>finished</th>"
        f"<th>checked</th><th>items kept</th><th>items dropped</th><th>borderline</th></tr>{rows}</table>"
    )


def _clusters(log: Log, decisions: list[Decision], policy: Policy) -> str:
    """What the drops were, in one line (``_drops_explained``); then each kept page that has aliases, largest
    first: its URL, its canonical URL, and the URLs that name it (its dropped copies, with how near each was, and
    the requests a URL rule skipped as copies)."""
    drops = {d.url: d for d in decisions if d.outcome == DROPPED}
    rows = alias_rows(log.names())
    clusters: dict[str, list[AliasRow]] = defaultdict(list)
    canonical: dict[str, str] = {}
    for row in rows:
        canonical[row.kept_url] = row.canonical
        if row.reason != CANONICAL:
            clusters[row.kept_url].append(row)
    copies = sum(row.reason != RULE for named in clusters.values() for row in named)
    explained = f"<p id='drops'>{_drops_explained(log, copies)}</p>"
    if not clusters:
        return f"<h2>Clusters</h2>{explained}"
    largest = sorted(clusters.items(), key=lambda item: -len(item[1]))[:MAX_CLUSTERS]
    items = "".join(
        f"<li><details><summary>{_link(kept)}"
        + (f" <span class='why'>known as</span> {_link(canonical[kept])}" if canonical[kept] != kept else "")
        + f" <span class='badge'>{_aliases_count(named)}</span></summary><ul>"
        + "".join(
            f"<li>{_link(row.alias)} <span class='why'>{_named_how(row, drops, policy)}</span></li>"
            for row in named[:50]
        )
        + "</ul></details></li>"
        for kept, named in largest
    )
    return (
        f"<h2>Clusters</h2>{explained}"
        f"<p>{len(clusters):,} kept pages have dropped copies or requests skipped as copies; "
        f"the largest {len(largest)} first, each with its canonical URL when it is not the URL it was kept at "
        "(<code>simhash-dedup aliases</code> exports them all).</p>"
        f"<ol class='clusters'>{items}</ol>"
    )


def _drops_explained(log: Log, copies: int) -> str:
    """The pages dropped (the counts' ``pages_dropped``), told apart: pages an earlier run kept, met again; pages
    this crawl kept, fetched again; near-duplicates, whose URLs the clusters list (``copies``; a URL dropped by
    several runs is one)."""
    met_again, refetched = log.met_again(), log.counts.get("pages_dropped/refetched", 0)
    dropped = log.counts.get("pages_dropped", met_again + refetched + copies)
    near = dropped - met_again - refetched
    parts = [f"{near:,} near-duplicates of kept pages" + (f", met under the {copies:,} URLs below" if near else "")]
    if copies < near:
        parts[0] += " (a URL dropped by several runs is listed once)"
    if met_again:
        parts.append(f"{met_again:,} pages an earlier run kept, met again by a re-run (no pair to review)")
    if refetched:
        parts.append(f"{refetched:,} pages this crawl kept, fetched again at their URL")
    return f"{dropped:,} pages dropped: " + "; ".join(parts) + "."


def _aliases_count(named: list[AliasRow]) -> str:
    skipped = sum(row.reason == RULE for row in named)
    dropped = len(named) - skipped
    return ", ".join(
        part
        for part in (f"{dropped} dropped" if dropped else "", f"{skipped} skipped by URL rules" if skipped else "")
        if part
    )


def _named_how(row: AliasRow, drops: dict[str, Decision], policy: Policy) -> str:
    if row.reason == RULE:
        return "request skipped: a URL rule makes it a page already fetched"
    return _nearness(drops[row.alias], policy) if row.alias in drops else f"dropped (matched on {escape(row.reason)})"


def _pairs(decisions: list[Decision], policy: Policy, limit: int) -> str:
    """The pairs of the log (``Log.pairs``), nearest the threshold first, each a side-by-side diff."""
    reviewable = [d for d in decisions if d.text is not None or d.kept_text is not None]
    reviewable.sort(key=lambda d: _margin(d, policy.content_distance))
    shown = reviewable[:limit]
    items = "".join(
        f"<details class='pair {d.outcome}'{' open' if n < OPEN_PAIRS else ''}><summary>"
        f"<span class='outcome'>{'dropped' if d.outcome == DROPPED else 'kept (borderline)'}</span> "
        f"{_link(d.url)} <span class='vs'>vs kept</span> {_link(d.kept_url)}<br><span class='why'>"
        f"{_nearness(d, policy)}</span></summary><div class='sides'><div>kept page</div>"
        f"<div>{'dropped page' if d.outcome == DROPPED else 'page kept beside it'}</div></div>"
        f"{side_by_side(d.kept_text, d.text)}</details>"
        for n, d in enumerate(shown)
    )
    drops = sum(d.outcome == DROPPED for d in decisions)
    never = sum(d.outcome != DROPPED and d.reason == NEVER_DROPPED for d in decisions)
    return (
        f"<h2>Pairs, nearest the threshold first</h2><p id='pairs'>The log holds {drops:,} drops of "
        f"near-duplicates and {len(decisions) - drops:,} borderline keeps"
        + (f" ({never:,} of them near-duplicates never dropped, as their requests or records said)" if never else "")
        + " (the newest "
        f"<code>SIMHASH_DEDUP_LOG_SIZE</code>); {len(reviewable):,} of them with their texts, {len(shown)} shown "
        "below (the words each content fingerprint was built from, one block per line). "
        "Left: the kept page; right: the page dropped or kept beside it. "
        "<del>Struck</del> words are only on the left, <ins>marked</ins> words only on the right. "
        "A drop whose texts differ in substance means the distances are too wide; a borderline keep "
        "that is a copy means they are too narrow.</p>" + items
    )


def _margin(decision: Decision, content_distance: int) -> float:
    """How far the pair is from flipping: the similarity's distance to what was needed, else the
    content distance's to its threshold (in 64ths)."""
    if decision.similarity is not None and decision.similarity_needed is not None:
        return abs(decision.similarity - decision.similarity_needed)
    if decision.content_distance is not None:
        return abs(content_distance - decision.content_distance) / 64
    return 1.0


def _nearness(decision: Decision, policy: Policy) -> str:
    parts = [f"matched on {decision.reason}" if decision.outcome == DROPPED else f"failed: {decision.reason}"]
    if decision.content_distance is not None:
        parts.append(f"content distance {decision.content_distance}")
        if decision.content_distance > policy.content_distance:
            parts[-1] += f" ({_beyond(decision, policy)})"
    if decision.similarity is not None:
        needed = "" if decision.similarity_needed is None else f" (needed {decision.similarity_needed:.2f})"
        parts.append(f"similarity {decision.similarity:.2f}{needed}")
    if decision.structure_distance is not None:
        parts.append(f"structure distance {decision.structure_distance}")
    return escape(", ".join(parts))


def _beyond(decision: Decision, policy: Policy) -> str:
    """Why a pair beyond the content distance was compared at all."""
    if decision.reason == ADDRESS:
        return "met again at the kept page's address: judged on its name and what it shows"
    if decision.reason == BODY:
        return f"the same body: two large texts compared up to {policy.search_distance}"
    return f"two small texts: compared up to {policy.search_distance}"


def _link(url: str) -> str:
    href = escape(url, quote=True) if url.startswith(("http://", "https://", "file:")) else "#"
    return f"<a href='{href}' rel='noreferrer'>{escape(url)}</a>"


def _when(seconds: float | None) -> str:
    return "" if seconds is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(seconds))


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<title>simhash-dedup report</title><style>{style}</style></head>
<body><h1>What was dropped, and why</h1>
<p class="meta">Decision log of <code>{source}</code>; settings: {settings}; written {generated}.</p>
{body}
</body></html>
"""

_STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px auto; max-width: 1200px; color: #222; padding: 0 16px; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 28px; border-bottom: 1px solid #ddd; }
.meta, .why, .note { color: #666; } code { background: #f4f4f4; padding: 0 3px; }
table.counts th { text-align: left; padding-right: 24px; font-weight: normal; } .num { text-align: right; }
table.runs { border-collapse: collapse; }
table.runs td, table.runs th { padding: 2px 10px; border-bottom: 1px solid #eee; }
.plots { display: flex; flex-wrap: wrap; gap: 12px; }
figure { margin: 0; } figure svg { max-width: 100%; height: auto; }
.badge { background: #c0392b; color: white; border-radius: 8px; padding: 0 7px; font-size: 12px; }
details.pair { border: 1px solid #ddd; border-radius: 6px; margin: 10px 0; }
details.pair > summary { padding: 6px 10px; cursor: pointer; background: #fafafa; }
.outcome { font-weight: bold; } .dropped .outcome { color: #c0392b; } .borderline .outcome { color: #2471a3; }
.sides { display: grid; grid-template-columns: 1fr 1fr; font-weight: bold; padding: 4px 10px; }
table.diff { width: 100%; border-collapse: collapse; table-layout: fixed; font: 12px/1.4 ui-monospace, monospace; }
table.diff col.n { width: 3em; } table.diff td { vertical-align: top; padding: 1px 6px; word-wrap: break-word; }
td.n { color: #999; text-align: right; user-select: none; }
td.del { background: #fdecea; } td.ins { background: #e8f6ec; }
td.empty { background: #f6f6f6; } tr.fold td { color: #888; text-align: center; background: #f8f8ff; }
del { background: #f5b7b1; text-decoration: line-through; } ins { background: #abebc6; text-decoration: none; }
.single .line { font: 12px/1.4 ui-monospace, monospace; padding: 1px 6px; }
"""
