"""The JVM that ``simhash-dedup spark`` starts for its Spark session (local mode, or a cluster's driver).

A run of a few thousand pages spends more time starting Java than deciding pages (``bench/spark.py``: on
2 cores, 5,092 pages, ~7 s to start the JVM, ~2.5 s loading Parquet's classes at the first write, and the
JIT compiling code that runs once).  So, in local mode only:

- the JIT stops at its first tier (``-XX:TieredStopAtLevel=1``): the JVM only shuffles and writes, the
  pages are fingerprinted and compared in Python workers;
- Spark's web UI is not started (a one-shot command has no one to look at it);
- Java's class-data sharing archive of the classes a run loads (JDK 13+'s ``ArchiveClassesAtExit``):
  written by the first run into the user's cache folder (~170 MB), read by the next ones, one per PySpark and
  Java install (Java itself checks that it matches and ignores it otherwise);
- Spark binds to 127.0.0.1 (``SPARK_LOCAL_IP``, unless set): a local job has no network to use.

And the JVM's own output (Java's notices, Spark's log4j WARN lines) goes to a log file, not the console;
the command moves it into the output folder (``spark.log``), or names it when the run fails.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import IO, Any

#: Where class-data archives are kept (``$XDG_CACHE_HOME``, else ``~/.cache``).
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "scrapy-simhash-dedup"


class Jvm:
    """The options, the log and the end of the JVM a session starts.  ``log`` None: its output is inherited;
    ``archive``: use (or write) the class-data archive, for a process that ends its JVM with ``stop``."""

    def __init__(self, master: str, log: Path | None = None, archive: bool = False, ui: bool = False) -> None:
        self.local = master.startswith("local")
        self.log_path = log
        self.archive = archive and self.local
        self.ui = ui
        self._archive: Path | None = None  # an archive this run writes, moved into place once the JVM has exited
        self._log: IO[bytes] | None = None
        self.gateway: Any = None  # PySpark's gateway to the JVM, once started

    @property
    def writes_archive(self) -> bool:
        """Does this JVM write the class-data archive as it exits (the first local run of an install)?"""
        return self._archive is not None

    def conf(self) -> dict[str, str]:
        """Spark settings for the session."""
        if not self.local:
            return {}
        return {
            "spark.ui.enabled": "true" if self.ui else "false",
            "spark.driver.extraJavaOptions": " ".join(
                ["-XX:TieredStopAtLevel=1", *(self._sharing() if self.archive else [])]
            ),
        }

    def popen_kwargs(self) -> dict[str, Any]:
        """How PySpark starts the JVM: its output to the log file, if any."""
        if self.local:
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        if self.log_path is None:
            return {}
        self._log = self.log_path.open("ab")
        return {"stdout": self._log, "stderr": self._log}

    def stop(self, spark: Any | None) -> None:
        """Stop ``spark`` and end the JVM it started (the gateway's process exits when its input closes), keep
        the archive it wrote, close the log.  No session can start in this process after."""
        if spark is not None:
            spark.stop()
        process = getattr(self.gateway, "proc", None)  # PySpark's Popen of the JVM, None under spark-submit
        if process is not None:
            process.stdin.close()
            try:
                process.wait(timeout=60)
            except Exception:
                pass
        if self._archive is not None and self._archive.is_file() and self._archive.stat().st_size:
            os.replace(self._archive, self._archive.with_suffix(""))
        elif self._archive is not None:
            self._archive.unlink(missing_ok=True)
        if self._log is not None:
            self._log.close()

    def keep_log(self, folder: Path | None) -> None:
        """The JVM's output, if any, as ``folder/spark.log`` (None: not kept)."""
        if self.log_path is not None and self.log_path.exists():
            if folder is not None and self.log_path.stat().st_size and folder.is_dir():
                shutil.move(self.log_path, folder / "spark.log")
            else:
                self.log_path.unlink()

    def _sharing(self) -> list[str]:
        """The class-data sharing option: read this install's archive, or write it at exit (under a name of
        this process: two first runs at once each write their own, and the last one moved in wins)."""
        archive = CACHE / f"spark-classes-{_install_key()}.jsa"
        if archive.is_file():
            return [f"-XX:SharedArchiveFile={archive}"]
        try:
            CACHE.mkdir(parents=True, exist_ok=True)
        except OSError:  # a read-only home: no archive
            return []
        self._archive = archive.with_suffix(f".jsa.{os.getpid()}")
        return [f"-XX:ArchiveClassesAtExit={self._archive}", "-Xlog:cds=off", "-Xlog:cds+dynamic=off"]


def _install_key() -> str:
    """PySpark's version and place, and the Java that runs it (its path and modification time): an archive
    is Java's image of those classes."""
    import pyspark

    java = (
        shutil.which("java", path=(str(Path(os.environ["JAVA_HOME"]) / "bin") if os.environ.get("JAVA_HOME") else None))
        or "java"
    )
    java_path = Path(java).resolve()
    made = java_path.stat().st_mtime if java_path.exists() else 0
    described = f"{pyspark.__version__} {pyspark.__file__} {java_path} {made} {sys.version_info[:2]}"
    return hashlib.sha256(described.encode()).hexdigest()[:16]


def log_file() -> Path:
    """A new file for the JVM's output."""
    handle, name = tempfile.mkstemp(prefix="simhash-dedup-spark-", suffix=".log")
    os.close(handle)
    return Path(name)
