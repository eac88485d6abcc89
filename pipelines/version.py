"""The release: ``pyproject.toml`` reads it, the package exports it, ``simhash-dedup --version`` prints it;
``CHANGES`` says what each release changed (the fingerprint scheme is ``fingerprint.fingerprinter.SCHEME_VERSION``).

May import: nothing of the package (the lowest layer).
"""

__version__ = "0.2.0.dev0"
