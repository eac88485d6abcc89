"""Write (or check) a digest of every shared page's fingerprint: the guard that a faster
fingerprint computes the same thing.

    python -m tools.fingerprint_reference write   # at the commit whose fingerprints are the reference
    python -m tools.fingerprint_reference check   # prints the pages whose fingerprint differs

The pages: every ``.html`` and ``.html.gz`` file under ``../shared/data`` and
every HTML file inside its ``.tar.xz`` archives.  A page's digest is xxh3-64
of its content and structure fingerprints, sketch and short flag; the file
maps the page's name to it and records the scheme version.
"""

from __future__ import annotations

import gzip
import json
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path

import xxhash

from scrapy_simhash_dedup import SCHEME_VERSION, Fingerprinter
from scrapy_simhash_dedup.fingerprint.fingerprinter import Fingerprint

PROJECT = Path(__file__).resolve().parents[1]
DATA = PROJECT.parent / "shared" / "data"
REFERENCE = PROJECT / "tests" / "data" / "fingerprints.json.gz"


def shared_pages(data: Path = DATA) -> Iterator[tuple[str, bytes]]:
    """(name, bytes) of every shared HTML page, in a fixed order."""
    for path in sorted(data.rglob("*")):
        name = str(path.relative_to(data))
        if path.name.endswith(".html"):
            yield name, path.read_bytes()
        elif path.name.endswith(".html.gz"):
            yield name, gzip.decompress(path.read_bytes())
        elif path.name.endswith(".tar.xz"):
            with tarfile.open(path) as archive:  # in the archive's order: going back would decompress again
                for member in archive:
                    if member.isfile() and member.name.endswith((".html", ".htm")):
                        yield f"{name}!{member.name}", archive.extractfile(member).read()


def digest(fingerprint: Fingerprint) -> str:
    parts = (fingerprint.content, fingerprint.structure, fingerprint.sketch, fingerprint.short, fingerprint.problem)
    return xxhash.xxh3_64_hexdigest(repr(parts).encode())


def digests(data: Path = DATA) -> dict[str, str]:
    fingerprinter = Fingerprinter()
    return {name: digest(fingerprinter.fingerprint(html)) for name, html in shared_pages(data)}


def main() -> None:
    if sys.argv[1:] == ["write"]:
        REFERENCE.write_bytes(
            gzip.compress(json.dumps({"scheme": SCHEME_VERSION, "pages": digests()}).encode(), mtime=0)
        )
        print(f"wrote {REFERENCE}")
    elif sys.argv[1:] == ["check"]:
        reference = json.loads(gzip.decompress(REFERENCE.read_bytes()))
        found = digests()
        differing = sorted(name for name in reference["pages"] if found.get(name) != reference["pages"][name])
        print("\n".join(differing) or "every page's fingerprint is the reference's")
        print(f"{len(differing)} of {len(reference['pages'])} pages differ (reference scheme {reference['scheme']})")
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
