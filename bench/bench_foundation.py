"""Benchmark for the foundation issue: `a*b + c*d - a*a` on four float32 arrays.

    python bench/bench_foundation.py                # numpy, tracer, copy reference
    python bench/bench_foundation.py --peers-only   # numpy and copy reference, no tracer
    TRACER_BACKEND=cuda python bench/bench_foundation.py

What is timed (time.perf_counter, one warm-up call, then the median of --repeat calls):
- numpy:  `a*b + c*d - a*a` on the numpy arrays (eager, with its temporaries).
- tracer: building the lazy expression from the lazy inputs (wrapped once with
          `tracer.numpy.asarray`) and `tracer.evaluate(expr)`. The result is left where the
          backend put it: the copy back to a numpy array is not timed (on the CPU backend it
          is free; on the CUDA backend it is a device-to-host transfer, and each call ends with
          `numba.cuda.synchronize()` so the kernels are finished). The warm-up call pays
          for compilation; its cost is reported separately from `tracer.stats()`.
- copy:   a numba `prange` copy of one float32 array of the same length on --copy-threads
          threads (default 2): the reference bandwidth, counting read + write.

Bandwidth of the workload counts 5 arrays moved (4 read, 1 written), N * 4 bytes each.
Relative error is max|result - ref| / max|ref|, against the same expression in float64.
The table goes to stdout and to bench/out/foundation.md.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("TRACER_COMPILE", "sync")  # timings of compiled kernels, not of the NumPy tier
if str(ROOT) not in sys.path:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, str(ROOT))


def timed(fn, repeat: int) -> tuple[float, float, list[float]]:
    """One warm-up call, then `repeat` timed calls. Returns (warm-up s, median s, all s)."""
    t0 = time.perf_counter()
    fn()
    warm = time.perf_counter() - t0
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return warm, statistics.median(times), times


def rel_err(x: numpy.ndarray, ref: numpy.ndarray) -> float:
    return float(numpy.max(numpy.abs(x.astype(numpy.float64) - ref)) / numpy.max(numpy.abs(ref)))


def copy_reference(src: numpy.ndarray, threads: int, repeat: int) -> tuple[float, float]:
    """Median seconds and GB/s (read + write) of a numba prange copy on `threads` threads."""
    import numba
    from numba import njit, prange

    @njit(parallel=True, cache=False)
    def prange_copy(dst, src):
        for i in prange(src.shape[0]):
            dst[i] = src[i]

    dst = numpy.empty_like(src)
    old = numba.get_num_threads()
    numba.set_num_threads(max(1, min(threads, numba.config.NUMBA_NUM_THREADS)))
    try:
        _, med, _ = timed(lambda: prange_copy(dst, src), repeat)
    finally:
        numba.set_num_threads(old)
    if not numpy.array_equal(dst, src):
        raise RuntimeError("copy reference produced a wrong result")
    return med, 2 * src.nbytes / med / 1e9


def machine_info(backend: str) -> list[str]:
    import numba
    u = platform.uname()
    lines = [
        f"- machine: {u.system} {u.release} {u.machine}; processor: {platform.processor() or u.machine}",
        f"- cpu count: {os.cpu_count()}; numba threads: {numba.get_num_threads()} "
        f"(layer {numba.config.THREADING_LAYER})",
        f"- python {platform.python_version()}, numpy {numpy.__version__}, numba {numba.__version__}",
        f"- tracer backend: {backend}",
    ]
    if backend == "cuda":
        try:
            from numba import cuda
            dev = cuda.get_current_device()
            name = dev.name.decode() if isinstance(dev.name, bytes) else dev.name
            lines.append(f"- gpu: {name}")
        except Exception as e:  # noqa: BLE001 - info only
            lines.append(f"- gpu: unknown ({type(e).__name__})")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20_000_000, help="elements per array")
    ap.add_argument("--repeat", type=int, default=5, help="timed calls after one warm-up")
    ap.add_argument("--copy-threads", type=int, default=2, help="threads of the copy reference")
    ap.add_argument("--peers-only", action="store_true",
                    help="skip tracer: time numpy and the copy reference only")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "foundation.md")
    args = ap.parse_args(argv)
    n, repeat = args.n, args.repeat

    tracer = tnp = None
    backend = "-"
    if not args.peers_only:
        import tracer
        import tracer.numpy as tnp
        backend = os.environ.get("TRACER_BACKEND") or "default (cpu when no GPU)"
        try:
            from tracer.engine import backend as _backend  # what the runtime actually picked
            backend = str(_backend())
        except Exception:  # noqa: BLE001 - the env var description is good enough
            pass

    rng = numpy.random.default_rng(0)
    a, b, c, d = (rng.random(n, dtype=numpy.float32) for _ in range(4))
    a64, b64, c64, d64 = (x.astype(numpy.float64) for x in (a, b, c, d))
    ref = a64 * b64 + c64 * d64 - a64 * a64
    del a64, b64, c64, d64
    moved = 5 * n * a.itemsize

    rows = []  # (name, median s, GB/s, rel err or None, note)

    # copy reference
    copy_s, copy_gbs = copy_reference(a, args.copy_threads, repeat)

    # numpy eager
    np_out = {}

    def run_numpy():
        np_out["r"] = a * b + c * d - a * a

    _, np_s, _ = timed(run_numpy, repeat)
    rows.append(("numpy (eager)", np_s, moved / np_s / 1e9, rel_err(np_out["r"], ref), ""))
    del np_out["r"]

    # tracer
    extra = []
    if tracer is not None:
        ta, tb, tc, td = (tnp.asarray(x) for x in (a, b, c, d))
        tr_out = {}
        sync = lambda: None  # noqa: E731
        if backend == "cuda":  # kernel launches are asynchronous: wait for them inside the timing
            from numba import cuda
            sync = cuda.synchronize

        def run_tracer():
            expr = ta * tb + tc * td - ta * ta
            tr_out["r"] = tracer.evaluate(expr)
            sync()

        import psutil
        proc = psutil.Process()
        tracer.reset_stats()
        t0 = time.perf_counter()
        run_tracer()
        warm_s = time.perf_counter() - t0
        s_warm = tracer.stats()
        tracer.reset_stats()
        rss0 = proc.memory_info().rss
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            run_tracer()
            times.append(time.perf_counter() - t0)
        tr_s = statistics.median(times)
        s_timed = tracer.stats()
        rss1 = proc.memory_info().rss
        result = numpy.asarray(tr_out["r"])
        if result.shape != (n,) or result.dtype != numpy.float32:
            raise RuntimeError(f"tracer result has shape {result.shape} dtype {result.dtype}")
        rows.append((f"tracer ({backend})", tr_s, moved / tr_s / 1e9, rel_err(result, ref), ""))
        extra += [
            f"- tracer warm-up call: {warm_s * 1e3:.1f} ms; kernels compiled "
            f"{s_warm.kernels_compiled} (cache hits: memory "
            f"{getattr(s_warm, 'cache_hits_memory', '?')}, disk "
            f"{getattr(s_warm, 'cache_hits_disk', '?')}), compile {s_warm.compile_s * 1e3:.1f} ms",
            f"- tracer timed calls ({repeat}): kernels compiled {s_timed.kernels_compiled}, "
            f"compile {s_timed.compile_s * 1e3:.1f} ms, run {s_timed.run_s * 1e3:.1f} ms in all",
            f"- tracer per-call ms: {', '.join(f'{t * 1e3:.1f}' for t in times)}",
            f"- process RSS over the timed calls: {rss0 / 2**20:.0f} -> {rss1 / 2**20:.0f} MiB "
            f"(one result is {n * 4 / 2**20:.0f} MiB; growth means results are kept alive)",
        ]
        launched = getattr(s_timed, "kernels_launched", None)
        if launched is not None and launched < repeat:
            extra.append(f"- WARNING: only {launched} kernel launches in {repeat} timed calls")

    copy_row = (f"numba prange copy, {args.copy_threads} threads (reference)", copy_s, copy_gbs,
                None, "bytes = read + write of one array")
    rows.append(copy_row)

    lines = [
        f"# foundation benchmark: `a*b + c*d - a*a`, 4 x {n:,} float32",
        "",
        *machine_info(backend),
        f"- one warm-up call, then median of {repeat} calls; workload moves 5 x {n * 4 / 1e6:.0f} MB",
        *extra,
        "",
        "| implementation | median ms | GB/s | fraction of copy BW | numpy / this | rel. error | note |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for name, sec, gbs, err, note in rows:
        ratio = "-" if (name, sec, gbs, err, note) == copy_row else f"{np_s / sec:.2f}"
        lines.append(f"| {name} | {sec * 1e3:.2f} | {gbs:.1f} | {gbs / copy_gbs:.2f} | "
                     f"{ratio} | {'-' if err is None else f'{err:.1e}'} | {note} |")
    text = "\n".join(lines) + "\n"
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
