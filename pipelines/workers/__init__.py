"""Fingerprints off the reactor: how a worker process starts (``start``, also batch mode's), one worker seen
from the reactor (``connection``), the crawl's pool of them and the fingerprints of recent pages (``pool``), and
the worker process's side of the socket (``process``).

May import: ``fingerprint`` only (the layer below ``stores`` allows ``matching`` too, but a worker process
loads the fingerprint alone), and ``extras``, ``output``, ``version``.
"""
