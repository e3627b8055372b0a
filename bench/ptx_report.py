"""Registers, spills, stack and shared memory of every kernel that tests/backends/cuda/
test_ptxas.py assembles (the registry sweep's kernel templates and the library kernels), as
`ptxas -v` reports them for one architecture, with the block size a launch takes and the
occupancy it gives (cuda/occupancy.py's rules for sm_90: resident warps of the SM's 64). Needs
NVRTC/NVVM and ptxas (the test extra), no GPU. Achieved bandwidth per kernel needs a GPU:
bench/gpu.py measures it.

    python bench/ptx_report.py [--arch sm_90] [--match REGEX] [--sort registers|smem|name]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for p in (os.path.join(ROOT, "tests"), os.path.join(ROOT, "tests", "backends", "cuda")):
    if p not in sys.path:
        sys.path.insert(0, p)
os.environ.setdefault("TRACER_BACKEND", "cuda")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--match", default="", help="only kernels whose label matches this regex")
    ap.add_argument("--sort", default="registers", choices=("registers", "smem", "name"))
    args = ap.parse_args(argv)

    from tracer.cuda_kernels.cuda.ptx import assemble, find_ptxas
    from test_ptxas import all_ptx
    ptxas = find_ptxas()
    if ptxas is None:
        print("no ptxas: pip install nvidia-cuda-nvcc", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    ptxs = all_ptx(args.match)
    t1 = time.perf_counter()
    usage = assemble(ptxs, args.arch, ptxas)
    t2 = time.perf_counter()
    key = {"registers": lambda kv: (-kv[1].registers, kv[0]),
           "smem": lambda kv: (-kv[1].smem, kv[0]), "name": lambda kv: kv[0]}[args.sort]
    from tracer.cuda_kernels.cuda.occupancy import SM90, best_tpb, resident_blocks
    width = max(map(len, usage), default=10)
    print(f"{'kernel':<{width}}  regs  spill_st  spill_ld  stack   smem  tpb  occupancy")
    for label, u in sorted(usage.items(), key=key):
        # kernels with shared arrays are generated for 256 threads; others take the best
        tpb = 256 if u.smem else best_tpb(u.registers, 0, SM90)
        occ = resident_blocks(u.registers, u.smem, tpb, SM90) * tpb / SM90.threads_per_sm
        print(f"{label:<{width}}  {u.registers:4d}  {u.spill_stores:8d}  {u.spill_loads:8d}  "
              f"{u.stack + u.lmem:5d}  {u.smem:5d}  {tpb:3d}  {occ:8.1%}")
    regs = sorted(u.registers for u in usage.values())
    spills = sum(1 for u in usage.values() if u.spill_stores or u.spill_loads)
    local = sum(1 for u in usage.values() if u.stack or u.lmem)
    if regs:
        print(f"\n{len(usage)} kernels for {args.arch} ({ptxas}): registers median "
              f"{regs[len(regs) // 2]}, max {regs[-1]}; {spills} spill, {local} use local "
              f"memory; PTX {t1 - t0:.1f} s, ptxas {t2 - t1:.1f} s")
    return 1 if spills else 0  # local memory: libdevice float64 trig (test_ptxas.py)


if __name__ == "__main__":
    sys.exit(main())
