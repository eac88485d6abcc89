"""The SQLite store: one file per spider (``store``), its tables and how a file is known to be one
(``schema``), the lock that keeps two crawls off one file (``lock``), and the read-only readers the report
and the CLI use (``readers``).

May import: ``fingerprint``, ``matching``, ``stores``.
"""
