"""CUDA kernels on disk (cuda/cache.py): a second process finds every kernel a first process built.

No GPU here, so the kernels are built through the driverless PTX path (cuda/ptx.py compiles them
for sm_90 with NVVM and stores them through `cache.ptx`); the simulator is no use for this, as
its kernels are Python and never compiled. That path computes the same key and runs the same
lookup as a device launch (the dispatcher's `_cache`, a `cache.DiskCache`), and
`test_device_compile_loads_the_stored_ptx` shows numba-cuda's own `compile` taking a stored entry
as its kernel with no compile. Marked `nvrtc`: skipped without the CUDA compiler libraries."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import pytest
from numba import types

from tracer.cuda_kernels.compiler import import_module, write_module
from tracer.cuda_kernels.cuda import cache
from tracer.cuda_kernels.cuda.backend import CudaBackend
from tracer.ir.config import context
from tracer.ir.stats import STATS

pytestmark = [pytest.mark.nvrtc, pytest.mark.lazy]

# a graph of 4 kernels (a row softmax, and a full sum's three forms: cuda/reduce.py; few, as
# each compiles for about 0.2-1 s in the first process): its PTX by kernel name, compile and
# disk-hit counts
_GRAPH = """
import hashlib, json
import numpy
import tracer, tracer.numpy as np
from tracer.ir import toposort
from tracer.ir.config import context
from tracer.ir.stats import STATS
from tracer.cuda_kernels.cuda.ptx import compile_ptx
a = np.asarray(numpy.ones((6, 5), numpy.float32))
with context(backend="cuda", cuda_sim=False):
    e = np.exp(a - a.max(1, keepdims=True))
    plan = tracer.explain(e / e.sum(1, keepdims=True), ((a - 1) ** 2).sum() * 2)
fusions = [n for n in toposort(plan.graph_after.roots) if n.op == "fusion"]
ptx = {}
for f, k in zip(fusions, plan.kernels):
    ptx.update(compile_ptx(f, k, cc=(9, 0)))
print(json.dumps({"ptx": {n: hashlib.sha256(p.encode()).hexdigest() for n, p in ptx.items()},
                  "compiled": STATS.kernels_compiled, "hits": STATS.cache_hits_disk}))
"""


def _run(cache_dir) -> dict:
    env = dict(os.environ, TRACER_CACHE_DIR=str(cache_dir), TRACER_EAGER_SIZE="0")
    p = subprocess.run([sys.executable, "-c", _GRAPH], env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.splitlines()[-1])


def test_second_process_finds_every_kernel_the_first_built(tmp_path):
    first = _run(tmp_path)
    assert len(first["ptx"]) == 4
    assert first["compiled"] == 4 and first["hits"] == 0
    assert len(os.listdir(tmp_path / "gen" / "cuda")) == 4
    second = _run(tmp_path)
    assert second["compiled"] == 0 and second["hits"] == 4
    assert second["ptx"] == first["ptx"]


_PROBE = """from numba import cuda


@_jit
def probe_{n}(out, a, n):
    i = cuda.grid(1)
    if i < n:
        out[i] = a[i] * 2
"""
_SIG = (types.float32[::1], types.float32[::1], types.int64)


def _probe(n: str):
    """A kernel dispatcher as the device path imports it (`_jit` is `cache.jit`)."""
    with context(cuda_sim=False):
        mod = import_module(f"t_probe_{n}", write_module(f"t_probe_{n}", _PROBE.format(n=n)),
                            CudaBackend().module_globals())
    disp = getattr(mod, f"probe_{n}")
    assert isinstance(disp._cache, cache.DiskCache)
    return disp


def test_device_compile_loads_the_stored_ptx(tmp_path, monkeypatch):
    """numba-cuda's `compile` (what a launch on a device calls) asks the disk cache first: with
    the device's compute capability faked to the one the PTX was stored for, it returns a
    kernel holding that PTX, counted as a disk hit, and compiles nothing."""
    monkeypatch.setenv("TRACER_CACHE_DIR", str(tmp_path))
    disp = _probe("dev")
    ptx = cache.ptx(disp, _SIG, (9, 0))  # stored; the dispatcher itself holds no kernel yet
    monkeypatch.setattr(cache, "device_cc", lambda: (9, 0))
    hits, compiled = STATS.cache_hits_disk, STATS.kernels_compiled
    kernel = disp.compile(_SIG)
    assert STATS.cache_hits_disk == hits + 1 and STATS.kernels_compiled == compiled
    assert dict(disp._cache_hits) == {_SIG: 1} and not disp._cache_misses
    assert kernel.argument_types == _SIG
    assert kernel.library.get_asm_str(cc=(9, 0)) == ptx  # no NVVM run: the stored text
    assert f".entry {kernel.entry_name}(" in ptx


def test_key_holds_signature_capability_and_source(tmp_path, monkeypatch):
    monkeypatch.setenv("TRACER_CACHE_DIR", str(tmp_path))
    disp = _probe("key")
    o = disp.targetoptions

    def key(sig=_SIG, cc=(9, 0), options=o, d=disp):
        got = d._cache.key(sig, cc, options)[1]
        return got and got[0]
    assert key() and key() == key()
    assert key(cc=(9, 0, "a")) != key()
    assert key(sig=(types.float64[::1],) + _SIG[1:]) != key()
    assert key(options=dict(o, fastmath=True)) != key()
    assert key(options=dict(o, debug=True)) is None  # not cached
    assert key(d=_probe("key2")) != key()  # another module text


def test_damaged_entry_is_compiled_again(tmp_path, monkeypatch):
    monkeypatch.setenv("TRACER_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr("tracer.cuda_kernels.compiler._WARNED", set())
    disp = _probe("bad")
    cache.ptx(disp, _SIG, (9, 0))
    path = disp._cache.key(_SIG, (9, 0))[1][0]
    with open(path, "r+b") as f:
        f.truncate(20)
    compiled = STATS.kernels_compiled
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ptx = cache.ptx(disp, _SIG, (9, 0))  # (its mangled name has a new uid: Numba's)
    assert STATS.kernels_compiled == compiled + 1 and ".entry" in ptx
    assert any("damaged" in str(x.message) for x in w)
    hits = STATS.cache_hits_disk
    assert cache.ptx(disp, _SIG, (9, 0)) == ptx  # stored whole again
    assert STATS.cache_hits_disk == hits + 1
