"""What a report says, read from its HTML as a reader reads it (the counts, the line that tells the drops apart, the
clusters, the pairs), and the agreement between them that every report must show."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import lxml.html


@dataclass
class ReportFigures:
    counts: dict[str, int]
    dropped: int  # the line's total
    near: int  # near-duplicates among them
    copies: int  # the URLs the clusters name as dropped copies
    met_again: int  # pages an earlier run kept, met again
    refetched: int
    logged_drops: int  # the pairs' line: drops of near-duplicates in the log
    logged_borderline: int
    cluster_drops: int  # the clusters' badges, added up
    clusters: int  # how many clusters the line says there are (0: none)
    clusters_shown: int
    pairs_shown: int
    pairs_of_a_page_with_itself: int
    histogram_drops: int  # the distance histogram's legend: drops drawn and drops without a distance


def number(text: str | None) -> int:
    return int(text.replace(",", "")) if text else 0


def report_figures(html: str) -> ReportFigures:
    root = lxml.html.fromstring(html)
    counts = {row[0].text_content(): number(row[1].text_content()) for row in root.get_element_by_id("counts")}
    drops = root.get_element_by_id("drops").text_content()
    line = re.match(
        r"([\d,]+) pages dropped: ([\d,]+) near-duplicates of kept pages(?:, met under the ([\d,]+) URLs)?", drops
    )
    assert line, drops
    met_again = re.search(r"([\d,]+) pages an earlier run kept, met again", drops)
    refetched = re.search(r"([\d,]+) pages this crawl kept, fetched again", drops)
    logged = re.match(
        r"The log holds ([\d,]+) drops of near-duplicates and ([\d,]+) borderline keeps",
        root.get_element_by_id("pairs").text_content(),
    )
    assert logged, root.get_element_by_id("pairs").text_content()
    badges = [badge.text_content() for badge in root.find_class("badge")]
    clusters = re.search(r"([\d,]+) kept pages have dropped copies", root.text_content())
    pairs = root.find_class("pair")
    legend = re.search(r"<!-- dropped \(([\d,]+)(?:; ([\d,]+) more)?", html)
    return ReportFigures(
        counts=counts,
        dropped=number(line[1]),
        near=number(line[2]),
        copies=number(line[3]),
        met_again=number(met_again[1]) if met_again else 0,
        refetched=number(refetched[1]) if refetched else 0,
        logged_drops=number(logged[1]),
        logged_borderline=number(logged[2]),
        cluster_drops=sum(number(found) for badge in badges for found in re.findall(r"([\d,]+) dropped", badge)),
        clusters=number(clusters[1]) if clusters else 0,
        clusters_shown=len(badges),
        pairs_shown=len(pairs),
        pairs_of_a_page_with_itself=sum(
            len({link.get("href") for link in pair.find("summary").iter("a")}) == 1 for pair in pairs
        ),
        histogram_drops=number(legend[1]) + number(legend[2]) if legend else 0,
    )


def assert_report_agrees(figures: ReportFigures) -> None:
    """The counts, the line on the drops, the clusters and the pairs tell one story: every page dropped is a
    near-duplicate (a pair in the log, a URL in the clusters), a page an earlier run kept, or a page fetched again;
    no pair is of a page with itself."""
    counts = figures.counts
    assert figures.dropped == counts.get("pages_dropped", 0)
    assert figures.near + figures.met_again + figures.refetched == figures.dropped
    assert figures.met_again == counts.get("pages_dropped/rerun", 0)
    assert figures.refetched == counts.get("pages_dropped/refetched", 0)
    assert figures.logged_drops == figures.near, "every near-duplicate dropped is a pair in the log (not cut here)"
    assert figures.logged_borderline == counts.get("borderline", 0) + counts.get("never_dropped", 0)
    assert figures.histogram_drops == figures.logged_drops
    assert figures.pairs_of_a_page_with_itself == 0
    assert figures.copies <= figures.near and (figures.copies > 0) == (figures.near > 0)
    if figures.clusters_shown == figures.clusters:  # every cluster listed: their badges add up to the line
        assert figures.cluster_drops == figures.copies


def write_report(source: str, output: Path, *options: str) -> str:
    """``simhash-dedup report SOURCE -o OUTPUT`` run as a user runs it; the HTML."""
    done = subprocess.run(
        [str(Path(sys.executable).parent / "simhash-dedup"), "report", source, "-o", str(output), *options],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return output.read_text()
