"""The package as users install it: a wheel built from this checkout, imported under both its names.

A wheel holds a copy of each compiled module for its second name (``setup.py``), which an in-place
checkout does not (both names load one file there): a compiled module that used another's types
under its first name once raised ``TypeError`` under ``scrapy_simhash_dedup`` only.
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

from pipelines import Fingerprinter

from .conftest import PROJECT
from .pages import real_page

#: Run from the unpacked wheel, with nothing of the checkout on the path: each name's fingerprint of a page.
FINGERPRINT_UNDER_BOTH_NAMES = """
import json, sys
sys.path.insert(0, sys.argv[1])
html = open(sys.argv[2], "rb").read()
found = {}
for name in ("scrapy_simhash_dedup", "pipelines"):
    package = __import__(name)
    assert package.__file__.startswith(sys.argv[1]), package.__file__
    fingerprint = package.Fingerprinter().fingerprint(html)
    found[name] = [fingerprint.content, fingerprint.structure, fingerprint.sketch.hex()]
print(json.dumps(found))
"""


def test_the_built_wheel_fingerprints_alike_under_both_names(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--disable-pip-version-check", "--wheel-dir", str(tmp_path), str(PROJECT)], check=True)
    (wheel,) = tmp_path.glob("*.whl")
    unpacked = tmp_path / "unpacked"
    zipfile.ZipFile(wheel).extractall(unpacked)
    page = tmp_path / "page.html"
    page.write_bytes(real_page("newspaper-syracuse.com1"))
    done = subprocess.run([sys.executable, "-c", FINGERPRINT_UNDER_BOTH_NAMES, str(unpacked), str(page)],
                          cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    expected = Fingerprinter().fingerprint(page.read_bytes())
    parts = [expected.content, expected.structure, expected.sketch.hex()]
    assert json.loads(done.stdout) == {"scrapy_simhash_dedup": parts, "pipelines": parts}
