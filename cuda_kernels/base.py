"""What every backend provides (`Backend`), and the types and helpers backends share: a kernel's
generated parts (`Gen`), launch accounting, constant fills."""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from tracer.ir.node import Buffer, Node
from tracer.ir.stats import STATS
from .layout import unit_reshape_strides


@dataclass
class Gen:
    """One kernel's part of a generated module: the module header it needs, its helpers, its
    own source, the constants it takes as arguments, and backend notes (`meta`)."""
    header: str
    helpers: str
    kernel: str
    consts: list[Node]
    meta: dict = field(default_factory=dict)


@dataclass
class ErrorHooks:
    """How a device backend reports an error its kernels flagged, found at a later wait: the
    frontend's functions (tracer.debug sets them as it loads; this floor imports nothing
    above it). `user_site()`: the raw site of the user's line running tracer now;
    `raise_error(exc, node, graph, raw site)`: raise exc at the user's line."""
    user_site: Callable[[], tuple] | None = None
    raise_error: Callable[..., None] | None = None


ERROR_HOOKS = ErrorHooks()


def const_value(c: Node):
    return c.dtype.type(c.attr("value"))


def fill(shape, dtype, value) -> np.ndarray:
    """An array of one value: np.zeros for +0 (pages come zeroed from the OS, touched only when
    written), else np.full."""
    if not np.asarray(value, dtype).tobytes().strip(b"\0"):
        return np.zeros(shape, dtype)  # all-zero bits only (-0.0, also in complex, is not)
    return np.full(shape, value, dtype)


def record_launch(seconds: float, compiled: bool, disk_hit: bool = False,
                  recompile: bool = False, launches: int = 1) -> None:
    """Count a kernel's run (`launches`: the device launches it took, 0 for no work); one
    that compiled (or loaded from disk) counts as compile time."""
    STATS.kernels_compiled += compiled
    STATS.cache_hits_disk += disk_hit
    STATS.recompiles += recompile
    if compiled or disk_hit:
        STATS.compile_s += seconds
    else:
        STATS.run_s += seconds
    STATS.kernels_launched += launches


class Backend(ABC):
    """A backend: code generation for fusion bodies, getting kernels ready, memory, launch, and
    the nodes that are not kernels. The executor and the kernel cache see only this interface.
    Hooks a backend has no use for keep the defaults here (no work, nothing to wait for)."""

    name: str
    pool: object  # the allocator of intermediates; `IDLE_CAP` bytes of idle blocks kept
    # whether the executor hands each intermediate's storage back (`release`) when it dies; a
    # backend whose allocator tells that by itself leaves this False
    releases_storage: bool = False
    # whether from_buffer(buf) is buf.value itself where that is a NumPy array (the executor
    # then reads it without the call)
    reads_host_arrays: bool = False
    # whether values live in device memory: a budget's chunk results then stay there
    # (tracer/budgeted.py), written with `put`
    device_memory: bool = False

    # ---- code generation and loading (compiler.py)
    @abstractmethod
    def generate(self, body: Node, kind: str, name: str, flat: bool, parallel: bool) -> Gen:
        """The module parts of the kernel `name` computing fusion body `body`."""

    def variant(self) -> str:
        """Text that tells apart kernels of one body built for different settings (a cache
        key's suffix)."""
        return ""

    def module_globals(self) -> dict:
        """Names bound in a generated module before it runs."""
        return {}

    # ---- getting kernels ready before a run
    def prepare(self, fusions: list[tuple[Node, object, list, object]]) -> None:
        """Make the kernels of (fusion node, kernel, constants, output stand-in) ready before
        the program runs; the stand-in (layout.py) is the slice a fusion writes its value into,
        or None for a new array."""

    def ready(self, kernel) -> bool:
        """Whether `kernel` may launch now (False: it is still compiling elsewhere)."""
        return True

    def start_deferred(self) -> None:
        """A run is over: start the work it put off (background compiles)."""

    # ---- memory
    @abstractmethod
    def empty(self, shape, dtype):
        """An uninitialized array of this backend."""

    def release(self, arr) -> None:
        """The executor is done with this intermediate's storage (see `releases_storage`)."""

    @abstractmethod
    def from_host(self, a: np.ndarray):
        """A NumPy array as this backend's array."""

    @abstractmethod
    def to_host(self, x) -> np.ndarray:
        """This backend's array as a NumPy array."""

    @abstractmethod
    def from_buffer(self, buf: Buffer):
        """The value of a leaf buffer as this backend's array."""

    @abstractmethod
    def is_contiguous(self, x) -> bool: ...

    @abstractmethod
    def contiguous(self, x):
        """x, or a C-contiguous copy of it."""

    @abstractmethod
    def flatten(self, x):
        """A 1-D view of a contiguous array."""

    def slice_view(self, base, slices, shape):
        """base[slices] (`slice.indices` triples, steps positive), reshaped to `shape` (only
        length-1 axes differ), as a view of base: where a producer writes the value a slice
        write assigns (the memory plan's `into`)."""
        v = base[tuple(slice(*s) for s in slices)]
        if v.shape == tuple(shape):
            return v
        return np.lib.stride_tricks.as_strided(
            v, shape, unit_reshape_strides(v.shape, v.strides, shape, v.itemsize))

    # ---- running
    @abstractmethod
    def launch(self, kernel, body: Node, outs: list, params: list, consts: list) -> None:
        """Run a fusion kernel, writing `outs`."""

    def launcher(self, kernel, body: Node, consts: list, out_type: tuple):
        """A function params -> output that allocates the one output of type out_type
        ((shape, dtype)) and launches kernel (not flat) on it: what the executor's general
        launch does for such a fusion, made once per program step. None: no such shortcut
        (the executor's general launch runs it)."""
        return None

    @abstractmethod
    def run_node(self, n: Node, args: list, inplace: bool = False):
        """A node that is not a kernel: views, library ops, interpreter fallbacks. `inplace`:
        an update may write into its operand."""
