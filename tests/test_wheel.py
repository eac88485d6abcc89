"""The package as users install it: a wheel built from this checkout holds one top-level package,
``scrapy_simhash_dedup`` (the folder ``pipelines/`` under its only name), and fingerprints as the checkout does.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

from scrapy_simhash_dedup import Fingerprinter

from .conftest import PROJECT
from .pages import real_page

#: Run from the unpacked wheel, with nothing of the checkout on the path: the wheel's fingerprint of a page.
FINGERPRINT_FROM_THE_WHEEL = """
import json, sys
sys.path.insert(0, sys.argv[1])
import scrapy_simhash_dedup
assert scrapy_simhash_dedup.__file__.startswith(sys.argv[1]), scrapy_simhash_dedup.__file__
fingerprint = scrapy_simhash_dedup.Fingerprinter().fingerprint(open(sys.argv[2], "rb").read())
print(json.dumps([fingerprint.content, fingerprint.structure, fingerprint.sketch.hex()]))
"""


def test_the_built_wheel_holds_one_package_that_fingerprints_as_the_checkout(dist: Path, tmp_path: Path) -> None:
    (wheel,) = dist.glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names if ".dist-info/" not in name} == {"scrapy_simhash_dedup"}
    packages = {
        str(path.parent.relative_to(PROJECT / "pipelines")) for path in (PROJECT / "pipelines").rglob("__init__.py")
    }
    assert {
        str(Path(name).parent.relative_to("scrapy_simhash_dedup")) for name in names if name.endswith("/__init__.py")
    } == packages, "every sub-package of the checkout is in the wheel"
    compiled = sorted(name for name in names if name.endswith(".so"))
    assert sorted(Path(name).name.split(".")[0] for name in compiled) == ["indexloops", "textloops", "treewalk"]
    unpacked = tmp_path / "unpacked"
    zipfile.ZipFile(wheel).extractall(unpacked)
    page = tmp_path / "page.html"
    page.write_bytes(real_page("newspaper-syracuse.com1"))
    done = subprocess.run(
        [sys.executable, "-c", FINGERPRINT_FROM_THE_WHEEL, str(unpacked), str(page)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    expected = Fingerprinter().fingerprint(page.read_bytes())
    assert json.loads(done.stdout) == [expected.content, expected.structure, expected.sketch.hex()]


def test_nothing_imports_the_plugin_by_its_folder_name() -> None:
    """``pipelines`` is a folder of the checkout, not a name the plugin has: no code, setting or command uses it."""
    by_folder_name = re.compile(
        r"^\s*(from|import) pipelines\b|[\"']pipelines\.(?!py\b)[A-Za-z]|-m\s+pipelines\b", re.M
    )
    sources = [
        path
        for folder in ("pipelines", "tests", "bench", "tools", "crawler")
        for path in (PROJECT / folder).rglob("*.py")
    ] + [PROJECT / "README.md", PROJECT / "setup.py"]
    assert sources and not [str(path) for path in sources if by_folder_name.search(path.read_text())]
