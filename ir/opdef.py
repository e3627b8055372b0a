"""The op registry's machinery: what an op entry is (OpDef, Kind, Props), registration and
lookups by property. The entries themselves live in the catalogue modules (`catalogue.py`,
`elementwise_ops.py`, `library_ops.py`), which import this module; this module imports none of
them. Code outside the catalogue imports these names from `registry.py`, which imports the
catalogue, so whatever imports the registry sees every op registered.

Code asks an op's properties (its kind, `props.cheap`, `props.view`, `props.library`, a
reduction's `ufunc`, `combine`, `identity`, `accumulate` and `better`) instead of comparing op names:
adding an op is one catalogue entry.

An elementwise entry's `template(in_dtypes, out_dtype)` returns a Python expression over `{0}`,
`{1}`, ... (operands already cast to the loop's input dtypes) or None when there is no kernel for
those dtypes; the op then runs in the interpreter and is reported as a fallback. It calls scalar
helpers by name only; each code generator supplies their source. Codegen casts the expression to
the output dtype, which gives NumPy's wrap-around for integers.
"""
from __future__ import annotations

import enum
import functools
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import numpy as np


class Kind(enum.Enum):
    LEAF = "leaf"            # input, const: values from outside the graph
    PARAM = "param"          # a fusion body's stand-in for the fusion's input `index`
    ELEMENTWISE = "elementwise"
    REDUCE = "reduce"
    MOVEMENT = "movement"
    CONTRACTION = "contraction"
    UPDATE = "update"        # dynamic-update-slice family
    GATHER = "gather"        # integer-array indexing
    SCATTER = "scatter"      # integer-array writes
    FUSION = "fusion"        # a kernel: attr `body` is its own graph over `param` nodes
    LIBRARY = "library"      # one call of NumPy's routine between kernels (sort, cumsum, ...)
    OTHER = "other"          # concatenate and friends, tuple/output of multi-output fusions


@dataclass(frozen=True)
class Props:
    commutative: bool = False
    associative: bool = False
    idempotent: bool = False      # f(x, x) == x
    involution: bool = False      # f(f(x)) == x
    # recomputing it costs less than a store and a load: fusion may duplicate it, and a row
    # kernel recomputes it instead of stashing
    cheap: bool = False
    view: bool = False            # its result shares its first input's storage
    library: bool = False         # runs as one library call between kernels (BLAS, NumPy)


# A reduction's accumulator rule (OpDef.accumulate): how kernels accumulate it.
ACC_WIDE = "wide"        # floats accumulate in float64 (sums: NumPy sums pairwise in the
                         # dtype; both are accurate), others in the dtype
ACC_DTYPE = "dtype"      # in the dtype, in order, as NumPy (rounds and overflows where it does)
ACC_SELECT = "select"    # compare-and-select; float NaNs are noted in a flag (max, min)
ACC_LOGICAL = "logical"  # over the values' truth (any, all)
ACC_ARG = "arg"          # the index of the first best value (argmax, argmin): no ufunc


@dataclass(frozen=True)
class OpDef:
    name: str
    kind: Kind
    nin: int                                  # -1: variadic
    shape_rule: Callable[[list[tuple], dict], tuple]
    dtype_rule: Callable[[list[np.dtype], dict], np.dtype]
    ref: Callable[..., Any]                   # NumPy meaning: ref(*arrays, **attrs)
    template: Callable[[tuple, np.dtype], str | None] | None = None
    identity: Any = None                      # reductions: value of an empty reduction
    # reductions: one step of (acc, v) as `{0}`, `{1}`: a string, or a template as elementwise
    # ops have, of ((acc dtype, acc dtype), acc dtype)
    combine: str | Callable[[tuple, np.dtype], str] | None = None
    props: Props = field(default_factory=Props)
    ufunc: np.ufunc | None = None             # elementwise: the ufunc; reductions: what reduces
    accumulate: str | None = None             # reductions: ACC_* above
    better: str | None = None                 # select and arg reductions: ">" or "<", the
                                              # comparison by which v beats acc


OPS: dict[str, OpDef] = {}


def register(d: OpDef) -> OpDef:
    assert d.name not in OPS, d.name
    OPS[d.name] = d
    _NAMES_CACHE.clear()
    return d


def get(name: str) -> OpDef:
    return OPS[name]


_NAMES_CACHE: dict[Callable, tuple[str, ...]] = {}


class OpNames:
    """The names of the registered ops with a property, read from the registry when used (so a
    module may define one before the catalogue is imported). Supports `in`, iteration and
    `+` with a tuple of names."""

    def __init__(self, pred: Callable[[OpDef], bool]):
        self._pred = pred

    def _names(self) -> tuple[str, ...]:
        got = _NAMES_CACHE.get(self._pred)
        if got is None:
            got = _NAMES_CACHE[self._pred] = tuple(n for n, d in OPS.items() if self._pred(d))
        return got

    def __contains__(self, op: object) -> bool:
        d = OPS.get(op)  # type: ignore[arg-type]
        return d is not None and self._pred(d)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    def __add__(self, other: tuple) -> tuple:
        return self._names() + tuple(other)

    def __radd__(self, other: tuple) -> tuple:
        return tuple(other) + self._names()

    def __repr__(self) -> str:
        return f"OpNames{self._names()}"


def names(pred: Callable[[OpDef], bool]) -> tuple[str, ...]:
    """The names of the ops registered now for which pred(OpDef) holds."""
    return tuple(n for n, d in OPS.items() if pred(d))


CHEAP_OPS = OpNames(lambda d: d.props.cheap)
VIEW_OPS = OpNames(lambda d: d.props.view)
LIBRARY_OPS = OpNames(lambda d: d.props.library)


def is_kind(n: Any, *kinds: Kind) -> bool:
    """Node n's op is registered with one of `kinds`."""
    d = OPS.get(n.op)
    return d is not None and d.kind in kinds


def is_inline_reduce(n: Any) -> bool:
    """A reduction of a fusion body that its kernel computes inline, unrolled at each index
    that reads it (opt/fusion.py marks it with attr `inline`: the reduced axes' sizes)."""
    return is_kind(n, Kind.REDUCE) and n.attr("inline") is not None


def float_sum(red: Any) -> bool:
    """A float sum (its ufunc is add): NumPy adds it in its dtype, pairwise along runs."""
    return OPS[red.op].ufunc is np.add and red.inputs[0].dtype.kind == "f"


def is_kernel_reduce(n: Any) -> bool:
    """A reduction a kernel is built around (not one its body computes inline)."""
    return is_kind(n, Kind.REDUCE) and not is_inline_reduce(n)


def leaf_const(n: Any) -> Any:
    """The node under n's chain of views."""
    while OPS[n.op].props.view:
        n = n.inputs[0]
    return n


def consts_only(n: Any) -> bool:
    """A broadcast (or reshape) of one constant: a fill."""
    return leaf_const(n).op == "const"


def is_leaf(n: Any) -> bool:
    """input or const: a value from outside the graph (params are a body's own leaves)."""
    return is_kind(n, Kind.LEAF)


# Multi-output fusions: a fusion whose body is a `tuple` of output values has the tuple type
# (no shape, zero bytes); each result is read through an `output` node (attr `index`).
TUPLE_DTYPE = np.dtype([])


def fusion_outputs(body: Any) -> list:
    """The values a fusion body computes: the tuple's elements, or the body itself."""
    return list(body.inputs) if body.op == "tuple" else [body]


def reduce_identity(op: OpDef, dtype: np.dtype) -> Any:
    """The identity of a reduction in `dtype`, as a Python value."""
    ident = op.identity
    if ident in ("-inf", "+inf"):
        if dtype.kind == "f":
            return float(ident)
        if dtype.kind == "b":
            return ident == "+inf"
        info = np.iinfo(dtype)
        return int(info.min if ident == "-inf" else info.max)
    return ident



def keeps_values(op: OpDef, dtype: np.dtype) -> bool:
    """Reducing one element of `dtype` gives the element, signed zeros and NaNs included.
    NumPy starts a reduction at its ufunc's identity where it has one: sum([-0.0]) is 0.0, a
    complex product (1+0j) * (inf+1j) is inf+nanj, any/all of numbers give 0/1."""
    return _keeps_values(op.name, np.dtype(dtype))


_SPECIALS = np.array([-0.0, 0.0, 1.5, -1.5, np.inf, -np.inf, np.nan])


@functools.lru_cache(maxsize=None)
def _keeps_values(name: str, dtype: np.dtype) -> bool:
    op = OPS[name]
    if op.ufunc is None or op.ufunc.identity is None:
        return True
    if dtype.kind in "fc":
        v = _SPECIALS.astype(dtype)
        if dtype.kind == "c":  # every pair of specials as (real, imag)
            v = np.empty((len(_SPECIALS), len(_SPECIALS)), dtype)
            v.real, v.imag = _SPECIALS[:, None], _SPECIALS[None, :]
            v = v.ravel()
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        v = np.array([0, 1, 2, info.min, info.max], dtype)
    elif op.accumulate == ACC_LOGICAL:  # any/all compute x | False: a bool whose byte is not
        return False                     # 0/1 (a view of other data) becomes NumPy's 0/1
    else:
        v = np.array([False, True], dtype)
    with np.errstate(all="ignore"):
        r = np.asarray(op.ref(v[:, None], axes=(1,))).astype(dtype)
    parts = (lambda a: (a.real, a.imag)) if dtype.kind == "c" else (lambda a: (a,))
    return all(np.array_equal(a, b, equal_nan=True) and
               (dtype.kind not in "fc" or (np.signbit(a) == np.signbit(b)).all())
               for a, b in zip(parts(r), parts(v)))
