"""Bad input census, Python: the bad input classes that the other suites do
not already pin down (the "Bad input census" of docs/reliability.md names every test).

- NULL is ``None``: a TypeError from the argument conversion.
- Text that is not valid UTF-8 is a ``str`` with lone surrogates: the
  conversion raises UnicodeEncodeError before the library is called. Store
  *paths* are OS paths (``os.fsencode``): a surrogate-escaped path names the
  raw bytes and is accepted, as in the CLI.
- The read-only store runs a child interpreter in a private mount namespace
  (``unshare -m`` as root, else ``unshare -Urm``) with the store's directory
  bind-mounted read-only: file modes do not stop root.
- The full disk runs a child interpreter with RLIMIT_FSIZE just above the
  store's size (SIGXFSZ ignored, so writes fail with EFBIG).
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

import tenure
from conftest import LONG, PY, python_env

BAD_UTF8 = "p\udcff"


def events(auth: tenure.Authority) -> int:
    return len(auth.events(0, 100_000))


def test_census_none_is_type_error(auth: tenure.Authority, prod: str) -> None:
    auth.submit(prod, "j")
    before = events(auth)
    for call in (
        lambda: auth.create_production(None),  # type: ignore[arg-type]
        lambda: auth.submit(prod, None),  # type: ignore[arg-type]
        lambda: auth.claim(prod, None, "w", LONG),  # type: ignore[arg-type]
        lambda: auth.claim(prod, "j", None, LONG),  # type: ignore[arg-type]
        lambda: auth.claim_next(prod, "w", None),  # type: ignore[arg-type]
        lambda: auth.import_lease(None),  # type: ignore[arg-type]
        lambda: tenure.Authority(None),  # type: ignore[arg-type]
        lambda: tenure.ClaimRequest(None),  # type: ignore[arg-type]
        lambda: auth.claim_idempotent(prod, "j", "w", LONG, None),  # type: ignore[arg-type]
        lambda: auth.claim_next_idempotent(prod, "w", LONG, "r1"),  # type: ignore[arg-type]
        lambda: auth.release_many_idempotent(None),  # type: ignore[arg-type]
    ):
        with pytest.raises(TypeError):
            call()
    assert events(auth) == before


def test_census_invalid_utf8_is_unicode_error(auth: tenure.Authority, prod: str, tmp_path: Path) -> None:
    auth.submit(prod, "j")
    before = events(auth)
    for call in (
        lambda: auth.create_production(BAD_UTF8),
        lambda: auth.submit(prod, BAD_UTF8),
        lambda: auth.claim(prod, "j", BAD_UTF8, LONG),
        lambda: auth.job(prod, BAD_UTF8),
        lambda: auth.import_lease("tenure-lease-v1." + BAD_UTF8),
        lambda: tenure.ClaimRequest(BAD_UTF8),
    ):
        with pytest.raises(UnicodeEncodeError):
            call()
    lease = auth.claim(prod, "j", "w", LONG)
    with pytest.raises(UnicodeEncodeError):
        lease.fail(BAD_UTF8)
    with pytest.raises(UnicodeEncodeError):
        lease.fail_idempotent(BAD_UTF8)
    # A surrogate in a fact key or value is UnicodeEncodeError like every
    # other string argument; a non-str key or value is the facts TypeError.
    with pytest.raises(UnicodeEncodeError):
        lease.complete({"k": BAD_UTF8})
    with pytest.raises(UnicodeEncodeError):
        lease.complete([(BAD_UTF8, "v")])
    with pytest.raises(TypeError):
        lease.complete({"k": 1})
    assert lease.status == "active"
    assert events(auth) == before + 1  # only the claim
    # A surrogate-escaped path is the raw bytes b"\xff": a valid OS path.
    odd = tenure.Authority(tmp_path / "\udcff.db")
    odd.create_production("p")
    assert os.path.exists(os.fsencode(tmp_path) + b"/\xff.db")
    lease.complete()


def test_census_empty_and_oversize(auth: tenure.Authority, prod: str) -> None:
    auth.submit(prod, "j")
    before = events(auth)
    long_id = "x" * 129
    for call in (
        lambda: auth.create_production(""),
        lambda: auth.create_production(long_id),
        lambda: auth.submit(prod, ""),
        lambda: auth.submit(prod, long_id),
        lambda: auth.submit(prod, "big", b"x" * ((1 << 20) + 1)),
        lambda: auth.claim(prod, "j", "", LONG),
        lambda: auth.claim(prod, "j", "h" * 257, LONG),
        lambda: auth.claim(prod, "", "w", LONG),
        lambda: tenure.ClaimRequest(""),
        lambda: tenure.ClaimRequest(long_id),
        lambda: auth.claim_idempotent(prod, "j", "", LONG, tenure.ClaimRequest("r1")),
        lambda: auth.claim_next_idempotent(prod, "h" * 257, LONG, tenure.ClaimRequest("r1")),
    ):
        with pytest.raises(tenure.InvalidArgument):
            call()
    with pytest.raises(ValueError):  # InvalidArgument is a ValueError too
        tenure.Authority("")
    lease = auth.claim(prod, "j", "w", LONG)
    after_claim = events(auth)
    with pytest.raises(tenure.InvalidArgument):
        lease.fail("r" * 1025)
    with pytest.raises(tenure.InvalidArgument):
        lease.fail_idempotent("r" * 1025)
    with pytest.raises(tenure.InvalidArgument):
        lease.complete_idempotent({"k": "v" * 4097})
    with pytest.raises(tenure.InvalidArgument):
        lease.complete({"k": "v" * 4097})
    with pytest.raises(tenure.InvalidArgument):
        lease.complete({f"k{i}": "v" for i in range(65)})
    with pytest.raises(tenure.InvalidArgument):
        lease.complete({"": "v"})
    assert events(auth) == after_claim == before + 1
    lease.complete()


def test_census_schedule_arguments(auth: tenure.Authority, prod: str) -> None:
    """The scheduling arguments (``not_before``, ``max_hold``, ``backoff``,
    ``retry_after``, ``set_production_backoff``): ``None`` means absent, a
    wrong type is ``TypeError`` naming the parameter, bad IDs are refused as
    everywhere, a bad back-off is ``InvalidDuration``; nothing changes.
    (Duration ranges: ``test_durations.py::test_delay_table``.)"""
    from datetime import timedelta

    policy = tenure.Backoff(timedelta(seconds=1), timedelta(seconds=2))
    auth.set_production_backoff(prod, policy)
    auth.submit(prod, "j", max_attempts=5)
    lease = auth.claim(prod, "j", "w", LONG)
    before = events(auth)
    # None is "absent" for every optional schedule argument.
    assert tenure.JobSpec("x", not_before=None, max_hold=None, backoff=None) == tenure.JobSpec("x")
    for call, param in (
        (lambda: auth.submit(prod, "k", backoff=1), "backoff"),  # type: ignore[arg-type]
        (lambda: auth.submit(prod, "k", backoff=(1, 2)), "backoff"),  # type: ignore[arg-type]
        (lambda: auth.submit(prod, "k", not_before="1h"), "not_before"),  # type: ignore[arg-type]
        (lambda: auth.submit(prod, "k", max_hold=60), "max_hold"),  # type: ignore[arg-type]
        (lambda: tenure.JobSpec("k", backoff=policy.base), "backoff"),  # type: ignore[arg-type]
        (lambda: auth.set_production_backoff(prod, "1s"), "backoff"),  # type: ignore[arg-type]
        (lambda: auth.set_production_backoff(prod, 5), "backoff"),  # type: ignore[arg-type]
        (lambda: tenure.Backoff(None, timedelta(1)), "base"),  # type: ignore[arg-type]
        (lambda: tenure.Backoff(timedelta(1), None), "cap"),  # type: ignore[arg-type]
        (lambda: tenure.Backoff(1, 2), "base"),  # type: ignore[arg-type]
        (lambda: lease.fail("r", retry_after=1.0), "retry_after"),  # type: ignore[arg-type]
    ):
        with pytest.raises(TypeError, match=param):
            call()
    with pytest.raises(TypeError):
        auth.set_production_backoff(prod)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        auth.set_production_backoff(None, policy)  # type: ignore[arg-type]
    for bad_id in ("", "p\x00", "bad/id", "x" * 129):
        with pytest.raises(tenure.InvalidArgument):
            auth.set_production_backoff(bad_id, None)
    with pytest.raises(UnicodeEncodeError):
        auth.set_production_backoff(BAD_UTF8, policy)
    with pytest.raises(tenure.NotFound):
        auth.set_production_backoff("missing", policy)
    for base, cap in ((timedelta(seconds=2), timedelta(seconds=1)), (timedelta(0), timedelta(0))):
        with pytest.raises(tenure.InvalidDuration):
            tenure.Backoff(base, cap)
    with pytest.raises(tenure.InvalidArgument):
        lease.fail("r", permanent=True, retry_after=timedelta(seconds=1))
    with pytest.raises(tenure.InvalidArgument):
        lease.fail("r" * 1025, retry_after=timedelta(seconds=1))
    with pytest.raises(tenure.InvalidDuration):
        auth.submit(prod, "k", max_hold=timedelta(0))
    assert events(auth) == before
    assert lease.status == "active" and auth.productions()[0].backoff == policy
    assert [j.job for j in auth.jobs(prod)] == ["j"]
    lease.complete()


def test_census_tokens(auth: tenure.Authority, prod: str) -> None:
    auth.submit(prod, "j")
    lease = auth.claim(prod, "j", "w", LONG)
    text = lease.export_token()
    before = events(auth)
    for cut in (0, 1, len("tenure-lease-v"), len(text) // 2, len(text) - 1):
        with pytest.raises((tenure.TokenMalformed, tenure.TokenUnsupportedVersion)):
            auth.import_lease(text[:cut])
    with pytest.raises(tenure.TokenMalformed):
        auth.import_lease(text + "AAAA")
    with pytest.raises(tenure.TokenTooLarge):
        auth.import_lease(text + "A" * tenure.MAX_TOKEN_LEN)
    body = text.split(".", 1)[1]
    with pytest.raises(tenure.TokenUnsupportedVersion):
        auth.import_lease(f"tenure-lease-v99.{body}")
    assert events(auth) == before
    auth.import_lease(text).renew(LONG)


def test_census_corrupt_pages_are_store_error(tmp_path: Path) -> None:
    path = tmp_path / "damaged.db"
    a = tenure.Authority(path)
    a.create_production("p")
    for i in range(50):
        a.submit("p", f"j{i}", b"x" * 200)
    del a
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    data = bytearray(path.read_bytes())
    for i in range(4096, len(data)):
        data[i] ^= 0xA5
    path.write_bytes(bytes(data))
    with pytest.raises(tenure.StoreError):
        b = tenure.Authority(path)
        b.claim_next("p", "w", LONG)
        b.check()


def fingerprint(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


RO_CHILD = """
import sys, tenure
from datetime import timedelta
path = sys.argv[1]
try:
    open(path + ".probe", "w")
    print("WRITABLE")
    sys.exit(1)
except OSError:
    pass
try:
    a = tenure.Authority(path)
except tenure.StoreError:
    print("open StoreError")
    sys.exit(0)
for name, call in (("create", lambda: a.create_production("x")),
                   ("submit", lambda: a.submit("p", "k")),
                   ("claim", lambda: a.claim_next("p", "w", timedelta(minutes=1)))):
    try:
        call()
        print(name, "OK")
    except tenure.TenureError as e:
        print(name, type(e).__name__)
"""


def test_census_read_only_store_is_store_error(tmp_path: Path) -> None:
    path = tmp_path / "ro.db"
    a = tenure.Authority(path)
    a.create_production("p")
    a.submit("p", "j")
    del a
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    before = fingerprint(path)
    script = (
        'mount --bind "$DIR" "$DIR" && mount -o remount,bind,ro "$DIR" "$DIR" || exit 97\n'
        'exec "$PY" -c "$CHILD" "$DB"'
    )
    env = python_env() | {"DIR": str(tmp_path), "PY": PY, "CHILD": RO_CHILD, "DB": str(path)}
    attempts = []
    out = None
    for flags in ("-m", "-Urm"):
        r = subprocess.run(["unshare", flags, "sh", "-c", script], env=env,
                           capture_output=True, text=True, timeout=120)
        if r.returncode == 97 or r.stderr.startswith("unshare:"):
            attempts.append(f"unshare {flags}: {r.stderr}")
            continue
        out = r
        break
    assert out is not None, f"needs a private read-only bind mount: {attempts}"
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.split("\n")
    assert lines[0] == "open StoreError" or all(
        f"{op} StoreError" in lines for op in ("create", "submit", "claim")
    ), out.stdout + out.stderr
    assert fingerprint(path) == before
    after = tenure.Authority(path)
    assert after.job("p", "j").state == "requested"
    assert after.check().ok


FULL_CHILD = """
import os, resource, signal, sys, tenure
path = sys.argv[1]
a = tenure.Authority(path)
size = os.path.getsize(path)
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (size + 8192, resource.RLIM_INFINITY))
try:
    for i in range(8):
        a.submit("p", f"big{i}", b"x" * 500_000)
    print("NO ERROR")
except tenure.TenureError as e:
    print("FULL", type(e).__name__)
"""


def test_census_full_disk_is_store_error(tmp_path: Path) -> None:
    path = tmp_path / "full.db"
    a = tenure.Authority(path)
    a.create_production("p")
    a.submit("p", "kept")
    del a
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    r = subprocess.run([PY, "-c", FULL_CHILD, str(path)], env=python_env(),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == "FULL StoreError", r.stdout + r.stderr
    b = tenure.Authority(path)
    assert b.job("p", "kept").state == "requested"
    with pytest.raises(tenure.NotFound):
        b.job("p", "big0")
    assert b.check().ok
    del b
