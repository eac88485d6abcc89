"""Reading a decision log from wherever it was kept."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..crawl.stats import current_names
from ..extras import require
from ..matching.policy import Policy
from ..stores.errors import StoreUnavailable
from ..stores.records import BORDERLINE, CANONICAL, DROPPED, Alias, Decision, Rule, Skip, canonical_aliases
from ..stores.sqlite.readers import read_aliases, read_log, read_rules


@dataclass
class Log:
    """Decisions (oldest first), the runs that made them, and the settings they were made with."""

    source: str
    decisions: list[Decision]
    runs: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)  # outcome -> pages, over the log's runs
    settings: dict[str, Any] = field(default_factory=dict)
    rules: list[Rule] = field(default_factory=list)  # the URL rules learned (a store's log only)
    skips: list[Skip] = field(default_factory=list)  # links and requests not followed, oldest first
    aliases: list[Alias] = field(default_factory=list)  # URLs that name the kept pages (a store's log only)

    def pairs(self) -> list[Decision]:
        """The decisions that pair two pages: all but the drops of a page at its own address (a page an earlier run
        kept, met again: crawls before 0.3 logged them, a batch run with ``--against`` logs them)."""
        return [d for d in self.decisions if not (d.outcome == DROPPED and d.url == d.kept_url)]

    def met_again(self) -> int:
        """Pages an earlier run kept, met again and dropped: the crawls' count (``pages_dropped/rerun``: they log no
        pair), or the drops at their own address in the log, whichever is more."""
        logged = sum(d.outcome == DROPPED and d.url == d.kept_url for d in self.decisions)
        return max(self.counts.get("pages_dropped/rerun", 0), logged)

    def names(self) -> list[Alias]:
        """The URLs that name the kept pages: the aliases kept, and the drops of the log that are not among them
        as drops (those of runs older than aliases, and those whose URL became their kept page's canonical URL: a
        store keeps one naming a URL, the canonical one last)."""
        dropped = {alias.url for alias in self.aliases if alias.reason != CANONICAL}
        return self.aliases + [
            Alias(d.time, d.url, d.kept_url, d.reason)
            for d in self.pairs()
            if d.outcome == DROPPED and d.url not in dropped
        ]


def load_log(source: str, redis_key: str | None = None, policy: Policy = Policy()) -> Log:
    """The log of a SQLite store (a path), a Redis store (``redis://…`` and its key), an outcomes
    file of ``simhash-dedup dedup`` (JSON Lines), or the output folder of ``simhash-dedup spark``.
    ``policy`` gives the thresholds when the source does not say which were used.  Anything else is a
    ``ValueError`` that says what was expected."""
    settings = {
        "mode": policy.mode.value,
        "content_distance": policy.content_distance,
        "structure_distance": policy.structure_distance,
        "min_similarity": policy.min_similarity,
    }
    if source.startswith(("redis://", "rediss://", "unix://")):
        redis = require("redis", "a Redis store's report")

        from redis.exceptions import RedisClusterException

        from ..stores.redis.connect import connect
        from ..stores.redis.log import read_redis_aliases, read_redis_log, read_redis_rules

        if not redis_key:
            raise ValueError("a Redis store needs its key (--key, e.g. myspider:simhash_dedup)")
        try:
            client = connect(source)
            decisions, runs = read_redis_log(client, redis_key)
            rules, skips = read_redis_rules(client, redis_key)
            aliases = read_redis_aliases(client, redis_key)
        except (redis.RedisError, RedisClusterException) as error:
            raise StoreUnavailable(f"the Redis store {redis_key} at {source} cannot be read: {error}") from None
        return _from_runs(source, decisions, runs, settings, rules, skips, aliases)
    path = Path(source)
    if path.is_dir():
        return _from_spark_output(source, path, settings)
    with path.open("rb") as file:
        is_sqlite = file.read(16) == b"SQLite format 3\x00"
    if is_sqlite:
        return _from_runs(source, *read_log(path), settings, *read_rules(path), read_aliases(path))
    return _from_pages(source, path, settings)


def _from_runs(
    source: str,
    decisions: list[Decision],
    runs: list[dict[str, Any]],
    settings: dict[str, Any],
    rules: list[Rule] | None = None,
    skips: list[Skip] | None = None,
    aliases: list[Alias] | None = None,
) -> Log:
    counts: Counter[str] = Counter()
    for run in runs:
        counts.update(current_names(run.get("counts", {})))
    if runs:
        settings = {**settings, **runs[-1].get("settings", {})}
    return Log(source, decisions, runs, dict(counts), settings, rules or [], skips or [], aliases or [])


def _from_pages(source: str, path: Path, settings: dict[str, Any]) -> Log:
    """An outcomes file: one record per page read (its ``outcome``: kept, dropped, borderline or why it
    could not be compared), and a last record ``{"run": …}`` with the settings and counts."""
    decisions, runs, aliases, pages = [], [], [], 0
    with path.open(encoding="utf-8", errors="replace") as file:
        for number, line in enumerate(file, 1):
            try:
                record = json.loads(line)
            except ValueError as error:
                if number == 1:
                    break  # not JSON Lines at all
                raise ValueError(f"{path}:{number}: not a JSON line ({error})") from None
            if not isinstance(record, dict):
                break
            if "run" in record:
                runs.append(record["run"])
            elif "outcome" in record:
                pages += 1
                if record["outcome"] in (DROPPED, BORDERLINE):
                    decisions.append(Decision.from_json(record))
                if record["outcome"] == DROPPED:  # named as the run's store names it, in the same order
                    aliases.append(
                        Alias(record.get("time") or 0.0, record["url"], record["kept_url"], record["reason"])
                    )
                aliases.extend(canonical_aliases(record["url"], record.get("canonical_url")))
            else:
                break
    if not (pages or runs):
        raise ValueError(
            f"{path} is neither a store of simhash_dedup (a SQLite file) nor an outcomes file of "
            f'`simhash-dedup dedup --outcomes` (records with an "outcome"); give one of them, or a '
            f"Redis URL and its --key"
        )
    return _from_runs(source, decisions, runs, settings, aliases=aliases)


def _from_spark_output(source: str, folder: Path, settings: dict[str, Any]) -> Log:
    """The output of ``simhash-dedup spark``: its ``decisions/`` table (Parquet) and ``run.json``."""
    if not (folder / "run.json").is_file() or not (folder / "decisions").is_dir():
        raise ValueError(f"{folder} is a folder but not the output of `simhash-dedup spark` (run.json, decisions/)")
    import pyarrow.dataset

    rows = pyarrow.dataset.dataset(folder / "decisions", format="parquet").to_table().sort_by("order").to_pylist()
    run = json.loads((folder / "run.json").read_text())["run"]
    decisions = [Decision.from_json(row) for row in rows]
    kept = pyarrow.dataset.dataset(folder / "kept", format="parquet")
    named = kept.to_table(columns=["url", "canonical_url"]).to_pylist() if "canonical_url" in kept.schema.names else []
    aliases = [alias for row in named for alias in canonical_aliases(row["url"], row["canonical_url"])]
    return _from_runs(source, decisions, [run], settings, aliases=aliases)
