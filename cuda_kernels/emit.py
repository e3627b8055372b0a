"""Shared by both backends: a fusion body, evaluated at an index tuple, as Python statements.

The kernel key abstracts every size to "1" or "n", so one kernel serves every shape with the same
structure, dtypes, ranks and broadcast pattern. Sizes reach kernels as arguments.
"""
from __future__ import annotations

import hashlib
import itertools
from typing import Mapping

import numpy as np

from tracer.ir.node import Node, make, toposort
from tracer.ir.registry import OPS, Kind, float_sum, fusion_outputs, reduce_identity
from .helpers import HELPERS, helper_source, needed_helpers

TYPE_NAMES = {"bool": "_b1", "int8": "_i8", "int16": "_i16", "int32": "_i32", "int64": "_i64",
              "uint8": "_u8", "uint16": "_u16", "uint32": "_u32", "uint64": "_u64",
              "float32": "_f32", "float64": "_f64"}


# Numba marks signed integer +, - and * `nsw` (overflow undefined), so LLVM may fold
# `float(x + x) > 0` into `x > 0`; NumPy's int64 wraps around. uint64 arithmetic carries no
# such flag and has the same bits. Smaller signed types compute in int64 and cannot overflow.
_WRAP_I64 = {"add": "(_u64({0}) + _u64({1}))", "subtract": "(_u64({0}) - _u64({1}))",
             "multiply": "(_u64({0}) * _u64({1}))", "square": "(_u64({0}) * _u64({0}))"}


# libm functions whose domain errors return a positive NaN, where NumPy's loops return the
# default NaN (helpers._dnan)
_LIBM_POSITIVE_NAN = {"log10", "arcsin", "arccos"}


def _float_to_int(dt: np.dtype) -> str:
    """NumPy's float to integer cast (helpers._f2i64 and friends). LLVM's fptosi and fptoui
    are undefined out of range, and do differ: saturated in vector loops, folded to 0. Types
    narrower than 32 bits take the low bits of the int32 conversion, as x86 code does."""
    bits = max(dt.itemsize * 8, 32)
    return f"_f2{'u' if dt.kind == 'u' and bits == dt.itemsize * 8 else 'i'}{bits}({{0}})"


def _one_value(n: Node) -> bool:
    """n is one value for every element (a scalar, or a single value broadcast): NumPy's loop
    sees it with stride 0."""
    if n.ndim == 0:
        return True
    return n.op == "broadcast_to" and n.inputs[0].size == 1 and n.inputs[0].shape != n.shape


def _numpy_loop(n: Node, tpl: str) -> str:
    """The template, or where Numba's arithmetic departs from NumPy's C loop for n, the
    expression that follows the C loop."""
    if n.dtype == np.int64 and n.op in _WRAP_I64:
        return _WRAP_I64[n.op]
    if n.op == "power" and n.dtype.kind == "f" and _one_value(n.inputs[1]):
        return f"_fpow1{tname(n.dtype)}({{0}}, {{1}})"
    if n.op in _LIBM_POSITIVE_NAN and n.dtype.kind == "f":
        return f"_dnan_of({{0}}, {tpl})"
    if n.op == "cast" and n.dtype.kind in "iu" and n.inputs[0].dtype.kind == "f":
        return _float_to_int(n.dtype)
    return tpl


def unsigned_index(idx: tuple[str, ...]) -> list[str]:
    """Array subscripts cast to `_ix` (np.uint64, bound by each backend's module header): Numba
    wraps a signed index (`i < 0 ? i + n : i`), which costs a compare and select per axis and
    keeps LLVM from vectorizing; fused kernels never index below 0."""
    return [i if i.isdigit() else f"_ix({i})" for i in idx]


def tname(dt: np.dtype) -> str:
    return TYPE_NAMES[np.dtype(dt).name]


def type_aliases() -> str:
    return "\n".join(f"{v} = np.{'bool_' if k == 'bool' else k}" for k, v in TYPE_NAMES.items())


def literal(v) -> str:
    """Python source for a scalar (infinities through math)."""
    if isinstance(v, float) and v in (float("inf"), float("-inf")):
        return "math.inf" if v > 0 else "-math.inf"
    return repr(v)


def _pairwise_leaf(vals: list[str], t: str) -> str:
    """numpy's pairwise_sum of at most 128 values as one expression: below 8 in sequence;
    else 8 interleaved partials combined ((0+1)+(2+3))+((4+5)+(6+7)), then the rest."""
    add = lambda a, b: f"{t}({a} + {b})"  # noqa: E731
    if len(vals) < 8:
        s = vals[0] if vals else f"{t}(-0.0)"  # (-0.0 + v is v, to the bit)
        for v in vals[1:]:
            s = add(s, v)
        return s
    end = len(vals) - len(vals) % 8
    r = list(vals[:8])
    for i in range(8, end, 8):
        r = [add(r[k], vals[i + k]) for k in range(8)]
    s = add(add(add(r[0], r[1]), add(r[2], r[3])), add(add(r[4], r[5]), add(r[6], r[7])))
    for v in vals[end:]:
        s = add(s, v)
    return s


def _abs_shape(shape) -> str:
    return ",".join("1" if d == 1 else "n" for d in shape)


def body_key(body: Node, kind: str) -> str:
    """Canonical text of a body with sizes abstracted: the kernel cache key."""
    ids: dict[int, int] = {}
    lines = [kind]
    for n in toposort([body]):
        ids[id(n)] = len(ids)
        attrs = []
        for k, v in n.attrs:
            if k == "value":
                continue  # constants are kernel arguments
            if k == "shape":
                v = _abs_shape(v)
            attrs.append(f"{k}={v}")
        ins = ",".join(str(ids[id(i)]) for i in n.inputs)
        lines.append(f"{n.op}({ins}){n.dtype.str}[{_abs_shape(n.shape)}]{{{';'.join(attrs)}}}")
    return "\n".join(lines)


def key_hash(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:12]


# short names of ops in kernel labels; other ops keep their own name
_SHORT = {"subtract": "sub", "multiply": "mul", "divide": "div", "floor_divide": "fdiv",
          "remainder": "rem", "power": "pow", "negative": "neg", "absolute": "abs",
          "square": "sq", "reciprocal": "recip", "maximum": "max", "minimum": "min",
          "equal": "eq", "not_equal": "ne", "less": "lt", "less_equal": "le", "greater": "gt",
          "greater_equal": "ge", "logical_and": "and", "logical_or": "or",
          "logical_not": "not", "logical_xor": "xor", "reduce_sum": "sum",
          "reduce_prod": "prod", "reduce_max": "max", "reduce_min": "min",
          "reduce_any": "any", "reduce_all": "all"}
_PLUMBING = {"param", "const", "broadcast_to", "transpose", "reshape", "chunk", "tuple"}
_LABEL_OPS, _LABEL_MAX = 4, 32  # ops, and characters before the hash: names stay under 48


def kernel_label(body: Node, kind: str) -> str:
    """A readable start for a kernel's name: its kind, its first few distinct ops (reductions
    first) and its output's dtype, e.g. `reduce_sum_sub_sq_f32`. Not unique: the kernel
    cache appends the structure's hash."""
    order = toposort([body])
    ops = [n.op for n in order if OPS[n.op].kind is Kind.REDUCE] + \
        [n.op for n in order if n.op not in _PLUMBING and OPS[n.op].kind is not Kind.REDUCE]
    dt = tname(fusion_outputs(body)[0].dtype)
    label = kind
    for op in list(dict.fromkeys(_SHORT.get(op, op) for op in ops))[:_LABEL_OPS]:
        if len(label) + len(op) + len(dt) + 1 > _LABEL_MAX:
            break
        label += f"_{op}"
    return label + ("_copy" if label == kind else "") + dt


def gathers_of(body: Node) -> list[Node]:
    """The gathers of a fusion body, in its order: the order of their error records."""
    got = _GATHERS.get(id(body))
    if got is None or got[0] is not body:
        if len(_GATHERS) >= 4096:
            _GATHERS.clear()
        got = _GATHERS[id(body)] = (body, [n for n in toposort([body]) if n.op == "gather"])
    return got[1]


_GATHERS: dict[int, tuple[Node, list[Node]]] = {}


class Emitter:
    """Emits statements computing body nodes at index tuples. One per kernel."""
    helper_sources: Mapping[str, str] = HELPERS  # a backend's own table (helpers by name)

    def __init__(self, body: Node):
        order = toposort([body])
        self.params: list[Node] = sorted((n for n in order if n.op == "param"),
                                         key=lambda p: p.attr("index"))
        self.consts: list[Node] = [n for n in order if n.op == "const"]
        # a node's place in the body's order (body_key's numbering): temporaries name it in a
        # comment, the same for every graph of one structure, so the cached source is too
        self.position = {id(n): k for k, n in enumerate(order)}
        self.outputs: list[Node] = fusion_outputs(body)
        self.out_names = ["out"] if body.op != "tuple" else \
            [f"out{k}" for k in range(len(self.outputs))]
        self.helpers: set[str] = set()
        self.counter = 0
        self.override: dict[int, str] = {}
        self.calls: dict[str, str] = {}  # helper -> the function to call in its place
        # gathers (fused index remaps): the lengths of their indexed axes are kernel arguments
        # like constants (the key stays generic over sizes), and each has an error record,
        # a param after the body's own that the backend hands in (gathers_of's order)
        self.gathers = gathers_of(body)
        self.glen: dict[tuple[int, int], Node] = {}
        for k, g in enumerate(self.gathers):
            for a in g.attr("axes"):  # (one each, equal lengths too: the signature is the key's)
                c = make("const", (), (), np.dtype(np.int64),
                         (("value", int(g.inputs[0].shape[a])), ("gather_len", (k, a))))
                self.glen[(id(g), a)] = c
                self.consts.append(c)
        base = len(self.params)
        self.records = [make("param", (), (3,), np.dtype(np.int64),
                             (("index", base + k), ("error_record", True)))
                        for k in range(len(self.gathers))]
        self.params += self.records
        # (index names fixed around the loop being generated, the statements that run before
        # it, their memo): open_hoist / close_hoist
        self.hoist: tuple[frozenset, list[str], dict] | None = None

    def pname(self, p: Node) -> str:
        return f"p{p.attr('index')}"

    def cname(self, c: Node) -> str:
        return f"c{self.consts.index(c)}"

    def sub(self, name: str, idx: tuple[str, ...]) -> str:
        """Source of array `name` at index idx (a backend's emitter may write it its own way)."""
        return f"{name}[{', '.join(idx) if idx else '()'}]"

    def load(self, p: Node, idx: tuple[str, ...]) -> str:
        """Source of param p at idx."""
        return self.sub(self.pname(p), idx)

    def fresh(self) -> str:
        self.counter += 1
        return f"t{self.counter}"

    def note(self, n: Node) -> str:
        """The comment of a temporary computing n."""
        return f"  # node {self.position[id(n)]}: {n.op}"

    def emit(self, n: Node, idx: tuple[str, ...], out: list[str], memo: dict) -> str:
        """Name of a variable (or literal) holding n at idx; statements go to `out`."""
        key = (id(n), idx)
        if key in memo:
            return memo[key]
        if id(n) in self.override:
            return self.override[id(n)]
        op = n.op
        if op == "param":
            res = self.fresh()
            out.append(f"{res} = {self.load(n, idx)}{self.note(n)}")
        elif op == "const":
            res = self.cname(n)
        elif op == "broadcast_to":
            x = n.inputs[0]
            lead = n.ndim - x.ndim
            xi = tuple("0" if x.shape[j] == 1 and n.shape[lead + j] != 1 else idx[lead + j]
                       for j in range(x.ndim))
            res = self.emit(x, xi, out, memo)
        elif op == "reshape":  # only unit-axis reshapes reach a fusion body
            x = n.inputs[0]
            keep = iter([i for i, d in zip(idx, n.shape) if d != 1])
            xi = tuple("0" if d == 1 else next(keep) for d in x.shape)
            res = self.emit(x, xi, out, memo)
        elif op == "chunk":  # x[q*m + r] inside the axis, the fill value past its end
            x, n_len, m_len = n.inputs
            ax = n.attr("axis")
            nv, mv = self.emit(n_len, (), out, memo), self.emit(m_len, (), out, memo)
            flat = self.fresh()
            # (signed: an unsigned index times the int64 length would be float64 in Numba)
            out.append(f"{flat} = _i64({idx[ax]}) * {mv} + _i64({idx[ax + 1]}){self.note(n)}")
            xi = idx[:ax] + (f"min({flat}, {nv} - 1)",) + idx[ax + 2:]
            v = self.emit(x, xi, out, memo)
            res = self.fresh()
            out.append(f"{res} = {v} if {flat} < {nv} else {tname(n.dtype)}({literal(n.attr('fill'))})"
                       f"{self.note(n)}")
        elif op == "transpose":
            perm = n.attr("perm")
            xi = [""] * n.ndim
            for i, p in enumerate(perm):
                xi[p] = idx[i]
            res = self.emit(n.inputs[0], tuple(xi), out, memo)
        elif op == "gather":
            res = self._gather(n, idx, out, memo)
        elif OPS[op].kind is Kind.REDUCE:  # inline (opt/fusion.py): unrolled here
            res = self._inline_reduce(n, idx, out, memo)
        else:
            d = OPS[op]
            assert d.kind is Kind.ELEMENTWISE, op
            args = [self.emit(i, idx, out, memo) for i in n.inputs]
            tpl = d.template(tuple(i.dtype for i in n.inputs), n.dtype)
            assert tpl is not None, f"no kernel template for {op}"
            tpl = _numpy_loop(n, tpl)
            for helper, fn in self.calls.items():
                tpl = tpl.replace(f"{helper}(", f"{fn}(")
            self._need(tpl)
            res = self.fresh()
            out.append(f"{res} = {tname(n.dtype)}({tpl.format(*args)}){self.note(n)}")
        memo[key] = res
        return res

    def _gather(self, n: Node, idx: tuple[str, ...], out: list[str], memo: dict) -> str:
        """x[..., i0[b], .., ik[b], ...] at idx: the B axes of idx (first where `front`, else
        at the first indexed axis) pick each index array's element; `_gidx` (each backend's
        helper) counts a negative index from the end and flags one out of bounds in the
        gather's error record (reading element 0 instead)."""
        x, ix, axes = n.inputs[0], n.inputs[1:], n.attr("axes")
        nb = ix[0].ndim
        at = 0 if n.attr("front") else axes[0]
        b, rest = idx[at:at + nb], iter(idx[:at] + idx[at + nb:])
        rec = self.pname(self.records[self.gathers.index(n)])
        h = self.hoist
        if h is not None and all(i in h[0] or i.isdigit() for i in b):
            at, at_memo = h[1], h[2]  # before the loop
        else:
            at, at_memo = out, memo
        xi = []
        for d in range(x.ndim):
            if d not in axes:
                xi.append(next(rest))
                continue
            j = axes.index(d)
            w = at_memo.get(("gidx", id(n), d, b))
            if w is None:
                v = self.emit(ix[j], b, at, at_memo)
                w = at_memo[("gidx", id(n), d, b)] = self.fresh()
                at.append(f"{w} = _gidx(_i64({v}), {self.cname(self.glen[(id(n), d)])}, {rec}, "
                          f"{j}){self.note(n)}")
            xi.append(w)
        self._need("_gidx(")
        return self.emit(x, tuple(xi), out, memo)

    def open_hoist(self, fixed) -> None:
        """Gather indices read at the index names `fixed` only are computed once, before the
        loop the generator emits next (where close_hoist puts them), not at each element."""
        self.hoist = (frozenset(fixed), [], {})

    def close_hoist(self, lines: list[str], at: int, ind: str) -> None:
        """The hoisted statements into `lines` at position `at`, indented by `ind`."""
        got, self.hoist = self.hoist[1], None
        lines[at:at] = [ind + st for st in got]

    def _inline_reduce(self, n: Node, idx: tuple[str, ...], out: list[str], memo: dict) -> str:
        """An inline reduction at idx, unrolled over its reduced axes (static sizes, in the
        kernel key) in NumPy's order: a float sum as numpy's pairwise leaf from +0.0, other
        reductions in sequence from the identity, all in the reduction's dtype."""
        src, axes, d = n.inputs[0], n.attr("axes"), OPS[n.op]
        t = tname(n.dtype)
        vals = []
        for r in itertools.product(*(range(src.shape[a]) for a in axes)):
            at, kept = dict(zip(axes, map(str, r))), iter(idx)
            si = tuple(at[a] if a in at else next(kept) for a in range(src.ndim))
            vals.append(f"{t}({self.emit(src, si, out, memo)})")
        res = self.fresh()
        if float_sum(n):
            out.append(f"{res} = {t}({t}(0.0) + {_pairwise_leaf(vals, t)}){self.note(n)}")
            return res
        comb = d.combine if isinstance(d.combine, str) else d.combine((n.dtype, n.dtype), n.dtype)
        self._need(comb)
        acc = f"{t}({literal(reduce_identity(d, src.dtype))})"
        for v in vals:
            acc = f"{t}({comb.format(acc, v)})"
        out.append(f"{res} = {acc}{self.note(n)}")
        return res

    def _need(self, text: str) -> None:
        """Add the helpers `text` calls, and the helpers they call."""
        needed_helpers(text, self.helpers, self.helper_sources)

    def helper_source(self, decorator: str) -> str:
        return helper_source(self.helpers, decorator, self.helper_sources)
