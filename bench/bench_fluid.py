"""A small 2-D fluid solver (issue 19 item 5): NumPy vs tracer, and where tracer's time goes.

    python bench/bench_fluid.py [--sizes 128,256] [--steps 4] [--iters 30] [--profile]

The solver is plain NumPy code, run once with `numpy` and once with `tracer.numpy`: each time
step adds a force, advects velocity and a dye by upwind differences (np.roll), diffuses the dye
with a few Jacobi sweeps, projects the velocity onto a divergence-free field with a Jacobi
pressure solve of --iters sweeps written as slice updates
(`p[1:-1, 1:-1] = (p[2:, 1:-1] + p[:-2, 1:-1] + p[1:-1, 2:] + p[1:-1, :-2] - div) / 4`), and
writes the boundaries (`u[0, :] = 0`). The result is read once, after the last step.

tracer runs twice per size: with adaptive laziness off (`eager_size=0`, every op recorded: the
optimizer sees the whole program, the case the issue measured) and at the defaults. Each prints
its wall time (a cold first run in this process, then the median of --repeat warm runs) and the
stats of the cold run: optimize_s, trace_s, compile_s, run_s, evaluations, kernels.
`--profile` prints cProfile's top functions of `tracer.opt.pipeline.optimize` on the recorded
graph, and `--passes` each pass's time (as TRACER_DEBUG=3 would).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("TRACER_COMPILE", "sync")  # compiled kernels, not the NumPy tier
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy  # noqa: E402


def set_bnd(u, sign):
    """Walls: the normal component is mirrored (sign -1), other fields copied (sign 1)."""
    u[0, :] = sign * u[1, :]
    u[-1, :] = sign * u[-2, :]
    u[:, 0] = sign * u[:, 1]
    u[:, -1] = sign * u[:, -2]


def advect(np, q, u, v, dt):
    """Upwind transport of q by (u, v) on a unit grid."""
    dqx_m = q - np.roll(q, 1, axis=0)
    dqx_p = np.roll(q, -1, axis=0) - q
    dqy_m = q - np.roll(q, 1, axis=1)
    dqy_p = np.roll(q, -1, axis=1) - q
    dqx = np.where(u > 0, dqx_m, dqx_p)
    dqy = np.where(v > 0, dqy_m, dqy_p)
    return q - dt * (u * dqx + v * dqy)


def jacobi(p, rhs, alpha, beta, iters):
    for _ in range(iters):
        p[1:-1, 1:-1] = (p[2:, 1:-1] + p[:-2, 1:-1] + p[1:-1, 2:] + p[1:-1, :-2]
                         + alpha * rhs[1:-1, 1:-1]) / beta
        set_bnd(p, 1.0)


def step(np, u, v, dens, dt, iters):
    n = u.shape[0]
    # a force and a source in the middle
    c = slice(n // 2 - 4, n // 2 + 4)
    v[c, c] += dt * 5.0
    dens[c, c] += dt * 10.0
    # advect velocity (both components by the old field) and dye
    u, v = advect(np, u, u, v, dt), advect(np, v, u, v, dt)
    set_bnd(u, -1.0)
    set_bnd(v, -1.0)
    dens = advect(np, dens, u, v, dt)
    # diffuse the dye a little
    d0 = dens.copy()
    jacobi(dens, d0, 4.0, 8.0, 4)
    dens[1:-1, 1:-1] = dens[1:-1, 1:-1] * 0.5 + d0[1:-1, 1:-1] * 0.5
    # project: divergence, pressure, subtract the gradient
    div = np.zeros_like(u)
    div[1:-1, 1:-1] = -0.5 * (u[2:, 1:-1] - u[:-2, 1:-1] + v[1:-1, 2:] - v[1:-1, :-2])
    set_bnd(div, 1.0)
    p = np.zeros_like(u)
    jacobi(p, div, 1.0, 4.0, iters)
    u[1:-1, 1:-1] -= 0.5 * (p[2:, 1:-1] - p[:-2, 1:-1])
    v[1:-1, 1:-1] -= 0.5 * (p[1:-1, 2:] - p[1:-1, :-2])
    set_bnd(u, -1.0)
    set_bnd(v, -1.0)
    return u, v, dens


def solve(np, n: int, steps: int, iters: int, dt: float = 0.1):
    """`steps` time steps on an n x n grid from a fixed swirl; the fields as NumPy arrays
    (tracer's three computed together, as one graph, by tracer.evaluate)."""
    x = numpy.linspace(0, 1, n)
    u = np.asarray(numpy.sin(numpy.pi * x)[:, None] * numpy.cos(numpy.pi * x)[None, :])
    v = np.asarray(-numpy.cos(numpy.pi * x)[:, None] * numpy.sin(numpy.pi * x)[None, :])
    dens = np.zeros((n, n))
    for _ in range(steps):
        u, v, dens = step(np, u, v, dens, dt, iters)
    if np is not numpy:
        import tracer
        tracer.evaluate(u, v, dens)
    return [numpy.asarray(a) for a in (u, v, dens)]


def timed(fn, repeat: int) -> tuple[float, float, object]:
    """(cold seconds, median warm seconds, the cold result)."""
    t0 = time.perf_counter()
    out = fn()
    cold = time.perf_counter() - t0
    warm = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        warm.append(time.perf_counter() - t0)
    return cold, statistics.median(warm) if warm else float("nan"), out


def stats_line(st) -> str:
    return (f"optimize_s={st.optimize_s:.3f} trace_s={st.trace_s:.3f} "
            f"compile_s={st.compile_s:.3f} codegen_s={st.codegen_s:.3f} run_s={st.run_s:.3f} "
            f"evaluations={st.evaluations} kernels={st.kernels_compiled} "
            f"launched={st.kernels_launched} small_graphs={st.small_graphs}")


def record_graph(n: int, steps: int, iters: int):
    """The program's graph as recorded (eager_size=0, nothing evaluated): the roots."""
    import tracer.numpy as tnp
    from tracer.ir.config import context
    with context(eager_size=0, flush_nodes=10 ** 9):
        x = numpy.linspace(0, 1, n)
        u = tnp.asarray(numpy.sin(numpy.pi * x)[:, None] * numpy.cos(numpy.pi * x)[None, :])
        v = tnp.asarray(-numpy.cos(numpy.pi * x)[:, None] * numpy.sin(numpy.pi * x)[None, :])
        dens = tnp.zeros((n, n))
        for _ in range(steps):
            u, v, dens = step(tnp, u, v, dens, 0.1, iters)
    return [a._var.node for a in (u, v, dens)]


def profile_optimizer(n: int, steps: int, iters: int, top: int, passes: bool) -> None:
    import cProfile
    import pstats
    from tracer.ir.node import toposort
    from tracer.opt.pipeline import optimize
    roots = record_graph(n, steps, iters)
    size = len(toposort(roots))
    t0 = time.perf_counter()
    res = optimize(roots, record=True)
    dt = time.perf_counter() - t0
    print(f"\noptimize: {size} nodes ({steps} steps, {iters} iters) -> "
          f"{len(res.order)} nodes in {dt:.3f} s")
    if passes:
        for e in res.effects:
            print("  ", e)
    if top:
        pr = cProfile.Profile()
        pr.enable()
        optimize(roots)
        pr.disable()
        pstats.Stats(pr).sort_stats("cumulative").print_stats(top)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="128,256")
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", type=int, default=0, metavar="TOP",
                    help="cProfile the optimizer on the recorded graph, print TOP functions")
    ap.add_argument("--passes", action="store_true", help="each pass's time on the graph")
    ap.add_argument("--optimizer-only", action="store_true",
                    help="only time the optimizer on the recorded graph (no compile, no run)")
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    if a.optimizer_only or a.profile:
        profile_optimizer(sizes[0], a.steps, a.iters, a.profile, a.passes)
        return

    import tracer
    import tracer.numpy as tnp
    from tracer.ir.config import context
    print(f"fluid: {a.steps} steps, {a.iters} Jacobi iterations; seconds (cold / warm median "
          f"of {a.repeat})")
    for n in sizes:
        cold, warm, ref = timed(lambda: solve(numpy, n, a.steps, a.iters), a.repeat)
        print(f"\n{n}x{n}  numpy                 {cold:8.3f} / {warm:8.3f}")
        for label, kw in (("tracer eager_size=0", {"eager_size": 0}), ("tracer default", {})):
            with context(**kw):
                tracer.reset_stats()
                t0 = time.perf_counter()
                got = solve(tnp, n, a.steps, a.iters)
                cold = time.perf_counter() - t0
                st = tracer.stats()
                line = stats_line(st)
                _, warm, _ = timed(lambda: solve(tnp, n, a.steps, a.iters), a.repeat)
            err = max(float(numpy.max(numpy.abs(g - r))) for g, r in zip(got, ref))
            print(f"{n}x{n}  {label:<21} {cold:8.3f} / {warm:8.3f}  max|diff|={err:.1e}")
            print(f"          cold run: {line}")
    if a.passes:
        profile_optimizer(sizes[0], a.steps, a.iters, 0, True)


if __name__ == "__main__":
    main()
