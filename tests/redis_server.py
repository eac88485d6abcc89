"""A real redis-server for the tests, on a free port of 127.0.0.1, never the machine's own."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import redis


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class RedisServer:
    """``redis-server`` in a folder of its own; ``durable`` keeps its data over a restart (AOF)."""

    def __init__(self, folder: Path, durable: bool = False) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed: `make test` installs it (Debian package redis-server)")
        self.binary, self.folder, self.durable = binary, folder, durable
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None
        folder.mkdir(parents=True, exist_ok=True)

    def start(self) -> None:
        persistence = ["--appendonly", "yes", "--appendfsync", "always"] if self.durable else ["--appendonly", "no"]
        self.process = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--dir",
                str(self.folder),
                *persistence,
                "--logfile",
                str(self.folder / "redis.log"),
            ],
        )
        client = redis.Redis.from_url(self.url)
        deadline = time.monotonic() + 20
        while True:
            try:
                client.ping()
                return
            except redis.ConnectionError as error:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise RuntimeError(
                        f"redis-server did not start: {(self.folder / 'redis.log').read_text()}"
                    ) from error
                time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()  # SIGTERM: redis-server writes its AOF and exits
            self.process.wait(timeout=20)
        self.process = None

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url)
