"""Every debug knob in one place, read from the environment and overridable in a `with` block."""
from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field, fields


def _env_set(name: str) -> frozenset[str]:
    return frozenset(p.strip() for p in os.environ.get(name, "").split(",") if p.strip())


def _env_int(name: str) -> int:
    """An integer variable read as Numba reads its own: unset, empty or not a number is 0."""
    try:
        return int(os.environ.get(name, "0") or 0)
    except ValueError:
        return 0


SMALL_GRAPH = 4096  # the default of Config.small_graph
MISS_GRAPH = 1 << 18  # the default of Config.miss_graph: bench/miss_crossover.py measures
                     # where a plan miss starts to cost less than NumPy op by op
EAGER_SIZE = 16384  # the default of Config.eager_size: bench/eager_crossover.py measures where
                   # one fused kernel starts to beat NumPy op by op (about 2**14 here)


@dataclass
class Config:
    backend: str = field(default_factory=lambda: os.environ.get("TRACER_BACKEND", ""))
    debug: int = field(default_factory=lambda: int(os.environ.get("TRACER_DEBUG", "0") or 0))
    disable_passes: frozenset[str] = field(default_factory=lambda: _env_set("TRACER_DISABLE_PASSES"))
    dump_dir: str = field(default_factory=lambda: os.environ.get("TRACER_DUMP", ""))
    verify: bool = field(default_factory=lambda: os.environ.get("TRACER_VERIFY", "") == "1")
    compile_mode: str = field(default_factory=lambda: os.environ.get("TRACER_COMPILE", "tiered"))
    compile_workers: int = field(  # -1: the cpu count (at most 8); 0: compile in this process
        default_factory=lambda: int(os.environ.get("TRACER_COMPILE_WORKERS", "-1") or -1))
    eager: bool = field(default_factory=lambda: os.environ.get("TRACER_EAGER", "") == "1")
    check_nans: bool = field(
        default_factory=lambda: os.environ.get("TRACER_CHECK_NANS", "") == "1")
    flush_nodes: int = 20000      # a pending graph past this many nodes is evaluated
    # on cpu, a graph whose every value has at most this many elements runs op by op with
    # NumPy: compiling its kernels would cost more than it could save (0: always compile)
    small_graph: int = field(
        default_factory=lambda: int(os.environ.get("TRACER_SMALL_GRAPH", SMALL_GRAPH) or 0))
    # on cpu, a graph of a few ops whose plans missed CONFIG.miss_streak times in a row (its
    # shapes keep changing) runs op by op with NumPy when every value has at most this many
    # elements: optimizing it again would cost more than fusing saves (0: never)
    miss_graph: int = field(
        default_factory=lambda: int(os.environ.get("TRACER_MISS_GRAPH", MISS_GRAPH) or 0))
    miss_streak: int = 3
    # run CUDA kernels under numba's simulator, with its tiny launch geometry: on when Numba's
    # own switch is (its numba.cuda is then the simulator)
    cuda_sim: bool = field(default_factory=lambda: _env_int("NUMBA_ENABLE_CUDASIM") != 0)
    # which constants and slice starts a plan takes as runtime parameters (tracer/plans.py):
    # "changed" (those that differ from the graph's first sighting), "all" (every one, from
    # the first sighting: tests) or "none" (each new value plans anew: comparisons)
    lift: str = field(default_factory=lambda: os.environ.get("TRACER_LIFT", "changed"))
    # adaptive laziness: an op whose inputs are realized host values of at most this many
    # elements each runs at once by NumPy, with NumPy's result (0: record every op)
    eager_size: int = field(
        default_factory=lambda: int(os.environ.get("TRACER_EAGER_SIZE", EAGER_SIZE) or 0))

    # derived, not fields: `eager_ops` says whether adaptive laziness runs ops at once, read
    # on every op, so it is one attribute kept up to date here rather than four tests there;
    # `recording_all` > 0 while tracer.jit traces (every op must be recorded)
    def __post_init__(self):
        object.__setattr__(self, "recording_all", 0)
        self._derive()

    def __setattr__(self, name, value):
        object.__setattr__(self, name, value)
        if name in _EAGER_KNOBS and "eager_ops" in self.__dict__:  # (not during __init__)
            self._derive()

    def _derive(self) -> None:  # check_nans: every op recorded, so evaluation finds the NaN's op
        object.__setattr__(self, "eager_ops", self.eager_size > 0 and not self.recording_all
                           and not self.eager and not self.check_nans)


_EAGER_KNOBS = frozenset({"eager_size", "eager", "check_nans", "recording_all"})
CONFIG = Config()


@contextlib.contextmanager
def context(**kw):
    """`with ir.config.context(backend="cpu", verify=True): ...`"""
    names = {f.name for f in fields(Config)}
    old = {}
    for k, v in kw.items():
        if k not in names:
            raise TypeError(f"unknown config field {k!r}")
        old[k] = getattr(CONFIG, k)
        setattr(CONFIG, k, frozenset(v) if k == "disable_passes" else v)
    try:
        yield CONFIG
    finally:
        for k, v in old.items():
            setattr(CONFIG, k, v)
