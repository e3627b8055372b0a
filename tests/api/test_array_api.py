"""The array-API (2024.12) namespace checked against the standard.

The standard's function list and signatures come from `array_api_strict`, the consortium's
reference implementation (data-apis/array-api-strict): every public function and constant of
its top level, `linalg` and `fft` must exist in `tracer.numpy` (the NumPy drop-in) and in the
namespace `__array_namespace__` returns, and accept every call its signature allows.
"""
from __future__ import annotations

import inspect
import types

import numpy
import pytest

import tracer.numpy as tnp

xs = pytest.importorskip("array_api_strict")
VERSION = "2024.12"


@pytest.fixture(autouse=True, scope="module")
def _standard():
    """array_api_strict as the 2024.12 standard (it defaults to its newest)."""
    xs.set_array_api_strict_flags(api_version=VERSION)
    yield
    xs.reset_array_api_strict_flags()
P = inspect.Parameter

# array_api_strict's own switches, not the standard's
_STRICT_ONLY = {"__version__", "set_array_api_strict_flags", "get_array_api_strict_flags",
                "reset_array_api_strict_flags", "ArrayAPIStrictFlags", "Device"}
# helper D's (DLPack)
_ELSEWHERE = {"from_dlpack", "__dlpack__", "__dlpack_device__"}


def _signature(fn) -> inspect.Signature | None:
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


def _mismatches(std: inspect.Signature, ours: inspect.Signature) -> list[str]:
    """What a call the standard's signature allows would fail to do with ours: a positional
    argument it cannot take, a keyword it does not know, an argument the standard makes
    optional that ours requires."""
    ps = list(ours.parameters.values())
    var_pos = any(p.kind is P.VAR_POSITIONAL for p in ps)
    var_kw = any(p.kind is P.VAR_KEYWORD for p in ps)
    positional = [p for p in ps if p.kind in (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD)]
    by_name = {p.name: p for p in ps if p.kind in (P.POSITIONAL_OR_KEYWORD, P.KEYWORD_ONLY)}
    covered, out = set(), []
    for i, s in enumerate(std.parameters.values()):
        if s.kind is P.VAR_POSITIONAL:
            if not var_pos:
                out.append(f"*{s.name}")
            continue
        if s.kind is P.VAR_KEYWORD:
            if not var_kw:
                out.append(f"**{s.name}")
            continue
        took = []
        if s.kind in (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD):
            if i < len(positional) and not any(p.kind is P.VAR_POSITIONAL for p in ps[:i]):
                took.append(positional[i])
            elif not var_pos:
                out.append(f"{s.name} by position {i}")
        if s.kind in (P.POSITIONAL_OR_KEYWORD, P.KEYWORD_ONLY):
            p = by_name.get(s.name)
            if p is not None:
                took.append(p)
            elif not var_kw:
                out.append(f"keyword {s.name}")
        covered.update(p.name for p in took)
    out += [f"requires {p.name}" for p in ps if p.default is P.empty and p.name not in covered
            and p.kind not in (P.VAR_POSITIONAL, P.VAR_KEYWORD)]
    return out


def _public(mod) -> list[str]:
    return [n for n in mod.__all__ if n not in ("linalg", "fft") and n not in _STRICT_ONLY
            and n not in _ELSEWHERE]


def _report(ns) -> list[str]:
    problems = []
    for sub in ("", "linalg", "fft"):
        smod = getattr(xs, sub) if sub else xs
        ours = getattr(ns, sub, None) if sub else ns
        for name in _public(smod):
            where = f"{sub}.{name}" if sub else name
            std = getattr(smod, name)
            if ours is None or name not in dir(ours) or \
                    "fallback" in getattr(getattr(ours, name), "__qualname__", ""):
                problems.append(f"{where}: missing")
                continue
            got = getattr(ours, name)
            if not callable(std) or isinstance(std, type):
                if isinstance(std, (str, float)) or std is None:
                    if not (got == std or got is std or (got != got and std != std)):
                        problems.append(f"{where}: {got!r} != {std!r}")
                elif numpy.dtype(got) != numpy.dtype(std._np_dtype):
                    problems.append(f"{where}: {got!r} is not {std!r}")
                continue
            s, o = _signature(std), _signature(got)
            if o is None:
                problems.append(f"{where}: no signature")
            else:
                problems += [f"{where}: {m}" for m in _mismatches(s, o)]
    return problems


def test_every_function_of_the_standard_is_in_tracer_numpy_with_a_signature_taking_its_calls():
    assert _report(tnp) == [], "missing or mismatched functions"


def test_the_array_namespace_has_every_function_of_the_standard():
    ns = tnp.asarray([1.0]).__array_namespace__()
    assert _report(ns) == [], "missing or mismatched functions"


def test_the_array_object_has_every_method_and_attribute_of_the_standard():
    ours, std_type = type(tnp.asarray([1.0])), type(xs.asarray([1.0]))
    problems = []
    for name in dir(std_type):
        if name.startswith("_") and not name.startswith("__") or name in _ELSEWHERE or \
                name in dir(object) or name in ("__slots__", "__annotations__", "__module__",
                                                 "__weakref__", "__buffer__", "__array__"):
            continue
        if not hasattr(ours, name):
            problems.append(f"{name}: missing")
            continue
        std, got = getattr(std_type, name), getattr(ours, name)
        if callable(std) and not isinstance(std, property):
            s, o = _signature(std), _signature(got)
            if o is None:
                problems.append(f"{name}: no signature")
            elif s is not None:
                problems += [f"{name}: {m}" for m in _mismatches(s, o)]
    assert problems == [], "missing or mismatched methods"
