"""Gathers fused into their consumers, and ufunc.at's sort-and-segment plan, on the cuda backend
under Numba's simulator: launches, no temporary, no host round trip, NumPy's values (bitwise)
and NumPy's IndexError (flagged on the device, raised at the user's line)."""
from __future__ import annotations

import traceback

import numpy
import pytest

import tracer
import tracer.numpy as np
from tracer.ir import toposort

from counters import Delta

pytestmark = [pytest.mark.lazy, pytest.mark.usefixtures("cuda_sim", "no_host")]

RNG = numpy.random.default_rng(3)
A = RNG.standard_normal((24, 8)).astype(numpy.float32)
I = RNG.integers(-24, 24, 7)


def _lazy(*hs):
    out = tracer.evaluate(*[np.asarray(h) * 1 for h in hs])  # device-resident values
    return out if isinstance(out, (list, tuple)) else [out]


def _bits(t, h):
    got = numpy.asarray(t)
    assert got.dtype == h.dtype and got.shape == h.shape
    assert got.tobytes() == h.tobytes()


def test_gather_then_sum_is_one_launch_without_a_temporary():
    a, i = _lazy(A, I)
    y = (a[i] * 2).sum(1)
    plan = tracer.explain(y)
    assert len(plan.kernels) == 1 and plan.peak_bytes == 0
    assert not any(n.op == "gather" for n in toposort(plan.graph_after.roots))
    with Delta() as d:
        tracer.evaluate(y)
    assert (d.kernels_launched, d.host_waits, d.h2d_copies) == (1, 0, 0)
    # the same reduction kernel over the gathered rows, realized: the same bits
    b, = _lazy(A[I])
    _bits(y, numpy.asarray((b * 2).sum(1)))


@pytest.mark.parametrize("key", ["rows", "2d", "pair", "scalar_and_array"])
def test_index_forms_match_numpy(key):
    h3 = RNG.standard_normal((5, 3, 4))
    i2 = RNG.integers(-5, 5, (2, 3))
    j = RNG.integers(-4, 4, 3)
    x, a, ii, i2l, jl = _lazy(h3, A, I, i2, j)
    got, want = {
        "rows": lambda: (a[ii] * 3 - 1, A[I] * 3 - 1),
        "2d": lambda: (a[i2l].max(-1), A[i2].max(-1)),
        "pair": lambda: (x[i2l[0], :, jl] + 1, h3[i2[0], :, j] + 1),  # B axes first
        "scalar_and_array": lambda: (x[1, :, jl] * x[1, :, jl], h3[1, :, j] * h3[1, :, j]),
    }[key]()
    with Delta() as d:
        _bits(got, want)
    assert d.kernels_launched == 1


@pytest.mark.parametrize("bad", [[0, 30, 2], [-25]])
def test_out_of_bounds_raises_numpys_error_at_the_users_line(bad):
    a, i = _lazy(A, numpy.array(bad))
    with pytest.raises(IndexError) as e:
        A[numpy.array(bad)]
    want = str(e.value)
    k = i * 1  # computed: flagged by the kernel
    y = (a[k] * 2).sum(1)
    with pytest.raises(IndexError) as e:
        numpy.asarray(y)
    assert type(e.value) is IndexError and str(e.value) == want
    user = [f for f in traceback.extract_tb(e.tb) if f.filename == __file__]
    assert user and "y = (a[k] * 2).sum(1)" in user[-1].line


# ---------------------------------------------------------------- ufunc.at

CASES = [("add", "float32", "float32"), ("add", "float32", "float64"),
         ("multiply", "float64", "float64"), ("maximum", "float32", "float32"),
         ("minimum", "float64", "float64"), ("multiply", "int16", "int16"),
         ("maximum", "int8", "int8"), ("add", "int8", "int64"), ("add", "int64", "int64"),
         ("minimum", "uint32", "uint32")]


def _values(dt, n):
    dt = numpy.dtype(dt)
    if dt.kind == "f":
        v = RNG.standard_normal(n) * 3
        v[::7] = numpy.nan if n > 7 else v[::7]  # NaNs propagate as NumPy's loop does
        return v.astype(dt)
    return RNG.integers(0 if dt.kind == "u" else -9, 9, n).astype(dt)


@pytest.mark.parametrize("uf, dt, vdt", CASES)
def test_ufunc_at_with_repeated_indices_is_numpys_bits(uf, dt, vdt):
    h = _values(dt, 12)
    ix = RNG.integers(-12, 12, 40)  # repeated, negative ones too
    v = _values(vdt, 40)
    t, ti, tv = _lazy(h.copy(), ix, v)
    with numpy.errstate(invalid="ignore"):
        getattr(numpy, uf).at(h, ix, v)
    with Delta() as d:
        getattr(np, uf).at(t, ti, tv)
        _bits(t, h)
    # integer add/maximum/minimum of the target's dtype: one atomic kernel (and the copy);
    # the rest: the segment plan's counting sort (fill, count, scan, place, apply, copy)
    atomic = uf in ("add", "maximum", "minimum") and dt in ("int64", "uint32") and dt == vdt
    assert d.kernels_launched == (2 if atomic else 6)
    # no host round trip: at most the counting sort's zero (a constant uploaded once), one
    # wait for the final read
    assert d.h2d_bytes in (0, 8) and d.host_waits == 1


def test_ufunc_at_on_two_axes():
    h = _values("float32", 24).reshape(4, 6)
    i0, i1 = RNG.integers(0, 4, 9), RNG.integers(-6, 6, 9)
    v = _values("float32", 9)
    t, a0, a1, tv = _lazy(h.copy(), i0, i1, v)
    numpy.add.at(h, (i0, i1), v)
    np.add.at(t, (a0, a1), tv)
    _bits(t, h)


def test_ufunc_at_out_of_bounds_raises_numpys_error():
    t, ti = _lazy(numpy.zeros(5, numpy.float32), numpy.array([1, 7, 1]))
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 0 with size 5"):
        np.multiply.at(t, ti * 1, numpy.float32(2))
        numpy.asarray(t)


# ---------------------------------------------------------------- other kernel forms

def test_row_kernel_and_siblings_read_through_the_gather():
    a, i = _lazy(A, I)
    g = a[i]
    e = np.exp(g - g.max(1, keepdims=True))
    sm = e / e.sum(1, keepdims=True)  # a row kernel over the gathered rows
    two = g * 2  # a sibling reading the same gather
    plan = tracer.explain(sm, two)
    assert not any(n.op == "gather" for n in toposort(plan.graph_after.roots))
    sm, two = tracer.evaluate(sm, two)
    b, = _lazy(A[I])
    eb = np.exp(b - b.max(1, keepdims=True))
    _bits(sm, numpy.asarray(eb / eb.sum(1, keepdims=True)))
    _bits(two, A[I] * 2)


GATHER_EXPRS = {
    "loop": lambda a, i, j: a[i] * 2 + 1,
    "reduce": lambda a, i, j: (a[i] * a[i]).sum(1),
    "full_reduce": lambda a, i, j: a[:, j].max(),
    "row": lambda a, i, j: np.exp(a[i] - a[i].max(1, keepdims=True)),
    "two_arrays": lambda a, i, j: a[i[:3, None], j] - 1,
}


@pytest.mark.nvrtc
@pytest.mark.parametrize("name", sorted(GATHER_EXPRS))
def test_fused_gather_kernels_compile_to_ptx(name):
    from tracer.ir.config import context
    from tracer.cuda_kernels.cuda.ptx import compile_ptx
    a = np.asarray(numpy.ones((5, 7), numpy.float32))
    i = np.asarray(numpy.array([0, -1, 3, 2]))
    j = np.asarray(numpy.array([6, 0], numpy.int32))
    with context(backend="cuda", cuda_sim=False):
        plan = tracer.explain(GATHER_EXPRS[name](a, i, j))
    fusions = [n for n in toposort(plan.graph_after.roots) if n.op == "fusion"]
    assert len(fusions) == len(plan.kernels) == 1
    ptxs = compile_ptx(fusions[0], plan.kernels[0], cc=(9, 0), wide=True)
    for ptx in ptxs.values():
        assert ".target sm_90" in ptx and "atom.global.cas" in ptx  # the error record's claim
    from tracer.cuda_kernels.cuda.ptx import assemble, find_ptxas
    ptxas = find_ptxas()
    if ptxas is not None:  # (the nvidia-cuda-nvcc wheel of the test extra)
        usage = assemble(ptxs, "sm_90", ptxas)
        assert not any(u.spill_stores or u.spill_loads or u.stack for u in usage.values())


def test_int64_ufunc_at_wraps_around_as_numpy():
    big = numpy.iinfo(numpy.int64).max
    h = numpy.array([big, 3, big // 2], numpy.int64)
    ix, v = numpy.array([0, 0, 2, 2, 2]), numpy.array([5, big, 3, 4, big], numpy.int64)
    t, ti, tv = _lazy(h.copy(), ix, v)
    numpy.multiply.at(h, ix, v)  # (no atomic: the segment plan)
    np.multiply.at(t, ti, tv)
    _bits(t, h)
