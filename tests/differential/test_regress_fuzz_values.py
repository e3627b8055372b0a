"""Issue 17, fuzzer findings A, B1, B2, H, J, K: values as NumPy gives them. np.full's fill
conversion, complex constants of either zero sign, clip's choice on ties, huge Python ints,
np.sign under the cuda simulator, and sum/prod starting from the identity."""
from __future__ import annotations


import numpy
import pytest

import tracer.numpy as np
from tracer.ir.config import context
from regress import modes, quiet, same  # noqa: F401  (quiet: an autouse fixture)

INF, NAN = float("inf"), float("nan")


# ------------------------------------------------------------------ A: np.full's fill value

@modes("small", "compiled")
def test_full_converts_the_fill_value_unsafely_as_numpy_copyto(mode):
    with context(**mode):
        same(lambda m: m.full((), 1 + 2j, "int8"))
        same(lambda m: m.full((3,), NAN, "int64"))
        same(lambda m: m.full((), 1e308, "int32"))
        same(lambda m: m.full_like(m.zeros(3, "uint64"), -INF))
        same(lambda m: m.full((2,), [1.5, 2 + 1j], "int8"))


@modes("small", "compiled")
def test_full_raises_numpys_error_for_a_python_int_beyond_c_long(mode):
    with context(**mode):
        same(lambda m: m.full((), 2**64, "bool"))
        same(lambda m: m.full((2,), 2**63, "int64"))


# ------------------------------------------------------------------ B1: complex zero constants

@modes("small", "compiled")
def test_complex_zero_constants_of_either_sign_stay_apart(mode):
    with context(**mode):
        same(lambda m: (m.full((2, 3), 0.0, "complex128"), m.full((2, 3), -0.0, "complex128")))
        same(lambda m: (m.full((3,), -0.0, "complex64"), m.zeros((3,), "complex64")))
        same(lambda m: (m.full((3,), -0.0, "complex128"), m.array([1.0 + 1j]) * 0.0))
        same(lambda m: (m.full((2,), complex(0.0, -0.0)), m.full((2,), complex(-0.0, 0.0))))


@modes("small", "compiled")
def test_subtracting_negative_zero_from_a_complex_array_gives_positive_zero(mode):
    def prog(m):
        v = m.array(-0.0 - 0.9j)
        v -= -0.0
        return v
    with context(**mode):
        same(prog)


# ------------------------------------------------------------------ B2: clip on ties

_X = [0.0, -0.0, NAN, 1.0, 3.0, -INF]


@modes("small", "compiled")
@pytest.mark.parametrize("dt", ["float16", "float32", "float64"])
def test_clip_keeps_x_on_a_tie_with_a_zero_bound(mode, dt):
    with context(**mode):
        for lo, hi in [(-0.0, 1.5), (0.0, 1.5), (0, -0.0), (-1, 0.0), (NAN, 2.0), (0.0, NAN),
                       (2.0, 1.0)]:
            same(lambda m: m.clip(m.array(_X, dt), lo, hi))


@modes("small", "compiled")
@pytest.mark.parametrize("dt", ["float16", "float32", "float64"])
def test_clip_with_array_bounds_takes_the_bound_on_a_tie(mode, dt):
    n = len(_X)
    with context(**mode):
        for lo, hi in [(numpy.full(n, -0.0), 1.5), (-1.0, numpy.full(n, -0.0)),
                       (numpy.full(n, 0.0), numpy.full(n, 0.0)), (-0.0, numpy.full(n, NAN))]:
            same(lambda m: m.clip(m.array(_X, dt), m.asarray(numpy.asarray(lo, dt)),
                                  m.asarray(numpy.asarray(hi, dt))))


@modes("small", "compiled")
def test_clip_with_one_bound_is_numpys_maximum_or_minimum(mode):
    with context(**mode):
        same(lambda m: m.clip(m.array(_X), -0.0, None))
        same(lambda m: m.clip(m.array(_X), None, 0.0))


@modes("small", "compiled")
def test_clip_of_complex_data_picks_the_bound_on_a_tie(mode):
    c = [0j, complex(-0.0, 0), complex(NAN, 0), complex(0, NAN), 1 + 1j, -1 + 0.5j]
    with context(**mode):
        same(lambda m: m.clip(m.array(c), -0.0, 1j))
        same(lambda m: m.clip(m.array(c), complex(-1, 0), complex(0, NAN)))
        same(lambda m: m.clip(m.array([0, 3], "uint8"), -0.0, numpy.complex64(1j)))


# ------------------------------------------------------------------ H: huge Python ints

@modes("small", "compiled")
def test_array_and_full_of_a_huge_int_are_numpys_object_arrays(mode):
    with context(**mode):
        for make in (lambda m: m.array(2**64), lambda m: m.array(-2**70),
                     lambda m: m.full((2,), 2**64), lambda m: m.full((), -2**70, order="F")):
            same(make)
            assert type(make(np)) is numpy.ndarray  # objects are NumPy's arrays, as strings


# ------------------------------------------------------------------ J: np.sign on cuda

@pytest.mark.cuda
@pytest.mark.parametrize("dt", ["int8", "float64"])
def test_sign_runs_under_the_cuda_simulator(dt):
    h = numpy.array([[-5, 0, 6]], dt)
    with context(backend="cuda", cuda_sim=True, small_graph=0, compile_mode="sync"):
        got = numpy.asarray(np.sign(np.array(h)))
    assert got.dtype == h.dtype and got.tobytes() == numpy.sign(h).tobytes()


# ------------------------------------------------------------------ K: sum/prod's identity

@modes("small", "compiled")
def test_prod_of_one_complex_element_multiplies_by_the_identity(mode):
    with context(**mode):
        for x in [complex(INF, 0.6), complex(0, INF), complex(NAN, 1), complex(-0.0, -0.0)]:
            same(lambda m: m.prod(m.array(x), keepdims=True))
            same(lambda m: m.prod(m.array([x])))
            same(lambda m: m.prod(m.array([[x], [1j]]), axis=-1))
            same(lambda m: m.prod(m.array([x, 1 + 0j, 1j])))


@modes("small", "compiled")
def test_sum_over_no_axes_adds_positive_zero(mode):
    with context(**mode):
        same(lambda m: m.sum(m.array(-0.0)))
        same(lambda m: m.sum(m.array([-0.0, 1.0]), axis=()))
        same(lambda m: m.sum(m.array(complex(-0.0, -0.0), "complex64")))
        same(lambda m: m.sum(m.array([-0.0], "float16")))
        same(lambda m: m.sum(m.array(-0.0), initial=-0.0))  # NumPy starts from `initial`
        same(lambda m: m.prod(m.array(-0.0)))
        same(lambda m: m.max(m.array(-0.0)))


@modes("small", "compiled")
def test_clip_of_a_0d_complex_runs_numpy(mode):
    with context(**mode):
        same(lambda m: m.clip(m.array(numpy.complex64(-6.4 + 0.9j)), -1, 1j))


@modes("small", "compiled")
def test_write_into_an_empty_region_keeps_a_complex_negative_zero_fill(mode):
    def prog(m):
        v5 = m.full((1, 3), -0.0, "complex64")
        v5[-1:1:-1, :] -= v5
        return v5
    with context(**mode):
        same(prog)


@modes("small", "compiled")
def test_int64_against_uint64_compares_exactly(mode):
    a = numpy.array([-3, 2**63 - 1, -4, 0, 5, -2**63], "int64")
    b = numpy.array([2**63, 2**63 - 1, 3, 0, 2**64 - 1, 1], "uint64")
    with context(**mode):
        for op in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal"):
            same(lambda m: getattr(m, op)(m.asarray(a), m.asarray(b)))
            same(lambda m: getattr(m, op)(m.asarray(b), m.asarray(a)))
            same(lambda m: getattr(m, op)(numpy.uint64(2**63), m.asarray(a)))


@modes()
def test_bool_folds_write_numpys_zero_or_one_bytes_over_a_bool_view(mode):
    # minimum(x, x) is x only when x's bytes are 0/1; NumPy's bool loops write 0/1
    def prog(m, op):
        v0 = m.array(numpy.array([[-4, -1, 6], [0, 7, 2]], "int8"))
        v1 = v0.view("bool")
        if op == "not_not":
            m.logical_not(m.logical_not(v1), out=v1)
        else:
            getattr(m, op)(v1, v1, out=v1)
        return v0
    with context(**mode):
        for op in ("minimum", "maximum", "logical_and", "bitwise_or", "not_not"):
            same(lambda m: prog(m, op))


@modes("small", "compiled")
def test_bools_read_as_scalars_or_reduced_over_no_axes_are_0_or_1(mode):
    """A bool view of other bytes (5) keeps its byte in views, but NumPy's element read makes a
    scalar (byte 1), and a reduction over no axes copies through a bool cast (byte 1); any/all
    over a length-1 axis compute x | False (fuzzer seeds 9950844, 9951096, 9957813)."""
    h = numpy.array([5, 0, 2], "uint8")

    def prog(m):
        v = m.array(h).view("bool")
        v0 = m.array(h[:1].reshape(())).view("bool")
        return [v0[()], v[0], v[2], m.any(v0, keepdims=True), m.all(v0), m.max(v0),
                v0.max(keepdims=True), m.any(v[:1], axis=0, keepdims=True), m.all(v[:1], axis=0),
                v[:1], m.any(v), m.max(v[:1], axis=0, keepdims=True), m.min(v[:1], axis=0)]
    with context(**mode):
        got = [numpy.asarray(x).view("uint8").tolist() for x in prog(np)]
    assert got == [numpy.asarray(x).view("uint8").tolist() for x in prog(numpy)]


@modes("small", "compiled")
def test_nan_constants_keep_their_sign(mode):
    """x86's 0/0 is the negative default NaN (bits 0xfff8...); a folded constant kept only
    NaN-ness and came out positive (fuzzer seed 9975638)."""
    def prog(m):
        v1 = m.zeros((1, 3))
        m.true_divide(v1, m.zeros_like(v1), out=v1)
        return [v1.view("int64"), m.sqrt(-m.ones(2)).view("int64"), m.full(2, m.nan).view("int64")]
    with numpy.errstate(all="ignore"), context(**mode):
        got = [numpy.asarray(x).tolist() for x in prog(np)]
    assert got == [numpy.asarray(x).tolist() for x in prog(numpy)]


@modes("small", "compiled")
def test_clip_ties_of_signed_zeros_follow_numpys_loop(mode):
    """clip(-0.0, lo, 0.0) keeps x where NumPy's inner loop sees both bounds with stride 0,
    else takes the bound: a one-element bound array of the flat loop's shape has a stride
    (fuzzer seed 22301: clip(0-d -0.0, -7, int64 [0]) is [0.0])."""
    cases = [((), (), (1,)), ((1,), (), (1,)), ((3,), (), (1,)), ((1,), (1,), (1,)),
             ((1,), (), ()), ((), (1,), (1, 1)), ((1, 2), (1, 1), ()), ((3,), (), (2, 1))]
    with context(**mode):
        for xs, ls, hs in cases:
            args = [numpy.full(xs, -0.0), numpy.full(ls, -7.0), numpy.full(hs, 0.0)]
            want = numpy.clip(*args)
            got = numpy.asarray(np.clip(*[np.array(a) for a in args]))
            assert numpy.signbit(got).tolist() == numpy.signbit(want).tolist(), (xs, ls, hs)


@modes("small", "compiled")
def test_power_of_a_nan_keeps_its_sign_and_clip_ties_through_a_cast(mode):
    """numba's pow clears a NaN base's sign; NumPy (libm) hands the NaN back as it is (seed
    10104893). A clip whose operand is cast runs NumPy's buffered flat loop: a (2, 1) bound
    has a stride there, so a tie takes the bound (seeds 10103552, 10109274)."""
    bits = numpy.array([-5, 7, 0, 1065353216], "int32")
    x, hi = numpy.zeros((2, 3), "int16"), numpy.array([[3.8], [1.0]])
    with context(**mode):
        v = np.array(bits)
        v3 = v.view("float32")
        np.power(v3, v, out=v3)
        got = [numpy.asarray(v).tolist(),
               numpy.signbit(numpy.asarray(np.clip(np.array(x), -0.0, np.array(hi)))).tolist()]
    w = bits.copy()
    w3 = w.view("float32")
    with numpy.errstate(all="ignore"):
        numpy.power(w3, w, out=w3)
    assert got == [w.tolist(), numpy.signbit(numpy.clip(x, -0.0, hi)).tolist()]
