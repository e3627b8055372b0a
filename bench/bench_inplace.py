"""Slice writes into a large realized array (issue 20 item 6): each evaluation writes into the
array's own buffer instead of a copy of it.

    python -m bench.bench_inplace [--size 10000000] [--steps 20]

Cases, each timed per evaluation (median of --steps, after one untimed warm-up run):
- `x[a:b] = x[a:b] * 0.5 + 1`, 100,000 elements (recorded: past the eager size) of a --size
  float64 array, evaluated every step;
- 64 row writes `x[i] = src[i] * 2` into a (64, size/64) array, evaluated once;
- `x *= 0.5; x += 1` on the whole array, evaluated every step.
Prints per case ms per evaluation and the plan's bytes_copied (peak_bytes for the last).
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("TRACER_COMPILE", "sync")  # compiled kernels, not the NumPy tier

import numpy  # noqa: E402

import tracer  # noqa: E402
import tracer.numpy as np  # noqa: E402


def _own(h):
    """A realized array whose buffer an evaluation made."""
    return tracer.evaluate(np.asarray(h) + np.asarray(numpy.zeros_like(h)))


def slice_steps(size: int, steps: int) -> tuple[float, int]:
    x = _own(numpy.arange(size, dtype=numpy.float64))
    times, copied = [], 0
    n = 100_000
    for k in range(steps + 1):
        a = (k * 7919) % (size - n)
        x[a:a + n] = x[a:a + n] * 0.5 + 1
        if k == steps:
            copied = tracer.explain(x).bytes_copied
        t0 = time.perf_counter()
        tracer.evaluate(x)
        if k:
            times.append(time.perf_counter() - t0)
    return statistics.median(times), copied


def row_writes(size: int, steps: int) -> tuple[float, int]:
    rows = 64
    src = _own(numpy.random.default_rng(0).standard_normal((rows, size // rows)))
    x = _own(numpy.zeros((rows, size // rows)))
    times, copied = [], 0
    for k in range(min(steps, 5) + 1):
        for i in range(rows):
            x[i] = src[i] * 2
        if not k:
            copied = tracer.explain(x).bytes_copied
        t0 = time.perf_counter()
        tracer.evaluate(x)
        if k:
            times.append(time.perf_counter() - t0)
    return statistics.median(times), copied


def augmented(size: int, steps: int) -> tuple[float, int]:
    x = _own(numpy.arange(size, dtype=numpy.float64))
    times, peak = [], 0
    for k in range(steps + 1):
        x *= 0.5
        x += 1
        if k == steps:
            peak = tracer.explain(x).peak_bytes
        t0 = time.perf_counter()
        tracer.evaluate(x)
        if k:
            times.append(time.perf_counter() - t0)
    return statistics.median(times), peak


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=10_000_000)
    ap.add_argument("--steps", type=int, default=20)
    args = ap.parse_args(argv)
    for name, fn, what in (("x[a:b] = x[a:b] * 0.5 + 1", slice_steps, "bytes_copied"),
                           ("64 row writes, one evaluation", row_writes, "bytes_copied"),
                           ("x *= 0.5; x += 1", augmented, "peak_bytes")):
        sec, n = fn(args.size, args.steps)
        print(f"{name:<32} {sec * 1e3:9.3f} ms/evaluation  {what} {n}")


if __name__ == "__main__":
    main()
