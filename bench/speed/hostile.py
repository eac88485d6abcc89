"""What the pages that cost most take: CPU seconds per page, and the outcome, for pages built to be
as expensive as the size limit allows.

    python -m bench.speed.hostile [--rounds 3]

Each page is fingerprinted by the crawl's ``Fingerprinter`` at default settings (the work a worker
process does for it); the bound is ~1 s a page.  The pages: a 17.8 MB Chinese page given as a
``str`` (6.4 M characters: over the byte limit, though under it in characters), a 7.5 MB Chinese
page, 1,000,000 empty elements, 2,000,000 paragraphs of one letter, 700,000 small bold texts, and
7.8 MB of English-like paragraphs.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

from bench.common import command_line

HAN = (
    "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行"
    "学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天"
)


def chinese_page(paragraphs: int) -> str:
    rng = random.Random(paragraphs)
    return (
        "<html><body>"
        + "".join("<p>" + "".join(rng.choice(HAN) for _ in range(60)) + "</p>" for _ in range(paragraphs))
        + "</body></html>"
    )


def english_page(paragraphs: int) -> str:
    rng = random.Random(paragraphs)
    words = [f"w{n}x" for n in range(50_000)]
    return (
        "<html><body>"
        + "".join("<p>" + " ".join(rng.choice(words) for _ in range(60)) + "</p>" for _ in range(paragraphs))
        + "</body></html>"
    )


#: name -> the page (built when asked for)
PAGES: dict[str, Callable[[], str | bytes]] = {
    "17.8 MB Chinese str": lambda: chinese_page(95_000),
    "7.5 MB Chinese str": lambda: chinese_page(40_000),
    "1,000,000 empty elements": lambda: ("<html><body>" + "<i></i>" * 1_000_000 + "</body></html>").encode(),
    "2,000,000 one-letter paragraphs": lambda: ("<html><body>" + "<p>a" * 2_000_000).encode(),
    "700,000 small bold texts": lambda: ("<html><body>" + "<b>x y</b>" * 700_000 + "</body></html>").encode(),
    "7.8 MB English-like text": lambda: english_page(16_500).encode(),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from scrapy_simhash_dedup import Fingerprinter

    fingerprinter = Fingerprinter()
    pages = {name: build() for name, build in PAGES.items()}
    seconds: dict[str, list[float]] = {name: [] for name in pages}
    outcomes: dict[str, str] = {}
    for _ in range(args.rounds):
        for name, page in pages.items():
            start = time.process_time()
            fingerprint = fingerprinter.fingerprint(page)
            seconds[name].append(time.process_time() - start)
            outcomes[name] = fingerprint.problem or ("fingerprinted" if fingerprint.content else "no content")
    print(f"| page | size MB (UTF-8) | CPU s, median of {args.rounds} | outcome |\n|---|---|---|---|")
    for name, page in pages.items():
        size = len(page.encode("utf-8") if isinstance(page, str) else page) / 1e6
        print(f"| {name} | {size:.1f} | {statistics.median(seconds[name]):.2f} | {outcomes[name]} |")
    print(f"\nreproduce with: {command_line('bench.speed.hostile')}")


if __name__ == "__main__":
    main()
