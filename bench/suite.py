"""The benchmark suite: tracer and its peers side by side in one process, on the same programs.

    python -m bench.suite [--repeat 5] [--only W1,W2sum] [--scale 0.1]

Each workload is one function written against a NumPy-like module `m`, run as written by
every peer that is installed: numpy (eager), numexpr (elementwise workloads), a numba kernel
written by hand (W1, W1', W2 sum), jax.jit, CuPy (with a GPU), and tracer (`tracer.numpy` on
lazy inputs made once; each call builds the expression and evaluates it; W5 also through
tracer.jit). With TRACER_BACKEND=cuda, tracer runs on the GPU beside CuPy and jax.jit there.
Every peer gets one warm-up call, then the median of --repeat calls. Reported per row: the median, tracer's time over the
peer's (below 1: tracer is faster), the bytes the workload must move over the median as GB/s
and as a fraction of a copy measured in the same run (a 2-thread prange copy on `cpu`, a
device-to-device copy on `cuda`, where every call waits for the device), and the relative error
(max |x - ref| / max |ref|) against the program run by NumPy in float64. The table goes to
stdout and --out (bench/out/suite.md).
"""
from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

os.environ.setdefault("TRACER_COMPILE", "sync")  # compiled kernels, not the NumPy tier
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy  # noqa: E402

from bench.bench_foundation import copy_reference, rel_err, timed  # noqa: E402


# ---------------------------------------------------------------- the programs

def w1(m, a, b, c, d):
    return a * b + c * m.sin(d) - m.exp(-a * a)


def w1p(m, a, b, c, d):
    return a * b + c * d - a * a


def w2_sum(m, a):
    return (a * a).sum()


def w2_softmax(m, x):
    e = m.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def w3(m, x, y):
    return ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1).min(1)


def w3_rewritten(m, x, y):
    d = (x * x).sum(1)[:, None] + (y * y).sum(1)[None, :] - 2 * (x @ y.T)
    return m.maximum(d, 0).min(1)


def w4(m, a, b, v):
    return (a @ b) @ v


def w5(m, x, y):
    for _ in range(500):
        x = x * 1.0001 + y
    return x


def standardize_cov(m, x):
    z = (x - x.mean(axis=0)) / x.std(axis=0)
    return z.T @ z / (x.shape[0] - 1)


def kmeans(m, x, c):
    k = c.shape[0]
    for _ in range(3):
        d = ((x[:, None, :] - c[None, :, :]) ** 2).sum(-1)
        onehot = (d.argmin(axis=1)[:, None] == m.arange(k)[None, :]).astype(x.dtype)
        c = (onehot.T @ x) / m.maximum(onehot.sum(axis=0), 1)[:, None]
    return c


@dataclass
class Workload:
    name: str
    fn: Callable
    shapes: Callable      # input shapes at a --scale
    moved: Callable       # bytes moved, from the inputs and the result (None: compute-bound)
    numexpr: str | None = None


def _elementwise_bytes(ins, out):
    return sum(i.nbytes for i in ins) + out.nbytes


def _n(size: int, scale: float) -> int:
    return max(1, int(size * scale))


WORKLOADS = [
    Workload("W1 a*b+c*sin(d)-exp(-a*a), 2e7 f32", w1,
             lambda s: [(_n(20_000_000, s),)] * 4, _elementwise_bytes,
             "a*b + c*sin(d) - exp(-a*a)"),
    Workload("W1' a*b+c*d-a*a, 2e7 f32", w1p, lambda s: [(_n(20_000_000, s),)] * 4,
             _elementwise_bytes, "a*b + c*d - a*a"),
    Workload("W2 sum(a*a), 2e7 f32", w2_sum, lambda s: [(_n(20_000_000, s),)],
             lambda ins, out: ins[0].nbytes, "sum(a*a)"),
    Workload("W2 softmax rows, 4096x4096 f32", w2_softmax, lambda s: [(_n(4096, s), 4096)],
             _elementwise_bytes),
    Workload("W3 naive min-distance, N=M=4000, D=64", w3,
             lambda s: [(_n(4000, s), 64), (_n(4000, s), 64)], None),
    Workload("W3 rewritten x.x + y.y - 2 x.y, N=M=4000, D=64", w3_rewritten,
             lambda s: [(_n(4000, s), 64), (_n(4000, s), 64)], None),
    Workload("W4 (A@B)@v, n=4000", w4,
             lambda s: [(_n(4000, s), _n(4000, s)), (_n(4000, s), _n(4000, s)), (_n(4000, s),)],
             None),
    Workload("W5 1000 tiny ops, 10 f32", w5, lambda s: [(10,), (10,)], None),
    Workload("E1 standardize then covariance, 200000x64", standardize_cov,
             lambda s: [(_n(200_000, s), 64)], None),
    Workload("E2 k-means, 3 iterations, 100000x16, k=16", kmeans,
             lambda s: [(_n(100_000, s), 16), (16, 16)], None),
]


# ---------------------------------------------------------------- the peers

def _numexpr(w: Workload, ins):
    import numexpr
    names = "abcd"[:len(ins)]
    env = dict(zip(names, ins))
    return lambda: numexpr.evaluate(w.numexpr, local_dict=env)


def _jax(w: Workload, ins):
    import jax
    import jax.numpy as jnp
    f = jax.jit(lambda *a: w.fn(jnp, *a))
    dev = [jax.device_put(i) for i in ins]
    return lambda: f(*dev).block_until_ready()


def _hand_numba(w: Workload, ins):
    """The kernel a numba user would write by hand (NUMBA_NOTES.md), into a preallocated out."""
    from numba import njit, prange
    if w.fn is w2_sum:  # blocks of 4096 reassociated in float32, float64 across blocks
        @njit(parallel=True, fastmath={"reassoc", "contract"}, cache=False)
        def total(a):
            nb = (a.size + 4095) // 4096
            parts = numpy.zeros(nb)
            for b in prange(nb):
                acc = numpy.float32(0)
                for i in range(b * 4096, min(a.size, b * 4096 + 4096)):
                    acc += a[i] * a[i]
                parts[b] = acc
            return parts.sum()
        return lambda: total(*ins)
    body = {w1: "a[i] * b[i] + c[i] * np.sin(d[i]) - np.exp(-a[i] * a[i])",
            w1p: "a[i] * b[i] + c[i] * d[i] - a[i] * a[i]"}.get(w.fn)
    if body is None:
        raise NotImplementedError(w.name)
    env = {"np": numpy, "prange": prange}
    exec(f"def kern(out, a, b, c, d):\n    for i in prange(a.size):\n        out[i] = {body}\n",
         env)
    kern = njit(parallel=True, cache=False)(env["kern"])
    out = numpy.empty_like(ins[0])
    return lambda: (kern(out, *ins), out)[1]


def _cupy(w: Workload, ins):
    import cupy
    dev = [cupy.asarray(i) for i in ins]

    def run():
        out = w.fn(cupy, *dev)
        cupy.cuda.Device().synchronize()
        return out
    return run


def _sync() -> Callable:
    """What waits for the device: kernels on `cuda` are asynchronous."""
    from tracer.engine import backend
    if backend() != "cuda":
        return lambda: None
    from numba import cuda
    return cuda.synchronize


def _tracer(w: Workload, ins):
    import tracer
    import tracer.numpy as tnp
    lazy = [tnp.asarray(i) for i in ins]
    sync = _sync()
    return lambda: (tracer.evaluate(r := w.fn(tnp, *lazy)), sync(), r)[-1]


def _tracer_jit(w: Workload, ins):
    import tracer
    import tracer.numpy as tnp
    f = tracer.jit(lambda *a: w.fn(tnp, *a))
    sync = _sync()
    return lambda: (r := f(*ins), sync(), r)[0]


def device_copy_reference(nbytes: int, repeat: int) -> tuple[float, float]:
    """Median seconds and GB/s (read + write) of a device-to-device copy of `nbytes`: the
    bandwidth the cuda rows are measured against."""
    from numba import cuda
    n = nbytes // 4
    src = cuda.to_device(numpy.ones(n, numpy.float32))
    dst = cuda.device_array(n, numpy.float32)

    def copy():
        dst.copy_to_device(src)
        cuda.synchronize()
    _, med, _ = timed(copy, repeat)
    if not (dst.copy_to_host() == 1).all():
        raise RuntimeError("device copy reference produced a wrong result")
    return med, 2 * n * 4 / med / 1e9


def peers(w: Workload) -> list[tuple[str, Callable]]:
    out = [("numpy", lambda ins: (lambda: w.fn(numpy, *ins)))]
    if w.numexpr:
        out.append(("numexpr", lambda ins: _numexpr(w, ins)))
    if w.fn in (w1, w1p, w2_sum):
        out.append(("numba by hand", lambda ins: _hand_numba(w, ins)))
    out += [("jax.jit", lambda ins: _jax(w, ins)), ("cupy", lambda ins: _cupy(w, ins)),
            ("tracer", lambda ins: _tracer(w, ins))]
    if w.fn is w5:
        out.append(("tracer.jit", lambda ins: _tracer_jit(w, ins)))
    return out


def _host(x) -> numpy.ndarray:
    if hasattr(x, "get"):  # cupy
        x = x.get()
    return numpy.asarray(x)


def run_workload(w: Workload, repeat: int, scale: float, copy_gbs: float) -> list[str]:
    rng = numpy.random.default_rng(0)
    ins = [rng.standard_normal(s).astype(numpy.float32) for s in w.shapes(scale)]
    ref = _host(w.fn(numpy, *[i.astype(numpy.float64) for i in ins]))
    rows, times = [], {}
    for name, make in peers(w):
        try:
            fn = make(ins)
        except Exception:  # noqa: BLE001 - a peer that is not installed or has no device
            continue
        try:
            warm, med, _ = timed(fn, repeat)
        except Exception as e:  # noqa: BLE001 - e.g. no GPU for cupy
            if name == "tracer":
                raise
            print(f"  {name}: skipped ({type(e).__name__})", file=sys.stderr)
            continue
        out = _host(fn())
        times[name] = med
        moved = w.moved(ins, out) if w.moved else None
        gbs = moved / med / 1e9 if moved else None
        rows.append([w.name, name, med, warm, gbs, rel_err(out, ref)])
    t = times.get("tracer.jit", times.get("tracer"))
    lines = []
    for name_w, peer, med, warm, gbs, err in rows:
        ratio = f"{t / med:.2f}" if t and not peer.startswith("tracer") else ""
        bw = f"{gbs:.1f} | {gbs / copy_gbs:.2f}" if gbs else "- | -"
        lines.append(f"| {name_w} | {peer} | {_ms(med)} | {_ms(warm)} | {ratio} | {bw} | "
                     f"{err:.1e} |")
    return lines


def _ms(s: float) -> str:
    return f"{s * 1e3:.2f} ms" if s < 1 else f"{s:.3f} s"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", default="", help="comma-separated workload name prefixes")
    ap.add_argument("--scale", type=float, default=1.0, help="scale the big leading sizes")
    ap.add_argument("--out", default=str(ROOT / "bench" / "out" / "suite.md"))
    args = ap.parse_args(argv)
    import tracer
    from bench.bench_foundation import machine_info
    from tracer.engine import backend
    n = max(1, int(2**28 * args.scale))  # 1 GiB of float32 at scale 1
    if backend() == "cuda":
        copy_s, copy_gbs = device_copy_reference(4 * n, args.repeat)
        what = f"device-to-device copy of {n} float32"
    else:
        src = numpy.ones(n, numpy.float32)
        copy_s, copy_gbs = copy_reference(src, 2, args.repeat)
        del src
        what = f"numba prange copy of {n} float32 on 2 threads"
    head = machine_info(backend()) + [
        f"copy reference: {what}: {copy_s * 1e3:.2f} ms, {copy_gbs:.1f} GB/s (read + write)", "",
        "| workload | peer | median | first call | tracer / peer | GB/s | of copy | rel. err |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    print("\n".join(head), flush=True)
    lines = list(head)
    only = [o.strip() for o in args.only.split(",") if o.strip()]
    for w in WORKLOADS:
        if only and not any(w.name.startswith(o) for o in only):
            continue
        for line in run_workload(w, args.repeat, args.scale, copy_gbs):
            print(line, flush=True)
            lines.append(line)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines) + "\n")
    print(f"\n{tracer.stats()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
