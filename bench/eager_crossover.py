"""Where fusion starts to pay: one expression of 8 elementwise ops on realized arrays of n
elements, run eagerly (op by op by NumPy, tracer's adaptive laziness) and lazily (recorded,
one fused kernel from a warm cache), side by side with NumPy, for n = 2**6 .. 2**20.

    python -m bench.eager_crossover [--repeat 200]

CONFIG.eager_size (TRACER_EAGER_SIZE) should sit below the n where the lazy time drops under
the eager one. The table goes to stdout.
"""
from __future__ import annotations

import argparse
import os
import platform

os.environ.setdefault("TRACER_COMPILE", "sync")

import numpy  # noqa: E402

import tracer  # noqa: E402
import tracer.numpy as tnp  # noqa: E402
from bench.bench_overhead import quartile  # noqa: E402
from tracer.ir.config import context  # noqa: E402


def expr(np, x, y):
    return np.sqrt(np.abs(x * 0.5 + y) + 1.0) * np.exp(-(x * x)) - y / 3.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=200)
    args = ap.parse_args()
    rng = numpy.random.default_rng(0)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cpus; numpy {numpy.__version__}")
    print("| n | NumPy us | eager us | lazy us | lazy / eager |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    for k in range(6, 21, 2):
        n = 2 ** k
        hx, hy = rng.standard_normal(n), rng.standard_normal(n)
        x, y = tnp.array(hx), tnp.array(hy)
        tracer.evaluate(x, y)
        t_np = quartile(lambda: expr(numpy, hx, hy), args.repeat)
        with context(eager_size=2 ** 30):
            t_eager = quartile(lambda: numpy.asarray(expr(tnp, x, y)), args.repeat)
        with context(eager_size=0, small_graph=0):
            t_lazy = quartile(lambda: numpy.asarray(expr(tnp, x, y)), args.repeat)
        print(f"| {n} | {t_np * 1e6:.1f} | {t_eager * 1e6:.1f} | {t_lazy * 1e6:.1f} | "
              f"{t_lazy / t_eager:.2f} |")


if __name__ == "__main__":
    main()
