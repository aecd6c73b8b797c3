"""The async example worker as real processes draining a store another
process filled, and its graceful stop on SIGTERM."""

from __future__ import annotations

import hashlib
import signal
import subprocess
from collections import Counter
from pathlib import Path

import tenure
from conftest import PY, ROOT, fresh_store, python_env, wait_until

AIO_WORKER = ROOT / "python" / "examples" / "aio_worker.py"

FILLER = """
import sys, tenure
auth = tenure.Authority(sys.argv[1])
auth.create_production("batch")
specs = [tenure.JobSpec(f"job-{i:04}", f"payload {i}".encode()) for i in range(int(sys.argv[2]))]
specs.append(tenure.JobSpec("job-bad", b"fail"))
print(auth.submit_many("batch", specs).count("created"))
"""


def test_async_workers_drain_a_store_another_process_filled(tmp_path: Path) -> None:
    store = fresh_store(tmp_path, "aio.db")
    jobs = 200
    fill = subprocess.run([PY, "-c", FILLER, str(store), str(jobs)], capture_output=True,
                          text=True, env=python_env(), timeout=300)
    assert fill.returncode == 0, fill.stderr
    assert fill.stdout.split() == [str(jobs + 1)]

    workers = [
        subprocess.Popen([PY, str(AIO_WORKER), str(store), "batch", f"aio-{n}", "8"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=python_env())
        for n in range(3)
    ]
    done: Counter[str] = Counter()
    for w in workers:
        out, err = w.communicate(timeout=600)
        assert w.returncode == 0, err
        assert "lost=0" in err, err
        done.update(line.split()[1] for line in out.splitlines())
    assert len(done) == jobs and set(done.values()) == {1}

    auth = tenure.Authority(store)
    assert len(auth.jobs("batch", state="completed", limit=1000)) == jobs
    bad = auth.job("batch", "job-bad")
    assert bad.state == "failed" and bad.attempts == 1
    assert bad.last_error == "refused by the example"
    facts = {f.key: f.value for f in auth.facts("batch", "job-0042")}
    assert facts["sha256"] == hashlib.sha256(b"payload 42").hexdigest()
    assert facts["tenure.holder"].startswith("aio-")
    assert auth.check().ok


SLOW = """
import asyncio, sys
from datetime import timedelta
import tenure
from tenure import aio

async def handle(job):
    print("started", job.id, flush=True)
    await asyncio.sleep(3600)

async def main():
    import signal
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with await aio.open(sys.argv[1]) as auth:
        w = aio.Worker(auth, "batch", "slow", handle, concurrency=2,
                       ttl=timedelta(minutes=10), grace=timedelta(milliseconds=200))
        stats = await w.run(stop)
    print("stopped", stats.claimed, stats.released, flush=True)

asyncio.run(main())
"""


def test_sigterm_stops_an_async_worker_and_releases_its_claims(tmp_path: Path) -> None:
    store = fresh_store(tmp_path, "stop.db")
    auth = tenure.Authority(store)
    auth.create_production("batch")
    for i in range(3):
        auth.submit("batch", f"j{i}")
    p = subprocess.Popen([PY, "-c", SLOW, str(store)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=python_env())
    assert p.stdout is not None
    started = [p.stdout.readline().split()[1] for _ in range(2)]
    wait_until(lambda: len(auth.jobs("batch", state="claimed")) == 2, "two claims")
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert out.split() == ["stopped", "2", "2"]
    for job in started:
        view = auth.job("batch", job)
        assert view.state == "requested" and view.attempts == 1
    assert len(auth.jobs("batch", state="requested")) == 3
    assert auth.check().ok
