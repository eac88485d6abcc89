"""Benchmarks and evaluations: scripts others can rerun, each printing its figures and the command that
produced them."""

from __future__ import annotations

import shlex
import sys


def command_line(module: str) -> str:
    """The command that is running ``module`` now, as one line a shell reads back the same (arguments with
    spaces, such as ``--variants "no filter"``, quoted)."""
    return shlex.join(["python", "-m", module, *sys.argv[1:]])
