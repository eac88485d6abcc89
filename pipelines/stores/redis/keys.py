"""How a store lies in Redis: chunks of ``CHUNK`` pages under ``<key>:fp:<n>`` (32-byte records: both
fingerprints, the key of the page's address, the time kept, which parts exist), ``<key>:sk:<n>`` (the pages'
sketches, ``SKETCH_BYTES`` each) and ``<key>:pages:<n>`` (their URLs), with ``<key>:meta`` (epoch, count, scheme);
and a reset.  The client they are read through: ``RedisClient``."""

from __future__ import annotations

import struct
import time

import numpy as np
import redis
from redis.cluster import RedisCluster

from ...fingerprint.fingerprinter import Fingerprint
from ...matching.policy import address_key

#: A client of one Redis server or of a Redis Cluster (``connect``): the stores take either.
RedisClient = redis.Redis | RedisCluster
#: Pages per chunk: a 128 KB string of records, an 852 KB string of sketches and a list, read or expired together.
CHUNK = 4096
RECORD = np.dtype(
    [("content", ">u8"), ("structure", ">u8"), ("address", ">u8"), ("stamp", ">u4"), ("flags", "u1"), ("spare", "V3")]
)
_RECORD_STRUCT = struct.Struct(">QQQIB3x")  # the same record, packed one at a time
PARTS = np.array([1, 2, 4], dtype=np.uint8)  # a record's flags: has content, has structure, is short
#: The keys a store is made of, beside its meta hash; bumped when they change (stores of another layout are refused).
LAYOUT = 4
#: The URL a page gets when its URL cannot be read (lost with the store, or Redis unreachable).
LOST_URL = "(a page kept before Redis lost the store)"


def pack_record(page: Fingerprint, url: str) -> bytes:
    """The record (``RECORD``) of the page kept at ``url``; the script writes the time kept."""
    flags = (page.content is not None) | (page.structure is not None) << 1 | page.short << 2
    return _RECORD_STRUCT.pack(page.content or 0, page.structure or 0, address_key(url), 0, flags)


def zero_padded(data: bytes, count: int, size: int) -> bytes:
    """``count`` items of ``size`` bytes from ``data``, zeros where it is short (a chunk that expired)."""
    return data[: count * size].ljust(count * size, b"\0")


def remove_redis_store(client: RedisClient, key: str) -> int:
    """Delete every key of the store ``key`` (a reset), leaving a mark on its meta hashes (a site's too, in site
    scope) that says so: the processes still using it start over, they do not write their replicas back (see
    ``heal.lua``).  Returns how many keys."""
    keys = list(client.scan_iter(match=f"{key}:*", count=1000))
    for start in range(0, len(keys), 1000):
        client.unlink(*keys[start : start + 1000])
    now = int(time.time())
    for meta in {f"{key}:meta".encode(), *(name for name in keys if name.endswith(b":meta"))}:  # (a site's too)
        client.hset(meta, "reset", now)
    return len(keys)
