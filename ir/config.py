"""Every debug knob in one place, read from the environment and overridable in a `with` block."""
from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field, fields


class ConfigError(ValueError):
    """A TRACER_* environment variable holds a value tracer does not accept."""


def _env(name: str, default, parse, accepted: str):
    """The variable parsed, or default when unset or empty; a value `parse` refuses raises
    ConfigError naming the variable and what it accepts (at import: nothing has run yet)."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return parse(raw)
    except (ValueError, KeyError):
        raise ConfigError(f"{name}={raw!r} is not valid: {accepted}") from None


def _choice(*values: str):
    def parse(raw: str) -> str:
        if raw not in values:
            raise ValueError(raw)
        return raw
    return parse


def _at_least(lo: int):
    def parse(raw: str) -> int:
        v = int(raw)
        if v < lo:
            raise ValueError(raw)
        return v
    return parse


_FLAGS = {"0": False, "1": True, "false": False, "true": True, "no": False, "yes": True,
          "off": False, "on": True}


def _flag(raw: str) -> bool:
    return _FLAGS[raw.lower()]


# the optimizer's passes by name (opt/pipeline.py PIPELINE, which a test holds this to; ir
# imports nothing from opt): what TRACER_DISABLE_PASSES may name
PASS_NAMES = ("tensor_splitter", "simplify", "constant_folding", "sink_movement",
              "euclidean_distance", "matrix_chain", "dot_decompose", "dot_merge", "cse", "dce",
              "tree_reduction", "scatter_expander", "fusion", "fusion_merger",
              "multi_output_fusion", "horizontal_fusion", "buffer_assignment")


def _passes(raw: str) -> frozenset[str]:
    names = frozenset(p.strip() for p in raw.split(",") if p.strip())
    if not names <= set(PASS_NAMES):
        raise ValueError(raw)
    return names


def _env_int(name: str) -> int:
    """An integer variable read as Numba reads its own: unset, empty or not a number is 0."""
    try:
        return int(os.environ.get(name, "0") or 0)
    except ValueError:
        return 0


_FLAG_VALUES = "1 or 0 (also true/false, yes/no, on/off)"
_SIZE = "a whole number of elements >= 0 (0: off)"


SMALL_GRAPH = 4096  # the default of Config.small_graph
MISS_GRAPH = 1 << 18  # the default of Config.miss_graph: bench/miss_crossover.py measures
                     # where a plan miss starts to cost less than NumPy op by op
EAGER_SIZE = 16384  # the default of Config.eager_size: bench/eager_crossover.py measures where
                   # one fused kernel starts to beat NumPy op by op (about 2**14 here)


@dataclass
class Config:
    backend: str = field(default_factory=lambda: _env(
        "TRACER_BACKEND", "", _choice("cpu", "cuda"), "cpu or cuda"))
    debug: int = field(default_factory=lambda: _env(
        "TRACER_DEBUG", 0, _at_least(0), "a level 0-4 (0 off, 1 a line per evaluation, 2 "
        "graphs, 3 pass timings, 4 kernel source)"))
    disable_passes: frozenset[str] = field(default_factory=lambda: _env(
        "TRACER_DISABLE_PASSES", frozenset(), _passes,
        "pass names separated by commas, of " + ", ".join(PASS_NAMES)))
    dump_dir: str = field(default_factory=lambda: os.environ.get("TRACER_DUMP", ""))
    verify: bool = field(default_factory=lambda: _env("TRACER_VERIFY", False, _flag,
                                                      _FLAG_VALUES))
    compile_mode: str = field(default_factory=lambda: _env(
        "TRACER_COMPILE", "tiered", _choice("tiered", "sync"), "tiered or sync"))
    compile_workers: int = field(  # -1: the cpu count (at most 8); 0: compile in this process
        default_factory=lambda: _env("TRACER_COMPILE_WORKERS", -1, _at_least(-1),
                                     "a number of processes >= 0 (0: compile in this one)"))
    eager: bool = field(default_factory=lambda: _env("TRACER_EAGER", False, _flag, _FLAG_VALUES))
    check_nans: bool = field(default_factory=lambda: _env("TRACER_CHECK_NANS", False, _flag,
                                                          _FLAG_VALUES))
    flush_nodes: int = 20000      # a pending graph past this many nodes is evaluated
    # on cpu, a graph whose every value has at most this many elements runs op by op with
    # NumPy: compiling its kernels would cost more than it could save (0: always compile)
    small_graph: int = field(default_factory=lambda: _env(
        "TRACER_SMALL_GRAPH", SMALL_GRAPH, _at_least(0), _SIZE))
    # on cpu, a graph of a few ops whose plans missed CONFIG.miss_streak times in a row (its
    # shapes keep changing) runs op by op with NumPy when every value has at most this many
    # elements: optimizing it again would cost more than fusing saves (0: never)
    miss_graph: int = field(default_factory=lambda: _env(
        "TRACER_MISS_GRAPH", MISS_GRAPH, _at_least(0), _SIZE))
    miss_streak: int = 3
    # run CUDA kernels under numba's simulator, with its tiny launch geometry: on when Numba's
    # own switch is (its numba.cuda is then the simulator)
    cuda_sim: bool = field(default_factory=lambda: _env_int("NUMBA_ENABLE_CUDASIM") != 0)
    # which constants and slice starts a plan takes as runtime parameters (tracer/plans.py):
    # "changed" (those that differ from the graph's first sighting), "all" (every one, from
    # the first sighting: tests) or "none" (each new value plans anew: comparisons)
    lift: str = field(default_factory=lambda: _env(
        "TRACER_LIFT", "changed", _choice("changed", "all", "none"), "changed, all or none"))
    # adaptive laziness: an op whose inputs are realized host values of at most this many
    # elements each runs at once by NumPy, with NumPy's result (0: record every op)
    eager_size: int = field(default_factory=lambda: _env(
        "TRACER_EAGER_SIZE", EAGER_SIZE, _at_least(0), _SIZE))

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
