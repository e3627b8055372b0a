"""A lazy array's view of its base: the movement steps from the base (read by `apply_step`,
written back by `write_through`) and the layout NumPy would give the array (strides, flags,
memory order, which reshapes are views)."""
from __future__ import annotations

import math

import numpy as np

from tracer.ir.node import Node
from . import graph as G

# "ndarray" in annotations is tracer.array.ndarray, which imports this module (not imported
# here, even for type checkers: no circle inside the package)


def c_strides(shape) -> tuple[int, ...]:
    st, acc = [], 1
    for d in reversed(shape):
        st.append(acc)
        acc *= max(d, 1)
    return tuple(reversed(st))


def f_strides(shape) -> tuple[int, ...]:
    return c_strides(tuple(shape)[::-1])[::-1]


def contiguous(shape, strides, order: str) -> bool:
    """NumPy's C_CONTIGUOUS / F_CONTIGUOUS flag: length-1 axes' strides never count."""
    if math.prod(shape) <= 1:
        return True
    want = c_strides(shape) if order == "C" else f_strides(shape)
    return all(d == 1 or s == w for d, s, w in zip(shape, strides, want))


def order_strides(shape, order, like: "ndarray | None" = None) -> tuple[int, ...]:
    """The strides NumPy gives a new array of memory order `order` ('A' and 'K' follow `like`,
    when it has this shape)."""
    shape = tuple(shape)
    if order in ("A", "K") and like is not None and like.shape == shape:
        st = like._view.strides
        if contiguous(shape, st, "C") or order == "A" and not contiguous(shape, st, "F"):
            return c_strides(shape)
        if contiguous(shape, st, "F"):
            return f_strides(shape)
        perm = sorted(range(len(shape)), key=lambda i: -abs(st[i]))  # NumPy keeps stride order
        packed = c_strides([shape[p] for p in perm])
        out = [0] * len(shape)
        for p, s in zip(perm, packed):
            out[p] = s
        return tuple(out)
    return f_strides(shape) if order == "F" else c_strides(shape)


def laid_out(a: "ndarray", order, like: "ndarray | None" = None) -> "ndarray":
    """`a`, a new array, with the strides of memory order `order` (None is 'K'; 'A' and 'K'
    without `like`: as it is): they decide its flags and which later reshapes are views."""
    order = "K" if order is None else order.upper()
    if a._view.steps or order in ("A", "K") and like is None:
        return a
    a._view = View((), a.shape, order_strides(a.shape, order, like), a._view.writeable)
    return a


def nocopy_reshape(shape, strides, newshape):
    """NumPy's _attempt_nocopy_reshape on element strides: new strides, or None if a copy is needed."""
    old = [(d, s) for d, s in zip(shape, strides) if d != 1]
    if math.prod(shape) == 0:
        return c_strides(newshape)
    oldn = len(old)
    newn = len(newshape)
    newst = [0] * newn
    oi, oj, ni, nj = 0, 1, 0, 1
    while ni < newn and oi < oldn:
        np_ = newshape[ni]
        op_ = old[oi][0]
        while np_ != op_:
            if np_ < op_:
                np_ *= newshape[nj]
                nj += 1
            else:
                op_ *= old[oj][0]
                oj += 1
        for ok in range(oi, oj - 1):
            if old[ok][1] != old[ok + 1][0] * old[ok + 1][1]:
                return None
        newst[nj - 1] = old[oj - 1][1]
        for nk in range(nj - 1, ni, -1):
            newst[nk - 1] = newst[nk] * newshape[nk]
        ni, nj = nj, nj + 1
        oi, oj = oj, oj + 1
    last = newst[ni - 1] if ni >= 1 else 1
    for nk in range(ni, newn):
        newst[nk] = last
    return tuple(newst)


class View:
    """Movement steps from the base to this array, plus the abstract layout NumPy would have."""

    __slots__ = ("steps", "shape", "strides", "writeable")

    def __init__(self, steps: tuple, shape: tuple, strides: tuple, writeable: bool = True):
        self.steps, self.shape, self.strides, self.writeable = steps, shape, strides, writeable

    def then(self, kind: str, arg, shape, strides, writeable=None) -> "View":
        return View(self.steps + ((kind, arg),), tuple(shape), tuple(strides),
                    self.writeable if writeable is None else writeable)


def apply_step(node: Node, kind: str, arg) -> Node:
    if kind == "slice":
        return G.slice_(node, arg)
    if kind == "transpose":
        return G.transpose(node, arg)
    if kind == "reshape":
        return G.reshape(node, arg)
    if kind == "broadcast":
        return G.broadcast(node, arg)
    if kind == "bitcast":
        return bitcast(node, arg)
    raise AssertionError(kind)


def bitcast(node: Node, dtype: np.dtype) -> Node:
    """The bytes of `node` read as `dtype` (its last axis regrouped where the sizes differ)."""
    if node.dtype == dtype:
        return node
    return G._typed("bitcast", (node,), (("dtype", dtype.str), ("src", node.dtype.str)))


def write_through(base: Node, steps: tuple, region: Node) -> Node:
    """The base's new value after the view `steps` of it is replaced by `region`."""
    if not steps:
        return region
    kind, arg = steps[0]
    inner = apply_step(base, kind, arg)
    new_inner = write_through(inner, steps[1:], region)
    if kind == "slice":
        return G.setslice(base, new_inner, arg)
    if kind == "transpose":
        inv = tuple(int(i) for i in np.argsort(arg))
        return G.transpose(new_inner, inv)
    if kind == "reshape":
        return G.reshape(new_inner, base.shape)
    if kind == "bitcast":
        return bitcast(new_inner, base.dtype)
    raise ValueError("assignment destination is read-only")


class Flags:
    """The NumPy flags a lazy array can answer from its view (attributes or keys)."""

    _KEYS = {"C_CONTIGUOUS": "c_contiguous", "F_CONTIGUOUS": "f_contiguous",
             "OWNDATA": "owndata", "WRITEABLE": "writeable", "ALIGNED": "aligned",
             "WRITEBACKIFCOPY": "writebackifcopy", "C": "c_contiguous", "F": "f_contiguous",
             "W": "writeable", "O": "owndata", "A": "aligned", "FNC": "fnc", "FORC": "forc"}

    def __init__(self, a: "ndarray"):
        object.__setattr__(self, "_a", a)

    @property
    def c_contiguous(self) -> bool:
        return contiguous(self._a.shape, self._a._view.strides, "C")

    @property
    def f_contiguous(self) -> bool:
        return contiguous(self._a.shape, self._a._view.strides, "F")

    @property
    def fnc(self) -> bool:
        return self.f_contiguous and not self.c_contiguous

    @property
    def forc(self) -> bool:
        return self.f_contiguous or self.c_contiguous

    @property
    def owndata(self) -> bool:
        return not self._a._view.steps

    @property
    def writeable(self) -> bool:
        return self._a._view.writeable

    aligned = True
    writebackifcopy = False

    def __setattr__(self, name: str, value) -> None:
        if name != "writeable":
            raise AttributeError(f"cannot set flag {name!r} of a lazy array")
        v = self._a._view
        if value and not v.writeable and v.steps and v.steps[-1][0] == "broadcast":
            raise ValueError("cannot set WRITEABLE flag to True of this array")
        self._a._view = View(v.steps, v.shape, v.strides, bool(value))

    def __getitem__(self, key: str):
        return getattr(self, self._KEYS[key.upper()])

    def __setitem__(self, key: str, value) -> None:
        setattr(self, self._KEYS[key.upper()], value)

    def __repr__(self) -> str:
        return "\n".join(f"  {k} : {self[k]}" for k in ("C_CONTIGUOUS", "F_CONTIGUOUS",
                                                        "OWNDATA", "WRITEABLE", "ALIGNED",
                                                        "WRITEBACKIFCOPY")) + "\n"
