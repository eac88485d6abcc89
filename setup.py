"""Builds the compiled parts (the tree walk, the index's loops) of ``scrapy_simhash_dedup``, whose sources are in
``pipelines/``; everything else is in pyproject.toml."""

import platform

import lxml
from Cython.Build import cythonize
from setuptools import Extension, setup

# The popcount instruction (every x86-64 processor since 2008; other processors have theirs by default).
POPCOUNT = ["-mpopcnt"] if platform.machine().lower() in ("x86_64", "amd64") else []

setup(
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
