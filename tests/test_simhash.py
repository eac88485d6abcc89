"""The SimHash core: the known-answer vector, the bit rule, determinism."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import xxhash

from scrapy_simhash_dedup import Fingerprinter, hamming, simhash

from .pages import real_page

MFONDA_WORD = re.compile(r"[\w']+(?:\://[\w\./]+){0,1}", re.ASCII)


def fnv1_64(data: bytes) -> int:
    """FNV-1 (multiply, then xor), the feature hash of mfonda/simhash."""
    h = 0xCBF29CE484222325
    for byte in data:
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
        h ^= byte
    return h


def mfonda_features(text: str) -> Counter[str]:
    """mfonda/simhash's WordFeatureSet: lower-cased regex words, weight 1 each."""
    return Counter(MFONDA_WORD.findall(text.lower()))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("this is a test phrase", 0x8C3A5F7E9ECB3F35),
        ("this is a test phrass", 0x8C3A5F7E9ECB3F21),
        ("foo bar", 0xD8DBE7186BAD3DB3),
    ],
)
def test_known_answer_vector(text: str, expected: int) -> None:
    assert simhash(mfonda_features(text), fnv1_64) == expected


def test_known_answer_distances() -> None:
    a, b, c = (
        simhash(mfonda_features(t), fnv1_64) for t in ("this is a test phrase", "this is a test phrass", "foo bar")
    )
    assert hamming(a, b) == 2
    assert hamming(a, c) == 29


def test_one_feature_gives_its_own_hash() -> None:
    assert simhash({"word": 3.5}) == xxhash.xxh3_64_intdigest(b"word")


def test_heavier_feature_wins_every_bit() -> None:
    light, heavy = xxhash.xxh3_64_intdigest(b"light"), xxhash.xxh3_64_intdigest(b"heavy")
    assert simhash({"light": 1.0, "heavy": 2.0}) == heavy
    assert simhash({"light": 2.0, "heavy": 1.0}) == light != heavy


def test_feature_order_does_not_matter() -> None:
    features = {f"w{i}": (i % 7) + 0.3 for i in range(500)}
    assert simhash(features) == simhash(dict(reversed(list(features.items()))))


def test_hamming() -> None:
    assert hamming(0, 0) == 0
    assert hamming(0, (1 << 64) - 1) == 64
    assert hamming(0b1011, 0b0110) == 3


FINGERPRINT_SCRIPT = """
import json, sys
sys.path.insert(0, sys.argv[1])
from scrapy_simhash_dedup import Fingerprinter
from tests.pages import real_page
fp = [Fingerprinter().fingerprint(real_page(n)) for n in sys.argv[2:]]
print(json.dumps([[f.content, f.structure] for f in fp]))
"""
PAGES = ["newspaper-syracuse.com1", "gne-sina-1"]


def test_fingerprints_equal_across_processes_and_hash_seeds() -> None:
    root = str(Path(__file__).parents[1])
    here = [[f.content, f.structure] for f in map(Fingerprinter().fingerprint, map(real_page, PAGES))]
    assert all(None not in pair for pair in here)
    for seed in ("0", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run(
            [sys.executable, "-c", FINGERPRINT_SCRIPT, root, *PAGES],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        assert json.loads(out.stdout) == here
