"""The op sweep, generated from the registry: every elementwise ufunc and every reduction in
`ir.registry.OPS`, for every dtype, against NumPy on the cpu backend (values, dtype, shape).

Inputs are the cross product of each dtype's interesting values (NaN, +-inf, -0.0, subnormals,
rounding ties, integer min/max, shift widths, zero divisors), so one evaluation per (op, dtypes)
covers them all and compiles exactly one kernel; the empty case reuses that kernel (sizes are
kernel arguments). A loop with a kernel template must run as a kernel and one without must run
in the interpreter: the sweep checks which one ran. Compile time is the cost of this file, so
transcendental ops (whose integer loops only add a cast) run three integer dtypes, not eight,
and so do the reductions that only cast (sum, prod, any, all).

This is the one registry sweep: the registry's completeness check and its NO_KERNEL set live
here, and tests/backends/cuda/test_cuda.py compiles the same ufunc loops to PTX.
"""
from __future__ import annotations

import ast
import itertools
import re
import string
import warnings

import numpy as np
import pytest

import tracer
import tracer.numpy as tnp
from tracer.cuda_kernels.emit import TYPE_NAMES
from tracer.ir.registry import ACC_ARG, OPS, Kind, names, reduce_identity
from tracer.cuda_kernels.cpu.helpers import HELPERS as CPU_HELPERS
from tracer.cuda_kernels.cuda.codegen import HELPER_SOURCES as CUDA_HELPERS
from tracer.cuda_kernels.helpers import HELPERS

pytestmark = pytest.mark.lazy  # a kernel sweep: every op runs through its kernels

KERNEL_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                 "uint64", "float32", "float64")
INTERP_DTYPES = ("float16", "complex64", "complex128")  # no kernels: the interpreter runs them
UFUNCS = sorted(n for n, d in OPS.items() if d.kind is Kind.ELEMENTWISE and d.ufunc is not None)

# Float results compared bit for bit (NaN payloads aside): IEEE arithmetic, no libm call.
EXACT = {"add", "subtract", "multiply", "divide", "floor_divide", "remainder", "fmod",
         "negative", "positive", "absolute", "fabs", "sign", "square", "reciprocal", "conjugate",
         "sqrt", "floor", "ceil", "trunc", "rint", "maximum", "minimum", "fmax", "fmin",
         "copysign", "heaviside", "deg2rad", "radians", "rad2deg", "degrees", "nextafter",
         "spacing", "ldexp"}
# The rest call libm in Numba and NumPy's own (SIMD) code in NumPy: a few ulp apart.
RTOL = {np.dtype(np.float32): 4e-7, np.dtype(np.float64): 4e-15}
# NumPy's fmax/fmin return either zero for (0.0, -0.0): its SIMD loop (long arrays) takes the
# second operand, its scalar loop the first. Every other float op's zero has a defined sign.
ZERO_SIGN_UNDEFINED = {"fmax", "fmin"}
# Integer inputs of transcendental ops only add a cast: int16 -> the float32 loop, uint64 ->
# the float64 loop, int8 -> the float16 loop (the interpreter: no kernel to compile).
TRANSCENDENTAL_INT_DTYPES = ("int8", "int16", "uint64")


# ---------------------------------------------------------------- inputs


def special_values(dtype) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return np.array([False, True])
    if dt.kind in "iu":
        info, bits = np.iinfo(dt), dt.itemsize * 8
        vals = {0, 1, 2, 3, 5, 7, 100, bits - 1, bits, bits + 1, info.max - 1, info.max}
        if dt.kind == "i":
            vals |= {-1, -2, -3, -7, -bits, info.min, info.min + 1}
        return np.array(sorted(vals), dtype=dt)
    if dt.kind == "f":
        fi = np.finfo(dt)
        big = 2.0 ** fi.nmant  # from here on every float is an integer
        vals = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 1.5, -1.5, 2.5, -2.5, 3.0, -7.0, 0.3, -0.7,
                100.0, big - 0.5, -(big + 1), fi.smallest_subnormal, -fi.tiny, fi.max, -fi.max,
                np.inf, -np.inf, np.nan]
        return np.array(vals, dtype=dt)
    parts = [0.0, -0.0, 1.0, -1.5, np.inf, np.nan]
    return np.array([complex(r, i) for r in parts for i in parts], dtype=dt)


def cross(dtypes) -> list[np.ndarray]:
    """One 1-d array per operand: together, every combination of the operands' specials."""
    grid = list(itertools.product(*[special_values(d) for d in dtypes]))
    return [np.array([g[k] for g in grid], dtype=dt) for k, dt in enumerate(dtypes)]


def numpy_call(fn, *args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(*args)


# ---------------------------------------------------------------- comparison


def assert_same(name: str, got, want, signed_zeros: bool = True) -> None:
    """Same dtype and shape; integer and bool results equal; float results NaN-aware, bit for
    bit for the EXACT ops and within a few ulp for the rest, with the same sign of zero."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, f"{name}: dtype {got.dtype} != {want.dtype}"
    assert got.shape == want.shape, f"{name}: shape {got.shape} != {want.shape}"
    if want.dtype.kind not in "fc":
        np.testing.assert_array_equal(got, want, err_msg=name, strict=True)
        return
    if name in EXACT or want.dtype not in RTOL:
        np.testing.assert_array_equal(got, want, err_msg=name)
    else:
        np.testing.assert_allclose(got, want, rtol=RTOL[want.dtype], atol=0, equal_nan=True,
                                   err_msg=name)
    if signed_zeros and want.dtype.kind == "f" and name not in ZERO_SIGN_UNDEFINED:
        zero = (want == 0) & (got == 0)
        bad = np.signbit(got[zero]) != np.signbit(want[zero])
        assert not bad.any(), f"{name}: sign of zero differs at {np.flatnonzero(zero)[bad]}"


def lazy_args(args):
    """Arrays become lazy arrays; Python scalars stay as they are (weak, under NEP 50)."""
    return [tnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]


def has_kernel(name: str, args) -> bool:
    """Whether the loop NumPy picks for these operands runs as a kernel (casts included)."""
    d = OPS[name]
    keys = tuple(a.dtype if isinstance(a, np.ndarray) else type(a) for a in args)
    loop = d.ufunc.resolve_dtypes(keys + (None,))
    cast = OPS["cast"].template  # a Python scalar becomes a constant of the loop's dtype
    casts_ok = all(isinstance(a, type) or a == b or cast((a,), b) is not None
                   for a, b in zip(keys, loop))
    if name == "power" and not isinstance(args[1], np.ndarray) and args[1] in (0, 1, 2):
        return True  # x**1 and x**2 are recorded as positive and square (ufuncs.py); x**0 folds
    if name in ("positive", "conjugate") and keys[0].kind != "c":
        return True  # the simplifier removes these on real values: nothing is left to run
    return casts_ok and d.template is not None and \
        d.template(loop[:-1], loop[-1]) is not None


def check_ufunc(name: str, args: list[np.ndarray]) -> None:
    """tracer's `name` on `args` (and on their empty slices) against NumPy's."""
    uf = OPS[name].ufunc
    try:
        want = numpy_call(uf, *args)
    except Exception as e:  # NumPy rejects these dtypes or values: tracer raises the same
        with pytest.raises(type(e)):
            tracer.evaluate(getattr(tnp, name)(*lazy_args(args)))
        return
    interpreted = tracer.stats().interpreted_nodes
    lazy = getattr(tnp, name)(*lazy_args(args))
    assert isinstance(lazy, tracer.ndarray)
    assert (lazy.dtype, lazy.shape) == (want.dtype, want.shape)  # known before evaluation
    got = np.asarray(lazy)
    ran_interpreter = tracer.stats().interpreted_nodes > interpreted
    assert ran_interpreter != has_kernel(name, args), f"{name}: interpreter ran: {ran_interpreter}"
    assert_same(name, got, want)
    empty = [a[:0] if isinstance(a, np.ndarray) else a for a in args]
    assert_same(name, getattr(tnp, name)(*lazy_args(empty)), numpy_call(uf, *empty))


def is_transcendental(name: str) -> bool:
    """Integers go to a float loop whose result is not exact."""
    uf = OPS[name].ufunc
    return name not in EXACT and \
        uf.resolve_dtypes((np.dtype(np.int64),) * uf.nin + (None,))[-1].kind == "f"


def sweep_cases():
    for name in UFUNCS:
        skip_ints = is_transcendental(name)
        for dt in KERNEL_DTYPES + INTERP_DTYPES:
            if skip_ints and dt[0] in "iu" and dt not in TRANSCENDENTAL_INT_DTYPES:
                continue
            yield pytest.param(name, dt, id=f"{name}-{dt}")


@pytest.mark.parametrize("name,dtype", list(sweep_cases()))
def test_ufunc(name, dtype):
    check_ufunc(name, cross([dtype] * OPS[name].ufunc.nin))


# Mixed operand dtypes: promotion (int64+uint64 -> float64, float32+int32 -> float64) with the
# casts inside the kernel; ldexp has only (float, int) loops.
MIXED = [("int64", "uint64"), ("float32", "int32")]
LDEXP = [("float64", "int64"), ("float64", "int8"), ("float16", "int16")]


@pytest.mark.parametrize("name,dtypes", [
    pytest.param(n, m, id=f"{n}-{m[0]}-{m[1]}") for n in UFUNCS if OPS[n].ufunc.nin == 2
    for m in MIXED + (LDEXP if n == "ldexp" else [])])
def test_ufunc_mixed_dtypes(name, dtypes):
    check_ufunc(name, cross(dtypes))


# Python scalars are weak (NEP 50): the array's dtype wins, and an int that does not fit raises.
# One kernel per op: the scalar is a kernel argument. (-0.0: see test_negative_zero_constant*.)
SCALARS = {"float64": [0.0, 1.0, -1.5, np.inf, np.nan], "int8": [0, 1, -1, 7, 127, -128, 300]}


@pytest.mark.parametrize("name,dtype", [
    pytest.param(n, dt, id=f"{n}-{dt}") for n in UFUNCS if OPS[n].ufunc.nin == 2
    for dt in SCALARS if dt == "float64" or not is_transcendental(n)])
def test_binary_with_python_scalar(name, dtype):
    x = special_values(dtype)
    for s in SCALARS[dtype]:
        check_ufunc(name, [x, s])


def test_negative_zero_constant_is_not_zero():
    x = tnp.asarray(np.array([1.0, 2.0]))
    keep = x * 0.0  # a 0.0 constant is alive
    assert_same("multiply", x * -0.0, np.array([1.0, 2.0]) * -0.0)
    assert_same("negative", tnp.negative(np.float64(0.0)), np.negative(np.float64(0.0)))
    del keep


def test_subtracting_negative_zero():
    h = np.array([-0.0, 1.0])
    assert_same("subtract", tnp.asarray(h) - (-0.0), h - (-0.0))


def test_integer_power():
    """NumPy refuses negative integer exponents (by value, at run time); the rest wrap."""
    for dt in ("int8", "int64"):
        a, b = cross([dt, dt])
        check_ufunc("power", [a, b])  # raises ValueError, as NumPy does
        check_ufunc("power", [a[b >= 0], b[b >= 0]])


@pytest.mark.parametrize("name", UFUNCS)
def test_ufunc_0d(name):
    """NumPy scalars in, 0-d arrays of NumPy's dtype out (constants: these fold, no kernel)."""
    uf = OPS[name].ufunc
    for dt in ("float64", "int64", "bool"):
        try:
            uf.resolve_dtypes((np.dtype(dt),) * uf.nin + (None,))
        except TypeError:
            continue
        for v in special_values(dt)[::3]:
            args = [np.dtype(dt).type(v)] * uf.nin
            try:
                want = np.asarray(numpy_call(uf, *args))
            except ValueError:
                continue
            got = getattr(tnp, name)(*args)
            assert (got.dtype, got.shape) == (want.dtype, ())
            assert_same(name, got, want)
        return
    raise AssertionError(f"{name} takes none of float64, int64, bool")


@pytest.mark.parametrize("dtype", ["float64", "int32", "bool"])
@pytest.mark.parametrize("shape", [(), (0,), (3, 0)])
def test_empty_and_0d_lazy_inputs(dtype, shape):
    """Lazy 0-d and empty arrays (not NumPy scalars, not slices of a bigger input) through an
    elementwise op, a reduction over the last axis and a logical op."""
    h = np.ones(shape, dtype=dtype)
    t = tnp.asarray(h)
    axis = -1 if shape else None
    for lazy, want in [(t + t, h + h), (tnp.sum(t, axis=axis), np.sum(h, axis=axis)),
                       (tnp.logical_not(t), np.logical_not(h))]:
        assert_same("empty", lazy, want)


@pytest.mark.parametrize("name", ["add", "sin", "floor_divide", "maximum", "isnan", "where"])
def test_0d_kernels(name):
    """0-d arrays held in buffers run a 0-d kernel."""
    xs, ys = np.array(-2.5), np.array(-0.0)
    x, y = tnp.asarray(xs), tnp.asarray(ys)
    launched = tracer.stats().kernels_launched
    if name == "where":
        got, want = tnp.where(x < y, x, y), np.where(xs < ys, xs, ys)
    else:
        nin = OPS[name].ufunc.nin
        got = getattr(tnp, name)(*[x, y][:nin])
        want = numpy_call(getattr(np, name), *[xs, ys][:nin])
    assert got.shape == ()
    assert_same(name, got, want)
    assert tracer.stats().kernels_launched > launched


# ---------------------------------------------------------------- reductions

REDUCTIONS = {"sum": "reduce_sum", "prod": "reduce_prod", "max": "reduce_max",
              "min": "reduce_min", "any": "reduce_any", "all": "reduce_all",
              "argmax": "argmax", "argmin": "argmin"}
# sum and prod of the narrower integers reduce a fused cast to int64/uint64, and any/all of
# numbers reduce a fused `!= 0`: one dtype per family stands for the others.
NARROW_REDUCTIONS = {"sum": ("bool", "int8", "uint16", "int64", "uint64", "float32", "float64"),
                     "any": ("bool", "int8", "uint64", "float32", "float64")}
NARROW_REDUCTIONS["prod"] = NARROW_REDUCTIONS["sum"]
NARROW_REDUCTIONS["all"] = NARROW_REDUCTIONS["any"]


def reduction_matrix(fn: str, dtype) -> np.ndarray:
    """Rows with and without NaN and inf, finite only, reversed, all equal (ties), integer
    extremes (sums and products wrap)."""
    v = special_values(dtype)
    dt = v.dtype
    if dt.kind == "b":
        rows = [[False] * 5, [True] * 5, [False, True, False, True, True],
                [True, False, True, True, True]]
        return np.array(rows, dtype=dt)
    if fn == "sum" and dt == np.float32:
        v = v[np.abs(v) != np.finfo(dt).max]  # see test_float32_sum_overflows_in_float32
    n = len(v)
    finite = v[np.isfinite(v)]
    nonan = v[~np.isnan(v)]
    rows = [v, np.resize(nonan, n), np.resize(finite, n), np.resize(finite[::-1], n),
            np.full(n, v[-2]), np.resize(v[::-1], n)]
    return np.array(rows, dtype=dt)


def shifted_rows(fn: str, dtype) -> np.ndarray:
    """Four rows of 2n+1 specials (reduction_matrix's last row), each starting at another value:
    each special is first, last and between others in some row (the same kernels: same dtype
    and rank)."""
    v = reduction_matrix(fn, dtype)[-1]
    return np.resize(v, (4, 2 * len(v) + 1))


def check_reduction(fn: str, h, axis) -> None:
    try:
        want = np.asarray(numpy_call(lambda x: getattr(np, fn)(x, axis=axis), h))
    except Exception as e:  # max/min/argmax of nothing
        with pytest.raises(type(e)):
            tracer.evaluate(getattr(tnp, fn)(tnp.asarray(h), axis=axis))
        return
    lazy = getattr(tnp, fn)(h if np.ndim(h) == 0 else tnp.asarray(h), axis=axis)
    assert (lazy.dtype, lazy.shape) == (want.dtype, want.shape)
    got = np.asarray(lazy)
    where = f"{fn}(axis={axis}) of {np.asarray(h).dtype}{list(np.shape(h))}"
    if fn == "sum" and want.dtype.kind == "f":
        # tracer adds in float64 blocks, NumPy pairwise in the dtype: equal up to rounding of
        # the partial sums, which is relative to the sum of magnitudes, not to the result
        finite = np.isfinite(want)
        np.testing.assert_array_equal(got[~finite], want[~finite], err_msg=where)
        scale = numpy_call(lambda x: np.sum(np.abs(x.astype(np.float64)), axis=axis), h)
        err = np.abs(got[finite].astype(np.float64) - want[finite])
        assert (err <= 4 * np.finfo(want.dtype).eps * np.asarray(scale)[finite]).all(), where
    else:
        # NumPy's max/min may return either of -0.0 and 0.0, depending on its SIMD path
        assert_same(where, got, want, signed_zeros=fn not in ("max", "min"))


@pytest.mark.parametrize("fn,dtype", [
    pytest.param(fn, dt, id=f"{fn}-{dt}") for fn in REDUCTIONS
    for dt in NARROW_REDUCTIONS.get(fn, KERNEL_DTYPES) + INTERP_DTYPES])
def test_reduction(fn, dtype):
    for h in (reduction_matrix(fn, dtype), shifted_rows(fn, dtype)):
        for axis in (None, 0, 1):
            check_reduction(fn, h, axis)
    for shape in ((0, 3), (3, 0)):  # the same kernels; max/min/argmax of nothing raise
        for axis in (None, 0, 1):
            check_reduction(fn, np.zeros(shape, dtype), axis)


# Reductions with no NumPy function of their own: swept through their ufunc's `reduce`, so a
# new registry reduction is swept without an entry here.
UFUNC_REDUCTIONS = [n for n in names(lambda d: d.kind is Kind.REDUCE and d.ufunc is not None)
                    if n not in REDUCTIONS.values()]


@pytest.mark.parametrize("name,dtype", [
    pytest.param(n, dt, id=f"{n}-{dt}") for n in UFUNC_REDUCTIONS
    for dt in ("bool", "int16", "uint64", "float32", "float64") + INTERP_DTYPES])
def test_ufunc_reduction(name, dtype):
    uf = OPS[name].ufunc
    for h in (reduction_matrix(name, dtype), shifted_rows(name, dtype), np.zeros((0, 3), dtype)):
        for axis in (None, 0, 1):
            try:
                want = np.asarray(numpy_call(lambda x: uf.reduce(x, axis=axis), h))
            except TypeError:  # no loop for the dtype (logaddexp of complex): raised eagerly
                with pytest.raises(TypeError):
                    uf.reduce(tnp.asarray(h), axis=axis)
                continue
            got = numpy_call(lambda x: np.asarray(uf.reduce(tnp.asarray(x), axis=axis)), h)
            assert_same(f"{uf.__name__}.reduce(axis={axis}) of {h.dtype}{list(h.shape)}",
                        got, want)


@pytest.mark.parametrize("fn", list(REDUCTIONS))
def test_reduction_0d(fn):
    for v in (np.float64(2.5), np.float64(np.nan), np.int8(-128), np.True_):
        check_reduction(fn, v, None)


def test_float32_product_rounds_and_overflows_in_float32():
    """NumPy multiplies float32 in float32, in order: it overflows where float64 would not, and
    rounds at every step."""
    h = np.array([1e30, 1e30, 1e-30, 3.0], np.float32)
    r = np.random.default_rng(0).uniform(0.9, 1.1, (7, 300)).astype(np.float32)
    for x, axis in [(h, None), (r, None), (r, 0), (r, 1)]:
        assert_same("prod", tnp.prod(tnp.asarray(x), axis=axis),
                    numpy_call(lambda a: np.prod(a, axis=axis), x))


def test_float32_sum_overflows_in_float32():
    """Within a block, float32 sums add in float32 (vector lanes), as NumPy's pairwise sum
    does: a partial past float32's max is inf in both."""
    h = np.array([3e38, 3e38, -3e38], np.float32)
    assert_same("sum", tnp.sum(tnp.asarray(h)), numpy_call(np.sum, h))


# ---------------------------------------------------------------- the registry itself

NO_KERNEL = {"nextafter", "spacing", "ldexp"}  # elementwise ufuncs with no template at all


def test_every_registry_entry_is_complete():
    for name, d in OPS.items():
        assert d.name == name and isinstance(d.kind, Kind) and isinstance(d.nin, int), name
        assert callable(d.shape_rule) and callable(d.dtype_rule), name
        assert callable(d.ref) or d.kind is Kind.LEAF, name
        if d.kind is Kind.ELEMENTWISE:
            assert (d.template is None) == (name in NO_KERNEL), name
            if d.ufunc is not None:
                assert d.nin == d.ufunc.nin and d.ref is d.ufunc, name
        if d.kind is Kind.REDUCE and d.accumulate == ACC_ARG:
            assert d.ufunc is None and d.better in (">", "<"), name
        elif d.kind is Kind.REDUCE:  # a ufunc's reduction: swept by test_reduction or
            # test_ufunc_reduction
            assert d.identity is not None and d.combine and d.ufunc is not None, name
            assert d.accumulate, name
            for dt in (np.dtype(np.float32), np.dtype(np.float64)):
                c = d.combine if isinstance(d.combine, str) else d.combine((dt, dt), dt)
                ast.parse(c.format("acc", "v"), mode="eval")
            if d.ufunc.identity is not None:
                assert reduce_identity(d, np.dtype(np.float64)) == d.ufunc.identity, name
    assert set(REDUCTIONS.values()) <= set(OPS)
    for dt in KERNEL_DTYPES:  # max and min start from the dtype's lowest and highest value
        lo, hi = (np.iinfo(dt).min, np.iinfo(dt).max) if dt[0] in "iu" else \
            (False, True) if dt == "bool" else (-np.inf, np.inf)
        assert reduce_identity(OPS["reduce_max"], np.dtype(dt)) == lo, dt
        assert reduce_identity(OPS["reduce_min"], np.dtype(dt)) == hi, dt


def _loops(d) -> list[tuple]:
    """Every (input dtypes, output dtype) loop NumPy picks for inputs of the kernel dtypes."""
    out = []
    for dts in itertools.product(KERNEL_DTYPES, repeat=d.ufunc.nin):
        try:
            loop = d.ufunc.resolve_dtypes(tuple(np.dtype(t) for t in dts) + (None,))
        except TypeError:
            continue
        out.append((loop[:-1], loop[-1]))
    return list(dict.fromkeys(out))


def test_templates_are_python_calling_known_helpers():
    """Every template, for every loop: Python that parses, has one placeholder per operand,
    and calls only shared helpers and the dtype aliases; each backend's table defines every
    shared helper, each one a function of its name."""
    for name in UFUNCS:
        d = OPS[name]
        if d.template is None:
            continue
        for ins, o in _loops(d):
            tpl = d.template(ins, o)
            if tpl is None:
                continue
            fields = {f for _, f, _, _ in string.Formatter().parse(tpl) if f is not None}
            assert fields <= {str(i) for i in range(d.nin)}, (name, tpl)
            ast.parse(tpl.format(*[f"x{i}" for i in range(d.nin)]), mode="eval")
            for h in re.findall(r"\b(_\w+)\(", tpl):
                assert h in HELPERS or h in TYPE_NAMES.values(), (name, h)
    for table in (HELPERS, CPU_HELPERS, CUDA_HELPERS):
        assert set(HELPERS) <= set(table)
        for h, src in table.items():
            assert ast.parse(src).body[0].name == h, h


def test_algebraic_properties_hold_in_numpy():
    """The simplifier trusts these flags. involution: f(f(x)) == x; idempotent: f(x, x) == x
    bit for bit; commutative: f(a, b) == f(b, a) by value (maximum's ties keep the second
    operand: -0.0 and 0.0 swap); associative: exactly, for integers."""
    for name in UFUNCS:
        d, p = OPS[name], OPS[name].props
        for dt in KERNEL_DTYPES:
            try:
                d.ufunc.resolve_dtypes((np.dtype(dt),) * d.nin + (None,))
            except TypeError:
                continue
            v = special_values(dt)
            if p.involution:
                np.testing.assert_array_equal(numpy_call(d.ref, numpy_call(d.ref, v)), v, name)
            if p.idempotent:
                r = numpy_call(d.ref, v, v)
                if r.dtype == v.dtype:
                    np.testing.assert_array_equal(r, v, name, strict=True)
                    np.testing.assert_array_equal(np.signbit(r), np.signbit(v), name)
            if p.commutative:
                a, b = cross([dt, dt])
                np.testing.assert_array_equal(numpy_call(d.ref, a, b), numpy_call(d.ref, b, a),
                                              name)
            if p.associative and dt[0] in "iub":
                a, b, c = cross([dt, dt, dt])
                np.testing.assert_array_equal(numpy_call(d.ref, numpy_call(d.ref, a, b), c),
                                              numpy_call(d.ref, a, numpy_call(d.ref, b, c)),
                                              name)


_INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
# Loops ("ufunc:input dtypes") that run in the interpreter, besides the float16 loops (which
# int8, uint8 and bool inputs of float functions get). A new kernel removes its line here.
EXPECTED_FALLBACKS = {
    "nextafter:float32,float32", "nextafter:float64,float64",
    "spacing:float32", "spacing:float64",
    "ldexp:float32,int32", "ldexp:float32,int64", "ldexp:float64,int32", "ldexp:float64,int64",
    *(f"power:{t},{t}" for t in _INTS),  # a negative exponent raises: the interpreter does
    *(f"reciprocal:{t}" for t in _INTS),
}


def test_which_loops_have_kernels():
    fallbacks = set()
    for name in UFUNCS:
        d = OPS[name]
        for ins, o in _loops(d):
            half = np.dtype(np.float16) in ins + (o,)
            kernel = d.template is not None and d.template(ins, o) is not None
            assert not (half and kernel), f"{name}: a float16 kernel"
            if not kernel and not half:
                fallbacks.add(f"{name}:{','.join(t.name for t in ins)}")
    assert fallbacks == EXPECTED_FALLBACKS


def test_complex_and_float16_go_through_the_interpreter():
    h = np.array([1 + 2j, -3j, np.nan + 1j], np.complex128)
    before = tracer.stats().interpreted_nodes
    t = tnp.asarray(h)
    got = np.asarray(tnp.exp(t) * 2 + t.sum())
    np.testing.assert_array_equal(got, numpy_call(lambda x: np.exp(x) * 2 + x.sum(), h))
    assert tracer.stats().interpreted_nodes > before
    f = np.array([0.5, -0.0, 65504.0, np.inf], np.float16)
    assert_same("add", tnp.asarray(f) + tnp.asarray(f), numpy_call(np.add, f, f))
