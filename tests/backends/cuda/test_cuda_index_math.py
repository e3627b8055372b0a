"""Index math of the cuda backend's loop kernels (issue 21 item 5), under Numba's simulator:
the 32- and 64-bit index variants and how a launch picks one, unsigned subscripts, the 2-D grid
of rank>1 loop kernels, and the tiled transposes (fused and library). Every result is checked
against NumPy; which kernel ran is checked through the backend's own entry points.

Inputs are tiny and odd-sized: the simulator costs ~0.3 ms a thread."""
from __future__ import annotations

import time

import numpy
import pytest

import tracer
import tracer.cuda_kernels.cuda.backend as cuda_mod
import tracer.cuda_kernels.cuda.launch as launch_mod
import tracer.numpy as np
from tracer import graph as G
from tracer.cuda_kernels import backends
from tracer.cuda_kernels.cuda.codegen import WIDE, index_bits
from tracer.cuda_kernels.cuda.transpose import block_swap
from tracer.cuda_kernels.layout import over_one_element
from tracer.ir.stats import STATS

# the backend's kernels are the subject (on the simulator)
pytestmark = [pytest.mark.lazy, pytest.mark.usefixtures("cuda_sim")]

DEVICE_DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
                 "uint64", "float32", "float64"]




@pytest.fixture
def variants(monkeypatch):
    """The index widths loop kernels launched with, in order."""
    seen = []
    pick = launch_mod._index_variant

    def spy(kernel, bits):
        seen.append(bits)
        return pick(kernel, bits)
    monkeypatch.setattr(launch_mod, "_index_variant", spy)
    return seen


@pytest.fixture
def library(monkeypatch):
    """The library kernels fetched, as (kind, arg, variant)."""
    seen = []
    get = cuda_mod.CudaBackend.library_kernel

    def spy(self, kind, arg, variant=""):
        seen.append((kind, arg, variant))
        return get(self, kind, arg, variant)
    monkeypatch.setattr(cuda_mod.CudaBackend, "library_kernel", spy)
    return seen


def _rand(shape, dtype="float32", seed=0):
    rng = numpy.random.default_rng(seed)
    dtype = numpy.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) > 0.5
    if dtype.kind in "iu":
        return rng.integers(0 if dtype.kind == "u" else -50, 50, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _check(got, want):
    got = numpy.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape)
    if want.dtype.kind == "f":
        numpy.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)
    else:
        numpy.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------- choosing the variant

def test_index_bits_switches_at_2_to_the_31():
    assert index_bits(0) == index_bits(2 ** 31 - 1) == 32
    assert index_bits(2 ** 31) == index_bits(2 ** 40) == 64


class _Recorder:
    """Stands in for a kernel: records each launch's geometry and arguments."""

    def __init__(self, calls, bits):
        self.calls, self.bits = calls, bits

    def __getitem__(self, config):
        return lambda *args: self.calls.append((self.bits, config[:2], args))


@pytest.mark.parametrize("shape,bits", [((2 ** 16, 2 ** 15 - 1), 32), ((2 ** 16, 2 ** 15), 64),
                                        ((2 ** 31 - 1,), 32), ((2 ** 31,), 64),
                                        ((3, 2 ** 31), 64)])
def test_a_launch_picks_the_variant_from_its_sizes(monkeypatch, shape, bits):
    """No huge array is allocated: the launch sees stand-ins over one element, and records
    the variant and geometry it would launch with."""
    be = backends.get("cuda")
    a = np.asarray(_rand((3, 5)))
    kernel = tracer.explain(a * 2 + 1).kernels[0]
    calls = []
    monkeypatch.setattr(launch_mod, "_index_variant", lambda k, b: _Recorder(calls, b))
    out = over_one_element(shape, numpy.float32)
    be.launch(kernel, None, [out], [out], [numpy.float32(2), numpy.float32(1)])
    (got, (grid, block), args) = calls[0]
    assert got == bits and args[-len(shape):] == shape  # sizes are arguments
    if len(shape) > 1:  # rows on grid y, the innermost axis on x
        assert len(grid) == 2 and block == (8, 1)
    assert STATS.kernels_launched >= 1


def test_a_strided_copy_picks_its_variant_from_its_sizes(monkeypatch, library):
    be = backends.get("cuda")
    calls = []
    monkeypatch.setattr(be, "flatten", lambda x: x)
    monkeypatch.setattr(be, "lib_launch", lambda fn, grid, block, *args: calls.append(grid))
    x = over_one_element((2 ** 16, 2 ** 15), numpy.float32)
    be._copy(x, x, 0, 0, x.shape, (1, 2 ** 16), (2 ** 15, 1))
    be._copy(x, x, 0, 0, (5, 7), (7, 1), (1, 5))
    assert [v for k, _, v in library if k == "copy"] == [WIDE, ""]
    assert all(len(g) == 2 for g in calls)


def test_kernel_source_holds_both_variants_and_unsigned_subscripts():
    a = np.asarray(_rand((2, 3, 5)))
    k = tracer.explain(np.exp(a) * a[:1]).kernels[0]  # (a broadcast: not a flat loop)
    src = k.source
    assert f"def {k.name}(" in src and f"def {k.name}{WIDE}(" in src
    narrow = src[src.index(f"def {k.name}("):src.index(f"def {k.name}{WIDE}(")]
    wide = src[src.index(f"def {k.name}{WIDE}("):]
    assert "_u32(" in narrow and "_u64(" not in narrow.replace("_u64(_u64", "")
    assert "rem % s1" in narrow and "% s2" not in narrow  # divmod per row, not per element
    assert "_u64(rem % s1)" in wide
    assert "p0[_ix(i0), _ix(i1), _ix(i2)]" in src  # unsigned: no negative-index wrap


# ---------------------------------------------------------------- both variants, against NumPy

CASES = {  # a (3, 5), b (5,), c (3, 1), d (2, 3, 5), e (3, 2, 19): 2-D grids stride both ways
    "flat": (lambda a, b, c, d, e: a * 3 - a, lambda a, b, c, d, e: a * 3 - a),
    "broadcast_rank2": (lambda a, b, c, d, e: a * b - c, lambda a, b, c, d, e: a * b - c),
    "transposed_rank3": (lambda a, b, c, d, e: d.transpose(1, 0, 2) + d[0, :, None],
                         lambda a, b, c, d, e: d.transpose(1, 0, 2) + d[0, :, None]),
    "rank4_broadcast": (lambda a, b, c, d, e: d[:, None] * b + 1,
                        lambda a, b, c, d, e: d[:, None] * b + 1),
    "int_wrap": (lambda a, b, c, d, e: (a * 7).astype(np.int64) * 3 + 2 ** 62,
                 lambda a, b, c, d, e: (a * 7).astype(numpy.int64) * 3 + 2 ** 62),
    "bool_and_cast": (lambda a, b, c, d, e: ((a > 0) & (c < 0)).astype(np.uint8),
                      lambda a, b, c, d, e: ((a > 0) & (c < 0)).astype(numpy.uint8)),
    "long_rows": (lambda a, b, c, d, e: e * 2 - e[:, :1], lambda a, b, c, d, e: e * 2 - e[:, :1]),
    "zero_d": (lambda a, b, c, d, e: a[1, 2] * 2 + 1, lambda a, b, c, d, e: a[1, 2] * 2 + 1),
}


@pytest.mark.parametrize("bits", [32, 64])
@pytest.mark.parametrize("name", sorted(CASES))
def test_loop_kernels_in_both_variants_match_numpy(monkeypatch, variants, no_host, bits, name):
    monkeypatch.setattr(launch_mod, "index_bits", lambda total: bits)
    h = (_rand((3, 5)), _rand((5,), seed=1), _rand((3, 1), seed=2), _rand((2, 3, 5), seed=3),
         _rand((3, 2, 19), seed=4))
    mine, ref = CASES[name]
    with numpy.errstate(over="ignore"):
        want = ref(*h)
        got = mine(*(np.asarray(x) for x in h))
        _check(got, want)
    assert variants and set(variants) == {bits}


@pytest.mark.parametrize("bits", [32, 64])
def test_horizontal_kernels_in_both_variants(monkeypatch, variants, no_host, bits):
    monkeypatch.setattr(launch_mod, "index_bits", lambda total: bits)
    ha, hi = _rand((3, 5)), numpy.arange(7, dtype=numpy.int32)
    a, i = np.asarray(ha), np.asarray(hi)
    outs = (np.exp(a) * 2, i + 1, (a[0, 0] * 3).astype(np.float64))
    assert "horizontal" in [k.kind for k in tracer.explain(*outs).kernels]
    got = tracer.evaluate(*outs)
    for g, w in zip(got, (numpy.exp(ha) * 2, hi + 1, (ha[0, 0] * 3).astype(numpy.float64))):
        _check(g, numpy.asarray(w))
    assert set(variants) == {bits}


@pytest.mark.parametrize("bits", [32, 64])
def test_strided_copies_in_both_variants(monkeypatch, library, no_host, bits):
    """Slices (negative steps too), broadcast_to, concatenate and a write through a view run the
    strided-copy library kernel (2-D from rank 2)."""
    monkeypatch.setattr(cuda_mod, "index_bits", lambda total: bits)
    h, hb = _rand((5, 7)), _rand((2, 3, 4), seed=1)
    a, b = np.asarray(h), np.asarray(hb)
    _check(a[::-2, 1::3], h[::-2, 1::3])
    _check(b[:, ::-1, 1:], hb[:, ::-1, 1:])
    _check(np.broadcast_to(b[:, :1], (2, 3, 4)), numpy.broadcast_to(hb[:, :1], (2, 3, 4)))
    _check(np.concatenate([a, a[:2]], axis=0), numpy.concatenate([h, h[:2]], axis=0))
    c = np.asarray(h.copy())
    c[1:4, ::2] = 0
    hc = h.copy()
    hc[1:4, ::2] = 0
    _check(c, hc)
    copies = [v for k, _, v in library if k == "copy"]
    assert copies and set(copies) == {"" if bits == 32 else WIDE}


# ---------------------------------------------------------------- tiled transposes

def test_block_swap():
    assert block_swap((1, 0)) == (0, 1)
    assert block_swap((0, 2, 1)) == (1, 2)
    assert block_swap((2, 0, 1)) == (0, 2) and block_swap((1, 2, 0)) == (0, 1)
    assert block_swap((0, 1)) is None and block_swap((1, 0, 2)) is None
    assert block_swap((0, 3, 1, 2)) == (1, 3) and block_swap((0, 2, 1, 3)) is None


@pytest.mark.parametrize("shape,perm", [((3, 5), None), ((33, 40), None), ((2, 3, 5), (0, 2, 1)),
                                        ((1, 5, 9), (0, 2, 1)), ((2, 2, 9, 10), (0, 1, 3, 2))])
def test_fused_transposes_run_through_the_tile(no_host, shape, perm):
    h = _rand(shape)
    a = np.asarray(h)  # (a bare view of a realized array is NumPy's view, on the host)
    for got, want in ((np.transpose(a * 2, perm), numpy.transpose(h * 2, perm)),
                      (np.transpose(np.exp(a) - a, perm), numpy.transpose(numpy.exp(h) - h, perm))):
        kernels = tracer.explain(got).kernels
        assert [k.meta.get("tiled") for k in kernels] == [True]
        assert "cuda.shared.array" in kernels[0].source
        tracer.reset_stats()
        _check(got, want)
        assert STATS.kernels_launched == 1


@pytest.mark.parametrize("dtype", DEVICE_DTYPES)
def test_transpose_of_a_result_every_device_dtype(no_host, dtype):
    """Fused into its producer's kernel as a tiled loop. 16-bit values are not (opt/fusion.py
    fuses no 2-byte movement op): the result is a view of the producer's output."""
    h, hb = _rand((9, 11), dtype), _rand((2, 3, 5), dtype, seed=1)
    a, b = np.asarray(h), np.asarray(hb)
    f = (lambda x: ~x) if dtype == "bool" else (lambda x: x + 1)
    fused = numpy.dtype(dtype).itemsize != 2
    for got, want in ((f(a).T, f(h).T), (np.swapaxes(f(b), 1, 2), numpy.swapaxes(f(hb), 1, 2))):
        tiled = [k.meta.get("tiled", False) for k in tracer.explain(got).kernels]
        assert tiled == [fused]
        tracer.reset_stats()
        _check(got, want)
        assert STATS.kernels_launched == 1


def _run_transpose(h, perm):
    """A transpose node run by the backend as a view op (CudaBackend._transpose)."""
    be = backends.get("cuda")
    x = be.from_host(h)
    return be.to_host(be.run_node(G.transpose(G.leaf(h), perm), [x]))


@pytest.mark.parametrize("dtype", DEVICE_DTYPES)
@pytest.mark.parametrize("shape,perm", [((3, 5), (1, 0)), ((33, 40), (1, 0)),
                                        ((2, 3, 5), (0, 2, 1)), ((3, 4, 5), (2, 0, 1))])
def test_library_transpose_every_device_dtype(library, no_host, dtype, shape, perm):
    if shape == (33, 40) and dtype not in ("bool", "uint16", "float64"):
        pytest.skip("one shape of many tiles per element size is enough")
    h = _rand(shape, dtype)
    _check(_run_transpose(h, perm), numpy.transpose(h, perm))
    width = f"uint{8 * numpy.dtype(dtype).itemsize}"
    assert [(k, a) for k, a, _ in library] == [("transpose", width)]


def test_other_permutations_keep_the_strided_copy_and_views_stay_views(library, no_host):
    h = _rand((3, 4, 5))
    _check(_run_transpose(h, (1, 0, 2)), h.transpose(1, 0, 2))
    assert [k for k, _, _ in library] == ["copy"]
    library.clear()
    tracer.reset_stats()
    h1 = _rand((1, 6))
    _check(_run_transpose(h1, (1, 0)), h1.T)  # its elements are already in C order
    assert library == [] and STATS.kernels_launched == 0


def test_simulator_makes_a_blocks_shared_array_once(monkeypatch):
    """numba-cuda's simulator makes a block's shared array on a thread's first call, in a
    check-then-store that a thread switch can split: threads that missed together each got
    an array of their own, and the tile came back half uninitialized (seen once in the suite).
    A slow allocation forces the switch; cuda/sim.py makes the lookup atomic."""
    be = backends.get("cuda")
    h = numpy.arange(15, dtype=numpy.int32).reshape(3, 5)
    x = be.from_host(h)
    be.library_kernel("transpose", "uint32")  # (loaded before numpy.empty slows down)
    empty = numpy.empty

    def slow(*args, **kw):
        time.sleep(0.002)
        return empty(*args, **kw)
    monkeypatch.setattr(numpy, "empty", slow)
    out = be.run_node(G.transpose(G.leaf(h), (1, 0)), [x])
    monkeypatch.setattr(numpy, "empty", empty)
    _check(be.to_host(out), h.T)
