"""Detection quality on real pages: false drops, recall, precision, by mode and distance.

    python -m bench.quality.detection [--data ../shared/data] [--out bench/results/quality/detection.json]

Fingerprints every page of the labelled pairs of ``bench/quality/sets.py``
(with the defaults of ``scrapy_simhash_dedup``) and the anchors of ``bench/common.py``,
then prints: the acceptance figures at the default settings, the Webis
precision/recall curve, recall per kind of realistic change, and precision /
recall / false drops per 10,000 pairs for every mode and distance, split into
Chinese and other languages; then the real sites of ``bench/quality/real_sites.py``
(documentation sets decided in crawl order, every drop judged), and the bars.
Takes about fifteen minutes on two cores (half that with the caches).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import pickle
import sys
import time
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import xxhash

from bench.common import (
    ANCHORS,
    CODE,
    PROJECT,
    anchor_fingerprints,
    code_version,
    command_line,
    language_of,
    visible_text,
)
from bench.quality import real_sites, sets
from scrapy_simhash_dedup import SCHEME_VERSION, Fingerprinter, hamming
from scrapy_simhash_dedup.crawl.settings import DedupSettings
from scrapy_simhash_dedup.fingerprint.content import SHINGLE_SIZE, PageText, content_features, tokens
from scrapy_simhash_dedup.fingerprint.document import load
from scrapy_simhash_dedup.fingerprint.simhash import simhash
from scrapy_simhash_dedup.fingerprint.sketch import hashes_sketch, similarity
from scrapy_simhash_dedup.fingerprint.textloops import shingle_hashes
from scrapy_simhash_dedup.matching.policy import Mode, Policy

DEFAULTS = DedupSettings().policy
DISTANCES = range(17)
MODES = [mode.value for mode in Mode]


@dataclass
class PageResult:
    content: int | None
    structure: int | None
    sketch: bytes | None
    short: bool
    visible_simhash: int | None  # short pages: a SimHash of the visible text, for the rules not chosen
    visible_sketch: bytes | None  # and its sketch
    anchors: dict[str, int | None]
    language: str


def ours(html: bytes) -> dict:
    fingerprint = Fingerprinter().fingerprint(html)
    visible = visible_sketch = None
    if fingerprint.short:
        root = load(html, DedupSettings().max_html_bytes).root
        words = tokens(PageText.read(root).visible_text())
        visible = simhash(content_features([words]))
        visible_sketch = hashes_sketch(shingle_hashes([words], SHINGLE_SIZE))
    return {
        "content": fingerprint.content,
        "structure": fingerprint.structure,
        "sketch": fingerprint.sketch,
        "short": fingerprint.short,
        "visible_simhash": visible,
        "visible_sketch": visible_sketch,
    }


def anchors_and_language(html: bytes) -> dict:
    text = visible_text(html)
    return {"anchors": anchor_fingerprints(text), "language": language_of(text)}


@dataclass
class Scored:
    """One pair with every distance the decisions need."""

    pair: sets.Pair
    language: str
    content: int | None
    structure: int | None
    similarity: float | None
    sketches: tuple[bytes | None, bytes | None]
    short: tuple[bool, bool]
    visible: int | None  # distance of the visible-text SimHashes, when both pages are short
    visible_similarity: float | None  # and of their sketches
    anchors: dict[str, int | None]
    judge: float | None = None  # the real sites' judge of a realistic change's pair (``same_document``)

    def ours(self, mode: str, content_distance: int, structure_distance: int, min_similarity: float) -> bool:
        policy = _policy(mode, content_distance, structure_distance, min_similarity)
        content = self.content is not None and (
            policy.content_match(self.content, self.sketches, *self.short)
            or (self.pair.same_address and policy.recrawls and policy.recrawled(*self.sketches))
        )
        structure = self.structure is not None and self.structure <= structure_distance
        return {
            "both": content and structure,
            "content": content,
            "structure": structure,
            "either": content or structure,
        }[mode]

    def default(self) -> bool:
        return self.ours(
            DEFAULTS.mode.value, DEFAULTS.content_distance, DEFAULTS.structure_distance, DEFAULTS.min_similarity
        )

    def anchor(self, name: str, distance: int) -> bool:
        value = self.anchors[name]
        return value is not None and value <= (0 if name == "exact" else distance)


@functools.cache
def _policy(mode: str, content_distance: int, structure_distance: int, min_similarity: float) -> Policy:
    return Policy(Mode(mode), content_distance, structure_distance, min_similarity)


def score(pairs: list[sets.Pair], results: dict[str, PageResult], judges: dict[tuple[str, str], float]) -> list[Scored]:
    scored = []
    for pair in pairs:
        a, b = results[pair.a], results[pair.b]
        content = None if a.content is None or b.content is None else hamming(a.content, b.content)
        both_short = a.short and b.short
        near = content is not None and (content <= max(DISTANCES) or both_short)
        scored.append(
            Scored(
                pair,
                "zh" if "zh" in (a.language, b.language) else "en+",
                content,
                None if a.structure is None or b.structure is None else hamming(a.structure, b.structure),
                similarity(a.sketch, b.sketch) if near and a.sketch and b.sketch else None,
                (a.sketch, b.sketch),
                (a.short, b.short),
                hamming(a.visible_simhash, b.visible_simhash) if both_short else None,
                similarity(a.visible_sketch, b.visible_sketch) if both_short else None,
                {
                    n: None if a.anchors[n] is None or b.anchors[n] is None else hamming(a.anchors[n], b.anchors[n])
                    for n in ANCHORS
                },
                judges.get((pair.a, pair.b)),
            )
        )
    return scored


def grouped(scored: list[Scored]) -> dict[tuple[str, str], list[Scored]]:
    """The pairs by (set, group)."""
    found: dict[tuple[str, str], list[Scored]] = defaultdict(list)
    for s in scored:
        found[(s.pair.source, s.pair.group)].append(s)
    return found


def decides_at(scored: Scored, distance: int, similarity: float) -> bool:
    """The content decision of ``scored`` at a grid point (structure not asked)."""
    return scored.ours("content", distance, 64, similarity)


def rates(predicted: list[bool], truth: list[bool]) -> dict[str, float | int]:
    tp = sum(p and t for p, t in zip(predicted, truth))
    fp = sum(p and not t for p, t in zip(predicted, truth))
    positives, negatives = sum(truth), len(truth) - sum(truth)
    return {
        "precision": tp / (tp + fp) if tp + fp else 1.0,
        "recall": tp / positives if positives else float("nan"),
        "false_drops": fp,
        "false_drops_per_10k": 10_000 * fp / negatives if negatives else 0.0,
        "pairs": len(truth),
        "duplicates": positives,
    }


def table(title: str, header: list[str], rows: list[list]) -> None:
    print(f"\n## {title}\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(f"{c:.3f}" if isinstance(c, float) else str(c) for c in row) + " |")


def report(scored: list[Scored], notes: list[str]) -> dict:
    out: dict = {"defaults": DEFAULTS.__dict__ | {"mode": DEFAULTS.mode.value}, "scheme_version": SCHEME_VERSION}
    by_source = grouped(scored)

    rows, out["sets"] = [], {}
    for (source, group), items in sorted(by_source.items()):
        if source == "changes":
            continue  # their own table below
        incomparable = sum(s.content is None for s in items)
        items = [s for s in items if s.content is not None] if group != "unrelated" else items
        truth = [s.pair.duplicate for s in items]
        r = rates([s.default() for s in items], truth) | {"not_comparable": incomparable}
        negatives = [s for s in items if not s.pair.duplicate]
        margin = min((s.content for s in negatives if s.content is not None), default=None)
        near = [s.similarity for s in negatives if s.content is not None and s.content <= DEFAULTS.content_distance]
        sketch_margin = max((x for x in near if x is not None), default=None)
        dropped_wrongly = [f"{s.pair.a} ~ {s.pair.b}" for s in negatives if s.default()]
        missed = [
            f"{s.pair.a} ~ {s.pair.b} (content distance {s.content}, similarity {s.similarity}, short {s.short})"
            for s in items
            if s.pair.duplicate and not s.default()
        ]
        out["sets"][f"{source}/{group}"] = r | {
            "content_margin": margin,
            "similarity_margin": sketch_margin,
            "false_drop_pairs": dropped_wrongly[:20],
            "missed_pairs": missed[:40],
        }
        rows.append(
            [
                source,
                group,
                r["pairs"],
                incomparable,
                r["duplicates"],
                r["false_drops"],
                f"{100_000 * r['false_drops'] / max(1, r['pairs'] - r['duplicates']):.2f}",
                "" if r["duplicates"] == 0 else f"{r['recall']:.3f}",
                margin,
                "" if sketch_margin is None else f"{sketch_margin:.2f}",
            ]
        )
    table(
        "At the default settings, per set (pairs: comparable pairs; a page with too few words is never "
        "compared, so its pairs are counted apart)",
        [
            "set",
            "group",
            "pairs",
            "not comparable",
            "duplicates",
            "false drops",
            "false drops /100k",
            "recall",
            "smallest content distance of a non-duplicate",
            "its highest similarity within the content distance",
        ],
        rows,
    )
    listed = [
        f"same-site pair counted as a duplicate: {a} ~ {b} ({why})" for (a, b), why in sets.SAME_ARTICLE_TWICE.items()
    ]
    out["truth_notes"] = listed + notes
    print("\n" + "\n".join(out["truth_notes"]))

    webis_all = by_source[("webis", "webis")]
    webis = [s for s in webis_all if s.content is not None]
    truth = [s.pair.duplicate for s in webis]
    curve, rows = [], []
    for d in DISTANCES:
        row = {
            "distance": d,
            "ours": rates([s.ours("content", d, 64, DEFAULTS.min_similarity) for s in webis], truth),
            "ours_simhash_only": rates([s.ours("content", d, 64, -1.0) for s in webis], truth),
        }
        row |= {n: rates([s.anchor(n, d) for s in webis], truth) for n in ANCHORS}
        curve.append(row)
        rows.append(
            [d]
            + [f"{row[k]['precision']:.2f} / {row[k]['recall']:.2f}" for k in ("ours", "ours_simhash_only", *ANCHORS)]
        )
    out["webis_curve"] = curve
    crashes = sum(results_missing(s, "simhash_package") for s in webis)
    table(
        f"Webis ECIR'20, content decision: precision / recall by content distance over the "
        f"{len(webis)} comparable pairs of {len(webis_all)} (ours with min similarity {DEFAULTS.min_similarity})",
        ["distance", "ours", "ours, SimHash only", *ANCHORS],
        rows,
    )
    print(f"\n(the simhash package crashed on {crashes} of these pairs: counted as not detected)")

    changes = {g: items for (src, g), items in by_source.items() if src == "changes"}
    rows, out["changes"] = [], {}
    for group, items in sorted(changes.items()):
        for language in ("en+", "zh"):
            part = [s for s in items if s.language == language and has_own_text(s) and same_document(s)]
            apart = [s for s in items if s.language == language and has_own_text(s) and not same_document(s)]
            short = [s for s in items if s.language == language and any(s.short)]
            if not part and not apart:
                continue
            recall = {"ours_default": sum(s.default() for s in part) / max(1, len(part))}
            recall |= {n: sum(s.anchor(n, 3) for s in part) / max(1, len(part)) for n in ANCHORS}
            caught, apart_caught = sum(s.default() for s in short), sum(s.default() for s in apart)
            out["changes"][f"{group}/{language}"] = recall | {
                "pairs": len(part),
                "short_pairs": len(short),
                "short_caught": caught,
                "other_or_close_pairs": len(apart),
                "other_or_close_dropped": apart_caught,
            }
            rows.append(
                [group.removeprefix("change:"), language, len(part)]
                + [f"{v:.3f}" for v in recall.values()]
                + [f"{apart_caught} of {len(apart)}", f"{caught} of {len(short)}"]
            )
    table(
        "Realistic changes: recall over the pairs of pages with own text that the real sites' judge calls the "
        "same document (ours at the defaults; anchors at distance 3, exact at 0); pairs it calls another document "
        "or close, and short pages (compared by their exact visible text), apart",
        ["change", "language", "pairs", "ours", *ANCHORS, "judged other or close: dropped", "short pages caught"],
        rows,
    )

    out["short_rules"] = short_page_rules(scored)
    out["grid"] = choosing_defaults(scored)

    pool = [s for s in scored if s.pair.source != "webis"]
    rows, out["modes"] = [], []
    for language in ("en+", "zh"):
        part = [s for s in pool if s.language == language]
        truth = [s.pair.duplicate for s in part]
        for mode in MODES:
            for d in DISTANCES:
                content_d = d if mode != "structure" else DEFAULTS.content_distance
                structure_d = d if mode == "structure" else DEFAULTS.structure_distance
                r = rates([s.ours(mode, content_d, structure_d, DEFAULTS.min_similarity) for s in part], truth)
                out["modes"].append({"language": language, "mode": mode, "distance": d} | r)
                if d in (0, 2, 3, 4, 6, 8, 10, 12, 16):
                    rows.append([language, mode, d, r["precision"], r["recall"], f"{r['false_drops_per_10k']:.2f}"])
        for name in ANCHORS:
            for d in (0, 3, 6, 10) if name != "exact" else (0,):
                r = rates([s.anchor(name, d) for s in part], truth)
                out["modes"].append({"language": language, "mode": f"anchor:{name}", "distance": d} | r)
                rows.append(
                    [language, f"anchor: {name}", d, r["precision"], r["recall"], f"{r['false_drops_per_10k']:.2f}"]
                )
    table(
        "Every labelled pair but Webis: precision, recall, false drops per 10,000 non-duplicate pairs "
        "(distance is the content distance; the structure distance for mode structure; the other at its default)",
        ["language", "mode", "distance", "precision", "recall", "false drops /10k"],
        rows,
    )
    return out


#: Rules for comparing two short pages (own text too short for SimHash), the first one the pipeline's.
SHORT_RULES = {
    "the same words (the rule)": lambda s: DEFAULTS.content_match(s.content, s.sketches, True, True),
    "visible-text SimHash within 3, sketch >= 0.90": lambda s: s.visible <= 3 and s.visible_similarity >= 0.9,
    "visible-text SimHash within 8, sketch >= 0.65": lambda s: s.visible <= 8 and s.visible_similarity >= 0.65,
}


def has_own_text(s: Scored) -> bool:
    """Both pages of the pair have own text (a sketch), and not both too little for SimHash: the pair is
    compared by SimHash and sketch, not by its exact words (``Policy.content_match``)."""
    return s.content is not None and None not in s.sketches and not all(s.short)


def short_page_rules(scored: list[Scored]) -> list[dict]:
    """How each rule for short pages does on the pairs of two short pages."""
    both_short = [s for s in scored if s.visible is not None and s.pair.source != "webis"]
    groups = {
        "same-site different pages": [s for s in both_short if s.pair.group == "same-site" and not s.pair.duplicate],
        "unrelated pages": [s for s in both_short if s.pair.group == "unrelated" and not s.pair.duplicate],
        "duplicates": [s for s in both_short if s.pair.duplicate],
    }
    found, rows = [], []
    for name, rule in SHORT_RULES.items():
        counts = {group: sum(map(rule, items)) for group, items in groups.items()}
        found.append({"rule": name} | {group: [counts[group], len(items)] for group, items in groups.items()})
        rows.append([name] + [f"{counts[g]} of {len(items)}" for g, items in groups.items()])
    table(
        "Short pages (both pages of a pair short): pairs each rule calls duplicates",
        ["rule", "same-site different pages (false drops)", "unrelated pages (false drops)", "duplicates (caught)"],
        rows,
    )
    return found


#: The sets of realistic changes the recall bar holds for: edits, encyclopedic edits, pages saved again, small
#: pages reworded.
REALISTIC = ("changes", "encyclopedic", "resaved", "profiles", "chrome")


#: Recall every realistic kind of change must reach, counted over the pairs the real sites' judge calls the same
#: document (``real_sites.SAME_DOCUMENT``); a pair below is another document or close by the judge's line, reported
#: apart (an edit that changes a third of a three-sentence stub makes one).
RECALL_BAR = 0.95


def same_document(s: Scored) -> bool:
    """Is the pair of a realistic change the same document by the real sites' judge?"""
    return s.judge is None or s.judge >= real_sites.SAME_DOCUMENT


#: The share of a re-crawl's unchanged pages that must be dropped as their first versions.
RECRAWL_BAR = 0.99


def bars(
    out: dict, by_source: dict[tuple[str, str], list[Scored]], sites: dict[str, dict[str, real_sites.Row]]
) -> dict[str, dict]:
    """The acceptance bars at the default settings, each with its figure and whether it holds: first no other
    document dropped on a real site, then the labelled sets."""
    same_site = {key: r for key, r in out["sets"].items() if key.endswith("/same-site")}
    ours = {site: rows["ours"] for site, rows in sites.items()}
    default_webis = next(row["ours"] for row in out["webis_curve"] if row["distance"] == DEFAULTS.content_distance)
    changes, below = {}, {}
    for (source, group), items in by_source.items():
        own = [s for s in items if has_own_text(s) and s.pair.duplicate]
        if source in REALISTIC and own and group.removeprefix("resaved_") not in sets.UNMARKED_TOOLS:
            same = [s for s in own if same_document(s)]
            kind = group.removeprefix("change:")
            if same:
                changes[kind] = sum(s.default() for s in same) / len(same)
            if len(same) < len(own):
                below[kind] = f"{sum(s.default() for s in own if not same_document(s))} of {len(own) - len(same)}"
    real_edited = {site: row.recrawl_edited_kept[0] / max(1, row.recrawl_edited_kept[1]) for site, row in ours.items()}
    copies = {
        f"{source}/{group}": out["sets"][f"{source}/{group}"]["recall"]
        for source, group in (("copies", "positive"), ("form-wrapped", "positive"), ("short", "positive"))
    }
    found = {
        "real sites: 0 other documents dropped on every site (first crawl and re-crawl)": {
            "figure": {site: row.other_documents + row.recrawl_other_documents for site, row in ours.items()},
            "holds": all(row.other_documents + row.recrawl_other_documents == 0 for row in ours.values()),
        },
        f"real sites: unchanged re-crawl pages dropped >= {RECRAWL_BAR}": {
            "figure": {site: row.recrawl_unchanged[0] / max(1, row.recrawl_unchanged[1]) for site, row in ours.items()},
            "holds": all(row.recrawl_unchanged[0] >= RECRAWL_BAR * row.recrawl_unchanged[1] for row in ours.values()),
        },
        "0 false drops on every same-site set": {
            "figure": {key: r["false_drops"] for key, r in same_site.items()},
            "holds": all(r["false_drops"] == 0 for r in same_site.values()),
        },
        "Webis precision >= 0.90 at recall >= 0.80": {
            "figure": {"precision": default_webis["precision"], "recall": default_webis["recall"]},
            "holds": default_webis["precision"] >= 0.90 and default_webis["recall"] >= 0.80,
        },
        f"realistic changes: recall >= {RECALL_BAR} for every kind (pages with own text, pairs the judge calls "
        "the same document)": {"figure": changes, "holds": all(r >= RECALL_BAR for r in changes.values())},
        "realistic changes, pairs the judge calls another document or close (reported: dropped of)": {
            "figure": below,
            "holds": True,
        },
        f"real sites: edited re-crawl pages whose first version was kept dropped >= {RECALL_BAR}": {
            "figure": real_edited,
            "holds": all(r >= RECALL_BAR for r in real_edited.values()),
        },
        "exact copies: every one caught": {"figure": copies, "holds": all(r == 1.0 for r in copies.values())},
    }
    print("\n## Bars at the default settings\n")
    for name, bar in found.items():
        figure = ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in bar["figure"].items())
        print(f"- {'holds' if bar['holds'] else 'FAILS'}: {name} ({figure})")
    return found


GRID_DISTANCES = (3, 4, 5, 6, 7, 8, 10)
GRID_SIMILARITIES = (-1.0, 0.3, 0.4, 0.5, 0.55, 0.6, 0.65, 0.7)


def choosing_defaults(scored: list[Scored]) -> list[dict]:
    """Each acceptance figure for every pair of content distance and minimum similarity (mode content)."""
    webis = [s for s in scored if s.pair.source == "webis" and s.content is not None]
    changes = defaultdict(list)
    for s in scored:
        if s.pair.group.startswith("change:") and has_own_text(s):
            changes[s.pair.group].append(s)
    hard = [s for s in scored if s.pair.group == "same-site" and not s.pair.duplicate]
    unrelated = [s for s in scored if s.pair.group == "unrelated" and not s.pair.duplicate]
    grid, rows = [], []
    for d in GRID_DISTANCES:
        for t in GRID_SIMILARITIES:
            decide = functools.partial(decides_at, distance=d, similarity=t)
            w = rates([decide(s) for s in webis], [s.pair.duplicate for s in webis])
            worst = min(sum(map(decide, items)) / len(items) for items in changes.values())
            hard_drops = sum(map(decide, hard))
            unrelated_rate = 100_000 * sum(map(decide, unrelated)) / max(1, len(unrelated))
            grid.append(
                {
                    "content_distance": d,
                    "min_similarity": t,
                    "webis": w,
                    "worst_change_recall": worst,
                    "same_site_false_drops": hard_drops,
                    "unrelated_false_drops_per_100k": unrelated_rate,
                }
            )
            rows.append([d, t, w["precision"], w["recall"], worst, hard_drops, f"{unrelated_rate:.2f}"])
    table(
        "Choosing the defaults (mode content): every content distance and minimum sketch similarity",
        [
            "content distance",
            "min similarity",
            "Webis precision",
            "Webis recall",
            "worst change recall (a kind)",
            "same-site false drops",
            "unrelated false drops /100k",
        ],
        rows,
    )
    return grid


def results_missing(s: Scored, name: str) -> bool:
    return s.anchors[name] is None


COMPUTE = {"ours": ours, "anchors": anchors_and_language}


def _compute(job: tuple[str, bytes]) -> dict:
    kind, html = job
    return COMPUTE[kind](html)


def fingerprint_all(pages: sets.Pages, workers: int, cache_path: Path | None) -> dict[str, PageResult]:
    """Every page's fingerprints and anchors: each distinct HTML once, from the cache where it and
    the code that makes that result are unchanged (ours and the anchors are cached apart)."""
    hashes = {page_id: xxhash.xxh3_64_hexdigest(html) for page_id, html in pages.html.items()}
    distinct = {hashes[page_id]: html for page_id, html in pages.html.items()}
    cached = pickle.loads(cache_path.read_bytes()) if cache_path and cache_path.exists() else {}
    keys = {kind: {h: f"{kind}/{code_version(paths)}/{h}" for h in distinct} for kind, paths in CODE.items()}
    todo = [(kind, h) for kind in CODE for h in distinct if keys[kind][h] not in cached]
    with ProcessPoolExecutor(workers) as pool:
        jobs = ((kind, distinct[h]) for kind, h in todo)
        for (kind, h), result in zip(todo, pool.map(_compute, jobs, chunksize=16)):
            cached[keys[kind][h]] = result
    if cache_path:
        cache_path.parent.mkdir(parents=True, exist_ok=True)
        cache_path.write_bytes(pickle.dumps({key: cached[key] for kind in CODE for key in keys[kind].values()}))
    return {
        page_id: PageResult(**cached[keys["ours"][h]], **cached[keys["anchors"][h]]) for page_id, h in hashes.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=PROJECT.parent / "shared" / "data")
    parser.add_argument("--out", type=Path, default=Path("bench/results/quality/detection.json"))
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path("bench/.cache/quality-fingerprints.pkl"),
        help="reuse fingerprints of unchanged pages and code (default: %(default)s)",
    )
    parser.add_argument(
        "--sites-cache",
        type=Path,
        default=Path("bench/.cache/real-sites-fingerprints.pkl"),
        help="the same for the real sites (default: %(default)s)",
    )
    args = parser.parse_args()
    started = time.time()
    scored, notes = labelled_pairs(args.data, args.workers, args.cache)
    out = report(scored, notes)
    sites = real_sites.run(list(real_sites.SITES), args.workers, args.sites_cache)
    real_sites.table(sites)
    out["real_sites"] = {
        site: {approach: row.__dict__ for approach, row in rows.items()} for site, rows in sites.items()
    }
    out["bars"] = bars(out, grouped(scored), sites)
    out["command"] = command_line("bench.quality.detection")
    out["seconds"] = round(time.time() - started)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1))
    print(f"\nwritten {args.out} in {out['seconds']} s; reproduce with: {out['command']}")


def labelled_pairs(data: Path, workers: int, cache: Path | None) -> tuple[list[Scored], list[str]]:
    """Every labelled pair, scored, and what the set loaders decided about the truth."""
    pages = sets.Pages()
    pairs = [
        *sets.same_site(data, pages),
        *sets.same_address_other_document(data, pages),
        *sets.unrelated(data, pages, "trafilatura"),
        *sets.unrelated(data, pages, "article-extraction-benchmark"),
        *sets.resaved_pages(pages),
        *sets.chinese_cross_site(pages),
        *sets.webis(data, pages),
        *sets.content_same_structure_different(data, pages),
        *sets.handbook(data, pages),
        *sets.realistic_changes(data, pages),
        *sets.encyclopedic_changes(data, pages),
        *sets.chrome_swapped(data, pages),
        *sets.copies_of_every_page(data, pages),
        *sets.form_wrapped(data, pages),
        *sets.short_pages(data, pages),
        *sets.small_site_pages(data, pages),
    ]
    print(f"{len(pairs):,} pairs over {len(pages.html):,} pages; fingerprinting...", file=sys.stderr)
    results = fingerprint_all(pages, workers, cache)
    return score(pairs, results, judged_changes(pairs, pages)), pages.notes


def judged_changes(pairs: list[sets.Pair], pages: sets.Pages) -> dict[tuple[str, str], float]:
    """The real sites' judge (``real_sites.judged``: Jaccard of the whole visible texts' word 5-shingles) of every
    pair of a realistic change: the recall bar counts the pairs it calls the same document."""
    shingled = real_sites.cached_shingles()
    return {
        (pair.a, pair.b): pair.judge
        if pair.judge is not None
        else real_sites.judged(pages.html[pair.a], pages.html[pair.b], shingled)
        for pair in pairs
        if pair.source in REALISTIC and pair.duplicate
    }


if __name__ == "__main__":
    main()
