"""Lower an optimized graph to a program of steps (kernels, views, library calls), and run it."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ir import Buffer, Node, Slot, toposort
from ir.registry import fusion_outputs
from ir.stats import STATS
from . import backends
from .backends import const_value
from .compiler import Kernel, get_kernel
from .cpu import is_flat
from .emit import Emitter

VIEW_OPS = ("slice", "reshape", "transpose", "broadcast_to")
LIBRARY_OPS = ("matmul", "concatenate", "setslice", "gather", "scatter")
PARALLEL_MIN = 1 << 16  # below this many elements threads cost more than they save


@dataclass
class Program:
    roots: list[Node]
    order: list[Node]
    kernels: list[Kernel]
    kernel_of: dict[int, Kernel]
    backend: str
    peak_bytes: int
    bytes_copied: int
    interpreted: list[str]
    consts_of: dict[int, list] = field(default_factory=dict)  # a fusion's constant arguments
    inplace: set[int] = field(default_factory=set)  # updates that write into their operand
    fills: dict[int, object] = field(default_factory=dict)  # fusions that only fill a constant
    dead_after: list = field(default_factory=list)  # per position: values no later node reads


def buffer_contiguous(buf) -> bool:
    if isinstance(buf, Slot):
        return buf.contiguous
    v = buf.value
    return bool(getattr(v, "flags", None) is not None and v.flags.c_contiguous) or \
        getattr(v, "is_c_contiguous", lambda: False)()


def _contiguous_producer(n: Node) -> bool:
    if n.op == "input":
        return buffer_contiguous(n.attr("buf"))
    return n.op not in VIEW_OPS or (n.op == "reshape" and _contiguous_producer(n.inputs[0]))


def _flat(n: Node) -> bool:
    body = n.attr("body")
    return n.attr("kind") == "loop" and is_flat(body) and fusion_outputs(body)[0].ndim != 1 and \
        all(_contiguous_producer(i) for i in n.inputs)


def lower(roots: list[Node], backend: str) -> Program:
    order = toposort(roots)
    kernels, kernel_of, interpreted, consts_of = [], {}, [], {}
    fills: dict[int, object] = {}
    for n in order:
        if n.op == "fusion" and backend == "cpu" and consts_only(n.attr("body")):
            fills[id(n)] = const_value(_leaf_const(n.attr("body")))  # np.full: no kernel
        elif n.op == "fusion":
            work = max([o.size for o in fusion_outputs(n.attr("body"))] +
                       [i.size for i in n.inputs])
            k = get_kernel(n.attr("body"), n.attr("kind"), backend, _flat(n), work >= PARALLEL_MIN)
            kernel_of[id(n)] = k
            kernels.append(k)
            consts_of[id(n)] = [const_value(c) for c in Emitter(n.attr("body"), backend).consts]
        elif n.op not in ("input", "const", "output") and n.op not in VIEW_OPS + LIBRARY_OPS:
            interpreted.append(n.op)
    peak, copied, inplace = plan_memory(roots, order, backend == "cpu")
    return Program(list(roots), order, kernels, kernel_of, backend, peak, copied, interpreted,
                   consts_of, inplace, fills, _dead_after(order, roots))


def _dead_after(order: list[Node], roots: list[Node]) -> list[list[int]]:
    """The values to let go after each position, so a dead buffer returns to the allocator
    (the cpu pool hands it out again within the same run)."""
    last: dict[int, int] = {}
    for pos, n in enumerate(order):
        for i in n.inputs:
            last[id(i)] = pos
    keep = {id(r) for r in roots}
    dead: list[list[int]] = [[] for _ in order]
    for i, pos in last.items():
        if i not in keep:
            dead[pos].append(i)
    return dead


UPDATE_OPS = ("setslice", "scatter")


def _leaf_const(n: Node) -> Node:
    while n.op in VIEW_OPS:
        n = n.inputs[0]
    return n


def consts_only(n: Node) -> bool:
    """A broadcast (or reshape) of one constant: a fill."""
    return _leaf_const(n).op == "const"


def _fill(shape, dtype, value) -> np.ndarray:
    """np.zeros for +0 (pages come zeroed from the OS, touched only when written), else
    np.full."""
    if value == 0 and not (np.dtype(dtype).kind == "f" and np.signbit(value)):
        return np.zeros(shape, dtype)
    return np.full(shape, value, dtype)


def plan_memory(roots: list[Node], order: list[Node], inplace_ok: bool = True
                ) -> tuple[int, int, set[int]]:
    """Planned peak of intermediate buffers (inputs and requested outputs excluded), the bytes
    that updates copy, and the updates done in place.

    Views share their input's storage. An update (slice write, scatter) runs in place when the
    storage it updates was made by this program, is not a result, is read by nothing after it,
    is not reached through a broadcast, and is not also one of the update's other operands:
    its result then is that storage, so a chain of row writes into one buffer copies nothing.
    """
    alias: dict[int, int] = {}
    bcast: set[int] = set()  # views that pass through a broadcast (read-only, repeated)

    def find(i: int) -> int:
        while i in alias:
            i = alias[i]
        return i

    for n in order:
        if n.op in VIEW_OPS:
            alias[id(n)] = id(n.inputs[0])
            if n.op == "broadcast_to" or id(n.inputs[0]) in bcast:
                bcast.add(id(n))
    last: dict[int, int] = {}
    for pos, n in enumerate(order):
        for i in n.inputs:
            last[find(id(i))] = pos
    keep = {find(id(r)) for r in roots}
    made = {id(n) for n in order if n.op not in ("input", "const") and n.op not in VIEW_OPS}
    copied = 0
    inplace: set[int] = set()
    for pos, n in enumerate(order):
        if n.op in UPDATE_OPS:
            s = find(id(n.inputs[0]))
            if inplace_ok and s in made and s not in keep and last.get(s) == pos and \
                    id(n.inputs[0]) not in bcast and all(find(id(i)) != s for i in n.inputs[1:]):
                inplace.add(id(n))
                alias[id(n)] = s
                last[s] = last.get(id(n), pos)
            elif s in made or not consts_only(n.inputs[0]):
                copied += n.inputs[0].nbytes  # (a broadcast constant is filled, not copied)
    keep = {find(id(r)) for r in roots}
    live, peak = 0, 0
    size: dict[int, int] = {}
    for pos, n in enumerate(order):
        if id(n) in made and find(id(n)) == id(n) and id(n) not in keep:
            size[id(n)] = n.nbytes
            live += n.nbytes
            peak = max(peak, live)
        for i in {find(id(i)) for i in n.inputs}:
            if last.get(i) == pos and i in size:
                live -= size.pop(i)
    return peak, copied, inplace


def run(program: Program, bind: dict[int, Buffer] | None = None) -> list[Buffer]:
    """Run the program; `bind` maps input nodes (by id) to the buffers to read instead of
    theirs (a cached plan's slots)."""
    be = backends.get(program.backend)
    vals: dict[int, object] = {}
    bind = bind or {}
    for pos, n in enumerate(program.order):
        if n.op == "input":
            buf = bind.get(id(n)) or n.attr("buf")
            vals[id(n)] = be.from_buffer(buf) if hasattr(be, "from_buffer") else buf.value
        elif n.op == "const":
            vals[id(n)] = const_value(n)
        elif id(n) in program.fills:
            vals[id(n)] = _fill(n.shape, n.dtype, program.fills[id(n)])
        elif n.op == "fusion":
            vals[id(n)] = _launch(be, program.kernel_of[id(n)], n, [vals[id(i)] for i in n.inputs],
                                  program.consts_of[id(n)])
        elif n.op == "output":
            vals[id(n)] = vals[id(n.inputs[0])][n.attr("index")]
        else:
            if n.op not in VIEW_OPS + LIBRARY_OPS:
                STATS.interpreted_nodes += 1
            t0 = time.perf_counter()
            args = [vals[id(i)] for i in n.inputs]
            vals[id(n)] = be.run_node(n, args, id(n) in program.inplace) \
                if n.op in UPDATE_OPS else be.run_node(n, args)
            del args
            STATS.run_s += time.perf_counter() - t0
        for d in program.dead_after[pos]:
            vals.pop(d, None)
    out = []
    for r in program.roots:
        v = vals[id(r)]
        if isinstance(v, np.generic):
            v = np.asarray(v)
        out.append(Buffer(v))
    return out


def _launch(be, kernel: Kernel, n: Node, params: list, consts: list):
    """Run a fusion kernel; a multi-output fusion returns the list of its outputs."""
    body = n.attr("body")
    outs = [be.empty(o.shape, o.dtype) for o in fusion_outputs(body)]
    if kernel.flat:
        params = [be.flatten(p if be.is_contiguous(p) else be.contiguous(p)) for p in params]
        targets = [be.flatten(o) for o in outs]
    else:
        targets = outs
    be.launch(kernel, body, targets, params, consts)
    return outs if body.op == "tuple" else outs[0]
