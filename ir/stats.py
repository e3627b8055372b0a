"""Counters and times since start or the last reset."""
from __future__ import annotations

import copy
from dataclasses import dataclass, fields


@dataclass
class Stats:
    kernels_compiled: int = 0
    kernels_launched: int = 0  # every device launch: fusions, library kernels, second passes
    vector_launches: int = 0   # cuda: flat loop launches that took the vector variant
    graph_launches: int = 0    # cuda: tracer.jit replays launched as one CUDA graph
    graph_fallbacks: int = 0   # ... and replays whose capture or graph launch failed
    cache_hits_memory: int = 0
    cache_hits_disk: int = 0
    recompiles: int = 0
    fallbacks: int = 0
    library_calls: int = 0      # cuda: ops run by a vendor library (cuBLAS, Thrust/CUB via CuPy)
    library_fallbacks: int = 0  # ... and ops it takes that ran our kernel or the host instead
    interpreted_nodes: int = 0
    small_graphs: int = 0     # evaluations of small arrays only, run by NumPy op by op
    evaluations: int = 0
    plan_cache_hits: int = 0
    tiered_runs: int = 0      # fused groups run by NumPy while their kernel compiled
    split_chunks: int = 0     # chunks run by memory_budget's splitter
    planned_peak_bytes: int = 0   # the last budgeted evaluation: planned intermediates and results
    measured_peak_bytes: int = 0  # ... and the most its run held at once
    host_waits: int = 0       # times the host waited for the device (stream synchronizations)
    h2d_copies: int = 0       # host-to-device copies and their bytes
    h2d_bytes: int = 0
    d2h_copies: int = 0       # device-to-host copies and their bytes
    d2h_bytes: int = 0
    trace_s: float = 0.0
    optimize_s: float = 0.0
    codegen_s: float = 0.0
    load_s: float = 0.0       # writing and importing generated modules
    compile_s: float = 0.0
    run_s: float = 0.0

    def __str__(self) -> str:
        parts = []
        for f in fields(self):
            v = getattr(self, f.name)
            parts.append(f"{f.name}={v:.4f}" if isinstance(v, float) else f"{f.name}={v}")
        return "Stats(" + ", ".join(parts) + ")"


STATS = Stats()


def stats() -> Stats:
    """A snapshot of the counters: two calls around some work can be subtracted."""
    return copy.copy(STATS)


def reset_stats() -> None:
    for f in fields(Stats):
        setattr(STATS, f.name, f.default)
