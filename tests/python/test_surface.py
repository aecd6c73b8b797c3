"""One list of the handles' methods: the native stubs.

``tenure/_native.pyi`` lists the methods of ``tenure.Authority``,
``tenure.Edit`` (the operations both share once, in the stub-only base
``_Writer``) and ``tenure.Lease``. These tests hold the runtime classes and
``tenure.aio`` to that list: every method the stubs name exists on the
native class, and every one has its ``tenure.aio`` counterpart (a coroutine
for a store call) with the same parameters, defaults and types, the aio
handles standing in for the native ones. What differs on purpose is listed
below with its reason, so a new native method without its coroutine, or a
coroutine whose signature drifted, fails here.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

import tenure
from tenure import aio

STUBS = Path(tenure.__file__).resolve().parent / "_native.pyi"
AIO = Path(aio.__file__).resolve()

# Native methods without a coroutine of the same name, and why.
NATIVE_ONLY = {
    "Authority.close": "aio.Authority.aclose closes (an authority aio.open opened)",
    "Authority.cancel_waits": "aio.Authority.aclose cancels its waits for work",
}

# aio methods and properties without a native counterpart: the wrappers' own.
AIO_ONLY = {
    "Authority.native", "Authority.handed_back", "Authority.aclose", "Authority.settle",
    "Authority.lease", "Lease.native",
}

# Plain methods on both sides: no store call (a token, a keeper's context
# manager, an edit's context manager).
NOT_COROUTINES = {"Authority.edit", "Lease.export_token", "Lease.keep_alive"}

# Return types that differ on purpose.
RETURNS = {
    # Read off the loop whole: an iterator would read the store on the loop.
    "Authority.export_production": ("Iterator[str]", "list[str]"),
}

# The aio names of the native types, and the aliases that accept either handle.
AIO_TYPE_NAMES = {
    "Union[Lease, Lease]": "Lease",
    "_AioFailItem": "_FailItem",
    "_AioCompleteItem": "_CompleteItem",
}
STUB_TYPE_NAMES = {
    "_LeaseOrError": "Union[Lease, TenureError]",
}


@dataclass(frozen=True)
class Member:
    name: str
    coroutine: bool
    prop: bool
    params: tuple[tuple[str, str, str, str], ...]  # (kind, name, annotation, default)
    returns: str


def _text(node: ast.expr | None) -> str:
    return "" if node is None else ast.unparse(node)


def _aio_type(text: str) -> str:
    text = text.replace("_native.", "")
    for a, b in AIO_TYPE_NAMES.items():
        text = text.replace(a, b)
    return text


def _stub_type(text: str) -> str:
    text = text.replace("datetime.timedelta", "timedelta").replace("datetime.datetime",
                                                                   "datetime")
    for a, b in STUB_TYPE_NAMES.items():
        text = text.replace(a, b)
    return text


def _member(f: ast.FunctionDef | ast.AsyncFunctionDef, norm: Callable[[str], str]) -> Member:
    a = f.args
    params: list[tuple[str, str, str, str]] = []
    positional = a.posonlyargs + a.args
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    for arg, d in zip(positional, defaults):
        params.append(("positional", arg.arg, norm(_text(arg.annotation)), _text(d)))
    for arg, d in zip(a.kwonlyargs, a.kw_defaults):
        params.append(("keyword", arg.arg, norm(_text(arg.annotation)), _text(d)))
    prop = any(_text(d) == "property" for d in f.decorator_list)
    return Member(f.name, isinstance(f, ast.AsyncFunctionDef), prop, tuple(params[1:]),
                  norm(_text(f.returns)))


# The aio members made from a native method (``name = _on_lease(_native.Lease.name)``):
# (aio class, attribute, native class, native method).
MADE: list[tuple[str, str, str, str]] = []


def _made_from(cls: str, node: ast.stmt) -> tuple[str, str] | None:
    """``(native class, method)`` when ``node`` makes an aio coroutine from a
    native method."""
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name)
            and node.value.func.id.startswith("_on_") and len(node.value.args) == 1):
        return None
    arg = node.value.args[0]
    assert isinstance(arg, ast.Attribute) and isinstance(arg.value, ast.Attribute), \
        ast.unparse(node)
    assert ast.unparse(arg.value.value) == "_native", ast.unparse(node)
    MADE.append((cls, node.targets[0].id, arg.value.attr, arg.attr))
    return arg.value.attr, arg.attr


def _classes(path: Path, norm: Callable[[str], str],
             natives: dict[str, dict[str, Member]] | None = None
             ) -> dict[str, dict[str, Member]]:
    """Every class of the file with its public members, its bases' (those
    defined in the same file) included. With ``natives`` (the stubs' classes),
    a member made from a native method is that method, as a coroutine."""
    tree = ast.parse(path.read_text())
    defs = {c.name: c for c in tree.body if isinstance(c, ast.ClassDef)}

    def members(c: ast.ClassDef) -> dict[str, Member]:
        out: dict[str, Member] = {}
        for base in c.bases:
            if isinstance(base, ast.Name) and base.id in defs:
                out.update(members(defs[base.id]))
        for f in c.body:
            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                    and not f.name.startswith("_"):
                out[f.name] = _member(f, norm)
            elif natives is not None and (made := _made_from(c.name, f)) is not None:
                assert isinstance(f, ast.Assign) and isinstance(f.targets[0], ast.Name)
                m = natives[made[0]][made[1]]
                out[f.targets[0].id] = Member(f.targets[0].id, True, False, m.params, m.returns)
        return out

    return {name: members(c) for name, c in defs.items()}


STUB = _classes(STUBS, _stub_type)
AIO_CLASSES = _classes(AIO, _aio_type, STUB)
HANDLES = ("Authority", "Edit", "Lease")


def test_coroutines_made_from_native_methods_wrap_their_namesakes() -> None:
    assert len(MADE) >= 20
    for cls, attr, native_cls, method in MADE:
        assert attr == method, f"aio.{cls}.{attr} is made from {native_cls}.{method}"
        # Lease's from tenure.Lease; Authority's and the shared ones from tenure.Authority.
        assert native_cls == ("Lease" if cls == "Lease" else "Authority"), (cls, attr)
        runtime = getattr(getattr(aio, cls), attr)
        assert runtime.__name__ == attr and runtime.__doc__ == getattr(
            getattr(tenure, native_cls), method).__doc__


def test_the_stubs_share_the_writer_operations_once() -> None:
    writer = set(STUB["_Writer"])
    assert {"submit", "claim", "claim_idempotent", "claim_next_many_idempotent",
            "complete_many"} <= writer
    for cls in ("Authority", "Edit"):
        assert writer <= set(STUB[cls])
    # The aio handles share the same operations through their own base.
    assert set(AIO_CLASSES["_Writes"]) == writer


@pytest.mark.parametrize("cls", HANDLES)
def test_every_method_the_stubs_name_exists_at_runtime(cls: str) -> None:
    runtime = getattr(tenure, cls)
    missing = sorted(n for n in STUB[cls] if not hasattr(runtime, n))
    assert missing == [], f"tenure.{cls} lacks what the stubs declare: {missing}"
    public = {n for n in dir(runtime) if not n.startswith("_")}
    assert public == set(STUB[cls]), f"the stubs and tenure.{cls} name other members"


@pytest.mark.parametrize("cls", HANDLES)
def test_every_native_method_has_its_aio_counterpart(cls: str) -> None:
    native, wrapped = STUB[cls], AIO_CLASSES[cls]
    for name, m in native.items():
        key = f"{cls}.{name}"
        if key in NATIVE_ONLY:
            assert name not in wrapped, f"{key} is listed as native-only"
            continue
        assert name in wrapped, f"tenure.aio.{key} is missing"
        w = wrapped[name]
        assert w.prop == m.prop, f"{key}: property on one side only"
        assert w.coroutine == (not m.prop and key not in NOT_COROUTINES), \
            f"tenure.aio.{key}: a store call is a coroutine, nothing else is"
        assert [p[:3] for p in w.params] == [p[:3] for p in m.params], \
            f"{key}: parameters differ"
        for (_, p, _, d_native), (_, _, _, d_aio) in zip(m.params, w.params):
            if d_native != "...":
                assert d_aio.replace("_native.", "") == d_native, f"{key}: default of {p}"
            else:
                assert d_aio != "", f"{key}: {p} has a default natively"
        assert (m.returns, w.returns) == RETURNS.get(key, (m.returns, m.returns)), \
            f"{key}: return type"


@pytest.mark.parametrize("cls", HANDLES)
def test_every_aio_method_wraps_a_native_one(cls: str) -> None:
    extra = sorted(f"{cls}.{n}" for n in AIO_CLASSES[cls]
                   if n not in STUB[cls] and f"{cls}.{n}" not in AIO_ONLY)
    assert extra == [], f"tenure.aio methods with no native counterpart: {extra}"


def test_the_lists_of_differences_name_real_members() -> None:
    for key in [*NATIVE_ONLY, *NOT_COROUTINES, *RETURNS]:
        cls, name = key.split(".")
        assert name in STUB[cls], key
    for key in AIO_ONLY:
        cls, name = key.split(".")
        assert name in AIO_CLASSES[cls] and name not in STUB[cls], key
