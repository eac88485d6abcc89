"""Benchmarks and evaluations: scripts others can rerun, each printing its figures and the command that
produced them, by purpose: ``quality`` (what the filter decides), ``speed`` (what it costs a crawl or a
run), ``scale`` (how far it goes: large indexes, Redis, Spark).  What they share is in ``common``; no
script imports another.  ``bench/README.md`` lists them, with their commands and results files."""
