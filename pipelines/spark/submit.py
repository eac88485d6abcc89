"""``spark-submit`` entry point: ``spark-submit --master URL .../spark/submit.py INPUT... -o DIR``, the
arguments of ``simhash-dedup spark`` (the package must be installed on every executor)."""

import sys

from scrapy_simhash_dedup.cli import main

if __name__ == "__main__":
    sys.exit(main(["spark", *sys.argv[1:]]))
