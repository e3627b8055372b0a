"""Memory-budgeted execution: the three examples at sizes 10x past the budget, eXLA's table.

    python bench/bench_budget.py [--budget "256 MiB"] [--quick]

For each example (k-NN distances, attention, a Gaussian kernel matrix times a vector), written
naively:
- the largest size in the sweep whose unbudgeted plan fits the budget, run unbudgeted;
- the sizes whose unbudgeted plan is 10x the budget and more, run under the budget: time,
  planned and measured peak, error against float64 NumPy on sampled rows.
Then the min-distance program at N = M = 40000, D = 64 under 1 GiB against NumPy's
hand-blocked rewrite (1000-row blocks of |x|^2 + |y|^2 - 2 x.y) in the same run.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
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
from tracer.budget import fmt_bytes, parse_size  # noqa: E402

SAMPLE = 256  # rows checked against float64 NumPy


def knn(m, x, y):
    d = ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1)
    return d.min(1)


def attention(m, q, k, v):
    s = q @ k.T / math.sqrt(q.shape[1])
    e = m.exp(s - s.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)) @ v


def gaussian(m, x, z, w):
    return m.exp(-((x[:, None, :] - z[None, :, :]) ** 2).sum(-1) / 2.0) @ w


SIZES = [1000, 2000, 4000, 8000, 16000, 32000]
# name: (program, shapes of the inputs at size n (the first input's rows are the sampled rows),
# the sizes swept)
EXAMPLES = {
    "k-NN distances, D=64": (knn, lambda n: [(n, 64), (n, 64)], SIZES),
    "attention, d=64": (attention, lambda n: [(n, 64), (n, 64), (n, 64)], SIZES),
    "Gaussian kernel @ v, M=4000, D=8": (gaussian, lambda n: [(n, 8), (4000, 8), (4000,)],
                                         SIZES + [64000, 128000]),
}


def inputs(shapes, seed=0):
    rng = numpy.random.default_rng(seed)
    return [rng.standard_normal(s, dtype=numpy.float32) for s in shapes]


def rel_err(prog, host, got) -> float:
    """Max error on SAMPLE rows of the output against float64 NumPy, over the max reference."""
    idx = numpy.linspace(0, host[0].shape[0] - 1, SAMPLE).astype(int)
    ref = prog(numpy, host[0][idx].astype(numpy.float64),
               *[h.astype(numpy.float64) for h in host[1:]])
    return float(numpy.abs(got[idx] - ref).max() / numpy.abs(ref).max())


def plan_peak(prog, host) -> int:
    out = prog(np, *map(np.asarray, host))
    return tracer.explain(out).peak_bytes


def run(prog, host, budget=None):
    args = [np.asarray(h) for h in host]
    out = prog(np, *args)
    tracer.reset_stats()
    t0 = time.perf_counter()
    if budget is None:
        got = numpy.asarray(out)
    else:
        with tracer.memory_budget(budget):
            got = numpy.asarray(out)
    dt = time.perf_counter() - t0
    s = tracer.stats()
    return got, dt, s.planned_peak_bytes, s.measured_peak_bytes, s.split_chunks


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--budget", default="256 MiB")
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    args = ap.parse_args(argv)
    limit = parse_size(args.budget)
    print(f"budget {args.budget}, cpu backend, {os.cpu_count()} cores\n")
    print("| example | largest n unbudgeted within the budget (plan) | time | n under the budget "
          "(unbudgeted plan, x budget) | time | chunks | planned peak | measured peak | "
          "rel. err |")
    print("| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    for name, (prog, shapes, sizes) in EXAMPLES.items():
        fits, big = None, []
        for n in [256, 512, 1024, 2048] if args.quick else sizes:
            host = inputs(shapes(n))
            peak = plan_peak(prog, host)
            if peak <= limit:
                fits = (n, peak, host)
            elif peak >= 10 * limit:
                big.append((n, peak, host))
        if fits is not None:
            n0, p0, host = fits
            run(prog, host)  # compiles
            _, t0, *_ = run(prog, host)
            first = f"{n0} ({fmt_bytes(p0)})", f"{t0 * 1e3:.0f} ms"
        else:
            first = "none in the sweep", ""
        big = big[:1] + big[-1:] if len(big) > 1 else big  # the first 10x size and the largest
        for n, peak, host in big or [(None, 0, None)]:
            if host is None:
                print(f"| {name} | {first[0]} | {first[1]} | no size 10x the budget in the sweep "
                      "| | | | | |")
                continue
            got, dt, planned, measured, chunks = run(prog, host, args.budget)
            ok = "" if measured <= limit else " OVER"
            print(f"| {name} | {first[0]} | {first[1]} | {n} ({fmt_bytes(peak)}, "
                  f"{peak / limit:.0f}x) | {dt:.2f} s | {chunks} | {fmt_bytes(planned)} | "
                  f"{fmt_bytes(measured)}{ok} | {rel_err(prog, host, got):.1e} |")
    if not args.quick:
        min_distance()
    return 0


def numpy_blocked(x, y, rows=1000):
    yy = (y * y).sum(1)
    out = numpy.empty(x.shape[0], numpy.float32)
    for lo in range(0, x.shape[0], rows):
        xb = x[lo:lo + rows]
        d = (xb * xb).sum(1)[:, None] + yy[None, :] - 2 * (xb @ y.T)
        out[lo:lo + rows] = numpy.maximum(d, 0).min(1)
    return out


def min_distance(n=40000):
    host = inputs([(n, 64), (n, 64)], seed=1)
    t0 = time.perf_counter()
    ref_np = numpy_blocked(*host)
    t_np = time.perf_counter() - t0
    run(knn, [h[:2000] for h in host], "1 GiB")  # compiles the chunk kernels
    got, dt, planned, measured, chunks = run(knn, host, "1 GiB")
    print(f"\nmin-distance N=M={n}, D=64 under 1 GiB: tracer {dt:.2f} s ({chunks} chunks, planned "
          f"{fmt_bytes(planned)}, measured {fmt_bytes(measured)}, rel. err "
          f"{rel_err(knn, host, got):.1e}); numpy 1000-row blocks {t_np:.2f} s (rel. err "
          f"{rel_err(knn, host, ref_np):.1e}); tracer / numpy {dt / t_np:.2f}")


if __name__ == "__main__":
    sys.exit(main())
