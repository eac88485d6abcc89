"""The SQLite store: one file per spider (``store``: ``SqliteStore``), made of what waits to be written (``waiting``),
each write's transaction and its faults (``transaction``), a write's SQL (``writes``) and the file read back with the
row map (``saved``); the file's tables and how a file is known to be one (``schema``), the lock that keeps two crawls
off one file (``lock``), the check of a file's invariants and its repair (``repair``: at open, and the CLI's
check), and the read-only readers the report and the CLI use (``readers``).

May import: ``fingerprint``, ``matching``, and of ``stores`` its ``errors`` (never ``redis/``).
"""
