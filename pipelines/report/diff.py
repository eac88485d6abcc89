"""Side-by-side diff of two own texts (one block per line), highlighted like a code review."""

from __future__ import annotations

from difflib import SequenceMatcher
from html import escape

#: Identical lines shown around a change; longer identical runs are folded.
CONTEXT = 2
#: Lines of each text shown at most.
MAX_LINES = 400


def side_by_side(kept: str | None, other: str | None) -> str:
    """An HTML table: the kept page's text on the left, the other page's on the right, lines that
    differ marked, and within a changed line the words that differ."""
    if kept is None or other is None:
        missing = "kept page" if kept is None else "this page"
        shown = other if kept is None else kept
        lines = "".join(f"<div class='line'>{escape(line)}</div>" for line in (shown or "").splitlines()[:MAX_LINES])
        return (
            f"<p class='note'>The {missing}'s text is not in the log (kept by an earlier run, by another "
            f"process, or too long before); one side shown.</p><div class='single'>{lines}</div>"
        )
    left, right = kept.splitlines()[:MAX_LINES], other.splitlines()[:MAX_LINES]
    rows: list[str] = []
    for tag, a0, a1, b0, b1 in SequenceMatcher(None, left, right, autojunk=False).get_opcodes():
        if tag == "equal":
            rows += _equal_rows(left[a0:a1], a0, b0)
            continue
        for n in range(max(a1 - a0, b1 - b0)):
            a = left[a0 + n] if a0 + n < a1 else None
            b = right[b0 + n] if b0 + n < b1 else None
            marked_a, marked_b = _words(a, b)
            rows.append(
                _row(
                    a0 + n if a is not None else None,
                    marked_a,
                    "del" if a is not None else "empty",
                    b0 + n if b is not None else None,
                    marked_b,
                    "ins" if b is not None else "empty",
                )
            )
    return f"<table class='diff'><colgroup><col class='n'><col><col class='n'><col></colgroup>{''.join(rows)}</table>"


def _equal_rows(lines: list[str], a0: int, b0: int) -> list[str]:
    def row(n: int) -> str:
        text = escape(lines[n])
        return _row(a0 + n, text, "same", b0 + n, text, "same")

    if len(lines) <= 2 * CONTEXT + 1:
        return [row(n) for n in range(len(lines))]
    folded = f"<tr class='fold'><td colspan='4'>… {len(lines) - 2 * CONTEXT} identical lines …</td></tr>"
    return [*(row(n) for n in range(CONTEXT)), folded, *(row(n) for n in range(len(lines) - CONTEXT, len(lines)))]


def _words(a: str | None, b: str | None) -> tuple[str, str]:
    """The two lines with the words only one of them has marked."""
    if a is None or b is None:
        return escape(a or ""), escape(b or "")
    left, right = a.split(" "), b.split(" ")
    marked_a: list[str] = []
    marked_b: list[str] = []
    for tag, a0, a1, b0, b1 in SequenceMatcher(None, left, right, autojunk=False).get_opcodes():
        words_a, words_b = escape(" ".join(left[a0:a1])), escape(" ".join(right[b0:b1]))
        if tag == "equal":
            marked_a.append(words_a)
            marked_b.append(words_b)
            continue
        if words_a:
            marked_a.append(f"<del>{words_a}</del>")
        if words_b:
            marked_b.append(f"<ins>{words_b}</ins>")
    return " ".join(marked_a), " ".join(marked_b)


def _row(n_a: int | None, a: str, kind_a: str, n_b: int | None, b: str, kind_b: str) -> str:
    return (
        f"<tr><td class='n'>{_line_number(n_a)}</td><td class='{kind_a}'>{a}</td>"
        f"<td class='n'>{_line_number(n_b)}</td><td class='{kind_b}'>{b}</td></tr>"
    )


def _line_number(n: int | None) -> str:
    """A line's number as a diff shows it (from 1; none for a line one side lacks)."""
    return "" if n is None else str(n + 1)
