"""Float sums against NumPy: time and whether tracer's result has NumPy's bits.

    python -m bench.bench_sums [--repeat 7] [--cpu]

Each case runs through `tracer.jit` (the plan replayed, its kernel launched every call) on
float64 and float32 arrays of 1e7 values, (1000, 1000), (1e6, 8) and (8, 1e6). Times are the
minimum of --repeat calls, wall clock; --cpu reports process CPU time instead, which a busy
machine disturbs less. The bits column compares the result's bytes with NumPy's.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import timeit
from pathlib import Path

os.environ.setdefault("TRACER_COMPILE", "sync")  # compiled kernels, not the NumPy tier
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy  # noqa: E402

import tracer  # noqa: E402
import tracer.numpy as tnp  # noqa: E402, F401

CASES = [("sum()", lambda a: a.sum()), ("(x*x).sum()", lambda a: (a * a).sum()),
         ("sum(0)", lambda a: a.sum(0)), ("sum(1)", lambda a: a.sum(1))]
SHAPES = [(10**7,), (1000, 1000), (10**6, 8), (8, 10**6)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--cpu", action="store_true", help="process CPU time, not wall time")
    args = ap.parse_args()
    timer = time.process_time if args.cpu else time.perf_counter
    rng = numpy.random.default_rng(0)
    print("| dtype | shape | case | NumPy ms | tracer ms | bits |")
    print("| --- | --- | --- | ---: | ---: | --- |")
    for dt in (numpy.float64, numpy.float32):
        for shape in SHAPES:
            h = rng.standard_normal(shape).astype(dt)
            for name, f in CASES:
                if len(shape) == 1 and name in ("sum(0)", "sum(1)"):
                    continue
                g = tracer.jit(f)
                same = numpy.asarray(g(h)).tobytes() == f(h).tobytes()

                def best(fn):
                    return min(timeit.repeat(fn, number=1, repeat=args.repeat, timer=timer)) * 1e3
                tn, tt = best(lambda: f(h)), best(lambda: numpy.asarray(g(h)))
                print(f"| {numpy.dtype(dt).name} | {shape} | {name} | {tn:.2f} | {tt:.2f} | "
                      f"{'same' if same else 'differ'} |", flush=True)


if __name__ == "__main__":
    main()
