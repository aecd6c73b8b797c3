"""Python workers that outlive the PostgreSQL server (docs/design.md,
"Workers and a server that goes away"): each test starts a throwaway server
of its own (``initdb``/``pg_ctl`` next to ``TENURE_TEST_CREATEDB``), drains
jobs through ``tenure.Worker`` or ``tenure.aio.Worker`` and takes the server
away under it (``pg_ctl restart -m immediate``, a stop of 1.5 s while the
slots wait, ``pg_terminate_backend`` of tenure's connections every 200 ms).
The worker keeps running and every job runs exactly once and completes.

Runs only on PostgreSQL (``TENURE_TEST_BACKEND=postgres``).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

import tenure
from tenure import aio

from conftest import on_postgres, wait_until

pytestmark = pytest.mark.skipif(not on_postgres(), reason="needs PostgreSQL")

TTL = timedelta(seconds=10)


def tool_path(tool: str) -> str:
    """A PostgreSQL program: on the PATH, else the newest under
    /usr/lib/postgresql."""
    found = shutil.which(tool)
    if found:
        return found
    versions = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{tool}"))
    if not versions:
        pytest.skip(f"no {tool}")
    return str(versions[-1])


class Server:
    """A server of this test's own; stopped (immediately) by :meth:`close`."""

    def __init__(self, dir: Path) -> None:
        self.dir = dir
        self.root = os.geteuid() == 0
        if self.root:
            subprocess.run(["chown", "nobody", str(dir)], check=True)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.opts = (f"-c listen_addresses=127.0.0.1 -p {self.port} -k {dir} -c fsync=off "
                     "-c synchronous_commit=on -c full_page_writes=off")
        self.run("initdb", "-D", str(dir / "data"), "-U", "postgres", "--auth=trust",
                 "-E", "UTF8", "--no-sync")
        self.pg_ctl("start")

    def run(self, tool: str, *args: str) -> None:
        cmd = [tool_path(tool), *args]
        if self.root:
            cmd = ["runuser", "-u", "nobody", "--", *cmd]
        subprocess.run(cmd, check=True, cwd=self.dir, stdout=subprocess.DEVNULL, timeout=120)

    def pg_ctl(self, *args: str) -> None:
        self.run("pg_ctl", "-D", str(self.dir / "data"), "-l", str(self.dir / "server.log"),
                 "-o", self.opts, "-w", "-t", "60", *args)

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/postgres?sslmode=disable"

    def terminate_tenure(self) -> None:
        sql = ("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
               "WHERE application_name = 'tenure'")
        subprocess.run([tool_path("psql"), "-q", "-h", "127.0.0.1", "-p", str(self.port),
                        "-U", "postgres", "-d", "postgres", "-c", sql],
                       check=True, stdout=subprocess.DEVNULL, timeout=30)

    def close(self) -> None:
        try:
            self.run("pg_ctl", "-D", str(self.dir / "data"), "-m", "immediate", "-w", "stop")
        except subprocess.CalledProcessError:
            pass


@pytest.fixture
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tool_path("pg_ctl")
    d = Path(f"/tmp/tenure-pyoutage-{os.getpid()}-{time.monotonic_ns()}")
    d.mkdir()
    s = Server(d)
    yield s
    s.close()
    shutil.rmtree(d, ignore_errors=True)


def submit(url: str, start: int, n: int) -> None:
    a = tenure.Authority(url)
    try:
        a.create_production("p")
    except tenure.TenureError:
        pass
    for i in range(start, start + n):
        a.submit("p", f"j{i:05}", b"x")


def check_once(url: str, runs: Counter[str], n: int) -> None:
    twice = {j: c for j, c in runs.items() if c != 1}
    assert not twice, f"jobs run more than once: {twice}"
    assert len(runs) == n
    a = tenure.Authority(url)
    jobs = a.jobs("p", limit=10000)
    assert len(jobs) == n
    assert all(j.state == "completed" for j in jobs), [
        (j.job, j.state) for j in jobs if j.state != "completed"]
    assert a.check().ok


def storm(s: Server, seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        s.terminate_tenure()
        time.sleep(0.2)


def test_threaded_worker_outlives_restarts_and_killed_backends(server: Server) -> None:
    url = server.url
    submit(url, 0, 300)
    runs: Counter[str] = Counter()
    lock = threading.Lock()
    results: list[str] = []

    def handle(job: tenure.Job) -> None:
        with lock:
            runs[job.id] += 1
        time.sleep(0.02)

    def report(r: tenure.Report) -> None:
        with lock:
            results.append(r.result)

    a = tenure.Authority(url)
    with tenure.Worker(a, "p", "w", handle, ttl=TTL, slots=4, report=report,
                       wait_timeout=timedelta(milliseconds=500)) as w:
        time.sleep(0.3)
        server.pg_ctl("-m", "immediate", "restart")
        storm(server, 2.0)
        wait_until(lambda: len(results) >= 300, "300 settled")
        server.pg_ctl("-m", "immediate", "stop")
        time.sleep(1.5)
        server.pg_ctl("start")
        submit(url, 300, 50)
        wait_until(lambda: len(results) >= 350, "350 settled")
        assert not w.stopped
        assert w.outages >= 1
    assert Counter(results) == Counter({"completed": 350})
    check_once(url, runs, 350)


def test_aio_worker_outlives_restarts_and_killed_backends(server: Server) -> None:
    url = server.url
    submit(url, 0, 300)
    runs: Counter[str] = Counter()

    async def handle(job: aio.Job) -> None:
        runs[job.id] += 1
        await asyncio.sleep(0.02)

    async def main() -> tuple[aio.WorkerStats, int]:
        a = aio.Authority(tenure.Authority(url))
        w = aio.Worker(a, "p", "aw", handle, concurrency=4, ttl=TTL,
                       wait_timeout=timedelta(milliseconds=500))
        stop = asyncio.Event()
        task = asyncio.create_task(w.run(stop))
        loop = asyncio.get_running_loop()
        await asyncio.sleep(0.3)
        await loop.run_in_executor(None, server.pg_ctl, "-m", "immediate", "restart")
        await loop.run_in_executor(None, storm, server, 2.0)
        while w.stats.completed < 300:
            assert not task.done(), task
            await asyncio.sleep(0.05)
        await loop.run_in_executor(None, server.pg_ctl, "-m", "immediate", "stop")
        await asyncio.sleep(1.5)
        await loop.run_in_executor(None, server.pg_ctl, "start")
        await loop.run_in_executor(None, submit, url, 300, 50)
        while w.stats.completed < 350:
            assert not task.done(), task
            await asyncio.sleep(0.05)
        stop.set()
        return await task, w.outages

    stats, outages = asyncio.run(main())
    assert stats.completed == 350, stats
    assert (stats.failed, stats.released, stats.lost) == (0, 0, 0), stats
    assert outages >= 1
    check_once(url, runs, 350)
