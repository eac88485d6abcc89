"""What a crawl keeps in Redis beside the pages: the decision log (``<key>:decisions``, ``<key>:texts``), the
skipped links and requests (``<key>:skipped``), the aliases, the URL rules and the runs; written in batches
that never fail a check, and read back for the report and the CLI."""

from __future__ import annotations

import json
import logging
from collections import deque
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import redis

from ..records import CANONICAL, Alias, Decision, Record, Rule, Skip
from .availability import RetryGuard
from .keys import RedisClient

if TYPE_CHECKING:
    from redis.typing import EncodableT, FieldT

logger = logging.getLogger(__name__)

MAX_WAITING = 10_000  # entries waiting to be sent while Redis is down (the latest)
MAX_RUNS = 100  # runs whose counts are kept (<key>:runs)


class RedisLog:
    """Entries recorded on the reactor thread and sent by ``send`` (in the batcher's thread, after each
    check): a failed send keeps them for the next."""

    def __init__(self, client: RedisClient, guard: RetryGuard, key: str, decisions: int, texts: int) -> None:
        self.client = client
        self.guard = guard
        self.key = key
        self.decisions_kept = decisions
        self.texts_kept = texts
        self._waiting: deque[Record] = deque(maxlen=MAX_WAITING)

    def record(self, *entries: Record) -> None:
        """Sent with the next round trip: decisions and skips to the log's streams (none with a log size of 0);
        aliases to the hash ``<key>:aliases`` (a URL's first naming stays, a canonical URL's last: the page is in
        Redis already); rules to the hash ``<key>:rules``, each rule's support as this process knows it (the last
        process to save a rule sets it), and in ``<key>:refuted`` its first counterexample, for good."""
        self._waiting.extend(entry for entry in entries if self.decisions_kept or isinstance(entry, (Alias, Rule)))

    def save_run(self, run: dict[str, Any]) -> None:
        if not self.decisions_kept:
            return
        try:
            pipe = self.client.pipeline(transaction=False)
            pipe.lpush(f"{self.key}:runs", json.dumps(run))
            pipe.ltrim(f"{self.key}:runs", 0, MAX_RUNS - 1)
            pipe.execute()
        except redis.RedisError as error:
            logger.warning("simhash_dedup: this run's counts could not be saved in Redis: %s", error)

    def send(self) -> None:
        """Append the decisions recorded since the last call to the capped streams ``<key>:decisions``
        (every field but the texts) and ``<key>:texts`` (whole decisions, the most recent
        ``texts_kept``), the skipped links and requests to ``<key>:skipped``, the aliases to
        ``<key>:aliases``, and save the URL rules that changed.  The log never fails a check: on an error
        the entries wait for the next call (at most ``MAX_WAITING``)."""
        if not self._waiting or self.guard.failed_recently():
            return
        sending = [self._waiting.popleft() for _ in range(len(self._waiting))]
        pipe = self.client.pipeline(transaction=False)
        for entry in sending:
            if isinstance(entry, Rule):
                pipe.hset(f"{self.key}:rules", _rule_field(entry), entry.support)
                if entry.refuted_by is not None:
                    pipe.hsetnx(f"{self.key}:refuted", _rule_field(entry), entry.refuted_by)
            elif isinstance(entry, Alias):
                # a URL's first naming stays, but a canonical URL names the page that took it last (a page renamed)
                setting = pipe.hset if entry.reason == CANONICAL else pipe.hsetnx
                setting(f"{self.key}:aliases", entry.url, json.dumps([entry.kept_url, entry.reason, entry.time]))
            elif isinstance(entry, Skip):
                pipe.xadd(
                    f"{self.key}:skipped", _stream_fields(asdict(entry)), maxlen=self.decisions_kept, approximate=True
                )
            else:
                self._add_decision(pipe, entry)
        try:
            pipe.execute()
        except redis.RedisError:
            self._waiting.extendleft(reversed(sending))

    def _add_decision(self, pipe: Any, decision: Decision) -> None:
        record = decision.without_texts()
        pipe.xadd(f"{self.key}:decisions", _stream_fields(record), maxlen=self.decisions_kept, approximate=True)
        if (decision.packed_text or decision.packed_kept_text) and self.texts_kept:
            texts = {**record, "text": decision.packed_text, "kept_text": decision.packed_kept_text}
            pipe.xadd(
                f"{self.key}:texts", _stream_fields(texts), maxlen=self.texts_kept, approximate=False
            )  # exact: a few large entries, bounded by their count


class RedisLogMethods:
    """The ``Store`` methods a Redis store answers with its log (``log``: ``RedisLog``), and the confirmation of a kept
    page, which waits for nothing (the page is in Redis at once): the same for one log of a crawl and for a store per
    site."""

    log: RedisLog
    unwritten = 0  # kept pages not written yet: none, a kept page is in Redis at once

    def confirm(self, row: int) -> None:
        """Nothing waits: the page is in Redis."""

    def record(self, *entries: Record) -> None:
        self.log.record(*entries)

    def save_run(self, run: dict[str, Any]) -> None:
        self.log.save_run(run)


def read_redis_log(client: RedisClient, key: str) -> tuple[list[Decision], list[dict[str, Any]]]:
    """The decision log and the runs kept under ``key`` (texts joined from ``<key>:texts``)."""
    texts = {}
    for entry in _stream(client, f"{key}:texts"):
        decision = _from_stream(entry)
        texts[(decision.time, decision.url)] = decision
    decisions = [_from_stream(entry) for entry in _stream(client, f"{key}:decisions")]
    decisions = [texts.get((decision.time, decision.url), decision) for decision in decisions]
    runs = [json.loads(run) for run in reversed(client.lrange(f"{key}:runs", 0, -1))]
    return decisions, runs


def read_redis_rules(client: RedisClient, key: str) -> tuple[list[Rule], list[Skip]]:
    """The URL rules and the skipped links and requests kept under ``key``."""
    refuted = {name: _text(by) for name, by in client.hgetall(f"{key}:refuted").items()}
    rules = [
        Rule(*_rule_ident(name), int(support), refuted.get(name))
        for name, support in client.hgetall(f"{key}:rules").items()
    ]
    skips = [
        Skip(
            float(e[b"time"]),
            _text(e[b"kind"]),
            _text(e[b"url"]),
            _text(e[b"because"]),
            _text(e.get(b"rule", b"")),
        )
        for e in _stream(client, f"{key}:skipped")
    ]
    return rules, skips


def read_redis_aliases(client: RedisClient, key: str) -> list[Alias]:
    """The URLs that name the kept pages of the store ``key``, oldest first."""
    aliases = [
        Alias(time, _text(url), kept_url, reason)
        for url, value in client.hgetall(f"{key}:aliases").items()
        for kept_url, reason, time in [json.loads(value)]
    ]
    return sorted(aliases, key=lambda alias: alias.time)


def _rule_field(rule: Rule) -> str:
    return "\t".join(rule.ident)


def _rule_ident(field: bytes | str) -> tuple[str, str, str]:
    """A rule's ``ident`` from its field in ``<key>:rules`` (``_rule_field``)."""
    host, kind, name = _text(field).split("\t")
    return host, kind, name


def _text(reply: bytes | str) -> str:
    """A string Redis replied (bytes: the clients here do not decode replies)."""
    return reply.decode() if isinstance(reply, bytes) else reply


def _stream(client: RedisClient, name: str) -> list[dict[bytes | str, bytes | str]]:
    """The fields of a stream's entries, oldest first."""
    return [fields for _, fields in client.xrange(name) or [] if fields is not None]


def _stream_fields(record: dict[str, Any]) -> dict[FieldT, EncodableT]:
    """A decision's fields as a stream entry holds them: ``None`` left out, the texts packed as they are."""
    return {
        name: value if isinstance(value, bytes) else str(value).encode()
        for name, value in record.items()
        if value is not None
    }


def _from_stream(entry: dict[bytes | str, bytes | str]) -> Decision:
    values: dict[str, Any] = {}
    for name, value in entry.items():
        field = _text(name)
        if field in ("text", "kept_text"):
            values[f"packed_{field}"] = value
        elif field in ("content_distance", "structure_distance"):
            values[field] = int(value)
        elif field in ("time", "similarity", "similarity_needed"):
            values[field] = float(value)
        else:
            values[field] = _text(value)
    return Decision(
        **{
            "content_distance": None,
            "structure_distance": None,
            "similarity": None,
            "similarity_needed": None,
            **values,
        }
    )
