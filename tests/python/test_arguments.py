"""Argument conversion at the Python boundary: store paths and integers.

- A store path is converted with ``os.fsencode`` (``str``, ``bytes`` or
  ``os.PathLike``): a NUL byte cannot be part of an OS path and raises
  ``InvalidArgument`` (a ``ValueError``), as in C and C++; a name that is not
  valid UTF-8 is opened as its exact bytes and round-trips through
  ``Authority.path``.
- An integer outside its core type (``priority``: i32, ``max_attempts``:
  u32) raises ``InvalidArgument`` naming the parameter, never a bare
  ``OverflowError``; a non-integer stays a ``TypeError``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

import pytest

import tenure


def test_nul_in_store_path_is_invalid_argument(tmp_path: Path) -> None:
    for path in (
        str(tmp_path / "a\0b.db"),
        tmp_path / "a\0b.db",
        os.fsencode(tmp_path) + b"/a\0b.db",
        "\0",
    ):
        with pytest.raises(tenure.InvalidArgument) as info:
            tenure.Authority(path)
        assert isinstance(info.value, ValueError)
        assert "NUL" in str(info.value)
        assert str(tmp_path) not in str(info.value)  # the path is not echoed
    assert list(tmp_path.iterdir()) == []  # nothing was created


def test_non_utf8_store_path_round_trips(tmp_path: Path) -> None:
    raw = os.fsencode(tmp_path) + b"/caf\xe9-\xff.db"  # not valid UTF-8
    text = os.fsdecode(raw)  # the same name as a surrogate-escaped str
    assert "\udce9" in text

    by_bytes = tenure.Authority(raw)
    by_bytes.create_production("p")
    assert os.path.exists(raw)
    assert by_bytes.path == text
    assert os.fsencode(by_bytes.path) == raw

    # The str and PathLike spellings open the same file and report it alike.
    by_text = tenure.Authority(text)
    by_path = tenure.Authority(Path(text))
    for a in (by_text, by_path):
        assert a.path == text
        assert [p.name for p in a.productions()] == ["p"]
    assert b"caf\xe9-\xff.db" in os.listdir(os.fsencode(tmp_path))
    # Reopening from the reported path reaches the same store.
    assert [p.name for p in tenure.Authority(by_bytes.path).productions()] == ["p"]


def test_utf8_store_path_round_trips(tmp_path: Path) -> None:
    name = str(tmp_path / "naïve-日本.db")
    a = tenure.Authority(name)
    assert a.path == name
    b = tenure.Authority(name.encode())
    assert b.path == name


def test_store_path_of_wrong_type_is_type_error() -> None:
    for bad in (1, 1.5, ["x"]):
        with pytest.raises(TypeError):
            tenure.Authority(bad)  # type: ignore[arg-type]


HUGE = (2**70, -(2**70), 2**64, 2**32, -(2**31) - 1)


def submitters(auth: tenure.Authority, prod: str) -> list[Callable[..., object]]:
    """Every call taking ``priority`` / ``max_attempts``."""
    def edit_submit(job: str, **kw: int) -> object:
        with auth.edit() as e:
            return e.submit(prod, job, **kw)

    return [
        lambda job, **kw: auth.submit(prod, job, **kw),
        edit_submit,
        lambda job, **kw: tenure.JobSpec(job, **kw),
    ]


@pytest.mark.parametrize("param", ["priority", "max_attempts"])
def test_out_of_range_integer_is_invalid_argument(auth: tenure.Authority, prod: str,
                                                  param: str) -> None:
    before = len(auth.events(0, 10_000))
    for call in submitters(auth, prod):
        for value in HUGE:
            with pytest.raises(tenure.InvalidArgument) as info:
                call("j", **{param: value})
            assert not isinstance(info.value, OverflowError)
            assert isinstance(info.value, ValueError)
            assert param in str(info.value), info.value
        # Negative max_attempts is outside u32 as well.
        if param == "max_attempts":
            with pytest.raises(tenure.InvalidArgument, match="max_attempts"):
                call("j", max_attempts=-1)
        with pytest.raises(TypeError):
            call("j", **{param: "1"})
        with pytest.raises(TypeError):
            call("j", **{param: 1.0})
    assert len(auth.events(0, 10_000)) == before  # nothing was submitted


def test_integer_edges_convert_and_the_core_checks_the_range(auth: tenure.Authority,
                                                             prod: str) -> None:
    # The i32 / u32 edges convert; which of them are allowed is the core's rule.
    auth.submit(prod, "hi", priority=2**31 - 1)
    auth.submit(prod, "lo", priority=-(2**31))
    assert auth.job(prod, "hi").priority == 2**31 - 1
    assert auth.job(prod, "lo").priority == -(2**31)
    assert tenure.JobSpec("s", max_attempts=2**32 - 1).max_attempts == 2**32 - 1
    with pytest.raises(tenure.InvalidArgument, match="max_attempts"):
        auth.submit(prod, "many", max_attempts=2**32 - 1)  # in u32, above the core's bound
    with pytest.raises(tenure.InvalidArgument):
        auth.submit(prod, "none", max_attempts=0)
