"""Benchmarks and evaluations: scripts others can rerun, each printing its figures and the command that
produced them."""

from __future__ import annotations

import functools
import shlex
import sys
import tempfile
from pathlib import Path


def command_line(module: str) -> str:
    """The command that is running ``module`` now, as one line a shell reads back the same (arguments with
    spaces, such as ``--variants "no filter"``, quoted)."""
    return shlex.join(["python", "-m", module, *sys.argv[1:]])


@functools.cache
def plugin_root(tree: Path) -> Path:
    """A folder that, first on ``sys.path`` (or ``PYTHONPATH``), makes ``scrapy_simhash_dedup`` the plugin of the
    checkout ``tree`` (its ``pipelines/``): a bench that compares another commit must not import this
    checkout's plugin, which the editable install finds by that name."""
    root = Path(tempfile.mkdtemp(prefix="plugin-"))
    (root / "scrapy_simhash_dedup").symlink_to(tree / "pipelines", target_is_directory=True)
    return root
