"""`ufunc.reduceat` as the lazy library op `reduceat`, against NumPy to the bit: random segments
(empty, decreasing, one element, longer than a pairwise leaf), every axis, the dtypes and
ufuncs with reductions, NaN and inf, dtype= and out=, lazy indices, NumPy's errors at the
user's line; on the cpu backend (NumPy's routine) and on cuda under the simulator (one kernel,
two in the split form for few long segments; NumPy's loop through the host where no kernel
gives its bits)."""
from __future__ import annotations

import traceback

import numpy
import pytest

import tracer
import tracer.numpy as np
from tracer.ir.config import context

from counters import Delta

# the simulator runs kernels on NumPy scalars, which warn where the device wraps or gives NaN
pytestmark = pytest.mark.filterwarnings("ignore:.* encountered in scalar:RuntimeWarning")

UFUNCS = ("add", "multiply", "maximum", "minimum", "fmax", "logical_and", "logical_or",
          "bitwise_and", "bitwise_or", "bitwise_xor")
DTYPES = (numpy.bool_, numpy.int8, numpy.int64, numpy.uint64, numpy.float32, numpy.float64)


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=pytest.mark.cuda)])
def backend(request):
    """Both backends (cuda under the simulator)."""
    with context(backend=request.param, cuda_sim=True):
        yield request.param


def _values(rng, shape, dt):
    """Values of dt with NaN, inf and signed zeros among floats, wrap-around among integers."""
    dt = numpy.dtype(dt)
    if dt.kind == "b":
        return rng.random(shape) < 0.6
    if dt.kind == "f":
        v = (rng.standard_normal(shape) * 10.0 ** rng.integers(-2, 5, shape)).astype(dt)
        special = numpy.array([numpy.nan, numpy.inf, -numpy.inf, -0.0, 0.0], dt)
        mask = rng.random(shape) < 0.05
        v[mask] = rng.choice(special, int(mask.sum()))
        return v
    info = numpy.iinfo(dt)
    return rng.integers(max(info.min, -100), min(info.max, 100) + 1, shape).astype(dt) \
        if dt.itemsize > 1 else rng.integers(info.min, info.max + 1, shape).astype(dt)


def _indices(rng, n):
    """Segment starts in [0, n): ascending runs with repeats (empty segments) and drops."""
    k = int(rng.integers(1, 7))
    return rng.integers(0, n, k).tolist() + [n - 1, 0]


def _same(got, want, zero_sign=True):
    """To the bit (-0.0 too), NaNs where NumPy has them: which NaN a sum of NaNs gives is the
    compiler's choice (it swaps the operands of an add) and the device's (one canonical NaN).
    Not zero_sign: a zero's sign is not compared (float maximum and minimum: NumPy's depends on
    its SIMD width, cuda_kernels/cuda/reduceat.py)."""
    got = numpy.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind == "f":
        nan = numpy.isnan(want)
        assert (numpy.isnan(got) == nan).all(), (got, want)
        loose = nan if zero_sign else nan | (want == 0)
        got, want = numpy.where(loose, 0, got), numpy.where(loose, 0, want)
    assert got.tobytes() == want.tobytes(), (got, want)


def _loops(uf, dt):
    try:
        getattr(numpy, uf).reduceat(numpy.zeros(1, dt), [0])
    except TypeError:
        return False
    return True


@pytest.mark.parametrize("uf", UFUNCS)
@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: numpy.dtype(d).name)
def test_reduceat_matches_numpy(backend, uf, dt):
    if not _loops(uf, dt):
        pytest.skip("NumPy has no loop")
    rng = numpy.random.default_rng(UFUNCS.index(uf) * 10 + DTYPES.index(dt))
    shape = (3, 4, 11) if backend == "cpu" else (2, 3, 9)
    a = _values(rng, shape, dt)
    fallbacks = tracer.stats().fallbacks
    for axis in (0, 1, -1):
        idx = _indices(rng, a.shape[axis])
        with numpy.errstate(all="ignore"):  # (inf * 0)
            want = getattr(numpy, uf).reduceat(a, idx, axis=axis)
        with Delta() as d:
            _same(getattr(np, uf).reduceat(np.asarray(a), idx, axis=axis), want,
                  uf not in ("maximum", "minimum"))
        assert tracer.stats().fallbacks == fallbacks
        if backend == "cuda":  # one kernel, or NumPy's loop on the host (float fmax: -0.0)
            assert d.kernels_launched == (0 if uf == "fmax" and a.dtype.kind == "f" else 1)


@pytest.mark.parametrize("dt", (numpy.float32, numpy.float64))
def test_float_sums_are_numpys_pairwise_sums(backend, dt):
    """First element plus numpy's pairwise sum of the rest: segments of 1 to 700 values (several
    pairwise leaves), along a contiguous axis and a strided one."""
    rng = numpy.random.default_rng(7)
    a = (rng.standard_normal((2, 1400)) * 10.0 ** rng.integers(-3, 6, (2, 1400))).astype(dt)
    idx = [0, 1, 9, 8, 137, 300, 301, 700]
    with Delta() as d:
        _same(np.add.reduceat(np.asarray(a), idx, axis=1), numpy.add.reduceat(a, idx, axis=1))
    assert d.kernels_launched == (backend == "cuda")
    at = numpy.ascontiguousarray(a.T)
    _same(np.add.reduceat(np.asarray(at), idx, axis=0), numpy.add.reduceat(at, idx, axis=0))
    z = numpy.full(20, -0.0, dt)
    _same(np.add.reduceat(np.asarray(z), [0, 3, 19]), numpy.add.reduceat(z, [0, 3, 19]))


def test_lazy_operands_and_indices(backend):
    rng = numpy.random.default_rng(3)
    a = rng.standard_normal((4, 10)).astype(numpy.float32)
    idx = numpy.array([0, 4, 4, 2, 9])
    t = np.asarray(a) * 2
    li = np.asarray(idx) + 0  # computed: checked when it runs
    _same(np.maximum.reduceat(t, li, axis=1), numpy.maximum.reduceat(a * 2, idx, axis=1))
    _same(np.add.reduceat(t, np.asarray(idx.astype(numpy.int8)) * 1, axis=1),
          numpy.add.reduceat(a * 2, idx, axis=1))
    _same(np.add.reduceat(t[:, ::2], [0, 2], axis=1),
          numpy.add.reduceat((a * 2)[:, ::2], [0, 2], axis=1))


@pytest.mark.parametrize("case", [
    dict(a=numpy.arange(6, dtype=numpy.int8) * 50, idx=[0, 3], kw=dict(dtype=numpy.int8)),
    dict(a=numpy.arange(6, dtype=numpy.int8) * 50, idx=[0, 3], kw=dict(dtype=numpy.float32)),
    dict(a=numpy.linspace(0.5, 3.3, 6), idx=[0, 3], kw=dict(dtype=numpy.float32)),
    dict(a=numpy.array([True, False, True]), idx=[0, 1], kw={}),
    dict(a=numpy.arange(6.0), idx=[], kw={}),
    dict(a=numpy.zeros(0), idx=[], kw={}),
    dict(a=numpy.zeros((2, 0)), idx=[0, 1], kw=dict(axis=0)),
    dict(a=numpy.arange(4.0), idx=numpy.array([True, False]), kw={}),
    dict(a=numpy.arange(4.0), idx=[1.7, 0.2], kw={}),
    dict(a=numpy.arange(4.0), idx=[0, 2], kw=dict(axis=(0,))),
    dict(a=numpy.arange(4.0), idx=[0, 2], kw=dict(axis=None)),
])
def test_dtypes_and_edge_shapes(backend, case):
    want = numpy.add.reduceat(case["a"], case["idx"], **case["kw"])
    _same(np.add.reduceat(np.asarray(case["a"]), case["idx"], **case["kw"]), want)


@pytest.mark.parametrize("a_dt, out_dt", [(numpy.float64, numpy.float32),
                                          (numpy.float32, numpy.float64),
                                          (numpy.float64, numpy.int64), (numpy.int64, numpy.int8),
                                          (numpy.int8, numpy.int8), (numpy.bool_, numpy.bool_)])
def test_out_computes_in_numpys_loop_and_casts(backend, a_dt, out_dt):
    a = (numpy.linspace(-3.7, 300.3, 301) * 1.001).astype(a_dt)
    idx = [0, 100, 37, 300]
    want = numpy.full(4, 9, out_dt)
    with numpy.errstate(all="ignore"):
        numpy.add.reduceat(a, idx, out=want)
    out = np.asarray(numpy.full(4, 9, out_dt))
    assert np.add.reduceat(np.asarray(a), idx, out=out) is out
    _same(out, want)
    host = numpy.full(4, 9, out_dt)
    assert np.add.reduceat(np.asarray(a), idx, out=(host,)) is host
    _same(host, want)


@pytest.mark.parametrize("uf, a_dt, out_dt, dt", [("subtract", numpy.bool_, numpy.int32, None),
                                                   ("maximum", numpy.float64, numpy.int8, None),
                                                   ("add", numpy.int8, numpy.float32, numpy.int8),
                                                   ("bitwise_xor", numpy.float64, numpy.int64,
                                                    numpy.int64)])
def test_out_and_dtype_pick_numpys_loop(backend, uf, a_dt, out_dt, dt):
    """A loop only out's dtype has (bool subtract into int32), casts into out, dtype= with out."""
    a = (numpy.linspace(-3.7, 300.3, 41) * 1.01).astype(a_dt)
    idx = [0, 10, 4, 40]
    want = numpy.full(4, 9, out_dt)
    with numpy.errstate(all="ignore"):
        getattr(numpy, uf).reduceat(a, idx, out=want, dtype=dt)
    out = np.asarray(numpy.full(4, 9, out_dt))
    getattr(np, uf).reduceat(np.asarray(a), idx, out=out, dtype=dt)
    _same(out, want)


def _raises(fn, *args, **kw):
    """The exception NumPy raises for fn (a numpy ufunc's reduceat) on host operands."""
    try:
        fn(*args, **kw)
    except Exception as e:  # noqa: BLE001 - any: the test compares type and message
        return e
    raise AssertionError("NumPy did not raise")


@pytest.mark.parametrize("call", [
    lambda m, a: m.add.reduceat(a, [0, 7]),
    lambda m, a: m.add.reduceat(a, [2, -1]),
    lambda m, a: m.add.reduceat(a, [[0, 1]]),
    lambda m, a: m.add.reduceat(a, 1),
    lambda m, a: m.add.reduceat(a, numpy.array([0, 1], numpy.uint64)),
    lambda m, a: m.add.reduceat(a, numpy.array([0.0, 1.0])),
    lambda m, a: m.add.reduceat(a, [0], axis=1),
    lambda m, a: m.add.reduceat(a.reshape(2, 3), [0], axis=None),
    lambda m, a: m.sin.reduceat(a, [0]),
    lambda m, a: m.bitwise_and.reduceat(a, [0]),
    lambda m, a: m.add.reduceat(a[0], [0]),
    lambda m, a: m.add.reduceat(a, [0, 2], out=m.zeros(3)),
    lambda m, a: m.add.reduceat(a, [0, 2], out=m.zeros((1, 2))),
    lambda m, a: m.add.reduceat(a, [0, 2], out=[1, 2]),
    lambda m, a: m.add.reduceat(a, [0, 2], out=(m.zeros(2), m.zeros(2))),
    lambda m, a: m.add.reduceat(a, [0, 2], out=numpy.broadcast_to(0.0, (2,))),  # read-only
])
def test_errors_are_numpys_at_the_users_line(backend, call):
    a = numpy.arange(6.0)
    want = _raises(call, numpy, a)
    t = np.asarray(a)
    evals = tracer.stats().evaluations
    with pytest.raises(type(want)) as got:
        call(np, t)
    assert str(got.value) == str(want)
    assert tracer.stats().evaluations == evals  # raised while recording
    assert _user_frame(got).filename == __file__


def _user_frame(excinfo) -> traceback.FrameSummary:
    """The innermost frame outside tracer's packages and NumPy's: the user's line."""
    return [f for f in traceback.extract_tb(excinfo.tb) if not any(
        p in f.filename for p in ("/tracer/", "/ir/", "/opt/", "/cuda_kernels/", "numpy"))][-1]


@pytest.mark.lazy  # (an index computed eagerly is known: NumPy's error while recording)
@pytest.mark.parametrize("shape, idx", [((5,), [0, 2, 7]), ((5,), [0, 9, -1, 7, 3] * 5),
                                        ((0, 5), [1, -4])])
def test_lazy_index_out_of_bounds_raises_when_it_runs(backend, shape, idx):
    """NumPy's error for its first bad index, at the user's line, when the result is read."""
    want = _raises(numpy.add.reduceat, numpy.zeros(shape), idx, axis=-1)
    t = np.asarray(numpy.zeros(shape))
    r = np.add.reduceat(t, np.asarray(numpy.array(idx)) + 0, axis=-1)  # recorded: no error yet
    with pytest.raises(IndexError) as e:
        numpy.asarray(r)
    assert str(e.value) == str(want) and "reduceat" in _user_frame(e).line


@pytest.mark.parametrize("uf, a", [("add", [1 + 2j, 3 - 1j, 0.5j, 2.0]),  # no device dtype
                                   ("power", [2.0, 3.0, 2.0, 1.5]),  # NumPy: 2.0 ** 2.0, then 1.5
                                   ("arctan2", [3.0, 5.0, -2.0, 7.0]),
                                   ("logaddexp", [0.5, 3.0, -2.0, 7.0])])
def test_what_has_no_kernel_is_numpys_loop(backend, uf, a):
    """NumPy's own loop (on cuda through the host) where the kernel cannot give its bits."""
    a = numpy.array(a, numpy.complex128 if uf == "add" else numpy.float32)
    fallbacks = tracer.stats().fallbacks
    with Delta() as d:
        _same(getattr(np, uf).reduceat(np.asarray(a), [0, 3, 1]),
              getattr(numpy, uf).reduceat(a, [0, 3, 1]))
    assert d.kernels_launched == 0 and tracer.stats().fallbacks == fallbacks


@pytest.mark.nvrtc
@pytest.mark.parametrize("arg, dts", [("add__float32__float32", ("float32", "float32", "float32")),
                                      ("maximum__int8__int8", ("int8", "int8", "int8")),
                                      ("add__bool__int64", ("int64", "bool", "int64"))])
def test_segment_kernels_compile_to_ptx(arg, dts):
    """The thread form and the split form's two kernels (dts: out, x, the loop's dtype)."""
    import numba
    from numba import cuda
    from tracer.cuda_kernels.cuda.backend import CudaBackend
    from tracer.cuda_kernels.cuda.ptx import _py_func, nb_array
    out, x, loop = (nb_array(d, 1) for d in dts)
    i64, ints = nb_array("int64", 1), (numba.int64,) * 4
    sigs = {"": (out, x, i64, i64) + ints, "_part": (loop, i64, x, i64, i64) + ints + ints[:1],
            "_comb": (out, loop, i64, x, i64) + ints + ints[:1]}
    for variant, sig in sigs.items():
        with context(cuda_sim=False):
            fn = CudaBackend().library_kernel("reduceat", arg, variant)
        assert ".target sm_90" in cuda.compile_ptx(_py_func(fn), sig, cc=(9, 0))[0]


@pytest.mark.cuda
@pytest.mark.parametrize("depth", [1, 3])
@pytest.mark.parametrize("uf, dt", [("add", numpy.float32), ("add", numpy.float64),
                                    ("add", numpy.int8), ("maximum", numpy.float32),
                                    ("bitwise_or", numpy.uint64), ("logical_and", numpy.float64)])
def test_split_form_is_numpys_order(monkeypatch, depth, uf, dt):
    """Few long segments: 2**depth pieces each (numpy's pairwise subtrees for a float sum),
    combined as the recursion combines them; two launches."""
    import tracer.cuda_kernels.cuda.reduceat as seg
    monkeypatch.setattr(seg, "FORCE_DEPTH", depth)
    rng = numpy.random.default_rng(depth)
    a = _values(rng, (2, 1500), dt)
    at = numpy.ascontiguousarray(a.T)
    with context(backend="cuda", cuda_sim=True):
        for x, axis, idx in [(a, 1, [0, 1, 7, 6, 1499]), (a, 1, [3, 400, 1200]), (at, 0, [0, 900])]:
            with numpy.errstate(all="ignore"):  # (inf - inf)
                want = getattr(numpy, uf).reduceat(x, idx, axis=axis)
            with Delta() as d:
                _same(getattr(np, uf).reduceat(np.asarray(x), idx, axis=axis), want,
                      uf != "maximum")
            assert d.kernels_launched == 2


def test_split_form_only_where_it_pays_and_keeps_numpys_order():
    from tracer.cuda_kernels.cuda.reduceat import split_depth
    f32, i64 = numpy.dtype(numpy.float32), numpy.dtype(numpy.int64)
    assert split_depth("add", f32, 2, 10**8, 2, sim=False) > 0  # two long segments
    assert split_depth("add", i64, 2, 10**8, 2, sim=False) > 0
    assert split_depth("add", f32, 10**6, 10**8, 10**6, sim=False) == 0  # many short ones
    assert split_depth("multiply", f32, 2, 10**8, 2, sim=False) == 0  # rounds in sequence
    assert split_depth("add", f32, 2, 10**8, 2, sim=True) == 0


def test_data_tracer_does_not_hold_runs_numpy_counted():
    a = numpy.array([1, 2, 3], object)
    before = tracer.stats().fallbacks
    with pytest.warns(UserWarning):
        got = np.add.reduceat(a, [0, 2])
    assert list(numpy.asarray(got)) == [3, 3] and tracer.stats().fallbacks == before + 1


def test_numpys_own_ufunc_on_a_lazy_array_records_it(backend):
    a = numpy.arange(12.0).reshape(3, 4)
    before = tracer.stats().fallbacks
    got = numpy.add.reduceat(np.asarray(a) * 1, [0, 2, 1], axis=1)  # __array_ufunc__
    assert isinstance(got, tracer.ndarray) and tracer.stats().fallbacks == before
    _same(got, numpy.add.reduceat(a, [0, 2, 1], axis=1))
    out = np.zeros((3, 3))
    assert numpy.maximum.reduceat(np.asarray(a), [0, 2, 1], axis=1, out=out) is out
    _same(out, numpy.maximum.reduceat(a, [0, 2, 1], axis=1))


@pytest.mark.filterwarnings("ignore::UserWarning")  # (the fallback's, once a line)
def test_an_out_numpy_remaps_gets_numpys_answer(backend):
    """NumPy takes out of shape (k, 1) for a result of shape (k,): its answer, counted."""
    a, out = numpy.arange(5.0), np.zeros((2, 1))
    before = tracer.stats().fallbacks
    np.add.reduceat(np.asarray(a), [0, 2], out=out)
    _same(out, numpy.add.reduceat(a, [0, 2], out=numpy.zeros((2, 1))))
    assert tracer.stats().fallbacks == before + 1


@pytest.mark.filterwarnings("ignore::UserWarning")  # (the fallback's)
def test_a_ufunc_from_outside_numpy_runs_numpy_counted():
    add = numpy.frompyfunc(lambda a, b: a + b, 2, 1)  # (its loop holds Python objects)
    before = tracer.stats().fallbacks
    got = add.reduceat(np.asarray(numpy.arange(1.0, 6.0)), [0, 2])
    assert list(numpy.asarray(got)) == [3.0, 12.0] and tracer.stats().fallbacks == before + 1
