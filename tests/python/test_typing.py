"""Static typing: the stubs match the runtime, and a typed worker checks strictly."""

from __future__ import annotations

import subprocess
from pathlib import Path

from conftest import PY, ROOT, python_env


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, env=python_env(),
                          timeout=600)


def test_stubtest_native_module(tmp_path: Path) -> None:
    out = run([PY, "-m", "mypy.stubtest", "tenure._native", "--mypy-config-file", "/dev/null"],
              tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Success" in out.stdout


def test_stubtest_and_strict_mypy_aio(tmp_path: Path) -> None:
    """``tenure.aio`` (typed inline, shipped with ``py.typed``) matches its
    runtime and checks strictly, as installed and from the source tree."""
    out = run([PY, "-m", "mypy.stubtest", "tenure.aio", "--mypy-config-file", "/dev/null"],
              tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Success" in out.stdout
    for target in (["-p", "tenure.aio"], [str(ROOT / "python" / "tenure" / "aio.py")]):
        out = run([PY, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache"),
                   "--config-file", "/dev/null", *target], tmp_path)
        assert out.returncode == 0, out.stdout + out.stderr
        assert "Success: no issues found" in out.stdout


def test_mypy_strict_typed_worker(tmp_path: Path) -> None:
    for name in ("worker.py", "aio_worker.py"):
        worker = ROOT / "python" / "examples" / name
        out = run([PY, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache"),
                   "--config-file", "/dev/null", str(worker)], tmp_path)
        assert out.returncode == 0, out.stdout + out.stderr
        assert "Success: no issues found" in out.stdout


BAD = """
from datetime import timedelta
import tenure
auth = tenure.Authority("x.db")
auth.claim_next("p", "w", 30)
lease = auth.claim_next("p", "w", timedelta(seconds=1))
lease.secret
x: int = lease.export_token()
when: int = lease.expires_at
auth.claim_next_wait("p", "w", timedelta(seconds=1), 5)
tenure.Retry("x", delay=1.5)
auth.submit("p", "j", not_before=5)
auth.set_production_backoff("p", (1, 2))
lease.fail("r", retry_after=1.0)
k: int = lease.keep_alive(timedelta(seconds=1)).status
from tenure import aio
async def f(a: aio.Authority) -> None:
    l = a.claim_next("p", "w", timedelta(seconds=1))
    l.job
    y: int = (await a.job("p", "j")).created_at
"""


def test_mypy_catches_misuse(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(BAD)
    out = run([PY, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache"),
               "--config-file", "/dev/null", str(bad)], tmp_path)
    assert out.returncode == 1
    # claim_next, submit and set_production_backoff are declared once for
    # Authority and Edit, on their stub-only base ``_Writer``.
    assert 'Argument 3 to "claim_next" of "_Writer" has incompatible type "int"' in out.stdout
    assert '"Lease" has no attribute "secret"' in out.stdout
    assert 'Argument 4 to "claim_next_wait" of "Authority" has incompatible type "int"' \
        in out.stdout
    assert 'Argument "delay" to "Retry" has incompatible type "float"' in out.stdout
    assert 'Argument "not_before" to "submit" of "_Writer" has incompatible type "int"' \
        in out.stdout
    assert 'Argument 2 to "set_production_backoff" of "_Writer" has incompatible type' \
        in out.stdout
    assert 'Argument "retry_after" to "fail" of "Lease" has incompatible type "float"' \
        in out.stdout
    assert 'Incompatible types in assignment (expression has type "Literal[\'running\'' \
        in out.stdout
    assert 'Incompatible types in assignment (expression has type "str"' in out.stdout
    assert 'Incompatible types in assignment (expression has type "datetime"' in out.stdout
    assert '"Coroutine[Any, Any, Lease]" has no attribute "job"' in out.stdout
    assert out.stdout.count('(expression has type "datetime"') == 2
