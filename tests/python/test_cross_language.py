"""Lease hand-off between Python and a C program linked with libtenure.

``cargo xtask test`` builds ``libtenure.a`` (the C ABI crate) and passes its
path as ``TENURE_CAPI_LIB``; this suite compiles ``handoff.c`` against
``include/tenure.h`` with the system C compiler.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from datetime import timedelta
from pathlib import Path

import pytest

import tenure
from tenure import aio
from conftest import ROOT, TESTS

NATIVE_LIBS = ["-lgcc_s", "-lutil", "-lrt", "-lpthread", "-lm", "-ldl", "-lc"]


@pytest.fixture(scope="module")
def handoff(tmp_path_factory: pytest.TempPathFactory) -> Path:
    lib = os.environ.get("TENURE_CAPI_LIB")
    if not lib:
        pytest.fail("TENURE_CAPI_LIB is not set: run these suites with `cargo xtask test`")
    cc = shutil.which("cc")
    assert cc, "a C compiler is needed"
    exe = tmp_path_factory.mktemp("c") / "handoff"
    subprocess.run(
        [cc, "-std=c11", "-Wall", "-Werror", "-I", str(ROOT / "include"),
         str(TESTS / "handoff.c"), lib, *NATIVE_LIBS, "-o", str(exe)],
        check=True, timeout=300,
    )
    return exe


def test_python_to_c(handoff: Path, auth: tenure.Authority, prod: str) -> None:
    auth.submit(prod, "j")
    lease = auth.claim(prod, "j", "python-worker", timedelta(minutes=10))
    token = lease.export_token()
    out = subprocess.run([str(handoff), auth.path, "import"], input=token,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == f"j {lease.claim_id}"
    # The C status for a malformed token is the Python class's code.
    assert lines[1] == f"{tenure.TokenMalformed.code} {tenure.TokenMalformed.code_name}"
    assert token not in out.stdout + out.stderr
    assert auth.job(prod, "j").state == "completed"
    facts = {f.key: f.value for f in auth.facts(prod, "j")}
    assert facts["by"] == "c" and facts["tenure.holder"] == "python-worker"


def test_c_to_python(handoff: Path, auth: tenure.Authority, prod: str) -> None:
    auth.submit(prod, "k")
    out = subprocess.run([str(handoff), auth.path, "claim", prod], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lease = auth.import_lease(out.stdout)
    assert (lease.job, lease.holder, lease.status) == ("k", "c-worker", "active")
    assert auth.job(prod, "k").claim_id == lease.claim_id
    lease.complete({"by": "python"})
    assert auth.job(prod, "k").state == "completed"


def test_c_to_async_python_worker(handoff: Path, auth: tenure.Authority, prod: str) -> None:
    """A C program claims; an asyncio worker imports the token, keeps the lease
    alive on its event loop and completes it."""
    auth.submit(prod, "a")
    out = subprocess.run([str(handoff), auth.path, "claim", prod], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr

    async def work(token: str) -> str:
        async with await aio.open(auth.path) as a:
            lease = await a.import_lease(token)
            async with lease.keep_alive(timedelta(minutes=10), every=timedelta(milliseconds=20)) as k:
                while k.renewals < 2:
                    await asyncio.sleep(0.01)
            await lease.complete({"by": "python-asyncio"})
            return lease.holder

    assert asyncio.run(work(out.stdout)) == "c-worker"
    view = auth.job(prod, "a")
    assert view.state == "completed" and view.holder == "c-worker"
    facts = {f.key: f.value for f in auth.facts(prod, "a")}
    assert facts["by"] == "python-asyncio" and facts["tenure.holder"] == "c-worker"
    kinds = [e.kind for e in auth.production_events(prod) if e.job == "a"]
    assert kinds.count("renewed") >= 2 and kinds[-1] == "completed"
