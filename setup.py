"""Builds the compiled parts (the tree walk, the index's loops) of ``scrapy_simhash_dedup``, whose sources are in
``pipelines/``, and the package index's description (the README, its links made absolute); everything else is in
pyproject.toml."""

import platform
import re
from pathlib import Path

import lxml
from Cython.Build import cythonize
from setuptools import Extension, setup

# The popcount instruction (every x86-64 processor since 2008; other processors have theirs by default).
POPCOUNT = ["-mpopcnt"] if platform.machine().lower() in ("x86_64", "amd64") else []
#: Where .readthedocs.yaml publishes the Sphinx site (docs/): the README's links lead there on the package index.
DOCS = "https://scrapy-simhash-dedup.readthedocs.io/en/latest/"


def package_description(readme: str) -> str:
    """The README with its relative links as the published docs have them: ``docs/usage/x.md`` is the page
    ``usage/x.html``, ``docs/x.png`` an image Sphinx copies to ``_images/``, ``CHANGES`` the changelog page (a
    package index shows the README alone: a relative link there leads nowhere)."""

    def absolute(match: re.Match) -> str:
        target, fragment = match[2].partition("#")[::2]
        if target == "CHANGES":
            page = "changelog.html"
        elif target.startswith("docs/") and target.endswith(".md"):
            page = target.removeprefix("docs/").removesuffix(".md") + ".html"
        elif target.startswith("docs/"):
            page = "_images/" + Path(target).name
        else:
            return match[0]
        return f"{match[1]}({DOCS}{page}{'#' + fragment if fragment else ''})"

    return re.sub(r"(\]|!\[[^\]]*\])\(([^)#:]+(?:#[^)]*)?)\)", absolute, readme)


setup(
    long_description=package_description(Path("README.md").read_text(encoding="utf-8")),
    long_description_content_type="text/markdown",
    ext_modules=cythonize(
        [
            Extension(
                "scrapy_simhash_dedup.fingerprint.treewalk",
                ["pipelines/fingerprint/treewalk.pyx"],
                include_dirs=lxml.get_include(),
                extra_compile_args=["-O2", "-Wno-unused-function"],  # lxml's header defines helpers we do not call
            ),
            Extension(
                "scrapy_simhash_dedup.matching.indexloops",
                ["pipelines/matching/indexloops.pyx"],
                extra_compile_args=["-O3", *POPCOUNT],
            ),
            Extension(
                "scrapy_simhash_dedup.fingerprint.textloops",
                ["pipelines/fingerprint/textloops.pyx"],
                include_dirs=["pipelines/fingerprint"],
                extra_compile_args=["-O3"],
            ),
        ],
        compiler_directives={"language_level": 3},
    ),
)
