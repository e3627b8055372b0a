"""A lazy array's view of its base: the movement steps from the base (read by `apply_step`,
written back by `write_through`) and the layout NumPy would give the array (strides, flags,
memory order, which reshapes are views)."""
from __future__ import annotations

import math

import numpy as np

from tracer.ir.catalogue import py_slice
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


def canonical_range(s: tuple) -> tuple:
    """An empty range as (0, 0, 1): `slice.indices` gives (-1, -1, -1) for `[-5::-1]` on 3
    elements, whose -1s every consumer would read as "from the end"."""
    return s if len(range(*s)) else (0, 0, 1)


def index_view(v: View, key: tuple) -> View | None:
    """The view `[key]` makes of view `v`, for a key of integers and slices on the leading
    axes (NumPy's basic indexing: a slice step, then a reshape dropping the integers' axes);
    `v` itself where the key selects everything; None for any other key, or an integer out of
    range."""
    shape, strides = v.shape, v.strides
    if len(key) > len(shape):
        return None
    slices, sl_shape, sl_strides, out_shape = [], [], [], []
    sliced = dropped = False
    for k, d, st in zip(key, shape, strides):
        if type(k) is slice:
            s = k.indices(d)
            n = len(range(*s))
            sliced = sliced or s != (0, d, 1)
            out_shape.append(n)
        elif type(k) is int or isinstance(k, np.integer) and not isinstance(k, np.bool_):
            i = int(k)
            if not -d <= i < d:
                return None
            i = i + d if i < 0 else i
            s, n = (i, i + 1, 1), 1
            sliced, dropped = sliced or d != 1, True
        else:
            return None
        slices.append(s)
        sl_shape.append(n)
        sl_strides.append(st * s[2])
    rest = shape[len(key):]
    steps, cur_shape, cur_strides = v.steps, shape, strides
    if sliced:
        full = [canonical_range(s) for s in slices] + [(0, d, 1) for d in rest]
        cur_shape = tuple(sl_shape) + rest
        cur_strides = tuple(sl_strides) + strides[len(key):]
        steps = steps + (("slice", tuple(full)),)
    if dropped:
        out = tuple(out_shape) + rest
        cur_strides = tuple(nocopy_reshape(cur_shape, cur_strides, out))
        cur_shape = out
        steps = steps + (("reshape", out),)
    if steps is v.steps:
        return v
    return View(steps, cur_shape, cur_strides, v.writeable)


_STEPS, _STRIDES = View.steps, View.strides  # View's own slots, under KeyView's properties


class KeyView(View):
    """index_view(parent, key), its steps and strides worked out when first asked: the view
    an integer-and-slice key makes of a realized array (tracer.element.indexer), which comes
    with NumPy's view of the buffer; most such views are only read through that, never
    asked for their steps."""

    __slots__ = ("_src",)

    def __init__(self, parent: View, key: tuple, shape: tuple):
        self._src = (parent, key)
        self.shape, self.writeable = shape, parent.writeable

    def _resolve(self) -> None:
        v = index_view(*self._src)
        _STEPS.__set__(self, v.steps)
        _STRIDES.__set__(self, v.strides)
        self._src = None

    @property
    def steps(self) -> tuple:
        if self._src is not None:
            self._resolve()
        return _STEPS.__get__(self)

    @property
    def strides(self) -> tuple:
        if self._src is not None:
            self._resolve()
        return _STRIDES.__get__(self)


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


def apply_step_numpy(a: np.ndarray, kind: str, arg) -> np.ndarray:
    if kind == "slice":
        return a[tuple(py_slice(*s) for s in arg)]
    if kind == "transpose":
        return a.transpose(arg)
    if kind == "reshape":
        return a.reshape(arg)
    if kind == "broadcast":
        return np.broadcast_to(a, arg)
    if kind == "bitcast":
        try:
            return a.view(arg)
        except ValueError:  # a base laid out otherwise than the view assumed: the same values
            return np.ascontiguousarray(a).view(arg)
    raise AssertionError(kind)


def apply_view_numpy(a: np.ndarray, steps: tuple) -> np.ndarray:
    """NumPy's view of `a` (the base's value) that a lazy view's steps describe."""
    for kind, arg in steps:
        a = apply_step_numpy(a, kind, arg)
    return a
