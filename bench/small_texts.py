"""Small texts: can the weights of their words tell a reworded stub from another page of the same template?

    python -m bench.small_texts [--data ../shared/data]

The pairs are ``bench/quality_sets.py``'s reworded encyclopedic stubs and quotes.toscrape.com author stubs
(duplicates), and the different small pages of quotes.toscrape.com within the content search distance
(not duplicates: author stubs, templated profiles, one-quote pages).  For each group it prints the
weighted Jaccard similarity of the pages' TF-IDF word weights (the content SimHash's own features), and
what the rule "two small texts within the search distance whose weighted Jaccard is at least t" catches
and wrongly drops beside the shingles alone, for several t: how ``policy.SMALL_TEXT_WEIGHTED_SIMILARITY``
was chosen (the whole bench: ``bench/quality.py``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bench import command_line
from bench import quality_sets as sets
from pipelines import Fingerprinter, hamming
from pipelines.simhash import feature_hashes
from pipelines.content import content_features, own_blocks
from pipelines.document import load
from pipelines.policy import Policy
from pipelines.sketch import SKETCH_BYTES, similarity, weighted_bits
from tools.fingerprint_reference import DATA

REWORDED = ("stub_reworded", "profile_reworded")
THRESHOLDS = (0.6, 0.65, 0.7, 0.75)


def weighted_jaccard(a: dict[str, float], b: dict[str, float]) -> float:
    words = a.keys() | b.keys()
    most = sum(max(a.get(w, 0.0), b.get(w, 0.0)) for w in words)
    return sum(min(a.get(w, 0.0), b.get(w, 0.0)) for w in words) / most if most else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    data = parser.parse_args().data
    pages = sets.Pages()
    pairs = [p for p in [*sets.encyclopedic_changes(data, pages), *sets.small_site_pages(data, pages)]
             if p.group in REWORDED or p.source == "profiles"]
    fingerprinter, policy = Fingerprinter(), Policy()
    prints = {page: fingerprinter.fingerprint(html) for page, html in pages.html.items()}
    features = {page: content_features(own_blocks(load(html, 8 << 20).root)) for page, html in pages.html.items()}
    rows = []
    for pair in pairs:
        a, b = prints[pair.a], prints[pair.b]
        if a.content is None or b.content is None:
            continue
        distance = hamming(a.content, b.content)
        if not pair.duplicate and distance > policy.search_distance:
            continue
        shingles = (a.sketch and a.sketch[:SKETCH_BYTES], b.sketch and b.sketch[:SKETCH_BYTES])  # no weighted bits
        by_shingles = policy.content_match(distance, shingles, a.short, b.short)
        estimate = similarity(*(weighted_bits(feature_hashes(features[p]), features[p].values()) for p in (pair.a, pair.b)))
        rows.append((pair, distance, by_shingles, weighted_jaccard(features[pair.a], features[pair.b]), estimate))
    positives = [r for r in rows if r[0].duplicate]
    negatives = [r for r in rows if not r[0].duplicate]
    missed = [r for r in positives if not r[2]]
    for name, group in (("reworded pairs the shingles miss", missed),
                        (f"different small pages within {policy.search_distance} bits", negatives)):
        values = sorted(r[3] for r in group)
        print(f"{name}: {len(group)} pairs, weighted Jaccard {values[0]:.3f} to {values[-1]:.3f}" if values else name)
    print(f"\nshingles alone: recall {sum(r[2] for r in positives) / len(positives):.3f} over {len(positives)} reworded pairs, "
          f"{sum(r[2] for r in negatives)} false drops")
    for t in THRESHOLDS:
        for column, name in ((3, "weighted Jaccard"), (4, "its sketch's estimate")):
            caught = sum(r[2] or (r[1] <= policy.search_distance and r[column] >= t) for r in positives)
            wrong = sum(r[2] or r[column] >= t for r in negatives)
            print(f"with {name} >= {t}: recall {caught / len(positives):.3f}, false drops {wrong}")
    errors = sorted(abs(r[4] - r[3]) for r in rows if features[r[0].a] and features[r[0].b])
    print(f"sketch estimate - weighted Jaccard: median {errors[len(errors) // 2]:.3f}, largest {errors[-1]:.3f}")
    print(f"\nreproduce with: {command_line('bench.small_texts')}")


if __name__ == "__main__":
    main()
