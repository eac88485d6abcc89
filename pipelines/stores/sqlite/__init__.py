"""The SQLite store: one file per spider (``store``: ``SqliteStore``, with what waits to be written and the file read
back), its writes, each one transaction, and their faults (``writes``); the file's tables and how a file is known to
be one (``schema``), the lock that keeps two crawls off one file (``lock``), the check of a file's invariants and its
repair (``repair``: at open, and the CLI's check), and the read-only readers the report and the CLI use
(``readers``).

May import: ``fingerprint``, ``matching``, and of ``stores`` its ``errors`` and ``records`` (never ``redis/``).
"""
