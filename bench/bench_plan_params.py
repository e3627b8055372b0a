"""Loops whose body differs between iterations only in slice bounds, integer indices or scalar
constants (issue 19 item 2), NumPy and tracer side by side.

    python bench/bench_plan_params.py [--n 1000000] [--iters 50] [--repeat 5]

Each loop reads a value every iteration (a convergence check, a running total), so every
iteration is one evaluation. tracer runs twice per repeat, interleaved with NumPy: with the
plan cache lifting the values that change into runtime parameters (TRACER_LIFT=changed, the
default) and with nothing lifted (TRACER_LIFT=none: every new value is a new plan, as before).
Each loop uses values no earlier loop used, so no plan of an earlier one matches them
exactly. Per case: the first loop (seconds, plans made, kernels compiled: it plans and
compiles what later loops reuse; run with a fresh TRACER_CACHE_DIR to see cold compiles), and
the later loops (milliseconds per iteration, plans made and optimizer milliseconds per loop:
medians over --repeat loops).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("TRACER_BACKEND", "cpu")
os.environ.setdefault("TRACER_COMPILE", "sync")  # compiled kernels, not the NumPy tier
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, str(ROOT))

import numpy  # noqa: E402

import tracer  # noqa: E402
import tracer.numpy as tnp  # noqa: E402
from tracer.ir.config import context  # noqa: E402


def window(np, x, ks):
    """A sliding window: slice bounds and a constant change, `s += (x[k:k+m] * c_k).sum()`."""
    m, s = x.shape[0] // 2, 0.0
    for k in ks:
        s += float((x[k:k + m] * (1.0 + k * 1e-3)).sum())
    return s


def index(np, x, ks):
    """An integer index into a large value: `y = y * 0.5 + x[i]`, checked each step."""
    y, r = np.zeros(x.shape[0]), 0.0
    for i in ks:
        y = y * 0.5 + x[i]
        r += float(y[-1])
    return r


def schedule(np, x, ks):
    """A scalar constant on a schedule: `y = sqrt(y*y + eps_k)`, its maximum checked."""
    y, r = x, 0.0
    for k in ks:
        y = np.sqrt(y * y + 1e-3 * k)
        r += float(y.max())
    return r


def rows(np, x, ks):
    """A block of rows moves down a matrix, with a weight: rows of a 2-D slice summed."""
    a, r = x.reshape(1000, -1), 0.0
    for k in ks:
        r += float((a[k:k + 500, 1:-1] * (k % 7 + 1.5)).sum(axis=1).max())
    return r


def poly(np, x, ks):
    """A larger body: a degree-8 polynomial whose coefficients follow k, and three statistics
    of it read together."""
    r = 0.0
    for k in ks:
        y = x * 0.0 + 1.0
        for j in range(8):
            y = y * x + (j + 1) * (1.0 + 1e-4 * k)
        lo, hi, m = tracer.evaluate(y.min(), y.max(), y.mean()) if np is tnp else \
            (y.min(), y.max(), y.mean())
        r += float(hi) - float(lo) + float(m)
    return r


CASES = {"window": window, "index": index, "schedule": schedule, "rows": rows, "poly": poly}


def run_tracer(f, h, ks, lift):
    with context(lift=lift):
        tracer.reset_stats()
        t0 = time.perf_counter()
        f(tnp, tnp.asarray(h), ks)
        dt = time.perf_counter() - t0
        s = tracer.stats()
        made = s.evaluations - s.plan_cache_hits - s.small_graphs
        return dt, made, s.optimize_s, s.kernels_compiled


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--lift", default="changed,none",
                    help="the TRACER_LIFT settings to run (one, with a fresh kernel cache, "
                         "shows what its first loop compiles cold)")
    args = ap.parse_args(argv)
    lifts = args.lift.split(",")
    h = numpy.random.default_rng(0).standard_normal(args.n)
    print(f"n = {args.n:,} float64, {args.iters} iterations a loop, {args.repeat} repeats after "
          f"the first loop (backend {tracer.engine.backend()}, kernel cache "
          f"{os.environ.get('TRACER_CACHE_DIR', 'default')})\n")
    print("| loop | numpy ms/it | lifting: first loop s (plans, kernels) | later ms/it (plans, "
          "optimize ms) | no lifting: first loop s (plans, kernels) | later ms/it (plans, "
          "optimize ms) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name in args.cases.split(","):
        f = CASES[name]
        res = {"numpy": [], "changed": [], "none": []}
        for rep in range(args.repeat + 1):  # rep 0: the first loop, which plans and compiles
            ks = list(range(rep * args.iters, (rep + 1) * args.iters))
            t0 = time.perf_counter()
            want = f(numpy, h, ks)
            res["numpy"].append((time.perf_counter() - t0,))
            for lift in lifts:
                res[lift].append(run_tracer(f, h, ks, lift))
            with context(lift="changed"):
                check = f(tnp, tnp.asarray(h), ks)
            assert abs(check - want) <= 1e-9 * max(1.0, abs(want)), (name, check, want)

        def later(k, i):
            return statistics.median(r[i] for r in res[k][1:])
        cells = [f"{later('numpy', 0) / args.iters * 1e3:.2f}"]
        for k in ("changed", "none"):
            if not res[k]:
                cells += ["-", "-"]
                continue
            t, made, _, compiled = res[k][0]
            cells += [f"{t:.2f} ({made}, {compiled})",
                      f"{later(k, 0) / args.iters * 1e3:.2f} ({later(k, 1):g}, "
                      f"{later(k, 2) * 1e3:.1f})"]
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
