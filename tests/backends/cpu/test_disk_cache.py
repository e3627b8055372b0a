"""The kernel disk cache across processes: corrupt or truncated entries are dropped and
compiled again, and two processes filling one cache folder at once both succeed."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy
import pytest

pytestmark = pytest.mark.lazy  # the backend's kernels are the subject

ROOT = Path(__file__).resolve().parents[3]
PROGRAM = """
import numpy, tracer, tracer.numpy as np
x = np.asarray(numpy.arange(6.0))
print(repr(numpy.asarray(np.sin(x) * 3 + 1).round(6).tolist()))
print("disk", tracer.stats().cache_hits_disk, "compiled", tracer.stats().kernels_compiled)
"""
WANT = repr((__import__("numpy").sin(__import__("numpy").arange(6.0)) * 3 + 1).round(6).tolist())


def _run(cache: Path, numba_dir: Path | None = None) -> subprocess.Popen:
    env = dict(os.environ, TRACER_CACHE_DIR=str(cache), TRACER_BACKEND="cpu", TRACER_COMPILE="sync")
    env.pop("NUMBA_CACHE_DIR", None)  # by default the modules' own __pycache__ is the cache
    if numba_dir is not None:
        env["NUMBA_CACHE_DIR"] = str(numba_dir)
    return subprocess.Popen([sys.executable, "-c", PROGRAM], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _out(p: subprocess.Popen) -> list[str]:
    out, err = p.communicate(timeout=240)
    assert p.returncode == 0, err[-2000:]
    return out.splitlines()


@pytest.mark.slow
@pytest.mark.parametrize("numba_dir", [False, True])
def test_truncated_entries_are_recompiled(tmp_path, numba_dir):
    nd = tmp_path / "numba" if numba_dir else None
    first = _out(_run(tmp_path, nd))
    assert first[0] == WANT
    entries = list((nd or tmp_path / "gen" / "__pycache__").rglob("*.nb*"))
    assert entries
    for f in entries:  # cut every entry short, as a crash mid-write elsewhere could
        f.write_bytes(f.read_bytes()[:10])
    again = _out(_run(tmp_path, nd))
    assert again[0] == WANT and again[1].endswith("compiled 1")
    third = _out(_run(tmp_path, nd))  # the recompiled entry serves the next process
    assert third[0] == WANT and third[1].startswith("disk 1")


@pytest.mark.slow
def test_two_processes_fill_one_cache_at_once(tmp_path):
    procs = [_run(tmp_path), _run(tmp_path)]
    for p in procs:
        assert _out(p)[0] == WANT


WARM = """
import sys, numpy, tracer, tracer.numpy as np
from numba.core.runtime import rtsys
a = np.asarray(numpy.arange(5000.0).reshape(100, 50))
outs = tracer.evaluate(a.sum(), a.sum(axis=0), a.argmax(), (a * 2).max(axis=1))
print(repr([numpy.asarray(o).tolist() for o in outs]))
print("arrayobj", "numba.np.arrayobj" in sys.modules, "nrt_loaded",
      rtsys.library._shared_module is not None, "disk", tracer.stats().cache_hits_disk)
"""


def _warm(cache: Path) -> list[str]:
    env = dict(os.environ, TRACER_CACHE_DIR=str(cache), TRACER_BACKEND="cpu",
               TRACER_COMPILE="sync", TRACER_COMPILE_WORKERS="0")
    env.pop("NUMBA_CACHE_DIR", None)
    p = subprocess.run([sys.executable, "-c", WARM], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=240)
    assert p.returncode == 0, p.stderr[-2000:]
    return p.stdout.splitlines()


@pytest.mark.slow
def test_warm_start_loads_without_array_library_or_nrt_compile(tmp_path):
    """Reduce kernels take their scratch as arguments, so a process that only loads them from
    disk imports none of Numba's array library; Numba's runtime comes from cached object code,
    and a corrupt runtime entry is compiled and written again."""
    a = numpy.arange(5000.0).reshape(100, 50)
    want = repr([float(a.sum()), a.sum(axis=0).tolist(), int(a.argmax()), (a * 2).max(axis=1).tolist()])
    first = _warm(tmp_path)
    assert first[0] == want
    second = _warm(tmp_path)
    assert second == [want, "arrayobj False nrt_loaded True disk 4"]
    for f in tmp_path.glob("nrt-*.pkl"):
        f.write_bytes(b"garbage")
    assert _warm(tmp_path)[0] == want
    assert _warm(tmp_path)[1] == "arrayobj False nrt_loaded True disk 4"
