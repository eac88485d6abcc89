"""``python -m scrapy_simhash_dedup``: the ``simhash-dedup`` command."""

import sys

from .cli import main

sys.exit(main())
