"""The wheel: abi3, typed, installable into a clean venv without Rust; and
the package README's example (its long description) runs as written."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path


import tenure
from conftest import PY, ROOT

LIFE_CYCLE = """
import sys
from datetime import timedelta
import tenure
auth = tenure.Authority("clean.db")
auth.create_production("p")
auth.submit("p", "j", b"x")
lease = auth.claim_next("p", "clean-venv", timedelta(seconds=30))
lease.complete({"ok": "yes"})
assert auth.job("p", "j").state == "completed"
print(tenure.__version__, tenure.__file__)
"""


def test_wheel_contents(wheel: Path) -> None:
    assert "-cp39-abi3-" in wheel.name
    names = zipfile.ZipFile(wheel).namelist()
    for f in ("tenure/__init__.py", "tenure/_native.pyi", "tenure/py.typed"):
        assert f in names, names
    assert any(re.fullmatch(r"tenure/_native\.abi3\.so", n) for n in names), names
    meta = zipfile.ZipFile(wheel).read(
        next(n for n in names if n.endswith(".dist-info/METADATA"))
    ).decode()
    assert "Requires-Python: >=3.9" in meta
    assert "Requires-Dist" not in meta  # nothing else to install


def _no_rust_path(venv: Path) -> str:
    keep = [str(venv / "bin")]
    for d in os.environ.get("PATH", "").split(os.pathsep):
        if d and not any((Path(d) / t).exists() for t in ("cargo", "rustc", "rustup", "maturin")):
            keep.append(d)
    return os.pathsep.join(keep)


def test_wheel_installs_into_a_clean_venv_without_rust(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "clean-venv"
    subprocess.run([PY, "-m", "venv", str(venv)], check=True, timeout=300)
    vpy = venv / "bin" / "python"
    subprocess.run([str(vpy), "-m", "pip", "install", "-q", "--no-index",
                    "--disable-pip-version-check", str(wheel)], check=True, timeout=300)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CARGO", "RUSTUP", "RUST", "VIRTUAL_ENV", "PYTHON"))}
    env["PATH"] = _no_rust_path(venv)
    env["HOME"] = str(tmp_path)
    assert shutil.which("cargo", path=env["PATH"]) is None
    assert shutil.which("rustc", path=env["PATH"]) is None
    work = tmp_path / "work"
    work.mkdir()
    out = subprocess.run([str(vpy), "-c", LIFE_CYCLE], cwd=work, env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    version, location = out.stdout.split()
    assert Path(location).is_relative_to(venv)


def python_blocks(markdown: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", markdown, flags=re.S)


def quick_start() -> str:
    """The example of the package's own README (python/README-section.md, the
    wheel's long description); the repository README's Python quick start is
    run by `cargo xtask readme`."""
    return python_blocks((ROOT / "python" / "README-section.md").read_text())[0]


def test_package_readme_example_runs(tmp_path: Path) -> None:
    code = quick_start()
    out = subprocess.run([PY, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, f"python/README-section.md: {out.stderr}"
    assert "Lease(production='nightly'" in out.stdout
    assert "already completed: 9" in out.stdout
    auth = tenure.Authority(tmp_path / "jobs.db")
    assert [v.state for v in auth.jobs("nightly")] == ["completed", "completed"]
