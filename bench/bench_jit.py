"""tracer.jit replay cost: a 1000-op elementwise chain on 10-element float64 arrays.

    python bench/bench_jit.py [--ops 1000] [--repeat 50]

Reports microseconds per op for tracer.jit's replay (after the first, tracing call), for the
same code evaluated without jit (tracing, plan cache lookup, run), for NumPy eager, and for
jax.jit's cached call on the same numpy arrays where jax is installed.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("TRACER_BACKEND", "cpu")
os.environ.setdefault("TRACER_COMPILE", "sync")  # timings of compiled kernels, not of the NumPy tier
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, str(ROOT))

import numpy  # noqa: E402

import tracer  # noqa: E402
import tracer.numpy as tnp  # noqa: E402


def chain(m, x, y, ops):
    for _ in range(ops // 2):
        x = x * 1.0001 + y
    return x


def median_us(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ops", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=50)
    args = ap.parse_args(argv)
    h, g = numpy.arange(10.0), numpy.ones(10)
    jf = tracer.jit(lambda x, y: chain(tnp, x, y, args.ops))
    rows = [("tracer.jit replay", median_us(lambda: jf(h, g), args.repeat)),
            ("tracer, no jit", median_us(lambda: tracer.evaluate(
                chain(tnp, tnp.asarray(h), tnp.asarray(g), args.ops)), max(3, args.repeat // 10))),
            ("numpy eager", median_us(lambda: chain(numpy, h, g, args.ops), args.repeat))]
    try:  # the peer, where installed
        import jax
        import jax.numpy as jnp
        jax.config.update("jax_platforms", "cpu")
        jj = jax.jit(lambda x, y: chain(jnp, x, y, args.ops))
        rows.append(("jax.jit cached call", median_us(
            lambda: jj(h, g).block_until_ready(), args.repeat)))
    except ImportError:
        pass
    ok = numpy.allclose(numpy.asarray(jf(h, g)), chain(numpy, h, g, args.ops), rtol=1e-13)
    print(f"{args.ops}-op chain on 10-element float64 arrays; replay matches numpy: {ok}\n")
    print("| how | us per call | us per op |")
    print("| --- | ---: | ---: |")
    for what, us in rows:
        print(f"| {what} | {us:.1f} | {us / args.ops:.3f} |")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
