"""The optional dependencies, each with the extra that installs it: a feature whose extra is missing says so
in one line, naming the ``pip install`` that fixes it (:class:`MissingExtra`, a ``ValueError``: a crawl's start
and the command line print it as they print a wrong setting).

May import: nothing of the package (the lowest layer: every layer may use it).
"""

from __future__ import annotations

import importlib
from types import ModuleType

#: The extra that installs each optional top-level module.
EXTRA_OF = {
    "redis": "redis",
    "fastwarc": "warc",
    "tqdm": "warc",
    "matplotlib": "report",
    "pyspark": "spark",
    "pyarrow": "spark",
}


class MissingExtra(ValueError):
    """A feature needs a module its extra installs, and the extra is not installed."""


def require(module: str, feature: str) -> ModuleType:
    """``module`` imported; if it is not installed, a :class:`MissingExtra` that names ``feature`` and the
    ``pip install`` of its extra.  An ``ImportError`` from inside an installed module is not hidden."""
    top = module.partition(".")[0]
    try:
        return importlib.import_module(module)
    except ImportError as error:
        if (error.name or "").partition(".")[0] != top:
            raise
        raise MissingExtra(
            f"{feature} needs {top}, which is not installed: pip install 'scrapy-simhash-dedup[{EXTRA_OF[top]}]'"
        ) from None


def installed(module: str) -> bool:
    """Is the optional ``module`` importable (a feature that does without it, as the progress bar)?"""
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True
