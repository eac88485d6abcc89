"""Fingerprints off the reactor: worker processes give the crawler's fingerprints, decisions keep the
order of arrival however concurrent the crawl, and a worker that dies loses no page."""

from __future__ import annotations

import mmap
import os
import re
import socket
import struct
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path

import pytest

from bench.common import cpu_seconds
from scrapy_simhash_dedup import Fingerprinter
from scrapy_simhash_dedup.workers import process as worker_process
from scrapy_simhash_dedup.workers.connection import UnsentBytes
from scrapy_simhash_dedup.workers.pool import RecentPages
from scrapy_simhash_dedup.workers.process import (
    READY,
    FingerprinterOptions,
    FingerprintFailed,
    answer_message,
    page_frames,
    page_messages,
    read_answer,
    read_message,
    read_page,
    take_frame,
)
from scrapy_simhash_dedup.workers.start import start_worker_process

from .pages import CHINESE_ARTICLE, real_page, with_date_and_counters

PAGES = [real_page("newspaper-syracuse.com1"), real_page("gne-163-1"), CHINESE_ARTICLE.encode(), b"", b"\x00PNG"]
#: Strings of every width Python stores characters in (1, 2 and 4 bytes), and a lone surrogate.
TEXTS = [
    real_page("newspaper-syracuse.com1").decode(),
    CHINESE_ARTICLE,
    CHINESE_ARTICLE + "\U0001f600",
    "<p>café \udc80 " + "word " * 60 + "</p>",
    "",
]


def test_a_worker_process_fingerprints_as_the_crawler_would() -> None:
    for fingerprinter in (Fingerprinter(), Fingerprinter(structure_decay=0.8, min_features=10, max_bytes=50_000)):
        process, end = start_worker_process(FingerprinterOptions.of(fingerprinter))
        connection = Connection(end.detach())
        try:
            assert read_message(connection.recv_bytes()) == READY
            for html in PAGES + TEXTS:
                with socket.socket(fileno=os.dup(connection.fileno())) as raw:  # as the crawl writes a page
                    raw.sendall(b"".join(page_frames(html, "https://a.test/")))
                assert read_answer(connection.recv_bytes()) == fingerprinter.fingerprint(html)
        finally:
            connection.close()  # end of input: the worker exits
        assert process.wait(10) == 0


def test_a_worker_process_imports_the_fingerprint_only() -> None:
    """A worker holds the fingerprint's modules only: numpy (~15 MB resident, ~60 ms to import in
    each worker) stays in the crawler, for the index; Scrapy, Twisted, Redis and the plugin's crawl
    components, guards and Redis store are never loaded there."""
    script = """
import sys
from scrapy_simhash_dedup.workers.process import serve
from scrapy_simhash_dedup import Fingerprinter
from tests.pages import CHINESE_ARTICLE, real_page
Fingerprinter().fingerprint(real_page("newspaper-syracuse.com1"))
Fingerprinter().fingerprint(CHINESE_ARTICLE)
plugin = [name.split(".")[1] for name in sys.modules if name.startswith("scrapy_simhash_dedup.")]
print(sorted({name for name in sys.modules if name.split(".")[0] in ("numpy", "scrapy", "twisted", "redis")}
             | {name for name in plugin if name in ("crawl", "guards", "stores")}))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=Path(__file__).parents[1]
    )
    assert done.stdout.split() == ["[]"]


def test_a_page_reaches_a_worker_as_it_left_the_crawler() -> None:
    """Bytes go as they are and strings as Python holds them (no encoding), through a socket as the crawl
    writes them, and come back equal, of every width."""
    for html in PAGES + TEXTS:
        crawl, worker = socket.socketpair()
        with crawl, Connection(worker.detach()) as connection:
            sender = threading.Thread(
                target=crawl.sendall,
                args=(b"".join(page_frames(html, "https://a.test/", "text/html; charset=gb2312")),),
            )
            sender.start()
            got = read_page(connection)
            sender.join()
        assert got == (html, "https://a.test/", "text/html; charset=gb2312")
        assert type(got[0]) is type(html)
    keys = [RecentPages.key(html) for html in TEXTS]
    assert len(set(keys)) == len(TEXTS)  # distinct pages, distinct keys
    assert [RecentPages.key("".join(list(html))) for html in TEXTS] == keys  # equal strings, equal keys
    assert RecentPages.key("abc") != RecentPages.key(b"abc")
    assert RecentPages.key(b"abc", "text/html; charset=gbk") != RecentPages.key(b"abc", "text/html")


def pages_of(html: str | bytes) -> tuple[list[bytes], bytes]:
    """Two pages back to back as the crawl writes them, ``html`` then an empty one: their buffers, and the bytes a
    worker must read."""
    buffers = page_frames(html, "https://a.test/") + page_frames(b"", "https://a.test/empty")
    return buffers, b"".join(buffers)


def read_pages(received: bytes) -> list[tuple[str | bytes, str, str | None]]:
    """The pages a worker reads from ``received`` (with its own reader), all of it."""
    reader, writer = socket.socketpair()
    with reader, writer, Connection(reader.detach()) as connection:
        writer.sendall(received)
        writer.shutdown(socket.SHUT_WR)
        pages = []
        while connection.poll():
            try:
                pages.append(read_page(connection))
            except EOFError:
                break
    return pages


class CutWrites:
    """A real socket whose writes the test cuts: each ``sendmsg`` takes at most the next of ``takes`` bytes
    (``"full"``: it would block, as a full socket does; once they are used up, what the socket takes), or one
    byte each with ``one_byte``."""

    def __init__(
        self, sock: socket.socket, takes: list[int | str], one_byte: bool = False, most_calls: int = 10_000
    ) -> None:
        self.sock, self.takes, self.one_byte, self.most_calls = sock, iter(takes), one_byte, most_calls
        self.calls = 0

    def sendmsg(self, buffers: list[memoryview]) -> int:
        self.calls += 1
        if self.calls > self.most_calls:  # a writer that spins without progress fails here, never hangs the tests
            raise AssertionError(f"{self.calls} writes of {sum(map(len, buffers))} bytes left: the writer loops")
        take = 1 if self.one_byte else next(self.takes, None)
        if take == "full":
            raise BlockingIOError
        if take is not None:
            kept, room = [], take
            for buffer in buffers:
                if room <= 0:
                    break
                kept.append(buffer[:room])
                room -= len(kept[-1])
            buffers = kept  # 0: a real write of nothing, which takes 0 bytes
        return self.sock.sendmsg(buffers)


def drain(sock: socket.socket) -> bytes:
    """What has come to ``sock`` so far."""
    parts = []
    while True:
        try:
            parts.append(sock.recv(1 << 20, socket.MSG_DONTWAIT))
        except BlockingIOError:
            return b"".join(parts)


def test_pages_of_every_size_reach_the_worker_whole_however_the_socket_cuts_the_writes() -> None:
    """The crawl's writer (``UnsentBytes``) over a real non-blocking socket whose buffer is the smallest the system
    allows: every page size from 0 to a few bytes over what the socket holds, the writes cut where the kernel cuts
    them; and up to 300 bytes cut at every point, by one byte at a time and at each single point.  Each time the
    worker reads both pages as they were sent, and a write that takes nothing (an empty page once made the
    writer loop for ever) never stalls it."""
    crawl_end, worker_end = socket.socketpair()
    with crawl_end, worker_end:
        crawl_end.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1)  # the system's smallest
        crawl_end.setblocking(False)
        holds = crawl_end.send(bytes(1 << 20))  # what one write into the empty socket takes
        drain(worker_end)
        for size in range(holds + 9):
            html = bytes(n % 251 for n in range(size))
            buffers, expected = pages_of(html)
            unsent, received, counted = UnsentBytes(), b"", CutWrites(crawl_end, [])
            unsent.add(buffers)
            while unsent:  # write until it would block, the worker reads, and so on
                unsent.send(counted)
                received += drain(worker_end)
            assert received == expected, size
            assert read_pages(received) == [(html, "https://a.test/", None), (b"", "https://a.test/empty", None)]
        checked = 0
        for size in range(301):
            html = "é" * (size // 2) if size % 2 else bytes(range(256)) * (size // 256) + bytes(size % 256)
            buffers, expected = pages_of(html)
            assert read_pages(expected) == [(html, "https://a.test/", None), (b"", "https://a.test/empty", None)]
            for cut in range(len(expected) + 1):
                unsent = UnsentBytes()
                unsent.add(buffers)
                cutting = CutWrites(crawl_end, [*([cut, "full"] if cut else [0]), "full", 0])
                unsent.send(cutting)  # the first write cut at ``cut``, then it would block (0: it takes nothing)
                assert drain(worker_end) == expected[:cut], (size, cut)
                unsent.send(cutting)  # would block: nothing more
                unsent.send(cutting)  # takes nothing: no progress, and no loop
                assert bool(unsent) == (cut < len(expected))
                unsent.send(cutting)  # the rest
                assert not unsent and drain(worker_end) == expected[cut:], (size, cut)
                checked += 1
            unsent, cutting = UnsentBytes(), CutWrites(crawl_end, [], one_byte=True)
            unsent.add(buffers)
            received = b""
            while unsent:  # cut after every byte (and where the socket, full of one-byte writes, would block)
                unsent.send(cutting)
                received += drain(worker_end)
            assert received == expected and cutting.calls >= len(expected)
        assert checked > 50_000


def test_a_frame_no_worker_sends_is_refused_not_looped_on() -> None:
    """Answers are read in a loop on the reactor thread, a frame at a time: a size no frame has (a broken worker)
    raises, where taking nothing from the bytes at each turn would spin for ever."""
    for size in (-2, -4, -(2**31)):
        with pytest.raises(ValueError, match=f"a frame of {size} bytes"):
            take_frame(bytearray(struct.pack("!i", size) + b"rest"))
    received = bytearray(b"".join(page_frames(b"<p>x</p>", "https://a.test/")) + b"\x00\x00")
    assert [take_frame(received), take_frame(received), take_frame(received)] == [
        *page_messages(b"<p>x</p>", "https://a.test/"),
        None,
    ]
    assert received == b"\x00\x00"  # the start of a frame still coming


def test_an_answer_comes_back_as_it_was_sent() -> None:
    """Fingerprints of every kind (and the failure of a page) cross as plain values."""
    fingerprinter = Fingerprinter(keep_text=True)
    for html in PAGES + TEXTS:
        fingerprint = fingerprinter.fingerprint(html)
        assert read_answer(answer_message(fingerprint)) == fingerprint
    failed = read_answer(answer_message(FingerprintFailed("Traceback: ...")))
    assert isinstance(failed, FingerprintFailed) and str(failed) == "Traceback: ..."


def test_a_worker_gives_back_freed_memory_only_when_there_is_much_of_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A return of freed memory costs a worker milliseconds and its next page the page faults: it is made when
    the worker has grown by RELEASE_OVER since the last, not every second."""
    returns = []
    monkeypatch.setattr(worker_process, "release_freed_memory", lambda: returns.append(1))
    monkeypatch.setattr(worker_process, "RELEASE_EVERY", 0.0)
    memory = worker_process.FreedMemory()
    memory.release()
    assert returns == []  # nothing grew
    grown = resident_pages(2 * worker_process.RELEASE_OVER)
    memory.release()
    assert returns == [1]
    memory.release()
    assert returns == [1]  # what is in use is no reason to return again
    grown.close()


def resident_pages(size: int) -> mmap.mmap:
    """``size`` bytes of new memory, each page written so that it is resident (a bytes object of that size can
    reuse memory the heap already holds, freed by an earlier test, and grow nothing)."""
    pages = mmap.mmap(-1, size)
    for offset in range(0, size, mmap.PAGESIZE):
        pages[offset] = 1
    return pages


#: Lets the huge page be read (it has more text than the default bound): a worker then takes seconds over it.
READ_HUGE_PAGES = {"SIMHASH_DEDUP_MAX_TEXT_CHARS": 100_000_000}


def huge_page() -> str:
    """6 MB of paragraphs: with ``READ_HUGE_PAGES``, a worker takes ~0.4 s over it."""
    return (
        "<html><body>"
        + "".join(
            f"<p>paragraph {n} " + " ".join(f"word{(n * 31 + i) % 50_000}" for i in range(40)) + "</p>"
            for n in range(18_000)
        )
        + "</body></html>"
    )


CLUSTERS = [
    "newspaper-syracuse.com1",
    "newspaper-syracuse.com2",
    "newspaper-theatlanticcities.com1",
    "gne-163-1",
    "gne-sina-1",
]


def test_near_duplicates_fetched_concurrently_are_never_both_kept(site: tuple[Path, str], crawl: Callable) -> None:
    """Five articles, each served under 24 URLs (exact copies and copies with other figures in a byline),
    all requested at once: 32 downloads and 2 worker processes in flight."""
    root, base_url = site
    urls = []
    for cluster in CLUSTERS:
        page = real_page(cluster)
        for n in range(24):
            (root / f"{cluster}-{n}.html").write_bytes(
                page if n % 2 else with_date_and_counters(page, f"2024-05-{n + 1:02d}", 1000 + n, n)
            )
            urls.append(f"{base_url}{cluster}-{n}.html")
    settings = {
        "ITEM_PIPELINES": {"scrapy_simhash_dedup.SimhashDedupPipeline": 300},
        "CONCURRENT_REQUESTS": 32,
        "SIMHASH_DEDUP_WORKERS": 2,
    }
    result = crawl(urls, settings, all_at_once=True)
    cluster_of = {url: url.rsplit("/", 1)[1].rsplit("-", 1)[0] for url in urls}
    assert Counter(cluster_of[url] for url in result["kept"]) == dict.fromkeys(CLUSTERS, 1)
    assert len(result["dropped"]) == len(urls) - len(CLUSTERS)
    assert all(cluster_of[drop["url"]] == cluster_of[drop["duplicate_of"]] for drop in result["dropped"])
    assert all(drop["duplicate_of"] in result["kept"] for drop in result["dropped"])
    # the 12 byte-identical copies of each article: fingerprinted once, the other 11 wait for it or reuse it
    assert result["stats"]["simhash_dedup/same_html"] == 11 * len(CLUSTERS)


def article_and_huge_pages(root: Path, base_url: str) -> list[str]:
    """An article, the huge page, another article, a copy of the first: their URLs in that order."""
    (root / "huge.html").write_text(huge_page())
    (root / "a.html").write_bytes(real_page("newspaper-syracuse.com1"))
    (root / "b.html").write_bytes(real_page("newspaper-syracuse.com2"))
    (root / "a-copy.html").write_bytes(real_page("newspaper-syracuse.com1"))
    return [f"{base_url}{name}.html" for name in ("a", "huge", "b", "a-copy")]


@pytest.mark.parametrize("workers", [1, 2])
def test_a_worker_dying_on_a_page_keeps_it_and_a_new_worker_goes_on(
    site: tuple[Path, str], crawl: Callable, workers: int
) -> None:
    """The workers are killed while they fingerprint a 6 MB page: that page is kept and counted as an
    error; the next pages are fingerprinted by new workers and decided as always.  One worker is a
    worker process too (none is ``SIMHASH_DEDUP_WORKERS = 0``)."""
    urls = article_and_huge_pages(*site)
    settings = {
        "ITEM_PIPELINES": {
            "tests.crawl_runner.KillFingerprintWorkers": 100,
            "scrapy_simhash_dedup.SimhashDedupPipeline": 300,
        },
        "TEST_KILL_WORKERS_AT": "huge",
        "SIMHASH_DEDUP_WORKERS": workers,
        **READ_HUGE_PAGES,
    }
    result = crawl(urls, settings)
    assert sorted(result["kept"]) == sorted(urls[:3])  # the page that failed is kept without waiting its turn
    assert [(drop["url"], drop["duplicate_of"]) for drop in result["dropped"]] == [(urls[3], urls[0])]
    assert result["stats"]["simhash_dedup/errors"] == 1
    assert "the fingerprint worker died" in result["log"]


def test_a_worker_stopped_mid_page_is_replaced_and_the_page_decided_anyway(
    site: tuple[Path, str], crawl: Callable
) -> None:
    """SIGSTOP of the worker while it fingerprints the 6 MB page: the crawl does not wait for ever.  Past
    ``SIMHASH_DEDUP_WORKER_TIMEOUT`` the worker is killed and replaced, the page kept and counted (logged once),
    and the pages behind it are fingerprinted and decided as always."""
    urls = article_and_huge_pages(*site)
    settings = {
        "ITEM_PIPELINES": {
            "tests.crawl_runner.StopFingerprintWorkers": 100,
            "scrapy_simhash_dedup.SimhashDedupPipeline": 300,
        },
        "TEST_STOP_WORKERS_AT": "huge",
        "SIMHASH_DEDUP_WORKERS": 1,
        "SIMHASH_DEDUP_WORKER_TIMEOUT": 3,
        **READ_HUGE_PAGES,
    }
    result = crawl(urls, settings, timeout=120)
    stopped = re.search(r"test: worker (\d+) stopped on (\S+)", result["log"])
    assert stopped is not None and stopped[2] == urls[1], result["log"][-3000:]
    assert sorted(result["kept"]) == sorted(urls[:3])
    assert [(drop["url"], drop["duplicate_of"]) for drop in result["dropped"]] == [(urls[3], urls[0])]
    assert result["stats"]["simhash_dedup/fingerprint_timeouts"] == 1
    assert "simhash_dedup/errors" not in result["stats"]
    assert result["log"].count("a fingerprint worker spent more than 3 s on") == 1
    assert not running(int(stopped[1]))  # killed, not left stopped


def test_pages_waiting_behind_a_page_that_kills_its_worker_are_fingerprinted_by_another(
    site: tuple[Path, str], crawl: Callable
) -> None:
    """A worker holds several pages: killed on the 6 MB page (the first one), it fails that page only;
    the pages queued behind it go to another worker, are fingerprinted and decided."""
    root, base_url = site
    (root / "huge.html").write_text(huge_page())
    names = [*CLUSTERS, "newspaper-theatlanticcities.com2", "gne-sina-2"]
    for name in names:
        (root / f"{name}.html").write_bytes(real_page(name))
    settings = {
        "ITEM_PIPELINES": {
            "tests.crawl_runner.KillFingerprintWorkers": 100,
            "scrapy_simhash_dedup.SimhashDedupPipeline": 300,
        },
        "TEST_KILL_WORKERS_AT": "huge",
        "SIMHASH_DEDUP_WORKERS": 2,
        **READ_HUGE_PAGES,
        "SCRAPER_SLOT_MAX_ACTIVE_SIZE": 100_000_000,  # the next pages come while the 6 MB one is fingerprinted
    }
    urls = [f"{base_url}{name}.html" for name in ("huge", *names)]
    result = crawl(urls, settings)
    handed_on = re.search(r"pages a fingerprint worker had not started go to another worker: (\d+)", result["log"])
    assert handed_on is not None and int(handed_on[1]) >= 1
    assert sorted(result["kept"]) == sorted(urls)
    assert result["stats"]["simhash_dedup/errors"] == 1


def test_workers_that_cannot_start_are_one_error_and_pages_are_fingerprinted_in_the_crawl(
    site: tuple[Path, str], tmp_path: Path
) -> None:
    """A library the workers need fails to import in them (here lxml, hidden by a ``sitecustomize`` that acts
    only in a worker): one ERROR line says so, and the crawl decides every page as usual, in its own process."""
    import json
    import os

    root, base_url = site
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    (hidden / "sitecustomize.py").write_text(
        "import sys\n"
        "if sys.argv[0] == '-c' and sys.argv[1:2] == ['scrapy_simhash_dedup.workers']:  # a fingerprint worker\n"
        "    sys.modules['lxml'] = None\n"
    )
    names = ["newspaper-syracuse.com1", "newspaper-syracuse.com2", "gne-163-1"]
    for name in names:
        (root / f"{name}.html").write_bytes(real_page(name))
        (root / f"{name}-copy.html").write_bytes(real_page(name))
    urls = [f"{base_url}{name}{suffix}.html" for suffix in ("", "-copy") for name in names]
    config = tmp_path / "crawl.json"
    config.write_text(
        json.dumps(
            {
                "urls": urls,
                "settings": {
                    "ITEM_PIPELINES": {"scrapy_simhash_dedup.SimhashDedupPipeline": 300},
                    "SIMHASH_DEDUP_WORKERS": 2,
                    "SIMHASH_DEDUP_PATH": str(tmp_path / "seen.sqlite"),
                },
            }
        )
    )
    done = subprocess.run(
        [sys.executable, "-m", "tests.crawl_runner", str(config), str(tmp_path / "result.json")],
        cwd=Path(__file__).parents[1],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": f"{hidden}{os.pathsep}{Path(__file__).parents[1]}"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    errors = [line for line in done.stderr.splitlines() if " ERROR: " in line]
    assert len(errors) == 1 and "the fingerprint worker processes cannot start" in errors[0], done.stderr[-3000:]
    assert "ModuleNotFoundError" in errors[0] and "lxml" in errors[0]
    result = json.loads((tmp_path / "result.json").read_text())
    assert sorted(result["kept"]) == sorted(urls[:3]) and len(result["dropped"]) == 3
    assert "simhash_dedup/errors" not in result["stats"]


def running(pid: int) -> bool:
    """Is the process there, and not a zombie (an orphan whose exit nobody collected)?"""
    try:
        return "\nState:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False


def test_the_workers_of_a_killed_crawl_exit_quietly(site: tuple[Path, str], tmp_path: Path) -> None:
    """kill -9 of the crawl while its workers fingerprint: they exit, without a traceback."""
    import json
    import signal
    import time

    root, base_url = site
    for n in range(12):  # distinct pages, ~6 per worker
        (root / f"huge-{n}.html").write_text(huge_page().replace("paragraph", f"paragraph {n}"))
    config = tmp_path / "crawl.json"
    config.write_text(
        json.dumps(
            {
                "urls": [f"{base_url}huge-{n}.html" for n in range(12)],
                "all_at_once": True,
                "settings": {
                    "ITEM_PIPELINES": {"scrapy_simhash_dedup.SimhashDedupPipeline": 300},
                    "SIMHASH_DEDUP_WORKERS": 2,
                    "SIMHASH_DEDUP_PATH": str(tmp_path / "seen.sqlite"),
                    **READ_HUGE_PAGES,
                },
            }
        )
    )
    crawl = subprocess.Popen(
        [sys.executable, "-m", "tests.crawl_runner", str(config), str(tmp_path / "result.json")],
        cwd=Path(__file__).parents[1],
        stderr=subprocess.PIPE,
        text=True,
    )
    children: list[int] = []
    deadline = time.monotonic() + 60
    while len(children) < 2 and time.monotonic() < deadline:  # both workers started
        time.sleep(0.1)
        children = [int(pid) for pid in Path(f"/proc/{crawl.pid}/task/{crawl.pid}/children").read_text().split()]
    while not all(cpu_seconds(pid) >= 0.5 for pid in children) and time.monotonic() < deadline:
        time.sleep(0.02)  # until both are well into their pages (start-up: ~0.2 s of CPU; 6 pages: ~2.4 s)
    crawl.send_signal(signal.SIGKILL)
    _, stderr = crawl.communicate(timeout=60)  # ends when the workers, which share the pipe, close it
    deadline = time.monotonic() + 10  # closing it is the last thing an exiting worker does before it is gone
    while any(running(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(children) == 2 and not any(running(pid) for pid in children)
    assert "Spider closed" not in stderr, "killed before its end"
    assert "Traceback" not in stderr and "ConnectionResetError" not in stderr, stderr[-3000:]
