"""Sphinx configuration: Markdown pages (MyST), the API from the docstrings, the command line from its parser.

Built by ``tests/test_docs.py`` (``sphinx-build -W --keep-going -b html docs OUT``): every warning, a broken
cross-reference included, fails ``make test``."""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))

from scrapy_simhash_dedup import __version__  # noqa: E402 (the installed package: make demo / make test install it)

project = "scrapy-simhash-dedup"
author = "the scrapy-simhash-dedup authors"
copyright = "the scrapy-simhash-dedup authors"
release = __version__
version = ".".join(__version__.split(".")[:2])

extensions = ["myst_parser", "sphinx.ext.autodoc", "simhash_docs"]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build"]

# Pages are Markdown; headings get anchors for links such as [text](page.md#a-heading).
myst_enable_extensions = ["colon_fence", "fieldlist"]
myst_heading_anchors = 3

# Every reference must resolve (a setting, a stat, a page, a name the package exports); names of other
# projects (Scrapy, Twisted, the standard library) are left as text, with no inventory fetched, and so are the
# package's modules, which docstrings name but the reference does not document (the internals pages do).
nitpicky = True
nitpick_ignore_regex = [(r"py:.*", r"(?!scrapy_simhash_dedup\.).*"), (r"py:mod", r"scrapy_simhash_dedup\..*")]

autodoc_member_order = "bysource"
autodoc_typehints = "signature"

html_theme = "alabaster"
html_title = f"scrapy-simhash-dedup {release}"
