"""The layout a value will have when the program runs, predicted from the graph: stand-ins with
its shape, strides and writeability over one element of memory (the cpu backend predicts its
kernels' argument types with them; the budget sizes chunks)."""
from __future__ import annotations

import math

import numpy as np

from tracer.ir.node import Node, Slot
from tracer.ir.registry import VIEW_OPS
from tracer.ir.registry import OPS


def over_one_element(shape, dtype, strides=None, writeable=True) -> np.ndarray:
    """An array of this shape and strides (C order by default) over one element of memory:
    a stand-in whose layout is real and whose values are never read."""
    dtype = np.dtype(dtype)
    if strides is None:  # C order
        strides = tuple(math.prod(shape[k + 1:]) * dtype.itemsize for k in range(len(shape)))
    return np.lib.stride_tricks.as_strided(np.zeros(1, dtype), shape, strides,
                                           writeable=writeable)


def stand_in(n: Node) -> np.ndarray:
    """An array with the shape, layout and writeability of the value `run` will hold for n,
    over one element of memory (never to be read): view ops apply NumPy's own view logic to
    their input's stand-in; anything else is a fresh C-contiguous array."""
    buf = n.attr("buf") if n.op == "input" else None
    if isinstance(buf, Slot):
        c = over_one_element(n.shape, n.dtype)
        return c if buf.contiguous else over_one_element(n.shape, n.dtype,
                                                         tuple(2 * s for s in c.strides))
    if buf is not None and isinstance(buf.value, np.ndarray):
        v = buf.value
        return over_one_element(v.shape, v.dtype, v.strides, v.flags.writeable)
    if n.op in VIEW_OPS:
        x = stand_in(n.inputs[0])
        if n.op != "reshape" or x.flags.c_contiguous:  # (a reshape that cannot view copies)
            # a view's other inputs are indices (dynamic_slice's starts): any give its layout
            rest = [np.zeros(i.shape, i.dtype) for i in n.inputs[1:]]
            return np.asarray(OPS[n.op].ref(x, *rest, **dict(n.attrs)))
    return over_one_element(n.shape, n.dtype)


def unit_reshape_strides(shape, strides, to, item: int) -> list[int]:
    """The strides of a reshape of an array of `shape` and `strides` to `to` that only adds or
    drops length-1 axes (a view, whatever the layout): the other axes keep theirs, and a
    length-1 axis gets the one C order would give (so a C-ordered array stays C-ordered)."""
    kept = [st for d, st in zip(shape, strides) if d != 1]
    out = [0] * len(to)
    inner = item
    for k in range(len(to) - 1, -1, -1):
        out[k] = kept.pop() if to[k] != 1 else inner
        inner = out[k] * to[k]
    return out
