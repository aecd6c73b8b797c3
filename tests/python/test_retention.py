"""Retention through the Python projection: Retention ages, prune steps and
their report, the history horizon and HistoryPruned (with ``.horizon``) for
a reader behind it, tombstones answering a resubmission, delete and export
of a production, automatic retention from ``Authority(retention=...)``,
vacuum, CheckReport.history_horizon, and the tenure.aio forms. Ages are
whole seconds (the shortest is 1 s), so some tests sleep a little over a
second."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from datetime import timedelta
from pathlib import Path

import pytest

import tenure
from conftest import LONG, fresh_store, on_postgres
from tenure import aio

SECOND = timedelta(seconds=1)


def exists(auth: tenure.Authority, prod: str, job: str) -> bool:
    try:
        auth.job(prod, job)
        return True
    except tenure.NotFound:
        return False


def test_retention_ages_are_whole_second_timedeltas() -> None:
    r = tenure.Retention(event_age=timedelta(days=30), tombstone_age=timedelta(minutes=2))
    assert r.event_age == timedelta(days=30)
    assert r.terminal_job_age is None
    assert r.tombstone_age == timedelta(minutes=2)
    assert r == tenure.Retention(event_age=timedelta(days=30), tombstone_age=timedelta(seconds=120))
    assert "30d" in repr(r)
    rec = tenure.Retention.recommended()
    assert rec.event_age == rec.terminal_job_age == timedelta(days=30)
    assert rec.tombstone_age == timedelta(days=365)
    assert tenure.Retention() == tenure.Retention(None, None, None)
    for bad in (timedelta(0), timedelta(seconds=-1), timedelta(milliseconds=1500),
                timedelta(days=3650, seconds=1)):
        with pytest.raises(tenure.InvalidDuration):
            tenure.Retention(event_age=bad)
        with pytest.raises(ValueError):
            tenure.Retention(tombstone_age=bad)
    for wrong in (1, 1.5, "1s"):
        with pytest.raises(TypeError, match="terminal_job_age"):
            tenure.Retention(terminal_job_age=wrong)  # type: ignore[arg-type]


def test_delete_refused_while_live_then_export_and_delete(auth: tenure.Authority) -> None:
    auth.create_production("done")
    auth.create_production("live")
    auth.submit("done", "a", b"make all")
    auth.submit("done", "b", b"\x00\xff")
    auth.submit("live", "c")
    auth.claim("done", "a", "w", LONG).complete({"artifact": 'out "1".tar'})
    auth.cancel("done", "b")

    before = len(auth.events(0, 10_000))
    with pytest.raises(tenure.ProductionLive, match="live") as info:
        auth.delete_production("live")
    assert info.value.code == 24
    assert len(auth.events(0, 10_000)) == before
    assert exists(auth, "live", "c")
    assert auth.submit("live", "d") == "created"  # not even marked cancelled
    with pytest.raises(tenure.NotFound):
        auth.delete_production("nope")

    lines = list(auth.export_production("done"))
    records = [json.loads(line) for line in lines]
    assert all("\n" not in line for line in lines)
    kinds = [r["record"] for r in records]
    assert kinds[0] == "production" and records[0]["name"] == "done"
    assert kinds[1:3] == ["job", "job"]
    assert [r["job"] for r in records[1:3]] == ["a", "b"]
    assert base64.b64decode(records[1]["payload_base64"]) == b"make all"
    assert base64.b64decode(records[2]["payload_base64"]) == b"\x00\xff"
    assert records[1]["state"] == "completed" and records[2]["state"] == "cancelled"
    assert records[0]["backoff"] is None
    assert all(records[1][k] is None for k in ("due_us", "max_hold_us", "backoff"))
    facts = [r for r in records if r["record"] == "fact"]
    assert {"job": "a", "key": "artifact", "production": "done", "record": "fact",
            "value": 'out "1".tar'} in facts
    events = [r for r in records if r["record"] == "event"]
    assert kinds == ["production", "job", "job"] + ["fact"] * len(facts) + ["event"] * len(events)
    assert len(events) >= 5 and all(e["production"] == "done" for e in events)
    assert [e["seq"] for e in events] == sorted(e["seq"] for e in events)
    with pytest.raises(tenure.NotFound):
        auth.export_production("nope")

    counts = auth.delete_production("done")
    assert isinstance(counts, tenure.DeletedCounts)
    assert (counts.jobs, counts.tombstones) == (2, 0)
    assert counts.facts == len(facts) and counts.events == len(events)
    assert not exists(auth, "done", "a")
    assert [p.name for p in auth.productions()] == ["live"]
    assert auth.production_events("done") == []
    assert auth.create_production("done")  # the name is free again


def test_prune_horizon_and_tombstones(auth: tenure.Authority, prod: str) -> None:
    assert auth.history_horizon() == 0
    auth.submit(prod, "a", b"A")
    auth.submit(prod, "live")
    auth.claim(prod, "a", "w", LONG).complete()
    held = auth.claim(prod, "live", "w", LONG)
    policy = tenure.Retention(event_age=SECOND, terminal_job_age=SECOND)
    r = auth.prune(policy)
    assert (r.jobs, r.events, r.horizon) == (0, 0, 0)

    time.sleep(1.1)
    before = len(auth.events(0, 10_000))
    r = auth.prune(policy)
    assert isinstance(r, tenure.PruneReport)
    assert r.jobs == 1 and r.tombstones == 0 and not r.more
    if not on_postgres():  # there only events below the tailers' horizon go
        assert r.events == before - 1  # all but the newest
        assert r.horizon > 0
    assert auth.history_horizon() == r.horizon
    assert not exists(auth, prod, "a")
    held.renew(LONG)  # the live lease is untouched

    if r.horizon > 0:
        with pytest.raises(tenure.HistoryPruned) as info:
            auth.events(0)
        assert info.value.horizon == r.horizon and info.value.after == 0
        assert info.value.code == 23
        assert str(r.horizon) in str(info.value)
        with pytest.raises(tenure.HistoryPruned) as info:
            auth.production_events(prod, r.horizon - 1)
        assert info.value.horizon == r.horizon and info.value.after == r.horizon - 1
        rest = auth.events(auth.history_horizon())
        assert rest[0].seq == r.horizon + 1
    assert tenure.HistoryPruned.horizon == 0  # the class default

    # a tombstone answers a resubmission as the row did
    assert auth.submit(prod, "a", b"A") == "existing"
    with pytest.raises(tenure.Conflict):
        auth.submit(prod, "a", b"other")
    report = auth.check()
    assert report.ok, report.violations
    assert report.history_horizon == r.horizon
    assert f"history_horizon={r.horizon}" in repr(report)

    time.sleep(1.1)
    r2 = auth.prune(tenure.Retention(tombstone_age=SECOND))
    assert r2.tombstones == 1 and r2.jobs == 0 and r2.events == 0
    assert auth.submit(prod, "a", b"other") == "created"
    auth.vacuum()
    held.release()


def test_automatic_retention_from_the_options(store: Path | str) -> None:
    policy = tenure.Retention(event_age=SECOND, terminal_job_age=SECOND)
    plain = tenure.Authority(store)
    pruning = tenure.Authority(store, retention=policy)
    plain.create_production("p")
    plain.submit("p", "old")
    plain.cancel("p", "old")
    time.sleep(1.1)
    for i in range(64):
        plain.submit("p", f"plain-{i}")
    assert plain.history_horizon() == 0
    assert exists(plain, "p", "old")
    for i in range(64):
        pruning.submit("p", f"auto-{i}")
    assert not exists(plain, "p", "old")
    if not on_postgres():
        assert plain.history_horizon() > 0
    with pytest.raises(TypeError):
        tenure.Authority(store, retention=timedelta(days=1))  # type: ignore[arg-type]


def test_aio_forms(tmp_path: Path) -> None:
    store = fresh_store(tmp_path, "aio.db")

    async def main() -> None:
        async with await aio.open(store, retention=tenure.Retention(event_age=timedelta(days=1))) as a:
            await a.create_production("p")
            await a.submit("p", "j", b"x")
            await a.cancel("p", "j")
            assert await a.history_horizon() == 0
            lines = await a.export_production("p")
            assert json.loads(lines[0])["record"] == "production"
            r = await a.prune(tenure.Retention(terminal_job_age=timedelta(days=1)))
            assert r.jobs == 0
            await a.submit("p", "live")
            with pytest.raises(tenure.ProductionLive):
                await a.delete_production("p")
            await a.cancel("p", "live")
            counts = await a.delete_production("p")
            assert counts.jobs == 2
            await a.vacuum()

    asyncio.run(main())
