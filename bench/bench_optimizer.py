"""Benchmark for the optimizer issue: programs written naively, run by tracer, against the
hand-optimized numpy form, side by side in one process (cpu backend).

    python bench/bench_optimizer.py              # full sizes: n=4000; N=M=4000, D=64; 4096^2
    python bench/bench_optimizer.py --quick      # tiny sizes, one timed call: a smoke run
    python bench/bench_optimizer.py --repeat 9 --out /tmp/optimizer.md

- chain:    `(A@B)@v`, float32 n x n, against numpy's hand-reordered `A@(B@v)`
            (numpy's naive `(A@B)@v` is timed for reference). Target: tracer / numpy <= 1.2.
- mindist:  `((X[:,None,:]-Y[None,:,:])**2).sum(-1).min(1)` against numpy's rewritten
            `maximum(|X|^2[:,None] + |Y|^2[None,:] - 2 X@Y.T, 0).min(1)`. Targets: <= 1.2,
            planned peak (`tracer.explain(...).peak_bytes`) < 100 MB, error < 1e-5. numpy's
            naive form is not run: it needs an N*M*D float32 temporary (4.1 GB at full size).
- softmax:  rows of a float32 matrix, the same code in numpy eager. Target: tracer / numpy <= 1.0.

Timing: one warm-up call (pays compilation), then the median of --repeat calls. Each tracer
call builds the lazy expression from lazy inputs (wrapped once with `tnp.asarray`) and runs
`tracer.evaluate`; the result check is outside the timing.
Error: max|got - ref| / max|ref| (normwise) against float64 numpy; for min-distance the
reference is the naive form in float64, computed in row blocks so it fits in memory.
"""
from __future__ import annotations

import argparse
import datetime
import os
import sys
import warnings
from pathlib import Path

os.environ.setdefault("TRACER_BACKEND", "cpu")
os.environ.setdefault("TRACER_COMPILE", "sync")  # timings of compiled kernels, not of the NumPy tier
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, str(ROOT))

import numpy  # noqa: E402

import tracer  # noqa: E402
import tracer.numpy as tnp  # noqa: E402
from tracer.engine import backend  # noqa: E402  (no attribute of tracer until loaded)
from bench.bench_foundation import machine_info, rel_err, timed  # noqa: E402

FULL = dict(n=4000, N=4000, D=64, s=4096)
QUICK = dict(n=64, N=64, D=16, s=64)
MB = 1e6


def fmt_bytes(b: float) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if b >= size:
            return f"{b / size:.1f} {unit}"
    return f"{b:.0f} B"


def data(*shapes):
    rng = numpy.random.default_rng(0)
    return [rng.standard_normal(s, dtype=numpy.float32) for s in shapes]


def time_tracer(build, repeat):
    """Median seconds of build-and-evaluate, and the tracer warnings seen on the warm-up call
    (a TracerFallbackWarning means part of the program ran in plain NumPy)."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        _, med, _ = timed(lambda: tracer.evaluate(build()), repeat)
    names = sorted({w.category.__name__ for w in seen if "Tracer" in w.category.__name__})
    return med, (f"; WARNINGS: {', '.join(names)}" if names else "")


def chain(sz, repeat):
    n = sz["n"]
    A, B, v = data((n, n), (n, n), (n,))
    tA, tB, tv = tnp.asarray(A), tnp.asarray(B), tnp.asarray(v)
    t_tr, warn = time_tracer(lambda: (tA @ tB) @ tv, repeat)
    _, t_np, _ = timed(lambda: A @ (B @ v), repeat)
    _, t_naive, _ = timed(lambda: (A @ B) @ v, repeat)
    ref = A.astype(numpy.float64) @ (B.astype(numpy.float64) @ v.astype(numpy.float64))
    err = rel_err(numpy.asarray((tA @ tB) @ tv), ref)
    ratio = t_tr / t_np
    return dict(what=f"`(A@B)@v` n={n}", tr=t_tr, peer="numpy `A@(B@v)`", np=t_np,
                ratio=ratio, target="<= 1.2", met=[("time", ratio <= 1.2)],
                notes=f"numpy naive `(A@B)@v` {t_naive * 1e3:.2f} ms; err {err:.1e}{warn}")


def mindist(sz, repeat):
    N, D = sz["N"], sz["D"]
    X, Y = data((N, D), (N, D))
    tX, tY = tnp.asarray(X), tnp.asarray(Y)

    def naive():
        return ((tX[:, None, :] - tY[None, :, :]) ** 2).sum(-1).min(1)

    def rewritten():
        d = (X * X).sum(1)[:, None] + (Y * Y).sum(1)[None, :] - 2 * X @ Y.T
        return numpy.maximum(d, 0).min(1)

    t_tr, warn = time_tracer(naive, repeat)
    _, t_np, _ = timed(rewritten, repeat)
    peak = tracer.explain(naive()).peak_bytes
    # Exact float64 reference: the naive form itself, 100 rows at a time (~200 MB a block).
    X64, Y64 = X.astype(numpy.float64), Y.astype(numpy.float64)
    ref = numpy.concatenate([((X64[i:i + 100, None, :] - Y64[None]) ** 2).sum(-1).min(1)
                             for i in range(0, N, 100)])
    got = numpy.asarray(naive())
    err = rel_err(got, ref)
    # Elementwise error, for information only: the |x|^2+|y|^2-2x.y expansion loses digits
    # where a distance is small next to the norms, which the normwise figure hides.
    elem = float(numpy.max(numpy.abs(got - ref) / numpy.maximum(numpy.abs(ref), 1e-30)))
    ratio = t_tr / t_np
    return dict(what=f"naive min-distance N=M={N} D={D}", tr=t_tr, peer="numpy rewritten",
                np=t_np, ratio=ratio, target="<= 1.2; peak < 100 MB; err < 1e-5",
                met=[("time", ratio <= 1.2), ("peak", peak < 100 * MB), ("err", err < 1e-5)],
                notes=f"peak {fmt_bytes(peak)} (numpy naive needs N*M*D*4 = "
                      f"{fmt_bytes(N * N * D * 4)}); err {err:.1e} "
                      f"(elementwise {elem:.1e}){warn}")


def softmax(sz, repeat):
    s = sz["s"]
    (x,) = data((s, s))
    tx = tnp.asarray(x)

    def code(m, a):  # the same source for numpy and tracer
        e = m.exp(a - a.max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)

    t_tr, warn = time_tracer(lambda: code(tnp, tx), repeat)
    _, t_np, _ = timed(lambda: code(numpy, x), repeat)
    kernels = tracer.explain(code(tnp, tx)).kernels
    err = rel_err(numpy.asarray(code(tnp, tx)), code(numpy, x.astype(numpy.float64)))
    ratio = t_tr / t_np
    kinds = ", ".join(k.kind for k in kernels)
    return dict(what=f"softmax rows {s}x{s}", tr=t_tr, peer="numpy eager", np=t_np,
                ratio=ratio, target="<= 1.0", met=[("time", ratio <= 1.0)],
                notes=f"{len(kernels)} kernel(s) ({kinds}); numpy / tracer {1 / ratio:.2f}x; "
                      f"err {err:.1e}{warn}")


def row(fn, sz, repeat) -> tuple[str, bool]:
    """One table row; an exception is reported in the row (the other targets still run)."""
    try:
        r = fn(sz, repeat)
    except Exception as e:  # noqa: BLE001 - a broken target is a table cell, not a crash
        msg = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:120]
        return f"| {fn.__name__} | ERROR | - | - | - | - | no | `{msg.replace('|', '/')}` |", False
    missed = [name for name, ok in r["met"] if not ok]
    met = "yes" if not missed else f"no ({', '.join(missed)})"
    return (f"| {r['what']} | {r['tr'] * 1e3:.2f} | {r['peer']} | {r['np'] * 1e3:.2f} | "
            f"{r['ratio']:.2f} | {r['target']} | {met} | {r['notes']} |"), True


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes, one timed call (smoke run)")
    ap.add_argument("--repeat", type=int, default=None, help="timed calls (default 5, quick 1)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "optimizer.md")
    args = ap.parse_args(argv)
    sz = QUICK if args.quick else FULL
    repeat = args.repeat or (1 if args.quick else 5)

    rows, ran = zip(*(row(f, sz, repeat) for f in (chain, mindist, softmax)))
    lines = [
        f"# optimizer benchmark ({'quick' if args.quick else 'full'} sizes), "
        f"{datetime.datetime.now().isoformat(timespec='seconds')}",
        "",
        *machine_info(str(backend())),
        f"- one warm-up call, then median of {repeat}; ratio = tracer ms / peer ms (lower is "
        "better); err = max|got - ref| / max|ref| (normwise) against float64",
        "",
        "| program | tracer ms | peer | peer ms | ratio | target | met | notes |",
        "| --- | ---: | --- | ---: | ---: | --- | --- | --- |",
        *rows,
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(f"written to {args.out}")
    return 0 if all(ran) else 1


if __name__ == "__main__":
    sys.exit(main())
