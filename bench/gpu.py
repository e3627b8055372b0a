"""Validation and timing run of the cuda backend on one GPU (issue 20, item 8), under 10 minutes
on an H100.

    TRACER_BACKEND=cuda python -m bench.gpu [--repeat 5] [--only W1,sort] [--out gpu.json]
    python -m bench.gpu --sim    # the same run under Numba's CUDA simulator at tiny sizes

The JSON goes to --out, else $OUT/gpu.json, else bench/out/gpu.json; a table goes to stdout.
It records:
- toolchain: the device, the driver's CUDA version, the NVRTC and NVVM versions and where they
  and libdevice were found, and the PTX ISA and toolkit release of one tiny kernel compiled
  with `cuda.compile_ptx` for the device's compute capability (sm_90 without a device, and
  under --sim in a child process: the simulator has no compile_ptx);
- copy: device-to-device copy bandwidth (bench.suite's reference, read + write), and host to
  device / device to host bandwidth from pageable and from pinned host memory;
- launch: numba-cuda's cost of an empty kernel: host time per launch with no wait, a launch
  and a synchronize, and the span of CUDA events around one launch on an idle stream;
- cases: each program of CASES on lazy inputs made once (uploaded by the warm-up call), built
  and evaluated per call then `cuda.synchronize()`: one warm-up call, the median and lower
  quartile of --repeat calls (`e2e`; under --sim the one instrumented call below), and
  * correctness against NumPy at full size: the result's dtype and shape are NumPy's for the
    same inputs, and max|x - ref| / max|ref| against the program in float64 is within the
    case's tolerance (a budgeted case checks its first rows: its full reference costs minutes);
  * kernel time: one more call with CUDA events recorded on each launch's stream just before
    and after every kernel launch, summed (device copies are not kernels). On an idle stream a
    span also holds the host's launch time, whose floor is `launch.event_us`;
  * per evaluation (that call): launches, host waits, copies and bytes each way
    (tracer.stats(); null where this tracer has no such counter), plan-cache hits, kernels
    compiled, nodes run by the host interpreter;
  * GB/s and fraction of the copy bandwidth (memory-bound cases) or GFLOP/s;
  * CuPy and jax.jit on the same program when importable (not under --sim), with their error
    where the program is not theirs (jax has no in-place writes).
- interchange (bench/gpu_interchange.py): device arrays handed in and out through DLPack and
  the CUDA array interface (numba.cuda, CuPy, torch), with no host copy and tracer's stream;
- cluster (bench/gpu_cluster.py): with dask_cuda importable, a LocalCUDACluster (one worker
  per GPU) runs a tracer.cluster evaluation on every worker's cuda backend (skipped without
  dask_cuda, and under --sim);
Each case runs in its own try: a failure is recorded and the run goes on. Exit status 1 when any
case failed or is wrong.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy  # noqa: E402

from bench import gpu_cluster, gpu_interchange  # noqa: E402
from bench.bench_foundation import rel_err, timed  # noqa: E402

STATS_FIELDS = ("kernels_launched", "host_waits", "h2d_copies", "h2d_bytes", "d2h_copies",
                "d2h_bytes", "plan_cache_hits", "kernels_compiled", "interpreted_nodes",
                "split_chunks", "library_calls", "library_fallbacks")
TIME_LIMIT = 540.0  # seconds: cases left when the run passes this are skipped (issue: < 10 min)


# ---------------------------------------------------------------- the programs

def w1(m, a, b, c, d):
    return a * b + c * m.sin(d) - m.exp(-a * a)


def sum_sq(m, a):
    return (a * a).sum()


def softmax(m, x):
    e = m.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def row_sums(m, x):
    return x.sum(axis=1)


def col_sums(m, x):
    return x.sum(axis=0)


def min_dist(m, x, y):
    return ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1).min(1)


def min_dist_blocked(m, x, y):
    """min_dist in blocks of rows: the float64 reference without its N x M x D temporary."""
    step = max(1, (1 << 24) // max(1, y.size))
    return m.concatenate([min_dist(m, x[i:i + step], y) for i in range(0, x.shape[0], step)])


def chain_matmul(m, a, b, v):
    return (a @ b) @ v


def gather(m, x, idx):
    return x[idx]


def add_at(m, idx, vals):
    out = m.zeros(vals.shape[0] // 100, vals.dtype)  # 100 updates per bin on average
    m.add.at(out, idx, vals)
    return out


def row_writes(m, src):
    """src.shape[0] rows written one at a time into a zeroed buffer ROW_STEP times as tall."""
    buf = m.zeros((src.shape[0] * ROW_STEP, src.shape[1]), src.dtype)
    for i in range(src.shape[0]):
        buf[i * ROW_STEP] = src[i]
    return buf


def cumsum(m, x):
    return m.cumsum(x)


def sort(m, x):
    return m.sort(x)


def segment_sums(m, x, idx):
    return m.add.reduceat(x, idx)


ROW_STEP = 4


# ---------------------------------------------------------------- the cases

@dataclass
class Case:
    name: str
    fn: Callable
    inputs: Callable                 # (rng, tiny) -> host inputs
    tol: float                       # max relative error against the float64 reference
    moved: Callable | None = None    # (inputs, result) -> bytes the evaluation must move
    flops: Callable | None = None    # (inputs) -> floating point operations
    ref: Callable | None = None      # the reference program (default fn), run on float64
    budget: str | None = None        # evaluated inside tracer.memory_budget(budget)
    check_rows: int = 0              # check only this many leading rows (0: all)


def _f32(rng, *shapes):
    return [rng.standard_normal(s).astype(numpy.float32) for s in shapes]


def _nbytes(ins, out):
    return sum(i.nbytes for i in ins) + out.nbytes


def _w3_flops(ins):
    (n, d), (k, _) = ins[0].shape, ins[1].shape
    return 3 * n * k * d


def _add_at_inputs(rng, tiny):
    n = 2000 if tiny else 10_000_000
    return [rng.integers(0, n // 100, n), rng.standard_normal(n)]


def _segments(k: int) -> Callable:
    """(rng, tiny) -> 2e7 f32 values and k segment starts (the thread form, one thread a
    segment, for many; the split form, pieces of numpy's pairwise recursion, for few)."""
    def make(rng, tiny):
        n = 1000 if tiny else 20_000_000
        starts = numpy.sort(rng.choice(n, min(k, n // 10) - 1, replace=False))
        return [_f32(rng, (n,))[0], numpy.concatenate([[0], starts]).astype(numpy.int64)]
    return make


CASES = [
    Case("W1 a*b+c*sin(d)-exp(-a*a), 2e7 f32", w1,
         lambda r, t: _f32(r, *[(1000,) if t else (20_000_000,)] * 4), 1e-5, _nbytes),
    Case("W1 on 2-D input, 4000x5000 f32", w1,
         lambda r, t: _f32(r, *[(20, 50) if t else (4000, 5000)] * 4), 1e-5, _nbytes),
    Case("(a*a).sum(), 2e7 f32", sum_sq, lambda r, t: _f32(r, (1000,) if t else (20_000_000,)),
         1e-5, lambda ins, out: ins[0].nbytes),
    Case("row softmax, 4096x4096 f32", softmax,
         lambda r, t: _f32(r, (2, 32) if t else (4096, 4096)),
         1e-5, _nbytes),
    Case("row sums, 1e6x64 f32", row_sums, lambda r, t: _f32(r, (2, 16) if t else (1_000_000, 64)),
         1e-5, _nbytes),
    Case("column sums, 1e6x64 f32", col_sums,
         lambda r, t: _f32(r, (16, 4) if t else (1_000_000, 64)), 1e-5, _nbytes),
    Case("naive min-distance, N=M=10000, D=3", min_dist,
         lambda r, t: _f32(r, *[(2, 3), (3, 3)] if t else [(10_000, 3), (10_000, 3)]), 1e-5,
         flops=_w3_flops, ref=min_dist_blocked),
    Case("naive min-distance, N=M=4000, D=64", min_dist,
         lambda r, t: _f32(r, *[(2, 64), (3, 64)] if t else [(4000, 64), (4000, 64)]), 1e-5,
         flops=_w3_flops, ref=min_dist_blocked),
    Case("(A@B)@v, n=4000 f32", chain_matmul,
         lambda r, t: _f32(r, *[(8, 8), (8, 8), (8,)] if t else
                           [(4000, 4000), (4000, 4000), (4000,)]),
         1e-5, flops=lambda ins: 2 * ins[0].shape[0] ** 3 + 2 * ins[0].shape[0] ** 2),
    Case("integer gather x[idx], 1e7 of 2e7 f32", gather,
         lambda r, t: [_f32(r, (500,) if t else (20_000_000,))[0],
                       r.integers(0, 500 if t else 20_000_000, 300 if t else 10_000_000)],
         0.0, lambda ins, out: ins[1].nbytes + 2 * out.nbytes),
    Case("np.add.at, 1e7 f64 updates into 1e5 bins", add_at, _add_at_inputs, 1e-9,
         lambda ins, out: ins[0].nbytes + ins[1].nbytes + 2 * out.nbytes),
    Case("64 row writes into a 256x2^20 f32 buffer (1 GiB)", row_writes,
         lambda r, t: _f32(r, (8, 8) if t else (64, 1 << 20)), 0.0,
         lambda ins, out: out.nbytes + 2 * ins[0].nbytes),
    Case("cumsum, 2e7 f64", cumsum,
         lambda r, t: [r.standard_normal(500 if t else 20_000_000)], 1e-9, _nbytes),
    Case("sort, 1e7 f32", sort, lambda r, t: _f32(r, (500,) if t else (10_000_000,)), 0.0, _nbytes),
    Case("add.reduceat, 1e5 segments of 2e7 f32", segment_sums, _segments(100_000), 1e-5,
         _nbytes),
    Case("add.reduceat, 2 segments of 2e7 f32", segment_sums, _segments(2), 1e-5, _nbytes),
    Case("budgeted naive min-distance, N=M=40000, D=64, 1 GiB", min_dist,
         lambda r, t: _f32(r, *[(2, 64), (2, 64)] if t else [(40_000, 64), (40_000, 64)]), 1e-5,
         flops=_w3_flops, ref=min_dist_blocked, budget="1 GiB", check_rows=256),
]
SIM_BUDGET = "1 KiB"  # the budgeted case's budget at --sim sizes


# ---------------------------------------------------------------- the device

def _cuda():
    from numba import cuda
    return cuda


def _sync():
    _cuda().synchronize()


def parse_ptx(ptx: str) -> dict:
    """PTX ISA, target and toolkit release from a PTX module's header."""
    def find(pattern):
        m = re.search(pattern, ptx, re.M)
        return m.group(1) if m else None
    return {"ptx_isa": find(r"^\s*\.version\s+(\S+)"),
            "target": find(r"^\s*\.target\s+(\S+?)[,\s]"),
            "toolkit_release": find(r"Cuda compilation tools, release ([0-9.]+)")}


def _ptx_probe(cc) -> dict:
    """Compile one tiny kernel to PTX for compute capability `cc` (no device needed)."""
    cuda = _cuda()
    from numba import float32

    def scale(x):
        i = cuda.grid(1)
        if i < x.size:
            x[i] *= 2

    ptx, _ = cuda.compile_ptx(scale, (float32[::1],), cc=tuple(cc))
    return dict(parse_ptx(ptx), cc=list(cc))


def ptx_info(cc, sim: bool) -> dict:
    """_ptx_probe here, or under the simulator (where compile_ptx is None) in a child process
    without it."""
    try:
        if not sim:
            return _ptx_probe(cc)
        env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
        code = ("import json; from bench.gpu import _ptx_probe; "
                f"print(json.dumps(_ptx_probe({list(cc)})))")
        p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                           text=True, timeout=120)
        if p.returncode:
            return {"error": p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "failed"}
        return json.loads(p.stdout.strip().splitlines()[-1])
    except Exception as e:  # noqa: BLE001 - recorded: no NVRTC, no NVVM, ...
        return {"error": _one_line(e)}


def toolchain(sim: bool) -> dict:
    import numba
    cuda = _cuda()
    info = {"numba": numba.__version__, "simulator": sim}
    try:
        from importlib.metadata import version
        info["numba_cuda"] = version("numba-cuda")
    except Exception:  # noqa: BLE001 - not installed as a distribution
        info["numba_cuda"] = None
    try:  # where NVVM, NVRTC and libdevice come from: they decide the PTX ISA
        from numba.cuda.cuda_paths import get_cuda_paths
        info["cuda_paths"] = {k: f"{getattr(v, 'info', v)} ({getattr(v, 'by', '?')})"
                              for k, v in get_cuda_paths().items()
                              if k in ("nvvm", "nvrtc", "libdevice")}
    except Exception as e:  # noqa: BLE001 - recorded
        info["cuda_paths"] = _one_line(e)
    cc = (9, 0)  # the PTX probe's target where no device says otherwise
    if sim:
        info["device"] = "Numba CUDA simulator"
    else:
        try:
            dev = cuda.get_current_device()
            cc = tuple(dev.compute_capability)
            total = cuda.current_context().get_memory_info()[1]
            info.update(device=dev.name.decode() if isinstance(dev.name, bytes) else dev.name,
                        compute_capability=list(cc), sms=int(dev.MULTIPROCESSOR_COUNT),
                        memory_gib=round(total / 2**30, 1))
        except Exception as e:  # noqa: BLE001 - recorded; the PTX probe needs no device
            info["device_error"] = _one_line(e)
        for key, get in (("driver_cuda", cuda.cudadrv.driver.get_version),
                         ("nvrtc", cuda.cudadrv.runtime.get_version),
                         ("nvvm", lambda: cuda.cudadrv.nvvm.NVVM().get_version())):
            try:
                info[key] = ".".join(map(str, get()))
            except Exception as e:  # noqa: BLE001 - recorded
                info[key] = f"unknown ({_one_line(e)})"
        try:
            info["driver"] = subprocess.run(
                ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                capture_output=True, text=True, timeout=30).stdout.strip() or None
        except Exception:  # noqa: BLE001 - no nvidia-smi
            info["driver"] = None
    info["ptx"] = ptx_info(cc, sim)
    return info


def copy_bandwidth(nbytes: int, repeat: int) -> dict:
    """Device copy (bench.suite's reference) and host <-> device copies, in GB/s."""
    from bench.suite import device_copy_reference
    cuda = _cuda()
    d2d_s, d2d_gbs = device_copy_reference(nbytes, repeat)
    out = {"bytes": nbytes, "d2d_ms": d2d_s * 1e3, "d2d_gbs": d2d_gbs}
    n = nbytes // 4
    dev = cuda.device_array(n, numpy.float32)
    for kind, host in (("pageable", numpy.ones(n, numpy.float32)),
                       ("pinned", cuda.pinned_array(n, numpy.float32))):
        host[:] = 1
        _, h2d, _ = timed(lambda: (dev.copy_to_device(host), cuda.synchronize()), repeat)
        _, d2h, _ = timed(lambda: (dev.copy_to_host(host), cuda.synchronize()), repeat)
        if not (host == 1).all():
            raise RuntimeError(f"{kind} copies produced a wrong result")
        out[f"h2d_{kind}_gbs"] = nbytes / h2d / 1e9
        out[f"d2h_{kind}_gbs"] = nbytes / d2h / 1e9
    return out


def launch_cost(sim: bool, count: int) -> dict:
    """numba-cuda's bare launch: an empty kernel on one block of one thread."""
    cuda = _cuda()

    @cuda.jit
    def empty():
        pass

    empty[1, 1]()
    cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(count):
        empty[1, 1]()
    host = (time.perf_counter() - t0) / count
    cuda.synchronize()
    _, sync, _ = timed(lambda: (empty[1, 1](), cuda.synchronize()), count)
    spans = []
    for _ in range(count):
        with LaunchEvents() as ev:
            empty[1, 1]()
        spans.append(ev.kernel_s())
    span = None if sim else statistics.median(spans)
    return {"host_us": host * 1e6, "launch_sync_us": sync * 1e6,
            "event_us": None if span is None else span * 1e6}


class LaunchEvents:
    """Within the block, every kernel launched through numba-cuda gets CUDA events recorded on
    its stream just before and after it. `kernel_s()` waits for the device and sums the spans
    (None under the simulator, whose events keep no time); `launches` counts the launches."""

    def __enter__(self):
        self.pairs, self.launches, self.sim = [], 0, _is_sim()
        if self.sim:
            from numba.cuda.simulator.kernel import FakeCUDAKernel as cls
        else:
            from numba.cuda.dispatcher import _LaunchConfiguration as cls
        self.cls, orig = cls, cls.__call__
        event = _cuda().event

        def call(conf, *args):
            if self.sim:
                self.launches += not conf._device  # (device functions run through it too)
                return orig(conf, *args)
            self.launches += 1
            start, end = event(), event()
            start.record(conf.stream)
            try:
                return orig(conf, *args)
            finally:
                end.record(conf.stream)
                self.pairs.append((start, end))
        cls.__call__ = call
        self.orig = orig
        return self

    def __exit__(self, *exc):
        self.cls.__call__ = self.orig

    def kernel_s(self) -> float | None:
        if self.sim:
            return None
        _sync()
        return sum(s.elapsed_time(e) for s, e in self.pairs) / 1e3  # (ms)


def _is_sim() -> bool:
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


# ---------------------------------------------------------------- one case

def _stats() -> dict:
    import tracer
    s = tracer.stats()
    return {f: getattr(s, f, None) for f in STATS_FIELDS}


def _to_host(x) -> numpy.ndarray:
    if hasattr(x, "get"):  # cupy
        x = x.get()
    return numpy.asarray(x)


def check(case: Case, got, want_dtype, ref) -> dict:
    got = _to_host(got)
    if case.check_rows:
        got = got[:case.check_rows]
    same = {"dtype_ok": got.dtype == want_dtype, "shape_ok": got.shape == ref.shape}
    err = rel_err(got, ref) if same["shape_ok"] else None
    return dict(same, dtype=str(got.dtype), rel_err=err,
                correct=all(same.values()) and err is not None and err <= case.tol)


def reference(case: Case, ins) -> numpy.ndarray:
    wide = [i.astype(numpy.float64) if i.dtype == numpy.float32 else i for i in ins]
    if case.check_rows:
        wide[0] = wide[0][:case.check_rows]
    return numpy.asarray((case.ref or case.fn)(numpy, *wide))


def _tracer_call(case: Case, budget: str | None, lazy: list) -> Callable:
    import tracer
    import tracer.numpy as tnp

    def call():
        if budget:
            with tracer.memory_budget(budget):
                r = case.fn(tnp, *lazy)
                tracer.evaluate(r)
        else:
            r = case.fn(tnp, *lazy)
            tracer.evaluate(r)
        _sync()
        return r
    return call


def _peer(name: str, case: Case, ins) -> Callable:
    if name == "cupy":
        import cupy
        dev = [cupy.asarray(i) for i in ins]
        return lambda: (case.fn(cupy, *dev), cupy.cuda.Device().synchronize())[0]
    import jax
    import jax.numpy as jnp
    f = jax.jit(lambda *a: case.fn(jnp, *a))
    dev = [jax.device_put(i) for i in ins]
    return lambda: f(*dev).block_until_ready()


def run_case(case: Case, tiny: bool, repeat: int, copy_gbs: float | None, peers: list) -> dict:
    import tracer
    import tracer.numpy as tnp
    rng = numpy.random.default_rng(0)
    ins = case.inputs(rng, tiny)
    budget = (SIM_BUDGET if tiny else case.budget) if case.budget else None
    res = {"name": case.name, "shapes": [list(i.shape) for i in ins],
           "dtypes": [str(i.dtype) for i in ins], "tol": case.tol, "budget": budget}
    call = _tracer_call(case, budget, [tnp.asarray(i) for i in ins])
    if repeat:
        warm, med, times = timed(call, repeat)
    else:  # (--sim) the warm-up, then the call below is the one timed
        t0 = time.perf_counter()
        call()
        warm = time.perf_counter() - t0
    tracer.reset_stats()  # one more call, steady state: counters, kernel time, the result
    with LaunchEvents() as ev:
        t0 = time.perf_counter()
        out = call()
        if not repeat:
            med = time.perf_counter() - t0
            times = [med]
    res.update(first_call_s=warm, e2e_s=med, e2e_q1_s=sorted(times)[len(times) // 4])
    res["per_eval"] = _stats()
    res["kernel_s"] = ev.kernel_s()
    res["launches_timed_by_events"] = ev.launches
    small = case.inputs(numpy.random.default_rng(0), True)
    want_dtype = numpy.asarray(case.fn(numpy, *small)).dtype  # NumPy's, for these dtypes
    t0 = time.perf_counter()  # (after tracer's calls: a device that fails, fails fast)
    ref = reference(case, ins)
    res["reference_s"] = time.perf_counter() - t0
    res["checked_rows"] = case.check_rows or None
    res.update(check(case, out, want_dtype, ref))
    out_host = _to_host(out)
    moved = case.moved(ins, out_host) if case.moved else None
    res["moved_bytes"] = moved
    res["gbs"] = moved / med / 1e9 if moved else None
    res["of_copy"] = res["gbs"] / copy_gbs if moved and copy_gbs else None
    res["gflops"] = case.flops(ins) / med / 1e9 if case.flops else None
    res["peers"] = {}
    for name in peers:
        try:
            fn = _peer(name, case, ins)
            pwarm, pmed, _ = timed(fn, max(repeat, 1))
            p = {"first_call_s": pwarm, "e2e_s": pmed, "tracer_over_peer": med / pmed}
            p.update(check(case, fn(), want_dtype, ref))
        except Exception as e:  # noqa: BLE001 - the peer cannot run this program
            p = {"error": _one_line(e)}
        res["peers"][name] = p
    return res


# ---------------------------------------------------------------- the run

def _one_line(e: BaseException) -> str:
    return " ".join(f"{type(e).__name__}: {e}".split())[:300]


def _fmt(x, scale: float = 1.0, spec: str = ".2f") -> str:
    return "-" if x is None else format(x * scale, spec)


def table(cases: list) -> list[str]:
    lines = ["| case | e2e ms | q1 ms | kernel ms | first s | GB/s | of copy | GFLOP/s | launches "
             "| all launches | waits | h2d B | d2h B | rel err | ok | cupy ms | jax ms |",
             "| --- |" + " ---: |" * 16]
    for c in cases:
        if "error" in c or "skipped" in c:
            lines.append(f"| {c['name']} | {c.get('error') or c.get('skipped')} |" + " |" * 15)
            continue
        pe, peers = c["per_eval"], c["peers"]
        lines.append(" | ".join([
            f"| {c['name']}", _fmt(c["e2e_s"], 1e3), _fmt(c["e2e_q1_s"], 1e3),
            _fmt(c["kernel_s"], 1e3, ".3f"), _fmt(c["first_call_s"]), _fmt(c["gbs"], 1, ".1f"),
            _fmt(c["of_copy"]), _fmt(c["gflops"], 1, ".0f"), _fmt(pe["kernels_launched"], 1, "g"),
            str(c["launches_timed_by_events"]), _fmt(pe["host_waits"], 1, "g"),
            _fmt(pe["h2d_bytes"], 1, "g"), _fmt(pe["d2h_bytes"], 1, "g"),
            _fmt(c["rel_err"], 1, ".1e"), "yes" if c["correct"] else "NO",
            *(_fmt(peers.get(p, {}).get("e2e_s"), 1e3) for p in ("cupy", "jax"))]) + " |")
    return lines


def _git_rev() -> str | None:
    try:
        p = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                           text=True, timeout=10)
        return p.stdout.strip() or None
    except Exception:  # noqa: BLE001 - no git on the machine, or no repository
        return None


def _section(fn, *args) -> dict:
    try:
        return fn(*args)
    except Exception as e:  # noqa: BLE001 - recorded; the cases still run
        return {"error": _one_line(e), "traceback": traceback.format_exc()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sim", action="store_true",
                    help="Numba's CUDA simulator at tiny sizes (no GPU); checks correctness")
    ap.add_argument("--repeat", type=int, default=None,
                    help="timed calls (default 5; 0 under --sim: the instrumented call is timed)")
    ap.add_argument("--only", default="", help="comma-separated case name prefixes")
    ap.add_argument("--out", default=None, help="the JSON file (default $OUT/gpu.json)")
    ap.add_argument("--time-limit", type=float, default=TIME_LIMIT,
                    help="seconds after which the cases left are skipped")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    if args.sim:
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"  # read when numba.cuda is imported
    elif _is_sim():
        raise SystemExit("NUMBA_ENABLE_CUDASIM is set: run with --sim (tiny sizes) or unset it")
    os.environ["TRACER_BACKEND"] = "cuda"
    os.environ.setdefault("TRACER_COMPILE", "sync")  # compiled kernels, not the NumPy tier
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # jax leaves tracer memory
    warnings.filterwarnings("ignore", message="Grid size")  # numba-cuda on tiny launches
    repeat = (0 if args.sim else 5) if args.repeat is None else args.repeat
    out_path = Path(args.out or Path(os.environ.get("OUT") or ROOT / "bench" / "out") / "gpu.json")

    import tracer
    from tracer.ir.config import CONFIG
    CONFIG.backend = "cuda"
    if args.sim:  # the simulator's launch geometry, and tiny inputs recorded, not run by NumPy
        CONFIG.cuda_sim = True
        CONFIG.eager_size = 0
    import importlib.util
    peers = [] if args.sim else [p for p in ("cupy", "jax") if importlib.util.find_spec(p)]
    report = {"meta": {"date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
                       "host": platform.node(), "python": platform.python_version(),
                       "numpy": numpy.__version__, "tracer": tracer.__version__,
                       "git": _git_rev(), "sim": args.sim, "repeat": repeat,
                       "peers": peers if not args.sim else "not run under the simulator",
                       "e2e": "build the program on lazy inputs, tracer.evaluate, "
                              "cuda.synchronize(); median and lower quartile of the timed calls",
                       "kernel_s": "sum of CUDA event spans around each kernel launch of one "
                                   "steady-state call (null under the simulator)"}}
    report["toolchain"] = _section(toolchain, args.sim)
    report["copy"] = _section(copy_bandwidth, 4096 if args.sim else 1 << 30, max(repeat, 1))
    report["launch"] = _section(launch_cost, args.sim, 3 if args.sim else 1000)
    copy_gbs = report["copy"].get("d2d_gbs")
    for p in peers:
        try:
            mod = __import__(p)
            report["meta"][p] = getattr(mod, "__version__", None)
            if p == "jax":  # NumPy's dtypes (float64 stays float64) and float32 matmuls (no TF32)
                mod.config.update("jax_enable_x64", True)
                mod.config.update("jax_default_matmul_precision", "highest")
                report["meta"]["jax_device"] = str(mod.devices()[0])
        except Exception as e:  # noqa: BLE001 - recorded; the peer's runs will fail too
            report["meta"][p] = f"unusable: {type(e).__name__}: {e}"
    print(json.dumps({k: {f: v for f, v in report[k].items() if f != "traceback"}
                      for k in ("toolchain", "copy", "launch")}, indent=1, default=str), flush=True)
    only = [o.strip() for o in args.only.split(",") if o.strip()]
    cases = []
    for case in CASES:
        if only and not any(case.name.startswith(o) for o in only):
            continue
        if time.perf_counter() - start > args.time_limit:
            cases.append({"name": case.name, "correct": False,
                          "skipped": f"past the {args.time_limit:.0f} s time limit"})
            continue
        t0 = time.perf_counter()
        try:
            res = run_case(case, args.sim, repeat, copy_gbs, peers)
        except Exception as e:  # noqa: BLE001 - one failure is reported, the run goes on
            res = {"name": case.name, "correct": False, "error": _one_line(e),
                   "traceback": traceback.format_exc()}
        res["case_wall_s"] = time.perf_counter() - t0
        cases.append(res)
        print(table([res])[-1], flush=True)
        if "cupy" in peers:  # CuPy's pool keeps freed blocks: give them back to tracer
            import cupy
            cupy.get_default_memory_pool().free_all_blocks()
    report["cases"] = cases
    report["interchange"] = _section(gpu_interchange.run, args.sim)
    print(json.dumps({k: v for k, v in report["interchange"].items() if k != "traceback"},
                     indent=1, default=str), flush=True)
    report["cluster"] = _section(gpu_cluster.run, args.sim)
    print(json.dumps({k: v for k, v in report["cluster"].items() if k != "traceback"},
                     indent=1, default=str), flush=True)
    bad = [c["name"] for c in cases if not c.get("correct")]
    for section in ("interchange", "cluster"):
        if not report[section].get("ok"):
            bad.append(section)
    report["summary"] = {"cases": len(cases), "correct": len(cases) - len(bad),
                         "wrong_or_failed": bad, "wall_s": time.perf_counter() - start}
    print("\n" + "\n".join(table(cases)))
    print(f"\n{len(cases) - len(bad)}/{len(cases)} cases correct; "
          f"{report['summary']['wall_s']:.1f} s")
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(report, indent=1, default=str) + "\n")
    print(f"written to {out_path}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
