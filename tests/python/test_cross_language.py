"""Lease hand-off between Python and a C program linked with libtenure.

``cargo xtask test`` builds ``libtenure.a`` (the C ABI crate) and passes its
path as ``TENURE_CAPI_LIB``; this suite compiles ``handoff.c`` against
``include/tenure.h`` with the system C compiler.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from datetime import timedelta
from pathlib import Path

import pytest

import tenure
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
