"""A real Redis Cluster for the tests: 6 ``redis-server`` processes (3 masters, 3 replicas) on free ports of
127.0.0.1, never the machine's own Redis; nodes can be killed (a crash) and restarted to test failovers."""

from __future__ import annotations

import atexit
import random
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis
import redis.cluster
from redis.backoff import NoBackoff
from redis.retry import Retry

HOST = "127.0.0.1"
NODES, REPLICAS = 6, 1
BUS_OFFSET = 10000  # each node's cluster bus listens on its port + 10000
SLOTS = 16384
START_SECONDS, CHANGE_SECONDS = 30, 30


def port_range() -> tuple[int, int]:
    """Ports to pick from: below the kernel's ephemeral range, bus port included, so that no outgoing
    connection (of a client, of a node's bus) takes a node's port while it is down between a kill and a
    restart; 20000..55000 if that range leaves too few."""
    try:
        ephemeral_low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        ephemeral_low = 32768
    low, high = 10000, min(ephemeral_low - BUS_OFFSET - 1, 65535 - BUS_OFFSET)
    return (low, high) if high - low >= 2000 else (20000, 55000)


def bindable(port: int) -> bool:
    """redis-server could listen on ``port`` of 127.0.0.1 now: bound as it does (SO_REUSEADDR), so that the
    connections of a node killed there, left in TIME_WAIT, do not count."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((HOST, port))
        except OSError:
            return False
    return True


def free_cluster_ports(count: int = NODES) -> list[int]:
    """``count`` random ports whose port and bus port (+10000) are all free and all different. Random, not
    the kernel's pick, so that parallel pytest-xdist workers rarely try the same ones; a race that is lost
    anyway makes a node exit at start, and ``RedisCluster.start`` then retries with other ports."""
    low, high = port_range()
    chosen: list[int] = []
    taken: set[int] = set()
    for _ in range(10000):
        port = random.randint(low, high)
        if {port, port + BUS_OFFSET} & taken or not (bindable(port) and bindable(port + BUS_OFFSET)):
            continue
        chosen.append(port)
        taken |= {port, port + BUS_OFFSET}
        if len(chosen) == count:
            return chosen
    raise RuntimeError(f"no {count} free ports (and bus ports) in {low}..{high} of {HOST}")


def info_fields(text: str | bytes) -> dict[str, str]:
    """``CLUSTER INFO`` (or ``INFO``) as a dict."""
    text = text.decode() if isinstance(text, bytes) else text
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line and not line.startswith("#"))


def node_lines(text: str | bytes) -> list[tuple[int, set[str], str]]:
    """``CLUSTER NODES`` as (port, flags, node id of its master or "-") per node."""
    text = text.decode() if isinstance(text, bytes) else text
    nodes = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 8:  # id, ip:port@cport[,hostname], flags, master, ping, pong, epoch, link, slots...
            port = int(fields[1].split("@")[0].rsplit(":", 1)[1])
            nodes.append((port, set(fields[2].split(",")), fields[3]))
    return nodes


class ClusterNodes:
    """What the tests read of a running cluster: its addresses and clients, which nodes are up, masters and
    replicas, which master serves a slot or a key (``RedisCluster`` starts, kills and restarts them)."""

    ports: list[int]
    processes: dict[int, subprocess.Popen]

    # -- addresses and clients

    @property
    def url(self) -> str:
        """The first node's URL, for ``redis.cluster.RedisCluster.from_url`` (which finds the others); a client
        that must outlive that node's death needs all ``seeds`` (``client()``)."""
        return f"redis://{HOST}:{self.ports[0]}"

    @property
    def seeds(self) -> list[tuple[str, int]]:
        return [(HOST, port) for port in self.ports]

    def client(self, **options: Any) -> redis.cluster.RedisCluster:
        """A cluster client knowing every node, so that it can start and find the layout whichever are down;
        ``options`` for ``redis.cluster.RedisCluster`` (``socket_timeout``, ``retry``...)."""
        nodes = [redis.cluster.ClusterNode(host, port) for host, port in self.seeds]
        return redis.cluster.RedisCluster(startup_nodes=nodes, decode_responses=False, **options)

    def node(self, port: int) -> redis.Redis:
        """A plain client of one node (for ``CLUSTER`` commands, ``WAIT``, ``INFO``), with short timeouts and no
        retries: the waits here poll, and redis-py's default retries (with backoff) stretch a hung port's
        2 s timeout into half a minute."""
        node = redis.Redis(
            host=HOST, port=port, socket_timeout=2, socket_connect_timeout=2, retry=Retry(NoBackoff(), 0)
        )
        for command in ("CLUSTER INFO", "CLUSTER NODES", "CLUSTER SLOTS"):  # the server's replies, unparsed
            node.set_response_callback(command, lambda response, **options: response)
        return node

    def alive(self, port: int) -> bool:
        process = self.processes.get(port)
        return process is not None and process.poll() is None

    def live_ports(self) -> list[int]:
        return [port for port in self.ports if self.alive(port)]

    # -- the layout

    def nodes_view(self) -> list[tuple[int, set[str], str]]:
        """``CLUSTER NODES`` of the first live node that answers."""
        for port in self.live_ports():
            try:
                with self.node(port) as node:
                    return node_lines(node.execute_command("CLUSTER NODES"))
            except redis.RedisError:
                continue
        raise RuntimeError(f"no node of the cluster answers{self.logs()}")

    def masters(self) -> list[int]:
        """Ports of the nodes that are masters now and running (a killed master is left out even before the
        cluster marks it failed)."""
        return sorted(
            port
            for port, flags, _ in self.nodes_view()
            if "master" in flags and not flags & {"fail", "fail?"} and self.alive(port)
        )

    def replicas(self) -> list[int]:
        return sorted(
            port
            for port, flags, _ in self.nodes_view()
            if "slave" in flags and not flags & {"fail", "fail?"} and self.alive(port)
        )

    def slot_masters(self, port: int | None = None) -> dict[tuple[int, int], int]:
        """Slot range -> port of its master, as node ``port`` (else the first live one) sees them."""
        for candidate in [port] if port is not None else self.live_ports():
            try:
                with self.node(candidate) as node:
                    return {
                        (int(start), int(end)): int(master[1])
                        for start, end, master, *_ in node.execute_command("CLUSTER SLOTS")
                    }
            except redis.RedisError:
                if port is not None:
                    raise
        raise RuntimeError(f"no node of the cluster answers{self.logs()}")

    def slot_of(self, key: bytes | str) -> int:
        with self.node(self.live_ports()[0]) as node:
            return int(node.execute_command("CLUSTER KEYSLOT", key))

    def master_of(self, key: bytes | str) -> int:
        """Port of the master that serves ``key``'s slot now."""
        slot = self.slot_of(key)
        return next(port for (start, end), port in self.slot_masters().items() if start <= slot <= end)

    def key_on(self, master: int, prefix: str = "key") -> str:
        """A key (``prefix`` and a number) whose slot ``master`` serves."""
        ranges = [span for span, port in self.slot_masters().items() if port == master]
        for n in range(100000):
            slot = self.slot_of(f"{prefix}{n}")
            if any(start <= slot <= end for start, end in ranges):
                return f"{prefix}{n}"
        raise RuntimeError(f"no key of prefix {prefix!r} lands on {master}")

    # -- starting and stopping


class RedisCluster(ClusterNodes):
    """6 ``redis-server`` in cluster mode, each in a sub-folder of ``folder``, no persistence.

    Configured for quick failovers: a node is failed after 1 s without answers (``cluster-node-timeout``),
    a replica may always be promoted however long it was cut from its master
    (``cluster-replica-validity-factor 0``), the other masters keep answering for their slots while a slot
    range has no master (``cluster-require-full-coverage no``), and replicas stay with their masters
    (``cluster-allow-replica-migration no``) so that the layout is only what the tests make it; a master
    syncs a replica at once, not 5 s later (``repl-diskless-sync-delay 0``)."""

    def __init__(self, folder: Path) -> None:
        server, cli = shutil.which("redis-server"), shutil.which("redis-cli")
        if server is None or cli is None:
            raise RuntimeError("redis-server is not installed: `make test` installs it (Debian package redis-server)")
        self.server_binary, self.cli_binary, self.folder = server, cli, folder
        self.ports: list[int] = []
        self.processes: dict[int, subprocess.Popen] = {}
        self.killed_slots: dict[int, list[tuple[int, int]]] = {}  # slot ranges a killed master served
        folder.mkdir(parents=True, exist_ok=True)

    def start(self, attempts: int = 3) -> None:
        """Start the 6 nodes, join them (``redis-cli --cluster create``, a replica per master) and wait until
        every node sees the cluster ok. A node that exits at once lost its port to another process (another
        pytest-xdist worker's cluster): then all start again on other ports, up to ``attempts`` times."""
        for attempt in range(1, attempts + 1):
            self.ports = free_cluster_ports()
            try:
                for port in self.ports:
                    self.launch(port)
                for port in self.ports:
                    self.wait_answers(port, time.monotonic() + START_SECONDS)
            except RuntimeError:
                self.stop()
                if attempt == attempts:
                    raise
                continue
            break
        atexit.register(self.stop)  # not left behind if the session ends without the fixture's teardown
        try:
            create = subprocess.run(
                [
                    self.cli_binary,
                    "--cluster",
                    "create",
                    *(f"{host}:{port}" for host, port in self.seeds),
                    "--cluster-replicas",
                    str(REPLICAS),
                    "--cluster-yes",
                ],
                capture_output=True,
                text=True,
                timeout=START_SECONDS,
            )
            if create.returncode != 0:
                raise RuntimeError(f"redis-cli --cluster create failed:\n{create.stdout}\n{create.stderr}{self.logs()}")
            self.wait_settled("the cluster to form", time.monotonic() + START_SECONDS)
        except BaseException:  # a fixture that fails to start gets no teardown
            self.stop()
            raise

    def launch(self, port: int) -> None:
        folder = self.folder / f"node-{port}"
        folder.mkdir(parents=True, exist_ok=True)
        self.processes[port] = subprocess.Popen(
            [
                self.server_binary,
                "--port",
                str(port),
                "--bind",
                HOST,
                "--dir",
                str(folder),
                "--logfile",
                str(folder / "redis.log"),
                "--save",
                "",
                "--appendonly",
                "no",
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
                "--cluster-node-timeout",
                "1000",
                "--cluster-replica-validity-factor",
                "0",
                "--cluster-require-full-coverage",
                "no",
                "--cluster-allow-replica-migration",
                "no",
                "--repl-diskless-sync-delay",
                "0",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def wait_answers(self, port: int, deadline: float) -> None:
        """Until ``port`` answers PING, and from our own process: a node that lost its port to another
        worker's exits, and meanwhile the other one may be the one that answers."""
        process = self.processes[port]
        with self.node(port) as node:
            while True:
                try:
                    if node.ping() and int(node.info("server")["process_id"]) == process.pid:
                        return
                except redis.RedisError:
                    pass
                if process.poll() is not None:
                    raise RuntimeError(f"redis-server on port {port} exited ({process.returncode}){self.logs([port])}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"redis-server on port {port} does not answer{self.logs([port])}")
                time.sleep(0.05)

    def stop(self) -> None:
        """SIGTERM to every node still running, and wait; killed ones are skipped."""
        for process in self.processes.values():
            if process.poll() is None:
                process.terminate()
        for process in self.processes.values():
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.processes = {}

    # -- crashes and failovers

    def kill(self, port: int) -> None:
        """SIGKILL the node on ``port``: a crash, nothing written. The slots it served as a master are kept
        for ``wait_promoted``."""
        self.killed_slots[port] = [span for span, master in self.slot_masters().items() if master == port]
        process = self.processes[port]
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=20)

    def wait_promoted(self, old_master: int, seconds: float = CHANGE_SECONDS) -> int:
        """Until a live node is master of every slot that the killed ``old_master`` served, and every live node
        sees the cluster ok and agrees; returns the new master's port (its former replica)."""
        spans = self.killed_slots.get(old_master)
        if not spans:
            raise ValueError(f"{old_master} was not a killed master: kill() it first")

        def promoted(view: dict[tuple[int, int], int]) -> bool:
            return all(view.get(span, old_master) != old_master for span in spans)

        self.wait_settled(f"a replica of {old_master} to be promoted", time.monotonic() + seconds, promoted)
        return self.slot_masters()[spans[0]]

    def restart(self, port: int, empty: bool = True, seconds: float = CHANGE_SECONDS) -> None:
        """Start the killed node on ``port`` again, with its ``nodes.conf``: it rejoins the cluster as the
        node it was. A master whose slots a replica took over meanwhile (``wait_promoted``) learns that from the
        others and turns into a replica of the promoted node, which syncs it in full; a master restarted before
        it was failed (within the 1 s node timeout) comes back as their master, and, empty, makes its replica
        empty too. ``empty`` removes what the node left on disk first (no persistence, but a replica keeps the
        RDB of its last full sync and loads it at start); ``empty=False`` keeps it. Waits until every live node
        sees the cluster ok and agrees, and a restarted replica is in sync with its master."""
        if self.alive(port):
            raise ValueError(f"the node on {port} is running: kill() it first")
        folder = self.folder / f"node-{port}"
        if empty:
            for name in ("dump.rdb", "appendonly.aof"):
                (folder / name).unlink(missing_ok=True)
            shutil.rmtree(folder / "appendonlydir", ignore_errors=True)
        if not (bindable(port) and bindable(port + BUS_OFFSET)):
            raise RuntimeError(f"port {port} or {port + BUS_OFFSET} was taken while its node was down")
        self.launch(port)
        deadline = time.monotonic() + seconds
        self.wait_answers(port, deadline)
        self.killed_slots.pop(port, None)
        self.wait_settled(f"the node on {port} to rejoin", deadline)

    # -- waiting

    def wait_settled(
        self, what: str, deadline: float, also: Callable[[dict[tuple[int, int], int]], bool] = lambda view: True
    ) -> None:
        """Until every live node says ``cluster_state:ok`` with 6 known nodes and all slots assigned, flags no
        running node as failing, all agree on who is master and whose replica and on which live master serves
        each slot range, every live replica's link to its master is up, and ``also`` holds of that slot
        layout: then any node's view (``masters``, ``master_of``) is the cluster's. A RuntimeError with the
        nodes' logs after ``deadline``."""
        last = "nothing checked"
        while True:
            try:
                last = self.unsettled(also)
                if last is None:
                    return
            except redis.RedisError as error:
                last = f"{type(error).__name__}: {error}"
            if time.monotonic() > deadline:
                raise RuntimeError(f"timed out waiting for {what}: {last}{self.logs()}")
            time.sleep(0.1)

    def unsettled(self, also: Callable[[dict[tuple[int, int], int]], bool]) -> str | None:
        """Why the cluster is not settled yet, or None."""
        views, roles = {}, {}
        for port in self.live_ports():
            with self.node(port) as node:
                info = info_fields(node.execute_command("CLUSTER INFO"))
                if info.get("cluster_state") != "ok":
                    return f"{port}: cluster_state:{info.get('cluster_state')}"
                if int(info.get("cluster_known_nodes", 0)) != NODES:
                    return f"{port}: cluster_known_nodes:{info.get('cluster_known_nodes')}"
                if int(info.get("cluster_slots_assigned", 0)) != SLOTS:
                    return f"{port}: cluster_slots_assigned:{info.get('cluster_slots_assigned')}"
                replication = node.info("replication")
                if replication["role"] == "slave" and replication.get("master_link_status") != "up":
                    return f"{port}: replica with master_link_status:{replication.get('master_link_status')}"
                seen = [line for line in node_lines(node.execute_command("CLUSTER NODES")) if self.alive(line[0])]
                if failing := sorted(other for other, flags, _ in seen if flags & {"fail", "fail?"}):
                    return f"{port} still flags running nodes {failing} as failing"
                roles[port] = {
                    (other, "master" if "master" in flags else "slave", master) for other, flags, master in seen
                }
            views[port] = self.slot_masters(port)
        if len({frozenset(seen) for seen in roles.values()}) != 1:
            return f"the nodes disagree on who is master, who replica: {roles}"
        layouts = {tuple(sorted(view.items())) for view in views.values()}
        if len(layouts) != 1:
            return f"the nodes disagree on the slots' masters: {views}"
        view = next(iter(views.values()))
        if dead := {master for master in view.values() if not self.alive(master)}:
            return f"slots still served by killed nodes {sorted(dead)}"
        if not also(view):
            return f"slot layout {view}"
        return None

    def logs(self, ports: list[int] | None = None, lines: int = 30) -> str:
        """The last ``lines`` of each node's log, for error messages."""
        parts = []
        for port in self.ports if ports is None else ports:
            log = self.folder / f"node-{port}" / "redis.log"
            text = log.read_text(errors="replace").splitlines()[-lines:] if log.exists() else ["(no log)"]
            parts.append(f"\n--- node {port} ({'running' if self.alive(port) else 'down'}):\n" + "\n".join(text))
        return "".join(parts)
