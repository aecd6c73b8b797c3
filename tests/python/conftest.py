"""Shared fixtures for the tenure Python suites.

These suites test the *installed wheel* (``cargo xtask test`` builds it with
maturin, installs it into ``.venv`` and passes its path as ``TENURE_WHEEL``).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import pytest

import tenure

ROOT = Path(__file__).resolve().parents[2]
TESTS = Path(__file__).resolve().parent
LONG = timedelta(minutes=10)


def wait_until(pred: Callable[[], bool], what: str, limit: float = 60.0) -> None:
    """Poll ``pred`` until it holds. The limit only bounds a hang; nothing
    asserts on how long it took."""
    deadline = time.monotonic() + limit
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for: {what}")
        time.sleep(0.005)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "store.db"


@pytest.fixture
def auth(store: Path) -> Iterator[tenure.Authority]:
    a = tenure.Authority(store)
    yield a
    report = a.check()
    assert report.ok, report.violations


@pytest.fixture
def prod(auth: tenure.Authority) -> str:
    auth.create_production("p1")
    return "p1"


@pytest.fixture
def wheel() -> Path:
    w = os.environ.get("TENURE_WHEEL")
    if not w:
        pytest.fail("TENURE_WHEEL is not set: run these suites with `cargo xtask test`")
    p = Path(w)
    assert p.is_file(), p
    return p


def python_env() -> dict[str, str]:
    """Environment for child Python processes: same interpreter, no secrets."""
    env = dict(os.environ)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


PY = sys.executable
