"""The differential fuzzer: random lazy programs checked against NumPy.

A program is a seeded list of source lines over a small pool of live variables `v0, v1, ...`.
The generator runs every line with NumPy as it draws it, so it knows each variable's shape,
dtype and memory (views share a group) and draws mostly valid next steps; a line NumPy rejects
is kept (the exception is part of the test). The runner executes the same lines twice, with
`np` bound to `numpy` and to `tracer.numpy`, under `errstate(all="ignore")` with warnings off.

Steps cover: every dtype (bool, int8..int64, uint8, uint64, float16/32/64, complex64/128);
Python scalars of every kind (bool, int including huge ints, float with nan/inf/-0.0, complex)
and NumPy scalars; unary and binary ufuncs with broadcasting; reductions with axes and keepdims;
basic indexing (negative steps, out-of-range starts, empty results) kept as views; advanced
indexing; writes (`a[key] = v`, `a[key] += v`, `a op= b`, `out=`, `ufunc.at`) through views;
casts and `.view(dtype)`; 0-d and empty arrays; creation functions; and one `tracer.evaluate`
of the whole pool at a random mid-point.

Checks, at the mid-point evaluation and at the end, for every live variable: shape and dtype
exactly, and values by these rules:
- exact (level 0): bit-for-bit equal except that NaN equals NaN (any sign/payload); signed
  zeros must match. Integers, bools, +-*/, sqrt, casts and movement are exact in IEEE.
  Complex * and / are not one IEEE operation (NumPy's scalar and array paths round them
  differently): complex values may differ by 4 ulps, with the same signs.
- approximate (level 1): a value computed through a transcendental function, a power, or a
  float sum/mean/std/var/prod (summation order differs) is compared with rtol = atol-scale =
  64 ulps of its dtype, or of float32 for a wider one (it may have been computed in float32
  and cast up), atol scaled by the largest finite |value|, complex values part by part;
  NaN positions must agree.
- unchecked (level 2): a discrete value computed from an approximate one (a comparison, floor,
  a cast to an integer type, argmax...) or a float->int cast of a non-finite or out-of-range
  value (undefined in C): only shape and dtype are checked.
Writes raise the level of every variable sharing memory with the written one.

Exceptions: where NumPy raises at a line, tracer must raise an instance of the nearest public
class of NumPy's exception at that line. For a data-dependent error that tracer defers, the
line's target is read at once; raising the same type then counts as `late` (not a mismatch;
issue 17 item 16 allows it for lazily computed values) and the program stops there. A program
also stops after an in-place line NumPy rejected (NumPy may have written part of it).

Modes: compiled (small_graph=0, sync compile), small (small_graph=4096, sync), lifted (as
compiled, every plan made with its constants and slice starts as runtime parameters), tiered
(small_graph=0, tiered compile, a fresh kernel cache per run of the command), cuda (the
cuda backend under Numba's simulator, run in a subprocess that sets NUMBA_ENABLE_CUDASIM=1
first; the same programs as the cpu modes), all with adaptive laziness off
(eager_size=0: every op recorded), and eager (a user's defaults: ops on small realized values
run at once by NumPy). Mode gpu (not in `all`) runs the full-size programs on a real device.

    python -m tests.fuzz --programs 500 --mode all [--seed 0] [--jobs 2] [--show] [--skip 7,9]
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import subprocess
import sys
import tempfile
import traceback
import warnings
from dataclasses import dataclass, field

import numpy

DTYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]
SHAPES = [(), (0,), (3,), (2, 3), (1, 3), (2, 1), (2, 0), (2, 2, 3)]

SCALARS = ["True", "False", "0", "3", "-7", "200", "2**31", "2**63 - 1", "2**64", "-2**70",
           "1.5", "-0.0", "2.5e-3", "1e308", "float('nan')", "float('inf')", "-float('inf')",
           "(1+2j)", "-1j", "numpy.float32(2.5)", "numpy.float16(-1.5)", "numpy.int8(-3)",
           "numpy.uint8(200)", "numpy.uint64(2**63)", "numpy.int64(-5)", "numpy.complex64(1j)",
           "numpy.bool_(True)", "numpy.float64('nan')"]

EXACT_UNARY = ["negative", "absolute", "sqrt", "floor", "ceil", "rint", "trunc", "sign",
               "square", "reciprocal", "isnan", "isinf", "isfinite", "logical_not", "invert",
               "conjugate", "signbit", "positive"]
APPROX_UNARY = ["exp", "log", "sin", "cos", "tanh", "log1p", "expm1", "arctan", "log10",
                "exp2", "cbrt"]
EXACT_BINARY = ["add", "subtract", "multiply", "true_divide", "floor_divide", "remainder",
                "maximum", "minimum", "greater", "less_equal", "equal",
                "not_equal", "logical_and", "logical_or", "logical_xor", "bitwise_and",
                "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "heaviside",
                "copysign", "fmod"]
# fmax/fmin of +0.0 and -0.0 may return either zero: NumPy's own answer depends on the
# element's position in its SIMD loop (fmin(zeros(3), -0.0) has signs +,-,-), so these are
# compared as approximate (allclose ignores the sign of zero)
APPROX_BINARY = ["power", "arctan2", "hypot", "float_power", "fmax", "fmin"]
OPERATORS = ["+", "-", "*", "/", "//", "%", "**", "&", "|", "^", "<", "==", ">=", "!="]
INPLACE_OPS = ["+=", "-=", "*=", "/=", "//=", "**=", "&=", "|=", "<<="]
REDUCTIONS = ["sum", "prod", "max", "min", "mean", "any", "all", "argmax", "argmin", "std",
              "var", "cumsum"]
AT_UFUNCS = ["add", "multiply", "maximum", "minimum", "subtract", "bitwise_or"]
# results that are discrete functions of their inputs: approximate inputs make them unchecked
DISCRETE = {"floor", "ceil", "rint", "trunc", "sign", "isnan", "isinf", "isfinite",
            "logical_not", "signbit", "floor_divide", "remainder", "greater", "less_equal",
            "equal", "not_equal", "logical_and", "logical_or", "logical_xor", "heaviside",
            "fmod", "argmax", "argmin", "any", "all", "astype", "where", "view"}
APPROX_REDUCTIONS = {"sum", "prod", "mean", "std", "var", "cumsum"}
MAX_POOL = 7
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclass
class Step:
    line: str
    target: str | None = None     # the variable the line assigns or writes
    inplace: bool = False
    evaluate: bool = False        # the mid-point `tracer.evaluate` of the pool
    levels: dict = field(default_factory=dict)   # variable -> 0 exact, 1 approx, 2 unchecked,
                                                 # as this line leaves it


@dataclass
class Program:
    seed: int
    hosts: list                    # the host arrays the program starts from
    steps: list = field(default_factory=list)


# ---------------------------------------------------------------- the generator

def _host(rng, shape, dtype):
    """Small values with NaN/inf/-0.0 and integer extremes sprinkled in."""
    dt = numpy.dtype(dtype)
    n = int(numpy.prod(shape))
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        info = numpy.iinfo(dt)
        vals = rng.integers(-5 if dt.kind == "i" else 0, 9, n).astype(dt)
        if n and rng.random() < 0.3:
            vals[rng.integers(n)] = info.min if rng.random() < 0.5 else info.max
        return vals.reshape(shape)
    special = [numpy.nan, numpy.inf, -numpy.inf, -0.0, 1e30, 0.5]
    vals = numpy.round(rng.standard_normal(n) * 4, 1)
    if n and rng.random() < 0.4:
        vals[rng.integers(n)] = rng.choice(special)
    if dt.kind == "c":
        vals = vals + 1j * numpy.round(rng.standard_normal(n) * 2, 1)
    with numpy.errstate(all="ignore"):  # 1e30 becomes inf in float16: wanted
        return vals.astype(dt).reshape(shape)


def _literal(h) -> str:
    """Python source that rebuilds host array h exactly."""
    if h.dtype.kind == "c" or (h.dtype.kind == "f" and not numpy.isfinite(h).all()):
        return (f"numpy.frombuffer(bytes.fromhex({h.tobytes().hex()!r}), {str(h.dtype)!r})"
                f".reshape({h.shape})")
    return f"numpy.array({h.tolist()!r}, {str(h.dtype)!r}).reshape({h.shape})"


class Gen:
    """Draws one program, running each line with NumPy to know the pool."""

    def __init__(self, seed: int, n_steps: int | None = None):
        self.rng = numpy.random.default_rng(seed)
        self.shapes = SHAPES
        self.prog = Program(seed, [])
        self.ns = namespace(numpy)
        self.groups: dict[str, int] = {}     # variable -> memory it shares (its base)
        self.levels: dict[str, int] = {}     # variable -> its level now
        self.new_group = itertools.count()
        self.next_var = 0
        self.n_steps = n_steps or int(self.rng.integers(3, 11))

    # -- small helpers
    def pick(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def chance(self, p):
        return self.rng.random() < p

    def live(self):
        values = (numpy.ndarray, numpy.generic)  # not object arrays: np.array(2**64) is one,
        # and NumPy's power of two of them works on Python ints for ever (seed 11000551)
        return [k for k in self.groups if isinstance(v := self.ns.get(k), values) and
                v.dtype.kind != "O"]

    def arrays(self):
        return [k for k in self.live() if isinstance(self.ns[k], numpy.ndarray)]

    def new_name(self):
        name = f"v{self.next_var}"
        self.next_var += 1
        return name

    def level(self, *names):
        return max([self.levels.get(n, 0) for n in names] or [0])

    # -- operands
    def operand(self, shape):
        """A variable broadcastable with `shape`, or a scalar literal."""
        ok = [k for k in self.live() if _broadcasts(self.ns[k].shape, shape)]
        if ok and self.chance(0.6):
            return self.pick(ok)
        return self.pick(SCALARS)

    def key(self, shape, advanced=False):
        """An index expression for an array of `shape`."""
        parts = []
        for n in shape:
            r = self.rng.random()
            if r < 0.2 and n:
                parts.append(str(int(self.rng.integers(-n, n))))
            elif r < 0.3 and advanced and n:
                parts.append(repr(self.rng.integers(-n, n, int(self.rng.integers(0, 3))).tolist()))
            elif r < 0.85:
                start, stop = (self.pick([None, -5, -3, -1, 0, 1, 2, 4]) for _ in range(2))
                step = self.pick([None, 1, 2, -1, -1, -2])
                parts.append(_slice(start, stop, step))
            else:
                parts.append(":")
        if self.chance(0.1):
            parts.insert(int(self.rng.integers(len(parts) + 1)), "None")
        if parts and self.chance(0.1):
            parts = parts[:int(self.rng.integers(len(parts)))] + ["..."]
        if advanced and shape and self.chance(0.2):
            return "[" + self.pick(self.arrays() or ["v0"]) + " > 0]"
        return "[" + (", ".join(parts) if parts else "()") + "]"

    # -- steps: each returns (line, target, inplace, level)
    def s_unary(self, a):
        approx = self.chance(0.4)
        f = self.pick(APPROX_UNARY if approx else EXACT_UNARY)
        return f"{{t}} = np.{f}({a})", _lvl(self.level(a), approx, f)

    def s_binary(self, a):
        b = self.operand(self.ns[a].shape)
        x, y = (a, b) if self.chance(0.7) else (b, a)
        r = self.rng.random()
        if r < 0.3:
            op = self.pick(OPERATORS)
            return f"{{t}} = {x} {op} {y}", _lvl(self.level(a, b), op == "**" or op == "/",
                                                   "greater" if op in "<==>=!=" else "")
        approx = r > 0.85
        f = self.pick(APPROX_BINARY if approx else EXACT_BINARY)
        return f"{{t}} = np.{f}({x}, {y})", _lvl(self.level(a, b), approx, f)

    def s_reduce(self, a):
        nd = self.ns[a].ndim
        f = self.pick(REDUCTIONS)
        args = []
        if nd and self.chance(0.7):
            axes = [int(self.rng.integers(-nd, nd)) for _ in range(1 + int(self.chance(0.2)))]
            args.append(f"axis={axes[0] if len(axes) == 1 else tuple(axes)}")
        elif self.chance(0.1):
            args.append("axis=0")
        if f != "cumsum" and self.chance(0.4):
            args.append("keepdims=True")
        approx = (f in APPROX_REDUCTIONS and self.ns[a].dtype.kind in "fc"
                  or f in ("mean", "std", "var"))
        call = f"{a}.{f}({', '.join(args)})" if self.chance(0.5) else \
            f"np.{f}({', '.join([a] + args)})"
        return "{t} = " + call, _lvl(self.level(a), approx, f)

    def s_index(self, a):
        adv = self.chance(0.25)
        return f"{{t}} = {a}{self.key(self.ns[a].shape, adv)}", self.level(a)

    def s_move(self, a):
        h = self.ns[a]
        opts = [f"{a}.T", f"{a}.ravel()", f"{a}.reshape(-1)", f"{a}.copy()",
                f"np.asarray({a}, copy=True)", f"np.transpose({a})", f"{a}[::-1]" if h.ndim else a,
                f"np.expand_dims({a}, 0)",
                f"np.concatenate([{a}, {a}])" if h.ndim else f"{a}.copy()",
                f"np.broadcast_to({a}, (2,) + {a}.shape).copy()"]
        return "{t} = " + self.pick(opts), self.level(a)

    def s_cast(self, a):
        h = self.ns[a]
        dt = self.pick(DTYPES)
        if self.chance(0.15):
            same = [d for d in DTYPES if numpy.dtype(d).itemsize == h.dtype.itemsize]
            return f"{{t}} = {a}.view({self.pick(same)!r})", _lvl(self.level(a), False, "view")
        lvl = _lvl(self.level(a), False, "astype" if numpy.dtype(dt).kind in "biu" else "")
        if h.dtype.kind in "fc" and numpy.dtype(dt).kind in "iu" and not _fits(h, dt):
            lvl = 2
        form = self.pick([f"{a}.astype({dt!r})", f"np.asarray({a}, dtype={dt!r})",
                          f"np.array({a}, dtype={dt!r})"])
        return "{t} = " + form, lvl

    def s_select(self, a):
        b = self.operand(self.ns[a].shape)
        if self.chance(0.5):
            return f"{{t}} = np.where({a} > 0, {a}, {b})", _lvl(self.level(a, b), False, "where")
        lo, hi = self.pick(SCALARS[:12]), self.operand(self.ns[a].shape)
        return f"{{t}} = np.clip({a}, {lo}, {hi})", self.level(a, hi)

    def s_create(self, a):
        shape = self.pick(self.shapes)
        dt = self.pick(DTYPES)
        form = self.pick([f"np.zeros({shape}, {dt!r})", f"np.ones({shape}, {dt!r})",
                          f"np.full({shape}, {self.pick(SCALARS)}, {dt!r})",
                          f"np.arange({int(self.rng.integers(0, 5))}, dtype={dt!r})",
                          f"np.array({self.pick(SCALARS)})", f"np.zeros_like({a})",
                          f"np.full_like({a}, {self.pick(SCALARS)})"])
        return "{t} = " + form, 0

    def s_write(self, a):
        """An in-place line on `a` (a variable or a view in the pool)."""
        h = self.ns[a]
        r = self.rng.random()
        if r < 0.35:
            key = self.key(h.shape, self.chance(0.3))
            val = self.operand(h.shape) if self.chance(0.5) else self.pick(SCALARS)
            op = "=" if self.chance(0.6) else self.pick(["+=", "*=", "-="])
            return f"{a}{key} {op} {val}", self.level(a, val)
        if r < 0.45 and h.ndim:  # the value overlaps the target
            return f"{a} {self.pick(INPLACE_OPS[:3])} {a}[..., ::-1]", self.level(a)
        if r < 0.6:
            b = self.operand(h.shape)
            op = self.pick(INPLACE_OPS)
            kind = "floor_divide" if op == "//=" else op
            return f"{a} {op} {b}", _lvl(self.level(a, b), op == "**=", kind)
        if r < 0.8:
            b = self.operand(h.shape)
            f = self.pick(EXACT_BINARY[:10] + APPROX_BINARY[:1])
            return f"np.{f}({a}, {b}, out={a})", _lvl(self.level(a, b), f == "power", f)
        n = h.shape[0] if h.ndim else 0
        idx = []
        if n or self.chance(0.5):
            idx = self.rng.integers(-n - (self.chance(0.1)), n + (self.chance(0.1)) or 1,
                                    int(self.rng.integers(0, 4))).tolist()
        val = self.pick(SCALARS) if self.chance(0.6) else self.operand(())
        f = self.pick(AT_UFUNCS)
        return f"np.{f}.at({a}, {idx}, {val})", _lvl(self.level(a, val), False, "")

    def step(self):
        arrays = self.arrays()
        if not arrays:
            target = self.new_name()
            return Step(f"{target} = np.zeros({self.pick(self.shapes)}, {self.pick(DTYPES)!r})",
                        target), 0
        a = self.pick(arrays)
        if self.ns[a].size and self.chance(0.3):
            inplace = True
            line, lvl = self.s_write(a)
            target = a
        else:
            kinds = [self.s_unary, self.s_binary, self.s_binary, self.s_reduce, self.s_index,
                     self.s_index, self.s_move, self.s_cast, self.s_select, self.s_create]
            template, lvl = self.pick(kinds)(a)
            live = self.live()
            fresh = len(live) < MAX_POOL or self.chance(0.3)
            target = self.new_name() if fresh else self.pick(live)
            line = template.format(t=target)
            inplace = False
        return Step(line, target, inplace), lvl

    def run(self) -> Program:
        for i in range(int(self.rng.integers(1, 4))):
            h = _host(self.rng, self.pick(self.shapes), self.pick(DTYPES))
            self.prog.hosts.append(h)
            name = self.new_name()
            self.prog.steps.append(Step(f"{name} = np.array(H[{i}])", name))
            self.ns["H"] = self.prog.hosts
            exec_line(self.ns, self.prog.steps[-1].line)
            self.groups[name] = next(self.new_group)
        mid = int(self.rng.integers(0, self.n_steps))
        for i in range(self.n_steps):
            if i == mid:
                self.prog.steps.append(Step("evaluate(" + ", ".join(self.live()) + ")",
                                            evaluate=True))
            st, lvl = self.step()
            self.prog.steps.append(st)
            try:
                exec_line(self.ns, st.line)
            except Exception:
                if st.inplace:
                    break
                continue
            self.assign(st, lvl)
        return self.prog

    def assign(self, st: Step, lvl: int):
        """Record the target's memory group and level (a write raises its whole group)."""
        t = st.target
        if st.inplace:
            for k, g in self.groups.items():
                if g == self.groups[t]:
                    st.levels[k] = max(self.levels.get(k, 0), lvl)
            self.levels.update(st.levels)
            return
        new = self.ns[t]
        group = next(self.new_group)
        if isinstance(new, numpy.ndarray):
            for k in self.arrays():
                if k != t and numpy.shares_memory(new, self.ns[k]):
                    group = self.groups[k]
        self.groups[t] = group
        st.levels[t] = self.levels[t] = lvl


def _slice(start, stop, step):
    s = lambda v: "" if v is None else str(v)
    return f"{s(start)}:{s(stop)}" + (f":{step}" if step is not None else "")


def _fits(h, dt):
    """Whether float/complex array h casts to integer dtype dt without undefined behaviour."""
    with numpy.errstate(all="ignore"):
        bound = 2 ** (8 * numpy.dtype(dt).itemsize - 1)
        return not h.size or bool(numpy.isfinite(h).all() and (numpy.abs(h.real) < bound).all())


def _broadcasts(s1, s2):
    try:
        numpy.broadcast_shapes(s1, s2)
        return True
    except ValueError:
        return False


def _lvl(base: int, approx: bool, op: str) -> int:
    if op in DISCRETE and base >= 1:
        return 2
    return max(base, 1 if approx else 0)


# ---------------------------------------------------------------- the runner

def namespace(m):
    import tracer
    ev = tracer.evaluate if m is not numpy else (lambda *a: a)
    return {"np": m, "numpy": numpy, "evaluate": ev, "tracer": tracer}


def exec_line(ns, line):
    with numpy.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(line, ns)


def public_type(e: BaseException):
    """The nearest public class of an exception (NumPy raises private subclasses)."""
    for cls in type(e).__mro__:
        if not cls.__name__.startswith("_"):
            return cls
    return Exception


def compare(name, want, got, level):
    """None if got matches want under the docstring's rules, else a short description."""
    try:
        with numpy.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            g = numpy.asarray(got)
    except Exception as e:
        return f"{name}: reading it raised {type(e).__name__}: {e}"
    w = numpy.asarray(want)
    if g.dtype != w.dtype or g.shape != w.shape:
        return f"{name}: {g.dtype}{g.shape} != numpy {w.dtype}{w.shape}"
    if level >= 2 or w.size == 0:
        return None
    if w.dtype.kind == "O":  # NumPy's own array on both sides; it may hold itself
        ok = [_type(x) for x in g.flat] == [_type(x) for x in w.flat]
    elif w.dtype.kind == "b":  # bytes: a bool view of other data keeps them, and NumPy's
        ok = numpy.array_equal(g.view(numpy.uint8), w.view(numpy.uint8))  # array_equal misreads
    elif w.dtype.kind not in "fc":
        ok = numpy.array_equal(g, w)
    elif level == 0:
        ok = _same_floats(g.real, w.real) and _same_floats(g.imag, w.imag)
        if not ok and w.dtype.kind == "c":  # a complex * or / rounds by the path NumPy takes
            tol = 4 * float(numpy.finfo(w.dtype).eps)
            ok = numpy.allclose(g, w, rtol=tol, atol=0, equal_nan=True) and all(
                numpy.array_equal(numpy.signbit(x(g)), numpy.signbit(x(w)))
                for x in (numpy.real, numpy.imag))
    else:  # complex by parts: isclose wants a value with an infinite part equal exactly
        tol = 64 * max(float(numpy.finfo(w.dtype).eps), float(numpy.finfo(numpy.float32).eps))
        parts = [(g.real, w.real), (g.imag, w.imag)] if w.dtype.kind == "c" else [(g, w)]
        with numpy.errstate(all="ignore"):
            ok = all(numpy.allclose(gp, wp, rtol=tol, atol=tol * _scale(wp), equal_nan=True)
                     for gp, wp in parts)
    if ok:
        return None
    return f"{name}: values differ\n  numpy : {w!r}\n  tracer: {g!r}"


def _scale(w):
    """The largest finite |value|, at least 1: the absolute tolerance's scale."""
    return numpy.nanmax(numpy.where(numpy.isfinite(w), numpy.abs(w), 0), initial=1.0)


def _type(x):
    """An object element's type; a lazy array stored as one (`o[()] = a`, the user's own object,
    as NumPy stores the array itself) counts as NumPy's array."""
    import tracer
    return numpy.ndarray if isinstance(x, tracer.ndarray) else type(x)


def _same_floats(g, w):
    nan = numpy.isnan(w)
    return bool((numpy.isnan(g) == nan).all() and (g[~nan] == w[~nan]).all()
                and (numpy.signbit(g[~nan]) == numpy.signbit(w[~nan])).all())


@dataclass
class Result:
    kind: str = "ok"        # ok, mismatch, exception, late, crash
    step: int = -1
    detail: str = ""


def run_program(prog: Program, tnp) -> Result:
    """Run the program with NumPy and tracer.numpy side by side."""
    nns, tns = namespace(numpy), namespace(tnp)
    nns["H"] = [h.copy() for h in prog.hosts]
    tns["H"] = [h.copy() for h in prog.hosts]
    levels: dict[str, int] = {}
    for i, st in enumerate(prog.steps):
        ne = te = None
        try:
            exec_line(nns, st.line)
        except Exception as e:
            ne = e
        try:
            exec_line(tns, st.line)
        except Exception as e:
            te = e
        if ne is not None or te is not None:
            res = _exceptions(ne, te, st, tns, i)
            if res is not None:
                return res
            if st.inplace:
                return Result()
            continue
        levels.update(st.levels)
        if st.evaluate:
            res = _compare_pool(levels, nns, tns, i)
            if res:
                return res
    return _compare_pool(levels, nns, tns, len(prog.steps)) or Result()


def _exceptions(ne, te, st, tns, i):
    if ne is not None and te is not None:
        if isinstance(te, public_type(ne)):
            return None
        return Result("exception", i, f"numpy raised {_exc(ne)}\n  tracer raised {_exc(te)}")
    if te is not None:
        return Result("exception", i, f"numpy ran; tracer raised {_exc(te)}\n"
                      + "".join(traceback.format_exception(te)[-3:]))
    try:  # numpy raised, tracer did not: a deferred data-dependent error?
        with numpy.errstate(all="ignore"):
            numpy.asarray(tns[st.target]) if st.target in tns else None
    except Exception as late:
        if isinstance(late, public_type(ne)):
            return Result("late", i, f"{_exc(ne)} raised at the first read")
        return Result("exception", i, f"numpy raised {_exc(ne)}\n  tracer raised late {_exc(late)}")
    return Result("exception", i, f"numpy raised {_exc(ne)}; tracer raised nothing")


def _exc(e):
    return f"{type(e).__name__}: {str(e)[:200]}"


def _compare_pool(levels, nns, tns, i):
    import tracer
    from tracer.fallback import foreign
    for name in sorted(k for k in nns if k.startswith("v") and k[1:].isdigit()):
        if name not in tns:
            return Result("mismatch", i, f"{name}: missing in tracer")
        # object data stays NumPy's array by design, and so do results NumPy computes from it
        # (np.array(2**64).astype(bool), seed 9991892): values compare either way
        if isinstance(nns[name], numpy.ndarray) and \
                not isinstance(tns[name], (tracer.ndarray, numpy.ndarray)) and not foreign(nns[name]):
            return Result("mismatch", i, f"{name}: tracer gave a {type(tns[name]).__name__}")
        d = compare(name, nns[name], tns[name], levels.get(name, 0))
        if d:
            return Result("mismatch", i, d)
    return None


def safe_run(prog, tnp) -> Result:
    try:
        return run_program(prog, tnp)
    except Exception as e:  # a crash inside the runner's own reads
        return Result("crash", -1, _exc(e) + "\n" + "".join(traceback.format_exception(e)[-4:]))


def shrink(prog: Program, tnp, res: Result) -> Program:
    """Drop lines while the program still fails the same way (same kind)."""
    steps = list(prog.steps)
    changed = True
    while changed:
        changed = False
        for j in range(len(steps) - 1, -1, -1):
            trial = Program(prog.seed, prog.hosts, steps[:j] + steps[j + 1:])
            try:
                ok = _still_fails(trial, tnp, res)
            except Exception:
                ok = False
            if ok:
                steps = trial.steps
                changed = True
    return Program(prog.seed, prog.hosts, steps)


def _still_fails(trial, tnp, res):
    r = safe_run(trial, tnp)
    return r.kind == res.kind and r.detail.split(":")[0] == res.detail.split(":")[0]


def snippet(prog: Program) -> str:
    used = {int(s) for st in prog.steps for s in _hosts_used(st.line)}
    lines = ["import numpy", "import tracer", "import tracer.numpy as np",
             "from tracer import evaluate",
             f"H = {{{', '.join(f'{i}: {_literal(prog.hosts[i])}' for i in sorted(used))}}}"]
    return "\n".join(lines + [st.line for st in prog.steps])


def _hosts_used(line):
    return re.findall(r"H\[(\d+)\]", line)


# ---------------------------------------------------------------- modes and the command

MODES = {"compiled": dict(small_graph=0, compile_mode="sync", eager_size=0),
         "small": dict(small_graph=4096, compile_mode="sync", eager_size=0),
         "lifted": dict(small_graph=0, compile_mode="sync", eager_size=0, lift="all"),
         "tiered": dict(small_graph=0, compile_mode="tiered", eager_size=0),
         "cuda": dict(small_graph=0, compile_mode="sync", backend="cuda", cuda_sim=True,
                      eager_size=0),
         "gpu": dict(small_graph=0, compile_mode="sync", backend="cuda", cuda_sim=False,
                     eager_size=0),
         # a user's defaults (ir/config.py SMALL_GRAPH, EAGER_SIZE), whatever the environment
         "eager": dict(small_graph=4096, compile_mode="sync", eager_size=16384)}
# gpu needs a device: run it by name
ALL = ("compiled", "small", "lifted", "tiered", "cuda", "eager")


def run_mode(mode: str, seeds, show=False, out=sys.stdout):
    """Run the programs of these seeds in this process under the mode; returns the failures."""
    import tracer.numpy as tnp
    from tracer.ir.config import context
    counts = {"programs": 0, "mismatches": 0, "exceptions": 0, "late": 0, "crashes": 0}
    failures = []
    interval = sys.getswitchinterval()
    if mode == "cuda":  # the simulator polls its threads at every syncthreads, holding the GIL
        sys.setswitchinterval(1e-4)
    with context(**MODES[mode]):
        for prog in (Gen(s).run() for s in seeds):
            res = safe_run(prog, tnp)
            counts["programs"] += 1
            if res.kind == "ok":
                continue
            key = {"mismatch": "mismatches", "exception": "exceptions", "late": "late",
                   "crash": "crashes"}[res.kind]
            counts[key] += 1
            if res.kind == "late":  # allowed, but listed: which errors come late
                if show:
                    print(f"--- {mode} seed {prog.seed}: late: {res.detail}", file=out, flush=True)
                continue
            small = prog
            if show:  # the detail printed is the shrunk program's
                small = shrink(prog, tnp, res)
                res = safe_run(small, tnp)
            fail = {"seed": prog.seed, "kind": res.kind, "detail": res.detail,
                    "snippet": snippet(small)}
            failures.append(fail)
            if show:
                print(f"--- {mode} seed {prog.seed}: {res.kind}\n{res.detail}\n{fail['snippet']}\n",
                      file=out, flush=True)
    sys.setswitchinterval(interval)
    return counts, failures


def child_env(mode: str, cache: str):
    env = dict(os.environ)
    env["TRACER_CACHE_DIR"] = cache
    env["TRACER_BACKEND"] = "cuda" if mode in ("cuda", "gpu") else "cpu"
    if mode == "cuda":
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    return env


def run_children(mode: str, seed: int, n: int, jobs: int, show: bool, skip=(), timeout=None):
    """Run seeds [seed, seed + n), less those in `skip`, of a mode in `jobs` child processes;
    their summed counts and failures, or None if one crashed or ran past `timeout` seconds."""
    shared = os.environ.get("TRACER_CACHE_DIR",
                            os.path.join(tempfile.gettempdir(), "tracer-fuzz-cache"))
    bounds = [seed + n * j // jobs for j in range(jobs + 1)]
    with tempfile.TemporaryDirectory() as tmp:
        procs = []
        for j in range(jobs):
            cache = shared
            if mode in ("tiered", "cuda", "gpu"):  # the tiered path needs cold kernels
                cache = os.path.join(tmp, f"cache{j}")
            out = os.path.join(tmp, f"{j}.json")
            cmd = [sys.executable, "-m", "tests.fuzz", "--mode", mode, "--programs",
                   str(bounds[j + 1] - bounds[j]), "--seed", str(bounds[j]), "--json", out,
                   "--skip", ",".join(map(str, skip))]
            procs.append((subprocess.Popen(cmd + (["--show"] if show else []),
                                           env=child_env(mode, cache), cwd=ROOT), out))
        total = {"counts": {}, "failures": []}
        for p, out in procs:
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                for q, _ in procs:
                    q.kill()
                    q.wait()
                return None
            try:
                data = json.load(open(out))
            except (OSError, ValueError):
                return None
            for k, v in data["counts"].items():
                total["counts"][k] = total["counts"].get(k, 0) + v
            total["failures"] += data["failures"]
    return total


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", type=int, default=200)
    ap.add_argument("--mode", default="all", choices=["all"] + list(MODES))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--show", action="store_true", help="print each failing program, shrunk")
    ap.add_argument("--jobs", type=int, default=1, help="child processes that share the seeds")
    ap.add_argument("--skip", default="", help="seeds to leave out, comma separated")
    ap.add_argument("--json", help="(child) write counts and failures to this file")
    args = ap.parse_args(argv)
    modes = list(ALL) if args.mode == "all" else [args.mode]
    skip = {int(s) for s in args.skip.split(",") if s}
    if args.json:
        seeds = [s for s in range(args.seed, args.seed + args.programs) if s not in skip]
        counts, failures = run_mode(modes[0], seeds, args.show)
        with open(args.json, "w") as f:
            json.dump({"counts": counts, "failures": failures}, f)
        return 0
    bad = 0
    for mode in modes:
        data = run_children(mode, args.seed, args.programs, max(1, args.jobs), args.show, skip)
        if data is None:
            print(f"{mode}: a run crashed")
            bad += 1
            continue
        c = data["counts"]
        bad += c["mismatches"] + c["exceptions"] + c["crashes"]
        print(f"{mode}: {c['programs']} programs, {c['mismatches']} mismatches, "
              f"{c['exceptions']} exceptions mismatched, {c['crashes']} crashes, "
              f"{c['late']} late errors; failing seeds: "
              f"{[f['seed'] for f in data['failures']][:50]}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
