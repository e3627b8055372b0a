"""The kernel disk cache across processes: corrupt or truncated entries are dropped and
compiled again, and two processes filling one cache folder at once both succeed."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
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


def test_two_processes_fill_one_cache_at_once(tmp_path):
    procs = [_run(tmp_path), _run(tmp_path)]
    for p in procs:
        assert _out(p)[0] == WANT
