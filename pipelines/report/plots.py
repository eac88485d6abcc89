"""The report's histograms, drawn by matplotlib into SVG text (paths, no fonts or files to fetch)."""

from __future__ import annotations

import io

from ..extras import require
from ..stores.records import BORDERLINE, DROPPED, Decision

COLORS = {DROPPED: "#c0392b", BORDERLINE: "#2471a3"}
LABELS = {DROPPED: "dropped", BORDERLINE: "kept, borderline"}


def distance_histogram(decisions: list[Decision], threshold: int, search: int | None = None) -> str:
    """Content distance of each pair, drops and borderline keeps side by side; the threshold marked, and the
    search distance (how far small texts and same bodies are compared) when pairs lie beyond the threshold."""
    top = max([threshold, *(d.content_distance or 0 for d in decisions)]) + 1
    bins = [x - 0.5 for x in range(top + 1)]
    beyond = search if search is not None and top - 1 > threshold else None
    return _histogram(
        decisions,
        lambda d: d.content_distance,
        bins,
        threshold,
        f"content distance ≤ {threshold}",
        "content SimHash distance (bits)",
        "no content fingerprint",
        (beyond, f"small texts, same bodies ≤ {beyond}") if beyond is not None else None,
    )


def similarity_histogram(decisions: list[Decision], threshold: float) -> str:
    """Sketch similarity of each pair, from 0 to 1 (an estimate below 0 is drawn at 0: a Jaccard
    similarity is never negative); the threshold marked (pages whose names differ need more)."""
    bins = [x / 20 for x in range(21)]
    return _histogram(
        decisions,
        lambda d: None if d.similarity is None else max(0.0, d.similarity),
        bins,
        threshold,
        f"similarity ≥ {threshold:.2f} (more for pages of other names)",
        "sketch similarity (estimated Jaccard of word 3-grams)",
        "no similarity: exact-text matches of short pages",
    )


def _histogram(
    decisions,
    value,
    bins,
    threshold,
    threshold_label: str,
    xlabel: str,
    without: str,
    second: tuple[int, str] | None = None,
) -> str:
    """The pairs of each outcome that have a ``value``; the legend says how many of them have none (``without``
    says why), so that two histograms of one log add up to the same pairs."""
    require("matplotlib", "the report")
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    figure, axes = plt.subplots(figsize=(6.4, 2.8), dpi=100)
    groups = [
        (
            outcome,
            [value(d) for d in decisions if d.outcome == outcome and value(d) is not None],
            sum(d.outcome == outcome for d in decisions),
        )
        for outcome in (DROPPED, BORDERLINE)
    ]
    shown = [(outcome, values, total) for outcome, values, total in groups if values]
    if shown:
        axes.hist(
            [values for _, values, _ in shown],
            bins=bins,
            color=[COLORS[o] for o, _, _ in shown],
            label=[
                f"{LABELS[o]} ({len(v):,}" + (f"; {total - len(v):,} more, {without}" if total > len(v) else "") + ")"
                for o, v, total in shown
            ],
            log=True,
        )  # one pair stays visible
    axes.axvline(threshold, color="#333333", linestyle="--", linewidth=1.2, label=threshold_label)
    if second is not None:
        axes.axvline(second[0], color="#888888", linestyle=":", linewidth=1.2, label=second[1])
    axes.set_xlabel(xlabel)
    axes.set_ylim(bottom=0.5)  # (log scale: a bar of one pair beside one of hundreds)
    axes.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda y, _: f"{y:g}"))
    axes.set_ylabel("pairs (log scale)")
    axes.legend(fontsize=8, frameon=False)
    axes.spines[["top", "right"]].set_visible(False)
    figure.tight_layout()
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", metadata={"Date": None})  # no date: the same log, the same file
    plt.close(figure)
    svg = buffer.getvalue()
    return svg[svg.index("<svg") :]
