"""A store Redis lost (restarted without its data) written back from a crawler's replica: under keys of the
crawler's own, then made the store's in one script (``heal.lua``), unless another crawler did so first or
the store was reset meanwhile."""

from __future__ import annotations

import secrets
from importlib.resources import files

import numpy as np
import redis

from .keys import CHUNK

HEAL_STAGING_SECONDS = 3600  # how long a log being written back may take before its keys expire
_HEAL = files(__package__).joinpath("heal.lua").read_text()


def write_back(
    client: redis.Redis,
    key: str,
    scheme: str,
    expire_seconds: int,
    records: np.ndarray,
    sketches: np.ndarray,
    urls: list[str],
) -> bytes | None:
    """Write the pages (``RECORD`` rows, their sketches and URLs) back as the store ``key``'s log; its new
    epoch, or ``None`` when the store is someone else's again (the staging keys are deleted)."""
    epoch, rows = secrets.token_hex(8), len(records)
    staging = f"{key}:heal:{epoch}"
    chunks = (rows + CHUNK - 1) // CHUNK
    for n in range(chunks):
        part = slice(n * CHUNK, min(rows, (n + 1) * CHUNK))
        pipe = client.pipeline(transaction=False)
        pipe.set(f"{staging}:fp:{n}", records[part].tobytes(), ex=HEAL_STAGING_SECONDS)
        pipe.set(f"{staging}:sk:{n}", sketches[part].tobytes(), ex=HEAL_STAGING_SECONDS)
        pipe.rpush(f"{staging}:pages:{n}", *urls[part])
        pipe.expire(f"{staging}:pages:{n}", HEAL_STAGING_SECONDS)
        pipe.execute()
    outcome = client.register_script(_HEAL)(
        keys=[f"{key}:meta"], args=[key, staging, epoch, scheme, rows, chunks, expire_seconds]
    )
    return epoch.encode() if outcome == b"healed" else None
