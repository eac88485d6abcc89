"""The ``SIMHASH_DEDUP_*`` settings, read and checked once at start-up, and a crawl that cannot start with the
filter refused in one line.

The filter's components are built with Scrapy's engine, before the spider is opened and so before the feed
exports open (and truncate) their files: a wrong setting or a store that another crawl holds stops the crawl
there, with nothing written.  :func:`refuse` logs the one ERROR line and returns the exception to raise; Scrapy
then ends the crawl with exit status 1, and the traceback asyncio (or Twisted) would print for that exception
is left out.
"""

from __future__ import annotations

import logging
import math
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import ScrapyDeprecationWarning
from scrapy.settings import BaseSettings

from ..extras import require
from ..fingerprint.fingerprinter import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_ELEMENTS,
    DEFAULT_MAX_TEXT_CHARS,
    DEFAULT_MIN_FEATURES,
    SCHEME_VERSION,
    Fingerprinter,
)
from ..fingerprint.structure import DEFAULT_DECAY
from ..guards.traps import DEFAULT_BUDGET
from ..matching.policy import Mode, Policy
from ..matching.scope import Scope
from ..workers.pool import DEFAULT_PAGE_TIMEOUT

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class DedupSettings:
    html_field: str = "html"
    url_field: str = "url"
    canonical_field: str = "canonical_url"  # a kept item's canonical URL goes there; "": not given
    policy: Policy = Policy()
    structure_decay: float = DEFAULT_DECAY
    min_features: int = DEFAULT_MIN_FEATURES
    max_html_bytes: int = DEFAULT_MAX_BYTES
    max_elements: int = DEFAULT_MAX_ELEMENTS
    max_text_chars: int = DEFAULT_MAX_TEXT_CHARS
    fingerprint_fields: bool = False
    remove_html: bool = False
    drop_log_level: str = "INFO"
    debug: bool = False  # every link not followed, request skipped and re-run drop logged (DUPEFILTER_DEBUG's role)
    reset: bool = False
    persist: bool = False  # remember kept pages across runs (with JOBDIR or a path: always)
    commit_every: int = 100
    path: str | None = None
    backend: str = "sqlite"  # "sqlite", "memory" or "redis"
    redis_url: str | None = None
    redis_key: str = "%(spider)s:simhash_dedup"
    redis_timeout: float = 5.0
    expire_days: float = 0.0
    fail_mode: str = "open"  # when the shared store is unreachable: "open" keeps items, "closed" stops
    workers: int = 1  # fingerprint worker processes; 0: none, pages fingerprinted on the reactor thread
    worker_timeout: float = DEFAULT_PAGE_TIMEOUT  # seconds a worker may spend on a page before it is replaced
    decisions: int = 100_000  # drops and borderline keeps kept in the store's decision log; 0: no log
    review_texts: int = 1_000  # the most recent decisions that keep both pages' texts
    skip_links: bool = True  # the links of a near-duplicate page are not followed
    url_rules: bool = True  # URL rules are learned and requests they show to be copies skipped
    rule_support: int = 5  # pairs of near-duplicates before a URL rule is trusted
    link_budget: int = DEFAULT_BUDGET  # near-duplicates in a row a URL shape leads to before its links are skipped
    gc_freeze: bool = True  # the objects that exist when the spider opens are left out of full collections
    scope: Scope = Scope.CRAWL  # which pages a page is compared with: the crawl's, its site's or its host's
    memory_mb: float = 128.0  # "site"/"host" scope: the kept pages' fingerprints a process holds, at most (MiB)

    @property
    def memory_budget(self) -> int | None:
        """Bytes of kept pages a process holds in "site" or "host" scope (crawl scope: all of them, no budget)."""
        return None if self.scope is Scope.CRAWL else int(self.memory_mb * (1 << 20))

    @property
    def scheme(self) -> str:
        """What stored fingerprints depend on: a store of another scheme holds incomparable ones."""
        return f"v{SCHEME_VERSION}/decay={self.structure_decay}/min_features={self.min_features}"

    @property
    def keep_texts(self) -> bool:
        """Do fingerprints carry their own text (for the decision log's pairs)?"""
        return self.decisions > 0 and self.review_texts > 0

    def fingerprinter(self, keep_text: bool) -> Fingerprinter:
        """The fingerprinter of these settings: the crawl's, batch mode's and the Spark job's."""
        return Fingerprinter(
            structure_decay=self.structure_decay,
            min_features=self.min_features,
            max_bytes=self.max_html_bytes,
            max_elements=self.max_elements,
            max_text_chars=self.max_text_chars,
            keep_text=keep_text,
        )

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> DedupSettings:
        """Read the settings; a wrong value stops the crawl at start with an error naming its setting."""
        default = cls()
        mode = _text(settings, "SIMHASH_DEDUP_MODE", default.policy.mode.value)
        _choice("SIMHASH_DEDUP_MODE", mode, tuple(m.value for m in Mode))
        policy = Policy(
            Mode(mode),
            _integer(settings, "SIMHASH_DEDUP_CONTENT_DISTANCE", default.policy.content_distance, 0, 64),
            _integer(settings, "SIMHASH_DEDUP_STRUCTURE_DISTANCE", default.policy.structure_distance, 0, 64),
            _number(settings, "SIMHASH_DEDUP_MIN_SIMILARITY", default.policy.min_similarity, -1, 1),
            _flag(settings, "SIMHASH_DEDUP_UPDATES", default.policy.updates),
        )
        redis_url = _text(settings, "SIMHASH_DEDUP_REDIS_URL", "") or None
        backend = _text(settings, "SIMHASH_DEDUP_BACKEND", "") or ("redis" if redis_url else "sqlite")
        _choice("SIMHASH_DEDUP_BACKEND", backend, ("sqlite", "memory", "redis"))
        if backend == "redis":
            require("redis", "SIMHASH_DEDUP_BACKEND = 'redis'")  # a missing extra: a refused start, in one line
        if backend == "redis" and not redis_url:
            redis_url = _text(settings, "REDIS_URL", "") or "redis://localhost:6379"  # scrapy-redis's setting
        scope = _text(settings, "SIMHASH_DEDUP_SCOPE", default.scope.value)
        _choice("SIMHASH_DEDUP_SCOPE", scope, tuple(s.value for s in Scope))
        fail_mode = _text(settings, "SIMHASH_DEDUP_FAIL_MODE", default.fail_mode)
        _choice("SIMHASH_DEDUP_FAIL_MODE", fail_mode, ("open", "closed"))
        return cls(
            html_field=_text(settings, "SIMHASH_DEDUP_HTML_FIELD", default.html_field, empty=False),
            url_field=_text(settings, "SIMHASH_DEDUP_URL_FIELD", default.url_field, empty=False),
            canonical_field=_text(settings, "SIMHASH_DEDUP_CANONICAL_FIELD", default.canonical_field),
            policy=policy,
            structure_decay=_number(
                settings, "SIMHASH_DEDUP_STRUCTURE_DECAY", default.structure_decay, 0, 1, above_low=True
            ),
            min_features=_integer(settings, "SIMHASH_DEDUP_MIN_FEATURES", default.min_features, 1),
            max_html_bytes=_integer(settings, "SIMHASH_DEDUP_MAX_HTML_BYTES", default.max_html_bytes, 1),
            max_elements=_integer(settings, "SIMHASH_DEDUP_MAX_ELEMENTS", default.max_elements, 1),
            max_text_chars=_integer(settings, "SIMHASH_DEDUP_MAX_TEXT_CHARS", default.max_text_chars, 1),
            fingerprint_fields=_flag(settings, "SIMHASH_DEDUP_FINGERPRINT_FIELDS", default.fingerprint_fields),
            remove_html=_flag(settings, "SIMHASH_DEDUP_REMOVE_HTML", default.remove_html),
            drop_log_level=_log_level(settings, "SIMHASH_DEDUP_DROP_LOG_LEVEL", default.drop_log_level),
            debug=_flag(settings, "SIMHASH_DEDUP_DEBUG", default.debug),
            reset=_flag(settings, "SIMHASH_DEDUP_RESET", default.reset),
            persist=_flag(settings, "SIMHASH_DEDUP_PERSIST", default.persist),
            commit_every=_integer(settings, "SIMHASH_DEDUP_COMMIT_EVERY", default.commit_every, 1),
            path=_text(settings, "SIMHASH_DEDUP_PATH", "") or None,
            backend=backend,
            redis_url=redis_url,
            redis_key=_text(settings, "SIMHASH_DEDUP_REDIS_KEY", default.redis_key, empty=False),
            redis_timeout=_number(settings, "SIMHASH_DEDUP_REDIS_TIMEOUT", default.redis_timeout, 0, above_low=True),
            expire_days=_number(settings, "SIMHASH_DEDUP_EXPIRE_DAYS", default.expire_days, 0),
            fail_mode=fail_mode,
            workers=_integer(settings, "SIMHASH_DEDUP_WORKERS", default_workers(), 0),
            worker_timeout=_number(settings, "SIMHASH_DEDUP_WORKER_TIMEOUT", default.worker_timeout, 0, above_low=True),
            decisions=_integer(settings, _renamed(settings, "SIMHASH_DEDUP_LOG_SIZE"), default.decisions, 0),
            review_texts=_integer(settings, "SIMHASH_DEDUP_REVIEW_TEXTS", default.review_texts, 0),
            skip_links=_flag(settings, "SIMHASH_DEDUP_SKIP_LINKS", default.skip_links),
            url_rules=_flag(settings, "SIMHASH_DEDUP_URL_RULES", default.url_rules),
            rule_support=_integer(settings, "SIMHASH_DEDUP_RULE_SUPPORT", default.rule_support, 1),
            link_budget=_integer(settings, "SIMHASH_DEDUP_LINK_BUDGET", default.link_budget, 1),
            gc_freeze=_flag(settings, "SIMHASH_DEDUP_GC_FREEZE", default.gc_freeze),
            scope=Scope(scope),
            memory_mb=_number(settings, "SIMHASH_DEDUP_MEMORY_MB", default.memory_mb, 0, above_low=True),
        )


def _choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}; got {value!r}")


#: Settings renamed, accepted under their old names for one release: new name -> old name.
RENAMED = {"SIMHASH_DEDUP_LOG_SIZE": "SIMHASH_DEDUP_DECISIONS"}


def _renamed(settings: BaseSettings, new: str) -> str:
    """The name to read: ``new``, or its old name (with a one-line ScrapyDeprecationWarning) when only that
    is set."""
    old = RENAMED[new]
    if settings.get(old) is not None and settings.get(new) is None:
        warnings.warn(f"{old} is deprecated, use {new} instead", ScrapyDeprecationWarning, stacklevel=2)
        return old
    return new


def _integer(settings: BaseSettings, name: str, default: int, low: int, high: int | None = None) -> int:
    """A whole number within ``low``..``high``."""
    within = f"a whole number of {low} or more" if high is None else f"a whole number within {low}..{high}"
    value = _converted(settings, name, default, _whole, within)
    if value < low or (high is not None and value > high):
        raise ValueError(f"{name} must be {within}; got {value}")
    return value


def _number(
    settings: BaseSettings, name: str, default: float, low: float, high: float = math.inf, *, above_low: bool = False
) -> float:
    """A number within ``low``..``high`` (above ``low`` if ``above_low``)."""
    bound = f"above {low}" if above_low else f"{low} or more"
    within = f"a number {bound}" if high == math.inf else f"a number {bound} and at most {high}"
    value = _converted(settings, name, default, float, within)
    if not (low < value if above_low else low <= value) or not value <= high:
        raise ValueError(f"{name} must be {within}; got {value}")
    return value


def _flag(settings: BaseSettings, name: str, default: bool) -> bool:
    return _converted(settings, name, default, lambda value: settings.getbool(name, default), "True or False")


def _text(settings: BaseSettings, name: str, default: str, *, empty: bool = True) -> str:
    value = settings.get(name, default)
    if value is None and empty:
        return ""
    if not isinstance(value, str) or (not value and not empty):
        raise ValueError(f"{name} must be {'a' if empty else 'a non-empty'} string; got {value!r}")
    return value


def _log_level(settings: BaseSettings, name: str, default: str) -> str:
    """A level name of the ``logging`` module (DEBUG, INFO, WARNING, ERROR, CRITICAL), any case."""
    value = _text(settings, name, default, empty=False).upper()
    if not isinstance(logging.getLevelName(value), int):
        raise ValueError(f"{name} must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL; got {value!r}")
    return value


def _converted(settings: BaseSettings, name: str, default: Any, convert: Callable[[Any], Any], what: str) -> Any:
    value = settings.get(name, default)
    try:
        return convert(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be {what}; got {value!r}") from None


def _whole(value: Any) -> int:
    """An int from an int, a whole float or the text of an int; no booleans, no fractions."""
    if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
        raise TypeError(value)
    return int(value)


def default_workers() -> int:
    """One worker process per core but one: the crawl process keeps a core busy itself, and a worker more
    only shares the cores (measured on 2 cores: 1 worker against 2, 7-10 % less worker CPU a page and
    ~60 MB less memory, for 13 % fewer pages/s in a crawl that saturates them; docs/internals/performance.md)."""
    return max(1, (os.cpu_count() or 1) - 1)


class StartRefused(Exception):
    """The crawl cannot start with the filter; the message says why and what to do (logged already)."""


def refuse(message: str) -> StartRefused:
    """Log ``message`` as the crawl's one ERROR line; the exception to raise from a component's start."""
    logger.error("simhash_dedup: %s. The crawl did not start.", message)
    for name in ("asyncio", "twisted"):  # they would print the exception's traceback: said already
        if not any(isinstance(f, _SaidAlready) for f in logging.getLogger(name).filters):
            logging.getLogger(name).addFilter(_SaidAlready())
    return StartRefused(message)


def crawl_settings(crawler: Crawler) -> DedupSettings:
    """The crawl's ``SIMHASH_DEDUP_*`` settings, or a refused start naming the wrong one."""
    try:
        return DedupSettings.from_settings(crawler.settings)
    except ValueError as error:
        raise refuse(str(error)) from None


class _SaidAlready(logging.Filter):
    """Leaves out the records that only repeat a refused start with a traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, StartRefused) and "StartRefused" not in record.getMessage()
