"""Several processes: token hand-off, contention, and fork()."""

from __future__ import annotations

import gc
import os
import subprocess
from collections import Counter
from datetime import timedelta
from pathlib import Path

import tenure
from conftest import LONG, PY, ROOT, fresh_store, python_env

WORKER = ROOT / "python" / "examples" / "worker.py"

CHILD = """
import sys, tenure
from datetime import timedelta
auth = tenure.Authority(sys.argv[1])
token = sys.stdin.read()            # the credential arrives on stdin, never argv
lease = auth.import_lease(token)
print(lease.job, lease.claim_id, lease.attempt, lease.holder)
lease.renew(timedelta(minutes=30))
lease.complete({"by": "child"})
"""


def test_token_hand_off_to_another_process(auth: tenure.Authority, prod: str) -> None:
    auth.submit(prod, "j")
    lease = auth.claim(prod, "j", "parent@host", LONG)
    token = lease.export_token()
    out = subprocess.run(
        [PY, "-c", CHILD, auth.path], input=token, capture_output=True, text=True,
        env=python_env(), timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["j", lease.claim_id, "1", "parent@host"]
    assert token not in out.stdout + out.stderr
    assert auth.job(prod, "j").state == "completed"
    facts = {f.key: f.value for f in auth.facts(prod, "j")}
    assert facts["by"] == "child" and facts["tenure.claim_id"] == lease.claim_id
    # The parent's copy of the same claim cannot act on the finished job, and
    # the token is no longer importable.
    try:
        lease.complete()
        raise AssertionError("a completed job was completed twice")
    except tenure.TenureError as e:
        assert isinstance(e, (tenure.JobTerminal, tenure.LeaseClosed, tenure.StaleLease))
    try:
        auth.import_lease(token)
        raise AssertionError("a used token was importable")
    except tenure.TenureError as e:
        assert not isinstance(e, (tenure.TokenMalformed, tenure.TokenTooLarge))


def test_eight_processes_drain_one_production(tmp_path: Path) -> None:
    store = fresh_store(tmp_path, "contention.db")
    auth = tenure.Authority(store)
    auth.create_production("batch")
    jobs = [f"job-{i:04}" for i in range(400)]
    auth.submit_many("batch", [tenure.JobSpec(j, j.encode()) for j in jobs])
    procs = [
        subprocess.Popen(
            [PY, str(WORKER), str(store), "batch", f"worker-{n}"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=python_env(),
        )
        for n in range(8)
    ]
    done: list[tuple[str, str, str]] = []
    for n, p in enumerate(procs):
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
        assert "lost" not in err, err
        for line in out.splitlines():
            word, job, claim = line.split()
            assert word == "completed"
            done.append((job, claim, f"worker-{n}"))
    counts = Counter(job for job, _, _ in done)
    assert sorted(counts) == jobs and set(counts.values()) == {1}, "each job exactly once"
    for job, claim, worker in done:
        facts = {f.key: f.value for f in auth.facts("batch", job)}
        assert facts["tenure.claim_id"] == claim and facts["worker"] == worker
        assert facts["tenure.holder"] == worker
    assert {v.state for v in auth.jobs("batch", limit=1000)} == {"completed"}
    completions = Counter(e.job for e in auth.events(limit=10_000) if e.kind == "completed")
    assert completions == Counter({j: 1 for j in jobs})
    assert auth.check().ok


def test_fork_child_gets_a_clear_error_and_parent_is_untouched(tmp_path: Path) -> None:
    # The handles live only in this dict, so the child can drop every
    # reference it inherited (and make Rust run its destructors there).
    store = fresh_store(tmp_path, "fork.db")
    h: dict[str, object] = {"auth": tenure.Authority(store)}
    auth = h["auth"]
    assert isinstance(auth, tenure.Authority)
    auth.create_production("p")
    auth.submit("p", "j")
    auth.submit("p", "k")
    h["lease"] = auth.claim("p", "j", "parent", LONG)
    h["edit"] = auth.edit()  # the parent holds the writer lock across the fork
    del auth

    def a() -> tenure.Authority:
        x = h["auth"]
        assert isinstance(x, tenure.Authority)
        return x

    def lease() -> tenure.Lease:
        x = h["lease"]
        assert isinstance(x, tenure.Lease)
        return x

    def edit() -> tenure.Edit:
        x = h["edit"]
        assert isinstance(x, tenure.Edit)
        return x

    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: report through the pipe, never return into pytest
        status = 1
        try:
            results = []
            for what, call in [
                ("authority", lambda: a().job("p", "j")),
                ("lease", lambda: lease().renew(LONG)),
                ("token", lambda: lease().export_token()),
                ("edit", lambda: edit().submit("p", "x")),
                ("commit", lambda: edit().commit()),
                ("claim", lambda: a().claim("p", "k", "child", LONG)),
            ]:
                try:
                    call()
                    results.append(f"{what}:worked")
                except tenure.InvalidArgument as e:
                    ok = "fork" in str(e) and "new tenure.Authority" in str(e)
                    results.append(f"{what}:{'refused' if ok else 'bad-message'}")
            # Attribute reads hold no connection and still work.
            results.append(f"attrs:{lease().job == 'j' and 'Authority' in repr(a())}")
            # Dropping every inherited handle must not touch the parent's
            # connections or its open transaction.
            h.clear()
            gc.collect()
            os.write(write_end, (" ".join(results) + "\n").encode())
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    with os.fdopen(read_end) as r:
        report = r.read().split()
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert report == [
        "authority:refused", "lease:refused", "token:refused", "edit:refused",
        "commit:refused", "claim:refused", "attrs:True",
    ]
    # The parent's edit, lease and authority are intact.
    assert edit().open
    edit().submit("p", "from-parent")
    edit().commit()
    lease().renew(LONG)
    lease().complete()
    assert a().job("p", "from-parent").state == "requested"
    assert a().job("p", "j").state == "completed"
    assert a().job("p", "k").state == "requested"  # the child claimed nothing
    assert a().check().ok
    h.clear()
    # Reopening after everything was dropped in the parent works too.
    assert tenure.Authority(store).check().ok


FRESH_CHILD = """
import os, sys, tenure
from datetime import timedelta
pid = os.fork()
if pid == 0:
    code = 1
    try:
        auth = tenure.Authority(sys.argv[1])        # opened in the child: fine
        auth.claim(sys.argv[2], "k", "child", timedelta(minutes=1)).complete()
        code = 0
    finally:
        os._exit(code)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def test_authority_opened_after_fork_works(auth: tenure.Authority, prod: str) -> None:
    auth.submit(prod, "k")
    out = subprocess.run([PY, "-c", FRESH_CHILD, auth.path, prod], capture_output=True,
                         text=True, env=python_env(), timeout=120)
    assert out.returncode == 0, out.stderr
    assert auth.job(prod, "k").state == "completed"
