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
# checked here too, and against NumPy's and other libraries' DLPack in test_dlpack.py
_ELSEWHERE: set[str] = set()


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


_X = object()  # the test's array
# defaults the namespace spells otherwise than the standard: a call with the standard's value
# (test_the_namespace_takes_the_standard_s_defaults_spelled_out)
_SPELLED_OUT = {
    "clip": ((_X,), {"min": None, "max": None}), "std": ((_X,), {"correction": 0.0}),
    "var": ((_X,), {"correction": 0.0}), "zeros": ((3,), {"dtype": None}),
    "eye": ((3,), {"dtype": None}), "empty": ((2,), {"dtype": None}),
    "linalg.pinv": ((_X,), {"rtol": None}),
    **{f"fft.{n}": ((_X,), {"norm": "backward"}) for n in (
        "fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft")}}


def _other_defaults(where: str, std: inspect.Signature, ours: inspect.Signature) -> list[str]:
    spelled = _SPELLED_OUT.get(where, ((), {}))[1]
    return [f"{where}: {p.name}={ours.parameters[p.name].default!r}, not {p.default!r}"
            for p in std.parameters.values()
            if p.default is not P.empty and p.name in ours.parameters and p.name not in spelled
            and repr(ours.parameters[p.name].default) != repr(p.default)
            and "Undef" not in repr(p.default)]  # (array_api_strict's "not given")


def _public(mod) -> list[str]:
    return [n for n in mod.__all__ if n not in ("linalg", "fft") and n not in _STRICT_ONLY
            and n not in _ELSEWHERE]


def _report(ns, defaults: bool = False) -> list[str]:
    """Names of the standard missing from ns, or whose signature refuses a call the standard
    allows; with `defaults`, default values it spells otherwise too."""
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
                if defaults:
                    problems += _other_defaults(where, s, o)
    return problems


def test_every_function_of_the_standard_is_in_tracer_numpy_with_a_signature_taking_its_calls():
    assert _report(tnp) == [], "missing or mismatched functions"
    # tracer.numpy is NumPy's drop-in: where NumPy's defaults are not the standard's it keeps
    # NumPy's (not stable by default; diff(prepend=None) prepends None); the namespace has
    # the standard's
    assert _report(tnp, defaults=True) == [
        "argsort: stable=None, not True", "diff: prepend=<no value>, not None",
        "diff: append=<no value>, not None", "sort: stable=None, not True",
        "vecdot: axis=<no value>, not -1"]


def test_the_array_namespace_has_every_function_of_the_standard():
    ns = tnp.asarray([1.0]).__array_namespace__()
    assert _report(ns, defaults=True) == [], "missing or mismatched functions"


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


# ---------------------------------------------------------------- the functions added

def _same(got, want):
    """got is tracer's (arrays, 0-d arrays), want NumPy's: values and dtypes, tuples alike."""
    if isinstance(want, tuple):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
        return
    assert isinstance(got, tnp.ndarray)
    g = numpy.asarray(got)
    assert g.dtype == numpy.asarray(want).dtype and g.shape == numpy.shape(want)
    numpy.testing.assert_array_equal(g, want)


def _same_error(call_numpy, call_tracer):
    with pytest.raises(Exception) as want:
        call_numpy()
    with pytest.raises(type(want.value)) as got:
        call_tracer()
    assert str(got.value) == str(want.value)


A = numpy.arange(24).reshape(2, 3, 4) % 7
F = numpy.array([[3.0, -1.5, numpy.nan, 2.0], [0.5, 2.0, 2.0, -0.0]])
C = numpy.array([1 + 2j, -3j, 4.0])


@pytest.mark.lazy
def test_recorded_compositions_evaluate_nothing():
    import tracer
    x = tnp.asarray(A) + 1
    before = tracer.stats().evaluations
    outs = [*tnp.unstack(x, axis=1), tnp.matrix_transpose(x),
            tnp.cumulative_sum(x, axis=2, include_initial=True),
            tnp.cumulative_prod(x, axis=0), tnp.linalg.cross(x[:, :, :3], x[:, :, 1:]),
            tnp.linalg.vecdot(x, x, axis=0), tnp.sort(x, axis=1, descending=True),
            tnp.argsort(x, descending=True), tnp.fft.fftshift(x, axes=(0, 2))]
    assert tracer.stats().evaluations == before
    want = [*numpy.unstack(A + 1, axis=1), numpy.matrix_transpose(A + 1),
            numpy.cumulative_sum(A + 1, axis=2, include_initial=True),
            numpy.cumulative_prod(A + 1, axis=0),
            numpy.linalg.cross((A + 1)[:, :, :3], (A + 1)[:, :, 1:]),
            numpy.linalg.vecdot(A + 1, A + 1, axis=0)]
    for g, w in zip(outs, want):
        _same(g, w)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_unstack_and_matrix_transpose_as_numpy(axis):
    _same(tnp.unstack(tnp.asarray(A), axis=axis), numpy.unstack(A, axis=axis))
    _same(tnp.matrix_transpose(tnp.asarray(A)), numpy.matrix_transpose(A))
    _same(numpy.unstack(tnp.asarray(F)), numpy.unstack(F))  # NumPy's function dispatches
    for fn, xs_ in (("unstack", [numpy.float64(2.0), A[0, 0, 0]]),
                    ("matrix_transpose", [A[0, 0, 0], A[0, 0]])):
        for x in xs_:
            _same_error(lambda: getattr(numpy, fn)(x), lambda: getattr(tnp, fn)(tnp.asarray(x)))
    _same_error(lambda: numpy.unstack(A, axis=3), lambda: tnp.unstack(tnp.asarray(A), axis=3))


@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod"])
def test_cumulative_functions_as_numpy(name):
    np_fn, t_fn = getattr(numpy, name), getattr(tnp, name)
    for x, kw in [(A[0, 0], {}), (A[0, 0], {"include_initial": True}),
                  (A, {"axis": 1, "include_initial": True}), (A, {"axis": -1, "dtype": "f4"}),
                  (F, {"axis": 0, "include_initial": True}), (numpy.float64(3), {}),
                  (A[:, :0], {"axis": 1, "include_initial": True}),
                  (A[0] > 2, {"axis": 1})]:
        _same(t_fn(tnp.asarray(x), **kw), np_fn(x, **kw))
    _same_error(lambda: np_fn(A), lambda: t_fn(tnp.asarray(A)))
    _same_error(lambda: np_fn(A, axis=3), lambda: t_fn(tnp.asarray(A), axis=3))
    out_np, out = numpy.zeros((2, 5)), tnp.zeros((2, 5))
    r = t_fn(tnp.asarray(A[0, :2]), axis=1, out=out, include_initial=True)
    assert r is out
    _same(out, np_fn(A[0, :2], axis=1, out=out_np, include_initial=True))


def test_real_imag_isdtype_broadcast_shapes_as_numpy():
    for x in (C, F, A[0]):
        _same(tnp.real(tnp.asarray(x)), numpy.real(x))
        _same(tnp.imag(tnp.asarray(x)), numpy.imag(x))
    assert tnp.real(1 + 2j) == numpy.real(1 + 2j) and tnp.imag([1j, 2]).tolist() == [1.0, 0.0]
    assert tnp.isdtype(tnp.asarray(F).dtype, "real floating")
    assert not tnp.isdtype(tnp.int8, ("complex floating", tnp.uint8))
    assert tnp.broadcast_shapes((2, 1), (3,)) == (2, 3)


def test_unique_functions_as_numpy_and_sorted_in_the_namespace():
    x = numpy.array([[3, 1, 3], [2, 1, 0]])
    for name in ("unique_all", "unique_counts", "unique_inverse", "unique_values"):
        _same(getattr(tnp, name)(tnp.asarray(x)), getattr(numpy, name)(x))
    xp = tnp.asarray(x).__array_namespace__()
    values, index, inverse, counts = xp.unique_all(tnp.asarray(x))
    for got, want in zip((values, index, inverse, counts),
                         numpy.unique(x, return_index=True, return_inverse=True,
                                      return_counts=True)):
        _same(got, want.reshape(got.shape))
    assert inverse.shape == x.shape
    _same(xp.unique_values(tnp.asarray([0, 1])), numpy.array([0, 1]))  # NumPy's: [1, 0]
    _same(xp.unique_inverse(tnp.asarray(x)).inverse_indices, inverse)
    _same(xp.unique_counts(tnp.asarray(x)).counts, counts)


@pytest.mark.parametrize("axis", [-1, 0, None])
def test_descending_sorts_as_array_api_strict(axis):
    """The standard's descending order keeps equal elements in their order (stable): the
    reference implementation's answers, NaNs included."""
    x = numpy.array([[2, 1, 2, 0, 1, 2], [5, 5, 3, 5, 3, 9]])
    for a in (x, F.ravel() if axis is None else F):
        kw = {} if axis is None else {"axis": axis}
        if axis is None:  # the standard has no axis=None: flat, as tracer's sort has it
            a = a.ravel()
        for name in ("sort", "argsort"):
            want = numpy.asarray(getattr(xs, name)(xs.asarray(a), descending=True, **kw))
            _same(getattr(tnp, name)(tnp.asarray(a), descending=True, stable=True, **kw), want)
            xp = tnp.asarray(a).__array_namespace__()
            _same(getattr(xp, name)(tnp.asarray(a), descending=True, **kw), want)
            _same(getattr(xp, name)(tnp.asarray(a), **kw),
                  numpy.asarray(getattr(xs, name)(xs.asarray(a), **kw)))


def test_linalg_cross_and_vecdot_as_numpy():
    a = numpy.arange(12).reshape(4, 3) - 5
    b = numpy.array([1.5, -2.0, 0.25])
    for x1, x2, kw in [(a, a[::-1], {}), (a, b, {}), (a.T, a.T * 2, {"axis": 0}),
                       (a.astype("i1"), a.astype("u1"), {}), (C, b, {})]:
        _same(tnp.linalg.cross(tnp.asarray(x1), tnp.asarray(x2), **kw),
              numpy.linalg.cross(x1, x2, **kw))
        if x1.shape == x2.shape:
            _same(tnp.linalg.vecdot(tnp.asarray(x1), tnp.asarray(x2), **kw),
                  numpy.linalg.vecdot(x1, x2, **kw))
    for x1, x2 in [(a[:, :2], a[:, :2]), (a, a[:, :2]), (a > 0, a < 0)]:
        _same_error(lambda: numpy.linalg.cross(x1, x2),
                    lambda: tnp.linalg.cross(tnp.asarray(x1), tnp.asarray(x2)))
    _same_error(lambda: numpy.linalg.cross(a, a, axis=2),
                lambda: tnp.linalg.cross(tnp.asarray(a), tnp.asarray(a), axis=2))


def test_fft_as_numpy():
    x = numpy.arange(12.0).reshape(3, 4) ** 1.5
    for name, kw in [("fft", {}), ("ifft", {"n": 6, "norm": "ortho"}), ("rfft", {"axis": 0}),
                     ("irfft", {}), ("fftn", {"axes": (0, 1)}), ("hfft", {}), ("ihfft", {})]:
        got = getattr(tnp.fft, name)(tnp.asarray(x), **kw)
        want = getattr(numpy.fft, name)(x, **kw)
        assert isinstance(got, tnp.ndarray) and numpy.asarray(got).dtype == want.dtype
        numpy.testing.assert_allclose(numpy.asarray(got), want, rtol=1e-12, atol=1e-12)
    for axes in (None, 0, (1,), (0, -1)):
        for name in ("fftshift", "ifftshift"):
            _same(getattr(tnp.fft, name)(tnp.asarray(x), axes=axes),
                  getattr(numpy.fft, name)(x, axes=axes))
    _same(tnp.fft.fftfreq(5, 0.5), numpy.fft.fftfreq(5, 0.5))
    _same(tnp.fft.rfftfreq(6, dtype=tnp.float32), numpy.fft.rfftfreq(6).astype("f4"))
    _same_error(lambda: numpy.fft.fftfreq(5, device="gpu"),
                lambda: tnp.fft.fftfreq(5, device="gpu"))


_CREATION = {"asarray": ([1.0],), "asanyarray": ([1.0],), "zeros": (3,), "ones": (3,),
             "empty": (3,), "full": (3, 1.5), "zeros_like": ([1, 2],), "ones_like": ([1, 2],),
             "empty_like": ([1, 2],), "full_like": ([1, 2], 7), "arange": (3,),
             "linspace": (0, 1, 5), "eye": (3,)}


@pytest.mark.parametrize("name", sorted(_CREATION))
def test_creation_functions_take_numpy_s_devices(name):
    args = _CREATION[name]
    for device in (None, "cpu"):
        got = getattr(tnp, name)(*args, device=device)
        want = getattr(numpy, name)(*args, device=device)
        if name != "empty" and name != "empty_like":
            _same(got, want)
        assert got.device == "cpu" and got.shape == want.shape and got.dtype == want.dtype
    if name in ("zeros", "empty", "ones", "full", "eye", "arange"):  # dtype=None: NumPy's default
        got, want = getattr(tnp, name)(*args, dtype=None), getattr(numpy, name)(*args, dtype=None)
        assert got.dtype == want.dtype
    for device in ("gpu", 1, "cuda:0"):
        _same_error(lambda: getattr(numpy, name)(*args, device=device),
                    lambda: getattr(tnp, name)(*args, device=device))


def test_the_namespace_returns_arrays_where_numpy_returns_scalars():
    """Array-API code (scikit-learn's) takes every result to a namespace: a NumPy scalar
    (a small realized array's reduction) would be NumPy's."""
    array_api_compat = pytest.importorskip("array_api_compat")
    t = tnp.asarray([1.0, 2.0, 4.0])
    xp = array_api_compat.array_namespace(t)
    assert xp is t.__array_namespace__() and xp.__array_api_version__ == "2024.12"
    for r in (xp.sum(t), xp.max(t), xp.linalg.vector_norm(t), xp.mean(t)):
        assert isinstance(r, tnp.ndarray) and r.shape == ()
        assert array_api_compat.array_namespace(r, t) is xp
    assert float(xp.mean(t)) == numpy.mean([1.0, 2.0, 4.0])
    assert xp.linalg.slogdet(xp.eye(2)).sign.shape == ()


def test_the_namespace_takes_the_standard_s_defaults_spelled_out():
    """Where the namespace's default is another spelling (NumPy's <no value>, float for None,
    norm=None), the standard's value passed explicitly means the same: each such default
    (_report lists the others as mismatches) called both ways."""
    x = tnp.asarray(numpy.array([[3.0, -1.5, 2.0], [0.5, 2.0, 4.0]])) * 2
    xp = x.__array_namespace__()
    for name, (args, kw) in _SPELLED_OUT.items():
        args = tuple(x if a is _X else a for a in args)
        fn = xp
        for part in name.split("."):
            fn = getattr(fn, part)
        got, want = fn(*args, **kw), fn(*args)
        assert numpy.asarray(got).dtype == numpy.asarray(want).dtype
        numpy.testing.assert_array_equal(numpy.asarray(got), numpy.asarray(want))
    _same(xp.clip(x, 1.5), numpy.asarray(xs.clip(xs.asarray(numpy.asarray(x)), 1.5)))
    _same(xp.diff(x, prepend=x[:, :1], axis=1), numpy.diff(numpy.asarray(x), axis=1,
                                                         prepend=numpy.asarray(x)[:, :1]))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (arccos(3.0) and the like)
def test_the_namespace_agrees_with_array_api_strict_on_every_function(monkeypatch):
    """Each function of the standard on small float, int and bool arrays (one and two
    operands): where the reference implementation answers, the namespace answers the same
    (values, dtype, shape; tuples alike), with tracer arrays. Recorded, then interpreted as
    small graphs: a kernel for each would take half a minute to compile."""
    from tracer.ir.config import CONFIG
    monkeypatch.setattr(CONFIG, "small_graph", 64)
    f = numpy.array([[0.5, -1.25, 3.0], [2.0, 0.0, -0.75]])
    i = numpy.array([[3, -1, 4], [1, 5, -9]])
    xp = tnp.asarray(f).__array_namespace__()
    skip = {"from_dlpack", "finfo", "iinfo", "result_type", "empty", "empty_like"} | _STRICT_ONLY
    bad = []
    for name in xs.__all__:
        std = getattr(xs, name)
        if not callable(std) or isinstance(std, type) or name in skip:
            continue
        for data in ([f], [i], [i > 0], [f, f[::-1]], [i, i[::-1]], [i > 0, i < 2]):
            try:
                want = std(*map(xs.asarray, data))
            except Exception:
                continue  # not a call the standard allows
            got = getattr(xp, name)(*map(tnp.asarray, data))
            want = tuple(want) if isinstance(want, (tuple, list)) else (want,)
            got = tuple(got) if isinstance(got, (tuple, list)) else (got,)
            for w, g in zip(want, got, strict=True):
                w, ok = numpy.asarray(w), isinstance(g, tnp.ndarray)
                g = numpy.asarray(g)
                if not ok or g.dtype != w.dtype or g.shape != w.shape or \
                        not numpy.allclose(g, w, rtol=1e-12, atol=0, equal_nan=True):
                    bad.append(f"{name}{tuple(d.dtype.name for d in data)}")
    assert bad == []


_SKLEARN = """
import os, warnings
os.environ["SCIPY_ARRAY_API"] = "1"  # before scipy is imported: scikit-learn requires it
import numpy, sklearn
import tracer.numpy as tnp
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.linear_model import Ridge
rng = numpy.random.default_rng(0)
X = rng.standard_normal((60, 4))
y = (X[:, 0] + 0.3 * rng.standard_normal(60) > 0).astype(numpy.int64) + 2 * (X[:, 1] > 0.5)
yr = X @ numpy.arange(1.0, 5.0) + 0.1 * rng.standard_normal(60)
for make, target in [(lambda: LinearDiscriminantAnalysis(solver="svd"), y),
                     (lambda: Ridge(alpha=0.5, solver="svd"), yr)]:
    want = make().fit(X, target)
    with sklearn.config_context(array_api_dispatch=True), warnings.catch_warnings():
        warnings.simplefilter("error")  # no NumPy fallback on the way
        got = make().fit(tnp.asarray(X), tnp.asarray(target))
        pred = got.predict(tnp.asarray(X))
        assert isinstance(pred, tnp.ndarray) and isinstance(got.coef_, tnp.ndarray)
        numpy.testing.assert_allclose(numpy.asarray(got.coef_), want.coef_, rtol=0, atol=1e-10)
        numpy.testing.assert_allclose(numpy.asarray(pred), want.predict(X), rtol=0, atol=1e-10)
        if hasattr(want, "decision_function"):
            numpy.testing.assert_allclose(numpy.asarray(got.decision_function(tnp.asarray(X))),
                                          want.decision_function(X), rtol=0, atol=1e-10)
print("ok")
"""


def test_scikit_learn_array_api_dispatch_fits_on_tracer_arrays():
    """LinearDiscriminantAnalysis and Ridge (solver="svd") with array_api_dispatch=True fit and
    predict on tracer arrays as on NumPy's. One subprocess: SCIPY_ARRAY_API must be set before
    SciPy is imported."""
    import os
    import subprocess
    import sys
    pytest.importorskip("sklearn")
    pytest.importorskip("array_api_compat")
    r = subprocess.run([sys.executable, "-c", _SKLEARN], capture_output=True, text=True,
                       env={**os.environ, "SCIPY_ARRAY_API": "1"}, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-3000:]
