"""Schedules through the Python projection (docs/schedules.md): create,
update, pause, resume, delete and list, the scheduler step, bad
definitions as typed errors, and the tenure.aio forms. The rules are the
core's; these tests check the conversions."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

import tenure
from tenure import aio


def test_a_schedule_is_created_listed_paused_and_deleted(auth: tenure.Authority, prod: str) -> None:
    assert auth.create_schedule(prod, "tick", every=timedelta(seconds=30), payload=b"x",
                                priority=2, catch_up=3, overlap="skip")
    assert not auth.create_schedule(prod, "tick", every=timedelta(seconds=30), payload=b"x",
                                    priority=2, catch_up=3, overlap="skip")
    [s] = auth.schedules(prod)
    assert s["name"] == "tick" and s["cadence"] == "every 30s"
    assert s["payload"] == b"x" and s["priority"] == 2 and s["catch_up"] == 3
    assert s["overlap"] == "skip" and s["paused"] is False and s["last_slot"] is None
    assert isinstance(s["next_slot"], datetime) and s["next_slot"].tzinfo == timezone.utc
    assert s["next_slot"].timestamp() % 30 == 0
    assert auth.pause_schedule(prod, "tick")
    assert not auth.pause_schedule(prod, "tick")
    assert auth.schedules()[0]["next_slot"] is None
    assert auth.resume_schedule(prod, "tick")
    auth.update_schedule(prod, "tick", cron="0 2 * * *")
    assert auth.schedules(prod)[0]["cadence"] == "cron 0 2 * * *"
    assert auth.schedules(prod)[0]["tz"] is None
    auth.update_schedule(prod, "tick", cron="0 2 * * *", tz="Europe/Paris")
    [s] = auth.schedules(prod)
    assert s["cadence"] == "cron 0 2 * * * Europe/Paris" and s["tz"] == "Europe/Paris"
    # 02:00 in Paris is 00:00 or 01:00 UTC (summer or winter time).
    assert s["next_slot"].minute == 0 and s["next_slot"].hour in (0, 1)
    with pytest.raises(tenure.InvalidArgument):
        auth.update_schedule(prod, "tick", cron="0 2 * * *", tz="Mars/Olympus")
    assert auth.schedules(prod)[0]["tz"] == "Europe/Paris"
    assert auth.delete_schedule(prod, "tick")
    assert not auth.delete_schedule(prod, "tick")
    assert auth.schedules() == []


def test_the_step_enqueues_each_slot_once(auth: tenure.Authority, prod: str) -> None:
    auth.create_schedule(prod, "sec", every=timedelta(seconds=1))
    deadline = datetime.now(timezone.utc) + timedelta(seconds=5)
    enqueued: list[tuple[str, str]] = []
    while not enqueued:
        assert datetime.now(timezone.utc) < deadline
        step = auth.run_schedules()
        enqueued = step["enqueued"]
    assert len(enqueued) == 1 and enqueued[0][0] == prod
    job = enqueued[0][1]
    assert job.startswith("sec@") and job.endswith("Z")
    assert auth.job(prod, job).state == "requested"
    again = auth.run_schedules()
    assert job not in [j for _, j in again["enqueued"]]
    assert isinstance(again["next_slot"], datetime)


@pytest.mark.parametrize("kwargs, error", [
    ({"cron": "61 * * * *"}, tenure.InvalidArgument),
    ({"cron": "* * * * * *"}, tenure.InvalidArgument),
    ({"every": timedelta(0)}, tenure.InvalidDuration),
    ({"every": timedelta(milliseconds=1500)}, tenure.InvalidDuration),
    ({"every": timedelta(days=400)}, tenure.InvalidDuration),
    ({"every": timedelta(seconds=1), "catch_up": 0}, tenure.InvalidArgument),
    ({"every": timedelta(seconds=1), "catch_up": 1001}, tenure.InvalidArgument),
    ({"every": timedelta(seconds=1), "overlap": "sometimes"}, tenure.InvalidArgument),
    ({}, tenure.InvalidArgument),
    ({"every": timedelta(seconds=1), "cron": "* * * * *"}, tenure.InvalidArgument),
    ({"cron": "0 2 * * *", "tz": "Europe/Nowhere"}, tenure.InvalidArgument),
    ({"cron": "0 2 * * *", "tz": "europe/paris"}, tenure.InvalidArgument),
    ({"cron": "0 2 * * *", "tz": ""}, tenure.InvalidArgument),
    ({"cron": "61 * * * *", "tz": "Europe/Paris"}, tenure.InvalidArgument),
    ({"every": timedelta(seconds=1), "tz": "Europe/Paris"}, tenure.InvalidArgument),
    ({"tz": "Europe/Paris"}, tenure.InvalidArgument),
])
def test_bad_definitions_are_typed_errors_and_change_nothing(
        auth: tenure.Authority, prod: str, kwargs: dict, error: type) -> None:
    with pytest.raises(error):
        auth.create_schedule(prod, "bad", **kwargs)
    assert auth.schedules() == []


def test_missing_schedules_and_productions_are_not_found(auth: tenure.Authority, prod: str) -> None:
    with pytest.raises(tenure.NotFound):
        auth.create_schedule("nope", "s", every=timedelta(seconds=1))
    with pytest.raises(tenure.NotFound):
        auth.pause_schedule(prod, "s")
    with pytest.raises(tenure.NotFound):
        auth.update_schedule(prod, "s", every=timedelta(seconds=1))


def test_aio_schedules(store: Path | str) -> None:
    async def main() -> None:
        async with await aio.open(store) as a:
            await a.create_production("p")
            assert await a.create_schedule("p", "s", every=timedelta(seconds=1))
            assert [s["name"] for s in await a.schedules("p")] == ["s"]
            step = await a.run_schedules()
            assert "enqueued" in step and "next_slot" in step
            assert await a.pause_schedule("p", "s")
            assert await a.resume_schedule("p", "s")
            assert await a.delete_schedule("p", "s")
            with pytest.raises(tenure.InvalidArgument):
                await a.create_schedule("p", "s", cron="nope")
            with pytest.raises(tenure.InvalidArgument):
                await a.create_schedule("p", "s", cron="0 2 * * *", tz="Nowhere/Town")
            assert await a.create_schedule("p", "z", cron="0 2 * * *", tz="Asia/Tokyo")
            [z] = await a.schedules("p")
            assert z["tz"] == "Asia/Tokyo" and z["cadence"] == "cron 0 2 * * * Asia/Tokyo"
            # 02:00 in Tokyo (UTC+9, no daylight-saving time) is 17:00 UTC.
            assert z["next_slot"].hour == 17
    asyncio.run(main())
