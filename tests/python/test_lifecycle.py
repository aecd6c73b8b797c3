"""Life cycle, edits, observations, and what repr() may show."""

from __future__ import annotations

import copy
import importlib.metadata
import pickle
import re
from datetime import timedelta
from pathlib import Path

import pytest

import tenure
from conftest import LONG, ROOT, fresh_store

SECOND = timedelta(seconds=1)


def test_the_installed_wheel_is_under_test() -> None:
    # Not the source tree: the package imported is the one pip installed.
    assert "site-packages" in tenure.__file__
    assert not Path(tenure.__file__).resolve().is_relative_to(ROOT / "python")
    assert tenure._native.__file__.endswith(".abi3.so")


def test_package_reexports_the_whole_native_module() -> None:
    assert set(tenure.__all__) == set(tenure._native.__all__)
    for name in tenure.__all__:
        assert getattr(tenure, name) is getattr(tenure._native, name)


def test_version_and_abi() -> None:
    assert tenure.__version__ == importlib.metadata.version("tenure")
    assert re.fullmatch(r"\d+\.\d+\.\d+", tenure.__version__)
    cargo = (ROOT / "Cargo.toml").read_text()
    assert f'version = "{tenure.__version__}"' in cargo
    header = (ROOT / "include" / "tenure.h").read_text()
    major = re.search(r"#define TENURE_ABI_MAJOR (\d+)", header)
    minor = re.search(r"#define TENURE_ABI_MINOR (\d+)", header)
    assert major and minor, "include/tenure.h defines the ABI version"
    assert tenure.ABI_VERSION == (int(major.group(1)), int(minor.group(1)))


def test_full_life_cycle(auth: tenure.Authority) -> None:
    assert auth.create_production("nightly") is True
    assert auth.create_production("nightly") is False
    assert [p.name for p in auth.productions()] == ["nightly"]
    assert auth.submit("nightly", "build-1", b"make all", priority=5) == "created"
    assert auth.submit("nightly", "build-1", b"make all", priority=5) == "existing"
    assert auth.payload("nightly", "build-1") == b"make all"

    lease = auth.claim_next("nightly", "worker-7@host-3", 30 * SECOND)
    assert (lease.production, lease.job, lease.holder) == ("nightly", "build-1", "worker-7@host-3")
    assert lease.attempt == 1 and lease.status == "active"
    view = auth.job("nightly", "build-1")
    assert view.state == "claimed"
    assert view.holder == "worker-7@host-3" and view.claim_id == lease.claim_id
    assert view.expires_us == lease.expires_us and view.priority == 5
    assert view.payload_len == len(b"make all")

    before = lease.expires_us
    lease.renew(timedelta(minutes=5))
    assert lease.expires_us > before
    assert auth.job("nightly", "build-1").expires_us == lease.expires_us

    lease.complete({"artifact": "build-1.tar", "size": "42"})
    assert lease.status == "closed"
    assert auth.job("nightly", "build-1").state == "completed"
    facts = {f.key: f.value for f in auth.facts("nightly", "build-1")}
    assert facts["artifact"] == "build-1.tar" and facts["size"] == "42"
    assert facts["tenure.claim_id"] == lease.claim_id
    assert facts["tenure.holder"] == "worker-7@host-3"
    assert {f.job for f in auth.production_facts("nightly")} == {"build-1"}

    kinds = [e.kind for e in auth.production_events("nightly")]
    assert kinds == ["production_created", "submitted", "claimed", "renewed", "completed"]
    assert [e.kind for e in auth.events()] == kinds
    claimed = auth.events()[2]
    assert claimed.claim_id == lease.claim_id and claimed.holder == "worker-7@host-3"
    assert claimed.attempt == 1 and claimed.job == "build-1"


def test_release_fail_and_attempts(auth: tenure.Authority, prod: str) -> None:
    auth.submit(prod, "j", max_attempts=2)
    first = auth.claim(prod, "j", "w1", LONG)
    assert first.release() == "requested"
    second = auth.claim(prod, "j", "w2", LONG)
    assert second.attempt == 2
    assert second.fail("disk full") == "failed"  # out of attempts
    view = auth.job(prod, "j")
    assert view.state == "failed" and view.last_error == "disk full"
    auth.submit(prod, "k")
    lease = auth.claim(prod, "k", "w", LONG)
    assert lease.fail("bad input", permanent=True) == "failed"


def test_facts_as_pairs_and_fact_objects(auth: tenure.Authority, prod: str) -> None:
    auth.submit(prod, "a")
    auth.submit(prod, "b")
    auth.claim(prod, "a", "w", LONG).complete([("k1", "v1"), ("k2", "v2")])
    copied = [f for f in auth.facts(prod, "a") if not f.key.startswith("tenure.")]
    auth.claim(prod, "b", "w", LONG).complete(copied)
    got = {f.key: f.value for f in auth.facts(prod, "b") if not f.key.startswith("tenure.")}
    assert got == {"k1": "v1", "k2": "v2"}
    auth.submit(prod, "c")
    lease = auth.claim(prod, "c", "w", LONG)
    with pytest.raises(TypeError):
        lease.complete("k=v")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        lease.complete([("k", 1)])  # type: ignore[list-item]
    with pytest.raises(tenure.InvalidArgument):
        lease.complete({"tenure.claim_id": "forged"})
    assert lease.status == "active"  # a failed operation leaves the lease as it was
    lease.complete()


def test_listing_and_paging(auth: tenure.Authority, prod: str) -> None:
    specs = [tenure.JobSpec(f"job-{i:03}", bytes([i]), priority=i % 3) for i in range(25)]
    assert auth.submit_many(prod, specs) == ["created"] * 25
    assert auth.submit_many(prod, specs[:2]) == ["existing"] * 2
    with pytest.raises(tenure.Conflict):  # all or nothing
        auth.submit_many(prod, [tenure.JobSpec("new-1"), tenure.JobSpec("job-000", b"other")])
    with pytest.raises(tenure.NotFound):
        auth.job(prod, "new-1")
    seen: list[str] = []
    after = None
    while True:
        page = auth.jobs(prod, after=after, limit=10)
        seen += [v.job for v in page]
        if len(page) < 10:
            break
        after = page[-1].job
    assert seen == [s.job for s in specs]
    auth.claim(prod, "job-004", "w", LONG)
    assert [v.job for v in auth.jobs(prod, state="claimed")] == ["job-004"]
    with pytest.raises(tenure.InvalidArgument):
        auth.jobs(prod, state="bogus")  # type: ignore[arg-type]
    events = auth.events(limit=5)
    assert len(events) == 5
    rest = auth.events(after=events[-1].seq)
    assert rest[0].seq > events[-1].seq
    assert specs[0] == tenure.JobSpec("job-000", b"\x00", priority=0)
    assert specs[0].payload == b"\x00"


def test_edit_context_manager_commits(auth: tenure.Authority, prod: str) -> None:
    auth.submit(prod, "j")
    with auth.edit() as e:
        assert e.open
        lease = e.claim_next(prod, "w", LONG)
        assert lease.status == "pending"
        with pytest.raises(tenure.LeasePending):
            lease.renew(LONG)  # outside its edit, before commit
        e.complete(lease, {"result": "42"})
        e.submit(prod, "next")
    assert not e.open
    assert lease.status == "closed"
    assert auth.job(prod, "j").state == "completed"
    assert auth.job(prod, "next").state == "requested"


def test_edit_context_manager_aborts_on_exception(auth: tenure.Authority, prod: str) -> None:
    auth.submit(prod, "j")
    with pytest.raises(RuntimeError, match="boom"):
        with auth.edit() as e:
            lease = e.claim(prod, "j", "w", LONG)
            e.submit(prod, "other")
            raise RuntimeError("boom")
    assert not e.open
    assert lease.status == "closed"  # its edit never committed
    assert auth.job(prod, "j").state == "requested"
    with pytest.raises(tenure.NotFound):
        auth.job(prod, "other")
    with pytest.raises(tenure.LeaseClosed):
        lease.complete()


def test_edit_explicit_commit_abort_and_reuse(auth: tenure.Authority, prod: str) -> None:
    e = auth.edit()
    e.submit(prod, "a")
    e.commit()
    with pytest.raises(tenure.InvalidArgument, match="finished"):
        e.submit(prod, "b")
    with pytest.raises(tenure.InvalidArgument):
        e.commit()
    e.abort()  # no-op once finished
    with e:  # entering a finished edit and leaving normally does nothing
        pass
    e2 = auth.edit()
    e2.submit(prod, "b")
    e2.abort()
    with pytest.raises(tenure.NotFound):
        auth.job(prod, "b")
    # A failing operation rolls back only itself: the edit stays usable.
    with auth.edit() as e3:
        with pytest.raises(tenure.InvalidArgument):
            e3.submit(prod, "bad/id")
        e3.submit(prod, "c")
    assert auth.job(prod, "c").state == "requested"
    # An edit that is dropped without commit aborts.
    e4 = auth.edit()
    e4.submit(prod, "dropped")
    del e4
    with pytest.raises(tenure.NotFound):
        auth.job(prod, "dropped")
    auth.submit(prod, "after")  # the writer lock was given back


def test_edit_lease_operations(auth: tenure.Authority, prod: str) -> None:
    for j in ("r", "f", "n"):
        auth.submit(prod, j)
    r = auth.claim(prod, "r", "w", LONG)
    f = auth.claim(prod, "f", "w", LONG)
    n = auth.claim(prod, "n", "w", SECOND * 30)
    before = n.expires_us
    with auth.edit() as e:
        assert e.release(r) == "requested"
        assert e.fail(f, "nope", permanent=True) == "failed"
        e.renew(n, LONG)
        assert r.status == "active"  # effects apply at commit
    assert (r.status, f.status, n.status) == ("closed", "closed", "active")
    assert n.expires_us > before
    assert auth.cancel(prod, "n") == "cancelled"
    assert auth.cancel(prod, "n") == "already_cancelled"
    with auth.edit() as e:
        assert e.create_production("p2") is True
        e.submit("p2", "x")
        assert e.cancel("p2", "x") == "cancelled"
        assert e.cancel_production("p2") == 0


def test_lease_drop_never_writes(auth: tenure.Authority, prod: str) -> None:
    auth.submit(prod, "j")
    lease = auth.claim(prod, "j", "w", LONG)
    expires = lease.expires_us
    n_events = len(auth.events())
    del lease
    import gc

    gc.collect()
    view = auth.job(prod, "j")
    assert view.state == "claimed" and view.expires_us == expires
    assert len(auth.events()) == n_events
    assert not hasattr(tenure.Lease, "__enter__")


def test_cancel_production(auth: tenure.Authority, prod: str) -> None:
    auth.submit(prod, "a")
    auth.submit(prod, "b")
    lease = auth.claim(prod, "a", "w", LONG)
    assert auth.cancel_production(prod) == 2
    with pytest.raises(tenure.Cancelled):
        lease.complete()
    with pytest.raises(tenure.Cancelled):
        auth.submit(prod, "c")
    assert auth.productions()[0].cancelled_us is not None


def test_repr_shows_attribution_never_the_secret(auth: tenure.Authority, prod: str) -> None:
    auth.submit(prod, "j")
    lease = auth.claim(prod, "j", "worker-1", LONG)
    token = lease.export_token()
    assert token.startswith("tenure-lease-v1.") and len(token) <= tenure.MAX_TOKEN_LEN
    body = token.split(".", 1)[1]
    secretish = body[-40:]  # the tail of the body encodes the secret bytes
    r = repr(lease)
    for part in ("production='p1'", "job='j'", "holder='worker-1'", lease.claim_id, str(lease.expires_us), "active"):
        assert part in r, (part, r)
    texts = [r, str(lease), repr(auth), repr(auth.job(prod, "j")), repr(auth.events()),
             repr(auth.edit()), repr(tenure.JobSpec("x")), repr(auth.productions()),
             repr(auth.clock()), repr(auth.check())]
    for t in texts:
        assert secretish not in t and body not in t, t
    for e in auth.events():
        assert secretish not in repr(e) and secretish not in e.detail
    # Errors never echo the secret either, even for a forged token.
    forged = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    with pytest.raises(tenure.TenureError) as info:
        auth.import_lease(forged)
    assert secretish[:-4] not in str(info.value)
    # The credential cannot leave by pickling or copying.
    with pytest.raises(TypeError):
        pickle.dumps(lease)
    with pytest.raises(TypeError):
        copy.copy(lease)


def test_authority_options(tmp_path: Path) -> None:
    n = fresh_store(tmp_path, "n.db")
    a = tenure.Authority(n, synchronous="normal", busy_timeout=timedelta(0))
    a.create_production("p")
    # A file store reports its path; a server store its URL (no password here).
    assert a.path.endswith("n.db") if isinstance(n, Path) else a.path == n
    assert a.migrated_from == 0
    with pytest.raises(tenure.InvalidArgument):
        tenure.Authority(tmp_path / "x.db", synchronous="sometimes")  # type: ignore[arg-type]
    with pytest.raises(tenure.InvalidArgument):
        tenure.Authority(tmp_path / "x.db", busy_timeout=timedelta(hours=2))
    with pytest.raises(tenure.InvalidArgument):
        tenure.Authority(tmp_path / "x.db", busy_timeout=-SECOND)
    with pytest.raises(TypeError, match="busy_timeout"):
        tenure.Authority(tmp_path / "x.db", busy_timeout=5)  # type: ignore[arg-type]
    assert tenure.Authority(str(n)).migrated_from == tenure.SCHEMA_VERSION
    clock = a.clock()
    assert clock.mark_us <= clock.now_us and not clock.blocked


def test_docstrings_on_every_public_name() -> None:
    for name in tenure.__all__:
        obj = getattr(tenure, name)
        if isinstance(obj, (int, str, tuple)):
            continue
        assert obj.__doc__ and obj.__doc__.strip(), name
        if isinstance(obj, type) and not issubclass(obj, BaseException):
            for attr, member in vars(obj).items():
                if attr.startswith("_"):
                    continue
                assert member.__doc__ and member.__doc__.strip(), f"{name}.{attr}"
    assert tenure.__doc__ and "timedelta" in tenure.__doc__
