"""Shared fixtures for the tenure Python suites.

These suites test the *installed wheel* (``cargo xtask test`` builds it with
maturin, installs it into ``.venv`` and passes its path as ``TENURE_WHEEL``).

The store under test is a SQLite file in ``tmp_path``, or, when
``TENURE_TEST_BACKEND=postgres`` (set by ``cargo xtask`` for its PostgreSQL
run, the same variable the Rust suite reads), a new empty database on the
server named by ``TENURE_TEST_PG_URL`` (a maintenance URL), made with the
``createdb`` program ``TENURE_TEST_CREATEDB`` (PGHOST/PGPORT/PGUSER name the
server; ``TENURE_TEST_PSQL`` is ``psql``): see :func:`fresh_store`. SQLite-file-specific checks branch on
:func:`on_postgres` and say what they leave out.
"""

from __future__ import annotations

import itertools
import os
import secrets
import subprocess
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


def on_postgres() -> bool:
    """True when the suites run against PostgreSQL (``TENURE_TEST_BACKEND``)."""
    return os.environ.get("TENURE_TEST_BACKEND") == "postgres"


_DB_COUNTER = itertools.count()
_DB_SALT = secrets.token_hex(4)


def fresh_store(tmp_path: Path, name: str = "store.db") -> Path | str:
    """A fresh store: ``tmp_path / name`` on SQLite; on PostgreSQL the URL of
    a new empty database (each call makes a new one)."""
    if not on_postgres():
        return tmp_path / name
    base = os.environ["TENURE_TEST_PG_URL"]
    createdb = os.environ["TENURE_TEST_CREATEDB"]
    db = f"py_{os.getpid()}_{_DB_SALT}_{next(_DB_COUNTER)}"
    subprocess.run([createdb, db], check=True, timeout=120)
    head, sep, query = base.partition("?")
    scheme_end = head.find("://") + 3 if "://" in head else 0
    slash = head.find("/", scheme_end)
    host = head if slash < 0 else head[:slash]
    return f"{host}/{db}{sep}{query}"


def pg_sql(url: str, sql: str) -> None:
    """Run SQL on a PostgreSQL test database with ``psql``
    (``TENURE_TEST_PSQL``, else next to ``createdb``), for server-side setups
    such as a raised schema version."""
    psql = os.environ.get("TENURE_TEST_PSQL") or str(
        Path(os.environ["TENURE_TEST_CREATEDB"]).with_name("psql"))
    subprocess.run([psql, "-q", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", sql],
                   check=True, timeout=120)


@pytest.fixture
def store(tmp_path: Path) -> Path | str:
    return fresh_store(tmp_path)


@pytest.fixture
def auth(store: Path | str) -> Iterator[tenure.Authority]:
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
