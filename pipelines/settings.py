"""The ``SIMHASH_DEDUP_*`` settings, read and checked once at start-up."""

from __future__ import annotations

import os
from dataclasses import dataclass

from scrapy.settings import BaseSettings

from .fingerprint import DEFAULT_MAX_BYTES, DEFAULT_MIN_FEATURES
from .stores import Mode, Policy
from .structure import DEFAULT_DECAY


@dataclass(frozen=True)
class DedupSettings:
    html_field: str = "html"
    url_field: str = "url"
    policy: Policy = Policy()
    structure_decay: float = DEFAULT_DECAY
    min_features: int = DEFAULT_MIN_FEATURES
    max_html_bytes: int = DEFAULT_MAX_BYTES
    fingerprint_fields: bool = False
    remove_html: bool = False
    drop_log_level: str = "INFO"
    reset: bool = False
    commit_every: int = 100
    path: str | None = None
    backend: str = "sqlite"  # "sqlite" (persist), "memory" or "redis"
    redis_url: str | None = None
    redis_key: str = "%(spider)s:simhash_dedup"
    redis_timeout: float = 5.0
    expire_days: float = 0.0
    fail_mode: str = "open"  # when the shared store is unreachable: "open" keeps items, "closed" stops
    workers: int = 1  # fingerprint worker processes; 0 or 1: none, pages fingerprinted on the reactor thread

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> DedupSettings:
        """Read the settings; a wrong value stops the crawl at start with a clear error."""
        default = cls()
        mode = settings.get("SIMHASH_DEDUP_MODE", default.policy.mode.value)
        try:
            mode = Mode(mode)
        except ValueError:
            choices = ", ".join(m.value for m in Mode)
            raise ValueError(f"SIMHASH_DEDUP_MODE must be one of {choices}; got {mode!r}") from None
        min_similarity = settings.getfloat("SIMHASH_DEDUP_MIN_SIMILARITY", default.policy.min_similarity)
        if not -1 <= min_similarity <= 1:
            raise ValueError(f"SIMHASH_DEDUP_MIN_SIMILARITY must be within -1..1; got {min_similarity}")
        policy = Policy(
            mode,
            _distance(settings, "SIMHASH_DEDUP_CONTENT_DISTANCE", default.policy.content_distance),
            _distance(settings, "SIMHASH_DEDUP_STRUCTURE_DISTANCE", default.policy.structure_distance),
            min_similarity,
        )
        decay = settings.getfloat("SIMHASH_DEDUP_STRUCTURE_DECAY", default.structure_decay)
        if not 0 < decay <= 1:
            raise ValueError(f"SIMHASH_DEDUP_STRUCTURE_DECAY must be in (0, 1]; got {decay}")
        persist = settings.getbool("SIMHASH_DEDUP_PERSIST", True)
        redis_url = settings.get("SIMHASH_DEDUP_REDIS_URL") or None
        backend = settings.get("SIMHASH_DEDUP_BACKEND") or ("redis" if redis_url else "sqlite" if persist else "memory")
        _choice("SIMHASH_DEDUP_BACKEND", backend, ("sqlite", "memory", "redis"))
        if backend == "redis" and not redis_url:
            redis_url = settings.get("REDIS_URL") or "redis://localhost:6379"  # scrapy-redis's setting
        fail_mode = settings.get("SIMHASH_DEDUP_FAIL_MODE", default.fail_mode)
        _choice("SIMHASH_DEDUP_FAIL_MODE", fail_mode, ("open", "closed"))
        workers = settings.getint("SIMHASH_DEDUP_WORKERS", os.cpu_count() or 1)
        if workers < 0:
            raise ValueError(f"SIMHASH_DEDUP_WORKERS must be 0 or more; got {workers}")
        return cls(
            html_field=settings.get("SIMHASH_DEDUP_HTML_FIELD", default.html_field),
            url_field=settings.get("SIMHASH_DEDUP_URL_FIELD", default.url_field),
            policy=policy,
            structure_decay=decay,
            min_features=max(1, settings.getint("SIMHASH_DEDUP_MIN_FEATURES", default.min_features)),
            max_html_bytes=settings.getint("SIMHASH_DEDUP_MAX_HTML_BYTES", default.max_html_bytes),
            fingerprint_fields=settings.getbool("SIMHASH_DEDUP_FINGERPRINT_FIELDS", default.fingerprint_fields),
            remove_html=settings.getbool("SIMHASH_DEDUP_REMOVE_HTML", default.remove_html),
            drop_log_level=settings.get("SIMHASH_DEDUP_DROP_LOG_LEVEL", default.drop_log_level),
            reset=settings.getbool("SIMHASH_DEDUP_RESET", default.reset),
            commit_every=max(1, settings.getint("SIMHASH_DEDUP_COMMIT_EVERY", default.commit_every)),
            path=settings.get("SIMHASH_DEDUP_PATH") or None,
            backend=backend,
            redis_url=redis_url,
            redis_key=settings.get("SIMHASH_DEDUP_REDIS_KEY", default.redis_key),
            redis_timeout=settings.getfloat("SIMHASH_DEDUP_REDIS_TIMEOUT", default.redis_timeout),
            expire_days=max(0.0, settings.getfloat("SIMHASH_DEDUP_EXPIRE_DAYS", default.expire_days)),
            fail_mode=fail_mode,
            workers=workers,
        )


def _choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}; got {value!r}")


def _distance(settings: BaseSettings, name: str, default: int) -> int:
    value = settings.getint(name, default)
    if not 0 <= value <= 64:
        raise ValueError(f"{name} must be within 0..64; got {value}")
    return value
