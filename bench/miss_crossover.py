"""Where a plan miss stops costing more than running the graph by NumPy op by op: one step of an
LU elimination (`a[k:, k:] -= outer(a[k:, k-1], a[k-1, k:])`, then the result read) on an n x n
realized array, k changing every evaluation so the plan's shapes do too. Per evaluation: the
compiled path (each evaluation a plan-cache miss: optimize and lower, kernels from a warm
cache) and the interpreter (ir.interp, writing in place), for n = 64 .. 4096; also that block
through 8 more elementwise ops, where fusing saves more.

    python -m bench.miss_crossover [--steps 24] [--sizes 64 256 1024 2048 4096]

CONFIG.miss_graph (TRACER_MISS_GRAPH: the most elements a graph whose plans keep missing may
have to run by the interpreter, see tracer.engine.small_roots) should sit near the n*n where
the compiled time drops under the interpreter's. The table goes to stdout.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

os.environ.setdefault("TRACER_COMPILE", "sync")

import numpy  # noqa: E402

import tracer.numpy as tnp  # noqa: E402
from tracer.ir.config import context  # noqa: E402


def lu_step(np, a, k):
    a[k:, k:] = a[k:, k:] - np.outer(a[k:, k - 1], a[k - 1, k:])
    return numpy.asarray(a[k, k])


def expr_step(np, a, k):
    """lu_step's block through bench/eager_crossover.py's 8 elementwise ops: 13 ops."""
    x, y = a[k:, k:], np.outer(a[k:, k - 1], a[k - 1, k:])
    a[k:, k:] = np.sqrt(np.abs(x * 0.5 + y) + 1.0) * np.exp(-(x * x)) - y / 3.0
    return numpy.asarray(a[k, k])


def per_eval(np, step, h, ks) -> float:
    """Median seconds of one step over ks (each a new shape)."""
    a = np.array(h)
    step(np, a, ks[0])  # a's buffer realized (and, by the interpreter, its own)
    times = []
    for k in ks[1:]:
        t0 = time.perf_counter()
        step(np, a, k)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=24)
    ap.add_argument("--sizes", type=int, nargs="+", default=[64, 256, 1024, 2048, 4096])
    args = ap.parse_args()
    rng = numpy.random.default_rng(0)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cpus; numpy {numpy.__version__}")
    print("| step | n | elements | NumPy us | interpreter us | compiled, plan miss us | "
          "compiled / interp |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, step in (("lu", lu_step), ("expr", expr_step)):
        with context(eager_size=0, small_graph=0, miss_graph=0):
            per_eval(tnp, step, 40 * numpy.eye(40), list(range(1, 6)))  # compiled
        for n in args.sizes:
            h = rng.uniform(-1, 1, (n, n)) + n * numpy.eye(n)  # dominant diagonal: no overflow
            ks = list(range(1, 2 + args.steps))
            t_np = per_eval(numpy, step, h, ks)
            with context(eager_size=0, small_graph=n * n, miss_graph=0):
                t_int = per_eval(tnp, step, h, ks)
            with context(eager_size=0, small_graph=0, miss_graph=0):
                t_miss = per_eval(tnp, step, h, ks)
            print(f"| {name} | {n} | {n * n} | {t_np * 1e6:.0f} | {t_int * 1e6:.0f} | "
                  f"{t_miss * 1e6:.0f} | {t_miss / t_int:.2f} |", flush=True)

if __name__ == "__main__":
    main()
