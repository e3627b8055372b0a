"""The pass pipeline: one visible list. The driver times each pass, can switch any off by name
(TRACER_DISABLE_PASSES), dumps the graph after each (TRACER_DUMP), verifies between passes
(TRACER_VERIFY=1, always on in tests) and names the passes already run when one fails."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Callable

from ir import Node, format_graph, verify
from ir.config import CONFIG
from .fusion import fusion
from .simplify import constant_folding, cse, dce, simplify

Pass = Callable[[list[Node]], list[Node]]

PIPELINE: list[tuple[str, Pass, str]] = [
    ("simplify", simplify, "algebraic identities (x*1, -(-x), transpose pairs) shrink the graph"),
    ("constant_folding", constant_folding, "ops on constants become one constant"),
    ("cse", cse, "one node per distinct computation, also for what rewrites created"),
    ("dce", dce, "a slice write overwritten by a later write of the same slice is dead"),
    ("fusion", fusion, "elementwise chains and reduction prologues/epilogues become one kernel"),
]


class PassError(RuntimeError):
    pass


@dataclass
class OptResult:
    roots: list[Node]
    passes: list[tuple[str, float, bool]] = field(default_factory=list)
    seconds: float = 0.0


_dump_counter = [0]


def optimize(roots: list[Node], pipeline: list[tuple[str, Pass, str]] | None = None) -> OptResult:
    pipeline = PIPELINE if pipeline is None else pipeline
    res = OptResult(list(roots))
    done: list[str] = []
    t_all = time.perf_counter()
    if CONFIG.dump_dir:
        _dump_counter[0] += 1
        _dump(res.roots, "00_input")
    for k, (name, fn, _why) in enumerate(pipeline, 1):
        if name in CONFIG.disable_passes:
            res.passes.append((name, 0.0, False))
            continue
        t0 = time.perf_counter()
        try:
            out = fn(res.roots)
            if CONFIG.verify:
                verify(out)
        except Exception as e:
            raise PassError(f"pass {name!r} failed after: {', '.join(done) or '(none)'}: "
                            f"{type(e).__name__}: {e}") from e
        dt = time.perf_counter() - t0
        changed = any(a is not b for a, b in zip(out, res.roots))
        res.passes.append((name, dt, changed))
        res.roots = out
        done.append(name)
        if CONFIG.dump_dir:
            _dump(out, f"{k:02d}_{name}")
    res.seconds = time.perf_counter() - t_all
    return res


def _dump(roots: list[Node], tag: str) -> None:
    os.makedirs(CONFIG.dump_dir, exist_ok=True)
    path = os.path.join(CONFIG.dump_dir, f"graph{_dump_counter[0]:04d}_{tag}.txt")
    with open(path, "w") as f:
        f.write(format_graph(roots) + "\n")
