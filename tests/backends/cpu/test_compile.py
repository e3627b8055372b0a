"""Batched modules, predicted argument types, compile workers and the tiered NumPy path."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import OrderedDict
from pathlib import Path

import numpy
import pytest

import tracer
import tracer.numpy as np
from tracer import plans
from tracer.cuda_kernels import backends, compiler
from tracer.cuda_kernels.compiler import batch_source
from tracer.cuda_kernels.tiled import TILE

pytestmark = pytest.mark.lazy  # the backend's kernels are the subject

ROOT = Path(__file__).resolve().parents[3]


def test_batched_module_refuses_two_kernels_with_one_name():
    k1 = "@njit\ndef k_same(out):\n    out[0] = 1"
    k2 = "@njit\ndef k_same(out):\n    out[0] = 2"
    helper = "@njit(inline='always')\ndef _h(x):\n    return x"
    with pytest.raises(ValueError, match="two different definitions of `k_same`"):
        batch_source("import numpy as np", [("k_same", helper, k1), ("k_same", helper, k2)])
    # one helper shared by two kernels is written once
    src = batch_source("import numpy as np", [("k_a", helper, k1.replace("k_same", "k_a")),
                                              ("k_b", helper, k2.replace("k_same", "k_b"))])
    assert src.count("def _h(") == 1 and "def k_a(" in src and "def k_b(" in src


def test_new_kernels_of_one_graph_share_one_module(tmp_path, monkeypatch):
    monkeypatch.setenv("TRACER_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(compiler, "_MEM", {})
    monkeypatch.setattr(plans, "_PLANS", OrderedDict())  # its kernels, not a cached plan's
    x = np.asarray(numpy.linspace(-1, 1, 40))
    m = np.asarray(numpy.ones((6, 7)))
    def prog():
        return [x * 3 + 1, (x * x).sum(), (m * 2).sum(axis=0), (m + x[:7]).max(axis=1)]
    outs = prog()
    got = tracer.evaluate(*outs)
    want = [numpy.asarray(o) for o in outs]
    for g, w in zip(got, want):
        numpy.testing.assert_array_equal(numpy.asarray(g), w)
    plan = tracer.explain(*prog())
    mods = {k.module for k in plan.kernels}
    assert len(plan.kernels) >= 3 and len(mods) == 1
    names = [k.name for k in plan.kernels]
    assert len(set(names)) == len(names)
    src = (tmp_path / "gen" / f"{mods.pop()}.py").read_text()
    assert all(src.count(f"def {n}(") == 1 for n in names)
    # a later process, or this one with memory cleared, finds them through the index
    monkeypatch.setattr(compiler, "_MEM", {})
    again = tracer.explain(*prog()).kernels
    compiler.load_kernels(again, backends.get("cpu"))
    assert {k.module for k in again} == {plan.kernels[0].module}


def _writes_into(a, b, m):
    """Kernels writing into the slices they are assigned to (strided outputs)."""
    c = m * 2
    c[1:6, 1::3] = m[:5, 1::3] + 1
    c[:, 2] = m.sum(axis=1)
    return c


PROGRAMS = [
    lambda a, b, m: a * b + 1,
    lambda a, b, m: ((a - a.mean()) ** 2).sum(),
    lambda a, b, m: (m.T * 2 + 1).sum(axis=0),
    lambda a, b, m: np.exp(m[1:, ::2]) - m[:-1, 1::2],
    lambda a, b, m: (m[:5] * a[:5].reshape(5, 1)).max(axis=1),
    lambda a, b, m: np.where(a > 0, a, b * 2).std(),
    lambda a, b, m: np.broadcast_to(b[:5], (4, 5)) * m[:4, :5],
    _writes_into,
]


@pytest.mark.parametrize("k", range(len(PROGRAMS)))
def test_predicted_argument_types_are_the_launched_ones(k, monkeypatch):
    """What compile workers and disk loads are given is what launches: no kernel compiles at
    launch for a type prediction that missed."""
    predicted, launched = set(), []
    sig_of, launch_of = backends.backend_class("cpu").signature, backends.backend_class("cpu").launch

    def signature(self, n, kernel, consts, out=None):
        s = sig_of(self, n, kernel, consts, out)
        predicted.add((kernel.name, s))
        return s

    def launch(self, kernel, body, outs, params, consts):
        fn = kernel.fn
        args = [*outs, *params, *consts]
        launched.append((kernel.name, tuple(fn.typeof_pyval(a) for a in args)))
        return launch_of(self, kernel, body, outs, params, consts)

    monkeypatch.setattr(backends.backend_class("cpu"), "signature", signature)
    monkeypatch.setattr(backends.backend_class("cpu"), "launch", launch)
    monkeypatch.setattr(compiler, "_MEM", {})
    h = numpy.linspace(-2, 2, 30)
    m = numpy.arange(70.0).reshape(7, 10) / 10
    ro = h.copy()
    ro.flags.writeable = False
    out = PROGRAMS[k](np.asarray(h), np.asarray(ro), np.asarray(m))
    want = PROGRAMS[k](h, ro, m) if k != 6 else numpy.broadcast_to(ro[:5], (4, 5)) * m[:4, :5]
    numpy.testing.assert_allclose(numpy.asarray(out), want, rtol=1e-12)
    assert launched
    for name, types in launched:
        n = len(types)
        assert any(p[0] == name and p[1][:n] == types for p in predicted), (name, types, predicted)


def test_tiered_path_matches_the_kernels(monkeypatch):
    """Every fused group run by NumPy (as while its kernel compiles) gives the kernels' results:
    bit for bit for arithmetic, comparisons and selects; to the last place or so for
    transcendentals and reductions."""
    rng = numpy.random.default_rng(1)
    h = [rng.standard_normal(3 * TILE + 5).astype(numpy.float32) for _ in range(3)]
    exact = lambda m, a, b, c: m.where(a > b, a * b - c / 3, c + 1) * 2  # noqa: E731
    close = lambda m, a, b, c: (a * b + c * m.sin(a) - m.exp(-a * a), (a * c).sum())  # noqa: E731
    compiled_exact = numpy.asarray(exact(np, *map(np.asarray, h)))
    compiled_close = [numpy.asarray(v) for v in close(np, *map(np.asarray, h))]
    runs = tracer.stats().tiered_runs
    monkeypatch.setattr(backends.backend_class("cpu"), "ready", lambda be, k: False)
    tiered_exact = numpy.asarray(exact(np, *map(np.asarray, h)))
    tiered_close = [numpy.asarray(v) for v in close(np, *map(np.asarray, h))]
    assert tracer.stats().tiered_runs > runs
    numpy.testing.assert_array_equal(tiered_exact, compiled_exact)
    numpy.testing.assert_array_equal(tiered_exact, exact(numpy, *h))
    for t, c in zip(tiered_close, compiled_close):
        numpy.testing.assert_allclose(t, c, rtol=2e-6, atol=1e-6)


def test_tiered_path_keeps_mixed_dtypes_and_wraparound(monkeypatch):
    """Tiles written straight into buffers (ufuncs whose own result type is the node's) and
    tiles computed then cast (the rest) give NumPy's values: int8 wraps, int32 with float64
    promotes, a bool mask selects."""
    rng = numpy.random.default_rng(2)
    i8 = rng.integers(-100, 100, 2 * TILE + 3).astype(numpy.int8)
    i32 = rng.integers(-1000, 1000, 2 * TILE + 3).astype(numpy.int32)
    f64 = rng.standard_normal(2 * TILE + 3)
    prog = lambda m, a, b, c: (a * 100 + 7, b * c - 2, m.where(b > 0, c, b // 3))  # noqa: E731
    monkeypatch.setattr(backends.backend_class("cpu"), "ready", lambda be, k: False)
    runs = tracer.stats().tiered_runs
    got = [numpy.asarray(v) for v in prog(np, *map(np.asarray, (i8, i32, f64)))]
    assert tracer.stats().tiered_runs > runs
    for g, w in zip(got, prog(numpy, i8, i32, f64)):
        assert g.dtype == w.dtype
        numpy.testing.assert_array_equal(g, w)


WORKER_PROGRAM = """
import json, numpy, tracer, tracer.numpy as np
from tracer.cuda_kernels.cpu import compile_pool
x = np.asarray(numpy.linspace(-1, 1, 300)); m = np.asarray(numpy.arange(24.0).reshape(4, 6))
prog = lambda: [np.sin(x) * 3 + 1, (x * x).sum(), (m * 2).sum(axis=0), (m + 1).max(axis=1),
                x.argmin()]
first = [numpy.asarray(v).tolist() for v in tracer.evaluate(*prog())]
compile_pool.shutdown()  # wait for background compiles
again = [numpy.asarray(v).tolist() for v in tracer.evaluate(*prog())]
s = tracer.stats()
print(json.dumps(dict(first=first, again=again, tiered=s.tiered_runs,
                      compiled=s.kernels_compiled, launched=s.kernels_launched)))
"""


def _worker_run(cache: Path, mode: str, workers: int) -> dict:
    env = dict(os.environ, TRACER_CACHE_DIR=str(cache), TRACER_BACKEND="cpu",
               TRACER_COMPILE=mode, TRACER_COMPILE_WORKERS=str(workers))
    env.pop("NUMBA_CACHE_DIR", None)
    p = subprocess.run([sys.executable, "-c", WORKER_PROGRAM], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_worker_compiles_do_not_change_results(tmp_path):
    """The same program compiled in this process, by one worker and by two (new caches each),
    and run tiered, gives the same values."""
    alone = _worker_run(tmp_path / "alone", "sync", 0)
    one = _worker_run(tmp_path / "one", "sync", 1)
    two = _worker_run(tmp_path / "two", "sync", 2)
    tiered = _worker_run(tmp_path / "tiered", "tiered", 2)
    assert alone["tiered"] == one["tiered"] == two["tiered"] == 0
    assert one["compiled"] == two["compiled"] == alone["compiled"] > 0
    assert alone["first"] == one["first"] == two["first"] == two["again"]
    assert tiered["tiered"] > 0 and tiered["again"] == alone["first"]
    numpy.testing.assert_allclose(numpy.concatenate([numpy.ravel(v) for v in tiered["first"]]),
                                  numpy.concatenate([numpy.ravel(v) for v in alone["first"]]),
                                  rtol=1e-12)


def test_big_inputs_are_snapshotted_by_all_cores():
    """A NumPy array of 4 MiB and more is copied by threads when lazy code wraps it: the lazy
    result still ignores later writes to the array, and keeps NumPy's values and layout."""
    h = numpy.arange(1 << 21, dtype=numpy.float32)  # 8 MiB
    a = np.asarray(h)
    r = np.sin(h) + a * 2  # a bare NumPy operand is wrapped too
    h[:] = -1
    want = numpy.sin(numpy.arange(1 << 21, dtype=numpy.float32)) + \
        numpy.arange(1 << 21, dtype=numpy.float32) * 2
    numpy.testing.assert_array_equal(numpy.asarray(r), want)


EXIT_PROGRAM = """
from concurrent.futures import process
from tracer.cuda_kernels.cpu import compile_pool
pool = compile_pool.pool()
pool.submit(abs, -1).result()
manager = pool._executor_manager_thread
compile_pool._drop_queued_compiles()  # what the exit hook runs
print(manager in process._threads_wakeups)
"""


def test_exit_hook_leaves_the_pool_out_of_cpythons_second_wakeup():
    """At exit, CPython's own hook wakes every pool's manager thread through a pipe; after our
    shutdown(wait=False) that thread may be closing the pipe at that moment (`OSError: [Errno
    9] Bad file descriptor`, printed at exit by 1 cold run in 4): the pool must be out of that
    table once it is shut down."""
    env = dict(os.environ, TRACER_COMPILE_WORKERS="1")
    p = subprocess.run([sys.executable, "-c", EXIT_PROGRAM], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.split() == ["False"]
    assert "Bad file descriptor" not in p.stderr
