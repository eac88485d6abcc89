"""The client for ``SIMHASH_DEDUP_REDIS_URL``: one Redis server, or a Redis Cluster (several seeds separated by
commas, or one node's URL of a server that says it is in a cluster), and the one store that fits the scope."""

from __future__ import annotations

import redis
from redis.cluster import ClusterNode, RedisCluster

from ...matching.policy import Policy
from ...matching.scope import Scope
from .keys import RedisClient
from .sites import SiteRedisStores
from .store import RedisStore

#: A crawl scope store on a cluster: why it is refused.
CRAWL_SCOPE_ON_CLUSTER = (
    "{url} is a Redis Cluster, and in crawl scope (SIMHASH_DEDUP_SCOPE = 'crawl') every page is compared with "
    "every kept page in one script on one node; set SIMHASH_DEDUP_SCOPE = 'site' (or 'host'): each site's pages "
    "then lie on one node, and the sites spread over the cluster"
)


def connect(url: str, timeout: float | None = None) -> RedisClient:
    """A client of the server or cluster at ``url`` (``redis://host:port``, ``rediss://``, ``unix://``; a cluster:
    ``redis://h1:p1,redis://h2:p2`` or ``redis://h1:p1,h2:p2``, the first URL's user, password and TLS for all).
    A single URL is asked whether it is a cluster node (``INFO cluster``); if it cannot be reached, it is taken
    for one server, whose outage the crawl handles as any."""
    options = {"socket_timeout": timeout, "socket_connect_timeout": timeout}
    first, *more = [seed.strip() for seed in url.split(",") if seed.strip()]
    if more:
        seeds = [ClusterNode(*_host_port(seed)) for seed in more]
        return RedisCluster.from_url(first, startup_nodes=seeds, **options)
    client = redis.Redis.from_url(first, **options)
    try:
        clustered = bool(client.info("cluster").get("cluster_enabled"))
    except redis.RedisError:
        return client
    if not clustered:
        return client
    client.close()
    return RedisCluster.from_url(first, **options)


def is_cluster(client: RedisClient) -> bool:
    return isinstance(client, RedisCluster)


def redis_store(
    policy: Policy,
    client: RedisClient,
    key: str,
    scheme: str,
    scope: Scope,
    budget: int | None,
    expire_seconds: int = 0,
    decisions: int = 100_000,
    texts: int = 1_000,
) -> RedisStore | SiteRedisStores:
    """The store of ``scope`` under ``key``: one log (crawl scope, one server only), or one per site."""
    if scope is Scope.CRAWL:
        if is_cluster(client):
            raise ValueError(CRAWL_SCOPE_ON_CLUSTER.format(url="SIMHASH_DEDUP_REDIS_URL"))
        return RedisStore(policy, client, key, scheme, expire_seconds, decisions, texts)
    if "{" in key or "}" in key:  # Redis would take the key's braces for the hash tag: every site on one node
        raise ValueError(
            f"SIMHASH_DEDUP_REDIS_KEY {key!r} holds braces; in {scope.value} scope each site's keys "
            f"carry their own hash tag: give a key without braces"
        )
    return SiteRedisStores(policy, client, key, scheme, scope, budget, expire_seconds, decisions, texts)


def _host_port(seed: str) -> tuple[str, int]:
    """A seed's host and port: a URL's, or ``host:port``."""
    address = seed.split("://", 1)[-1].rsplit("@", 1)[-1].split("/", 1)[0]
    host, colon, port = address.rpartition(":")
    if not colon or "]" in port:  # no port: "h2", "[::1]"
        host, port = address, ""
    if port and not port.isdigit():
        raise ValueError(f"SIMHASH_DEDUP_REDIS_URL: {seed!r} is not host:port")
    return host.strip("[]") or "localhost", int(port or 6379)
