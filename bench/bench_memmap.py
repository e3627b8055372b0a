"""A read-only numpy.memmap input: what recording and reducing it grow the process by.

    python bench/bench_memmap.py [--gib 1] [--budget "64 MiB"] [--dir /tmp]

Writes a sparse file of float64 rows (holes read as zeros), loads each case's kernels on a file
an eighth of its size, then per case prints the growth of the process's resident memory at its
peak (Linux: VmHWM, reset first) and the time, unbudgeted and under the budget; NumPy's own
reduction of the memmap for comparison. Growth counts the file's pages the process has mapped,
as the OS does.
"""
from __future__ import annotations

import argparse
import mmap
import os
import re
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TRACER_BACKEND", "cpu")
os.environ.setdefault("TRACER_COMPILE", "sync")
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy  # noqa: E402

import tracer  # noqa: E402
import tracer.numpy as np  # noqa: E402

COLS = 1024
CASES = {
    "asarray (record)": lambda m, x: m.asarray(x),
    "sum": lambda m, x: m.sum(x),
    "mean": lambda m, x: m.mean(x),
    "max": lambda m, x: m.max(x),
    "((x - 1) ** 2).sum()": lambda m, x: ((m.asarray(x) - 1) ** 2).sum(),
    "max(axis=0)": lambda m, x: m.max(x, axis=0),
    "sum(axis=1)": lambda m, x: m.asarray(x).sum(axis=1),
}


def _peak_growth(run) -> tuple[int, float]:
    """(peak resident growth in bytes, seconds) of run()."""
    before = _status("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")
    t = time.perf_counter()
    run()
    return _status("VmHWM") - before, time.perf_counter() - t


def _status(key: str) -> int:
    return int(re.search(rf"{key}:\s+(\d+)", Path("/proc/self/status").read_text())[1]) * 1024


def _sparse(path: Path, rows: int) -> numpy.memmap:
    with open(path, "wb") as f:
        f.truncate(rows * COLS * 8)
    w = numpy.memmap(path, numpy.float64, "r+", shape=(rows, COLS))
    w[:3] = numpy.random.default_rng(0).standard_normal((3, COLS))
    w.flush()
    del w
    return numpy.memmap(path, numpy.float64, "r", shape=(rows, COLS))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gib", type=float, default=1.0)
    ap.add_argument("--budget", default="64 MiB")
    ap.add_argument("--dir", default=tempfile.gettempdir())
    args = ap.parse_args()
    rows = int(args.gib * 2**30) // (COLS * 8)
    big, small = Path(args.dir) / "bench_memmap.f8", Path(args.dir) / "bench_memmap_small.f8"
    try:
        ms = _sparse(small, rows // 8)
        for case in CASES.values():  # load the kernels (chunks of the measured size)
            numpy.asarray(case(np, ms))
            with tracer.memory_budget(args.budget):
                numpy.asarray(case(np, ms))
        mm = _sparse(big, rows)
        print(f"{args.gib:g} GiB read-only memmap, budget {args.budget}: peak growth MiB, s")
        print(f"{'case':<22}{'unbudgeted':>18}{'budgeted':>18}{'NumPy':>18}")
        for name, case in CASES.items():
            cells = []
            for budget in (None, args.budget):
                def run():
                    if budget is None:
                        numpy.asarray(case(np, mm))
                        return
                    with tracer.memory_budget(budget):
                        numpy.asarray(case(np, mm))
                cells.append(_peak_growth(run))
                mm._mmap.madvise(mmap.MADV_DONTNEED)  # the next run maps the pages anew
            cells.append(_peak_growth(lambda: numpy.asarray(case(numpy, mm))))
            mm._mmap.madvise(mmap.MADV_DONTNEED)
            print(f"{name:<22}" + "".join(f"{g / 2**20:>11.0f} {s:>5.2f}s" for g, s in cells))
    finally:
        big.unlink(missing_ok=True)
        small.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
