"""Gathers fused into their consumers on the cpu backend (opt/fusion.py, emit.Emitter._gather):
one kernel, no temporary, NumPy's values and NumPy's IndexError at the user's line."""
from __future__ import annotations

import traceback

import numpy
import pytest

import tracer
import tracer.numpy as np
from tracer.ir import toposort

pytestmark = pytest.mark.lazy  # kernel counts and plans are the subject

RNG = numpy.random.default_rng(7)
A = RNG.standard_normal((40, 16)).astype(numpy.float32)
I = RNG.integers(-40, 40, 13)


def _lazy(*hs):
    xs = [np.asarray(h) for h in hs]
    tracer.evaluate(*xs)  # realized leaves: the gather's source and index are params
    return xs


def _bits(t, h):
    got = numpy.asarray(t)
    assert got.dtype == h.dtype and got.shape == h.shape
    assert got.tobytes() == h.tobytes()


def _gathers_inside(plan) -> tuple[int, int]:
    """(standalone gather nodes, gathers inside fusion bodies) of a plan's graph."""
    nodes = toposort(plan.graph_after.roots)
    inside = sum(m.op == "gather" for n in nodes if n.op == "fusion"
                 for m in toposort([n.attr("body")]))
    return sum(n.op == "gather" for n in nodes), inside


def test_gather_then_sum_is_one_kernel_without_a_temporary():
    a, i = _lazy(A, I)
    y = (a[i] * 2).sum(1)
    plan = tracer.explain(y)
    assert len(plan.kernels) == 1 and plan.peak_bytes == 0 and _gathers_inside(plan) == (0, 1)
    tracer.reset_stats()
    _bits(y, (A[I] * 2).sum(1))  # (the cpu's float sums are NumPy's pairwise ones)
    assert tracer.stats().kernels_launched == 1


@pytest.mark.parametrize("key", ["rows", "cols", "2d", "pair", "front", "scalar_and_array"])
def test_index_forms_match_numpy(key):
    h3 = RNG.standard_normal((6, 5, 4))
    i2 = RNG.integers(-5, 5, (2, 3))
    j = RNG.integers(-4, 4, 3)
    x, a, ii, i2l, jl = _lazy(h3, A, I, i2, j)
    got, want = {
        "rows": lambda: (a[ii] + 1, A[I] + 1),
        "cols": lambda: ((a[:, jl] * a[:, jl]).sum(0), (A[:, j] * A[:, j]).sum(0)),
        "2d": lambda: (a[i2l].max(-1), A[i2].max(-1)),
        "pair": lambda: (x[i2l[0], :, jl] - 1, h3[i2[0], :, j] - 1),  # B axes first
        "front": lambda: (x[:, i2l, jl[:1]] * 3, h3[:, i2, j[:1]] * 3),
        "scalar_and_array": lambda: (x[1, :, jl] + 0.5, h3[1, :, j] + 0.5),
    }[key]()
    plan = tracer.explain(got)
    assert _gathers_inside(plan)[0] == 0
    _bits(got, want)


def test_lazy_index_computed_by_another_kernel():
    a, i = _lazy(A, I)
    k = (i * 3) % 40 - 20  # negative ones count from the end
    _bits((a[k] * a[k]).sum(1), (A[(I * 3) % 40 - 20] * A[(I * 3) % 40 - 20]).sum(1))


def _numpy_error(fn) -> str:
    with pytest.raises(IndexError) as e:
        fn()
    return str(e.value)


@pytest.mark.parametrize("bad", [[0, 45, 3, -50], [-41], [40, 1]])
def test_out_of_bounds_raises_numpys_error_at_the_users_line(bad):
    a, i = _lazy(A, numpy.array(bad))
    want = _numpy_error(lambda: A[numpy.array(bad) * 1])
    k = i * 1  # computed: checked when the kernel runs
    y = (a[k] * 2).sum(1)
    with pytest.raises(IndexError) as e:
        numpy.asarray(y)
    assert type(e.value) is IndexError and str(e.value) == want  # the first bad index, as NumPy
    user = [f for f in traceback.extract_tb(e.tb) if f.filename == __file__]
    assert user and "y = (a[k] * 2).sum(1)" in user[-1].line


def test_gather_of_a_product_reads_the_materialized_product():
    a, i = _lazy(A, I)
    b = a @ a.T  # not fusible: materialized, the gather reads it
    y = (b[i] + 1).sum(1)
    plan = tracer.explain(y)
    assert _gathers_inside(plan) == (0, 1)
    numpy.testing.assert_allclose(numpy.asarray(y), ((A @ A.T)[I] + 1).sum(1), rtol=1e-5)


def test_replayed_by_jit():
    f = tracer.jit(lambda a, i: (a[i] * 2).sum(1))
    for k in range(3):
        h = A + k
        _bits(f(np.asarray(h), np.asarray(I)), (h[I] * 2).sum(1))
    with pytest.raises(IndexError, match="index 40 is out of bounds for axis 0 with size 40"):
        numpy.asarray(f(np.asarray(A), np.asarray(numpy.array([1, 40]))))


def test_one_kernel_serves_every_size():
    names = set()
    for rows, n in ((40, 13), (9, 30)):
        a, i = _lazy(A[:rows] * 1, RNG.integers(-rows, rows, n))
        names |= {k.name for k in tracer.explain((a[i] * 2).sum(1)).kernels}
    assert len(names) == 1  # sizes, axis lengths included, are kernel arguments


def test_equal_and_unequal_axis_lengths_share_the_kernel():
    # two indexed axes: their lengths are two kernel arguments even where they are equal
    for shape in ((3, 4, 3), (3, 4, 2)):
        h = RNG.standard_normal(shape)
        i, j = numpy.array([0, -1, 2]), numpy.array([1, 0, -2])
        x, il, jl = _lazy(h, i, j)
        _bits(x[il, :, jl] * 2, h[i, :, j] * 2)


def test_predicted_argument_types_are_the_launched_ones(monkeypatch):
    """The compile pool compiles a kernel for the types the backend predicts (signature): a
    fused gather's error records among them."""
    from tracer.cuda_kernels import backends
    cls = backends.backend_class("cpu")
    sig_of, predicted = cls.signature, []

    def signature(self, n, kernel, consts, out=None):
        predicted.append((kernel, sig_of(self, n, kernel, consts, out)))
        return predicted[-1][1]
    monkeypatch.setattr(cls, "signature", signature)
    a, i, j = _lazy(A, I, numpy.array([0, -1]))
    _bits(a[i[:, None], j] * 2 + (a[i] * a[i]).sum(1)[:, None],
          A[I[:, None], [0, -1]] * 2 + (A[I] * A[I]).sum(1)[:, None])
    assert predicted and all(sig in k.fn.overloads for k, sig in predicted)


def test_zero_d_index_and_result():
    a, i = _lazy(A[:, 0] * 1, numpy.array(-3))
    _bits(a[i] * 2, A[-3, 0] * numpy.float32(2) * numpy.ones((), numpy.float32))
    _bits(a[i[None]] + 1, A[[-3], 0] + 1)


@pytest.mark.parametrize("form, loop", [("loop", "for i1 in"), ("sum", "while True"),
                                        ("max", "for j1 in")])
def test_a_gathered_rows_index_is_read_once_per_row(form, loop):
    a, i = _lazy(A, I)
    y = {"loop": a[i] * 2, "sum": a[i].sum(1), "max": a[i].max(1)}[form]
    src = tracer.explain(y).kernels[0].source
    body = src[src.index("@njit(parallel"):]
    assert body.count("_gidx(") == 1 and body.index("_gidx(") < body.index(loop)


def test_gathers_in_a_horizontal_kernel():
    hb, hj = RNG.standard_normal((7, 3)), RNG.integers(-7, 7, 6)
    a, i, b, j = _lazy(A, I, hb, hj)
    x, y = a[i] + 1, b[j] * 2  # small independent loops: one horizontal kernel
    assert [k.kind for k in tracer.explain(x, y).kernels] == ["horizontal"]
    x, y = tracer.evaluate(x, y)
    _bits(x, A[I] + 1)
    _bits(y, hb[hj] * 2)
    bad, = _lazy(numpy.array([1, 20]))
    with pytest.raises(IndexError, match="index 20 is out of bounds for axis 0 with size 7"):
        tracer.evaluate(a[i] + 1, b[bad] * 2)
