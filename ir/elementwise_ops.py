"""The elementwise ops of the catalogue: NumPy's ufuncs with kernel templates, cast and where.

A template (`T`) is Python source over `{0}`, `{1}`, ... for one loop's dtypes; it calls
scalar helpers by name (`_fmod_f32`, `_exp_f64`, ...), whose source each backend supplies
(cuda_kernels/helpers.py), so nothing here depends on the backend.
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Callable

import numpy as np

from .opdef import Kind, OpDef, Props, register


# ---------------------------------------------------------------- helpers for templates

def _nokernel(dts) -> bool:
    return any(dt.kind in "cOSUVMm" or dt.itemsize == 2 and dt.kind == "f" for dt in dts)


def T(expr: str | Callable | None, floats: str | None = None) -> Callable:
    """A template; `floats` overrides it for float loops. Complex/float16 loops get no kernel."""
    def tpl(in_dts, out_dt):
        if _nokernel(tuple(in_dts) + (out_dt,)):
            return None
        e = floats if (floats is not None and in_dts and in_dts[0].kind == "f") else expr
        return e(in_dts, out_dt) if callable(e) else e
    return tpl


# ---------------------------------------------------------------- shape and dtype rules

def same_shape(shapes, attrs):
    for s in shapes[1:]:
        if s != shapes[0]:
            raise ValueError(f"elementwise inputs differ in shape: {shapes}")
    return shapes[0]


def ufunc_dtype(uf: np.ufunc):
    def rule(dts, attrs):
        return uf.resolve_dtypes(tuple(dts) + (None,) * uf.nout)[uf.nin]
    return rule


# ---------------------------------------------------------------- elementwise ufuncs

def _ufunc(name: str, tpl, props: Props = Props(), cheap: bool = False):
    uf = getattr(np, name)
    register(OpDef(name, Kind.ELEMENTWISE, uf.nin, same_shape, ufunc_dtype(uf),
                   ref=uf, template=tpl, props=replace(props, cheap=cheap), ufunc=uf))


def _bits(dt: np.dtype) -> int:
    return dt.itemsize * 8


def _int_or_float(i: str, f: str) -> Callable:
    return T(i, floats=f)


def _ft(dt: np.dtype) -> str:
    """The generated modules' alias of a float type (np.float32 is `_f32`)."""
    return {4: "_f32", 8: "_f64"}[dt.itemsize]


def typed(helper: str, nargs: int) -> Callable:
    """A call of the helper's variant for the loop's float type (`_fmod_f32`, `_fmod_f64`)."""
    args = ", ".join(f"{{{k}}}" for k in range(nargs))
    return lambda i, o: f"{helper}{_ft(o)}({args})"


def scaled(c64: float, c32: float) -> Callable:
    """x * c with NumPy's constant for the loop's type: float32 loops multiply by a float32
    constant computed in float32 (npy_rad2degf: x * (180.0f / NPY_PIf))."""
    return T(lambda i, o: f"({{0}} * {_ft(o)}({c32 if o.itemsize == 4 else c64!r}))")


_C = Props(commutative=True, associative=True)
_CI = Props(commutative=True, associative=True, idempotent=True)

_ufunc("add", T("({0} + {1})"), _C, cheap=True)
_ufunc("subtract", T("({0} - {1})"), cheap=True)
_ufunc("multiply", T("({0} * {1})"), _C, cheap=True)
_ufunc("divide", T("({0} / {1})"))
_ufunc("floor_divide", _int_or_float("_ifloordiv({0}, {1})", typed("_ffloordiv", 2)))
_ufunc("remainder", _int_or_float("_iremainder({0}, {1})", typed("_fremainder", 2)))
_ufunc("fmod", _int_or_float("_ifmod({0}, {1})", typed("_fmod", 2)))
_ufunc("power", T(None, floats="_fpow({0}, {1})"))
_ufunc("float_power", T(None, floats="_fpow({0}, {1})"))
_ufunc("negative", T("(-{0})"), Props(involution=True), cheap=True)
_ufunc("positive", T("{0}"), cheap=True)
_ufunc("absolute", T(lambda i, o: "{0}" if i[0].kind in "ub" else "abs({0})",
                     floats="math.fabs({0})"), cheap=True)
_ufunc("fabs", T("math.fabs({0})"))
_ufunc("sign", T("_sign({0})"))
_ufunc("square", T("({0} * {0})"), cheap=True)
_ufunc("reciprocal", T(None, floats="(1.0 / {0})"))
_ufunc("conjugate", T("{0}"))
_ufunc("sqrt", T("math.sqrt({0})"))
_ufunc("cbrt", T("_cbrt({0})"))


def libm(fn: str) -> Callable:
    """libm's `fn` through its helper for the loop's float type (`_exp_f32`): a backend may
    compute it its own way."""
    return T(typed(f"_{fn}", 1))


_ufunc("exp", libm("exp"))
_ufunc("exp2", T(typed("_exp2", 1)))
_ufunc("expm1", libm("expm1"))
_ufunc("log", libm("log"))
_ufunc("log2", libm("log2"))
_ufunc("log10", libm("log10"))
_ufunc("log1p", libm("log1p"))
_ufunc("logaddexp", T(typed("_logaddexp", 2)), Props(commutative=True))
_ufunc("logaddexp2", T(typed("_logaddexp2", 2)), Props(commutative=True))
_ufunc("sin", libm("sin"))
_ufunc("cos", libm("cos"))
for _n, _m in [("tan", "tan"), ("arcsin", "asin"),
               ("arccos", "acos"), ("arctan", "atan"), ("sinh", "sinh"), ("cosh", "cosh"),
               ("arcsinh", "asinh"), ("arccosh", "acosh"), ("arctanh", "atanh")]:
    _ufunc(_n, libm(_m))
_ufunc("tanh", libm("tanh"))
_ufunc("arctan2", T("math.atan2({0}, {1})"))
_ufunc("hypot", T("math.hypot({0}, {1})"), Props(commutative=True))
_DEG2RAD = scaled(math.pi / 180, float(np.float32(np.pi) / np.float32(180)))
_RAD2DEG = scaled(180 / math.pi, float(np.float32(180) / np.float32(np.pi)))
_ufunc("deg2rad", _DEG2RAD)
_ufunc("radians", _DEG2RAD)
_ufunc("rad2deg", _RAD2DEG)
_ufunc("degrees", _RAD2DEG)
_ufunc("floor", T("{0}", floats="_floor({0})"))
_ufunc("ceil", T("{0}", floats="_ceil({0})"))
_ufunc("trunc", T("{0}", floats="_trunc({0})"))
_ufunc("rint", T("{0}", floats="_rint({0})"))
_ufunc("maximum", T("_maximum({0}, {1})"), _CI, cheap=True)
# minimum: ties pick the second operand, as NumPy
_ufunc("minimum", T("_minimum({0}, {1})"), _CI, cheap=True)
_ufunc("fmax", T("_fmax({0}, {1})"), _CI, cheap=True)
_ufunc("fmin", T("_fmin({0}, {1})"), _CI, cheap=True)
_ufunc("isnan", T("({0} != {0})"))
_ufunc("isinf", T("False", floats="math.isinf({0})"))
_ufunc("isfinite", T("True", floats="math.isfinite({0})"))
_ufunc("signbit", T("({0} < 0)", floats="_signbit({0})"))
_ufunc("copysign", T("math.copysign({0}, {1})"))
_ufunc("heaviside", T("_heaviside({0}, {1})"))
def _compare(sym: str) -> Callable:
    """`a sym b`; int64 against uint64 exactly, as NumPy's mixed loop (numba would compare
    them as float64): a negative int64 is below every uint64."""
    def tpl(in_dts, out_dt):
        if sorted(d.name for d in in_dts) != ["int64", "uint64"]:
            return f"({{0}} {sym} {{1}})"
        signed = 0 if in_dts[0].kind == "i" else 1
        neg = eval(f"0 {sym} 1" if signed == 0 else f"1 {sym} 0")  # noqa: S307 (a literal)
        return f"({neg} if {{{signed}}} < 0 else (_u64({{0}}) {sym} _u64({{1}})))"
    return tpl


for _n, _s in [("equal", "=="), ("not_equal", "!="), ("less", "<"), ("less_equal", "<="),
               ("greater", ">"), ("greater_equal", ">=")]:
    _ufunc(_n, T(_compare(_s)), Props(commutative=_n in ("equal", "not_equal")), cheap=True)
_ufunc("logical_and", T("({0} and {1})"), _CI, cheap=True)
_ufunc("logical_or", T("({0} or {1})"), _CI, cheap=True)
_ufunc("logical_xor", T("(({0} != 0) != ({1} != 0))"), Props(commutative=True, associative=True))
_ufunc("logical_not", T("(not {0})"), cheap=True)
_ufunc("bitwise_and", T("({0} & {1})"), _CI)
_ufunc("bitwise_or", T("({0} | {1})"), _CI)
_ufunc("bitwise_xor", T(lambda i, o: "({0} != {1})" if i[0].kind == "b" else "({0} ^ {1})"),
       Props(commutative=True, associative=True))
_ufunc("invert", T(lambda i, o: "(not {0})" if i[0].kind == "b" else "(~{0})"),
       Props(involution=True))
_ufunc("left_shift", T(lambda i, o: f"_lshift({{0}}, {{1}}, {_bits(o)})"))
_ufunc("right_shift", T(lambda i, o: f"_{'u' if o.kind == 'u' else ''}rshift({{0}}, {{1}}, "
                                      f"{_bits(o)})"))
_WIDE = {"i": "_i64", "u": "_u64"}  # |int8 min| needs a wider type
_ufunc("gcd", T(lambda i, o: f"_gcd({_WIDE[o.kind]}({{0}}), {_WIDE[o.kind]}({{1}}))"),
       Props(commutative=True, associative=True))
# not associative: lcm wraps around where it overflows
_ufunc("lcm", T(lambda i, o: f"_lcm({_WIDE[o.kind]}({{0}}), {_WIDE[o.kind]}({{1}}))"),
       Props(commutative=True))
# No kernel yet (interpreter): nextafter, spacing, ldexp, frexp, modf, divmod.
for _n in ("nextafter", "spacing", "ldexp"):
    _ufunc(_n, None)


def _cast_ref(x, dtype):
    with np.errstate(all="ignore"):
        return x.astype(dtype)


register(OpDef("cast", Kind.ELEMENTWISE, 1, same_shape, lambda d, a: np.dtype(a["dtype"]),
               ref=_cast_ref, props=Props(cheap=True),
               template=T(lambda i, o: "{0}" if o.kind != "b" else "({0} != 0)")))


def _where_dtype(dts, attrs):
    if dts[0] != np.bool_ or dts[1] != dts[2]:
        raise TypeError(f"where wants (bool, T, T), got {dts}")
    return dts[1]


register(OpDef("where", Kind.ELEMENTWISE, 3, same_shape, _where_dtype, ref=np.where,
               props=Props(cheap=True),
               template=T("({1} if {0} else {2})")))
