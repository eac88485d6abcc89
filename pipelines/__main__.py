"""``python -m pipelines``: the ``simhash-dedup`` command."""

import sys

from .cli import main

sys.exit(main())
