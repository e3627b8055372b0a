"""What the cpu kernels need beyond plain Python: bit casts between float64 and int64 and the
bits of 2/pi for the vectorizable math helpers (cpu/helpers.py). The numba wheels have no SVML,
so `math.exp` in a loop is a scalar libm call that blocks vectorization; the helpers are
branch-free arithmetic LLVM vectorizes instead.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic


@intrinsic
def _bits_f64(typingctx, x):
    """The float64 whose bits are the int64 x."""
    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.DoubleType())
    return types.float64(types.int64), codegen


@intrinsic
def _f64_bits(typingctx, x):
    """The bits of the float64 x, as an int64."""
    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.IntType(64))
    return types.int64(types.float64), codegen


@intrinsic
def _fma(typingctx, a, b, c):
    """a * b + c as LLVM's fmuladd: one fused instruction where the cpu has FMA (one rounding,
    never less accurate), a multiply and an add where it has not. For the helpers' polynomial
    steps only; the user's own a * b + c keeps NumPy's two roundings. Computes in the widest
    of the argument types."""
    if not all(isinstance(t, types.Float) for t in (a, b, c)):
        return None
    t = max((a, b, c), key=lambda x: x.bitwidth)

    def codegen(context, builder, sig, args):
        vals = [context.cast(builder, v, ty, t) for v, ty in zip(args, sig.args)]
        lt = vals[0].type
        f = builder.module.declare_intrinsic("llvm.fmuladd", [lt], ir.FunctionType(lt, [lt] * 3))
        return builder.call(f, vals)
    return t(a, b, c), codegen


def _two_over_pi(bits: int) -> int:
    """floor(2/pi * 2**bits), from Machin's formula in integers (its first words are fdlibm's
    0xA2F983, 0x6E4E44, 0x1529FC)."""
    guard = 32
    one = 1 << (bits + guard)

    def atan_inv(x: int) -> int:
        s, t, k, sign = 0, one // x, 1, 1
        while t:
            s += sign * (t // k)
            t //= x * x
            k += 2
            sign = -sign
        return s
    pi = (16 * atan_inv(5) - 4 * atan_inv(239)) >> guard
    return (1 << (2 * bits + 1)) // pi


def _ph_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Three 28-bit words of 2/pi per float32 exponent, for Payne-Hanek reduction: row
    E + PH_OFFSET (E the unbiased exponent of x, x = m * 2**(E - 23) with a 24-bit m) holds
    the bits of 2/pi from position E - 24 on (bit i weighs 2**-i; positions below 1 are 0),
    the first that m * 2**(E - 23) does not turn into a multiple of 4."""
    total = 400
    v = _two_over_pi(total)
    # bits i0 .. i0 + 27 end at bit total - i0 - 27 of v; v < 2**total, so positions below 1
    # shift out to zeros
    rows = [[(v >> (total - (E - 24 + 28 * j) - 27)) & ((1 << 28) - 1)
             for E in range(-PH_OFFSET, 129)] for j in range(3)]
    return tuple(np.array(r, dtype=np.float64) for r in rows)  # exact: words < 2**28


PH_OFFSET = 16  # exponents from -16 on: every |x| >= 2**-16 has a row (the helpers use 2**16 up)
_PH0, _PH1, _PH2 = _ph_tables()


def _exp_tables(n: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """2**(j/n) for j < n as hi + lo float64 pairs: the float64 exp's table (glibc's method).
    In 40-digit decimal arithmetic (its own context: the caller's is left alone)."""
    from decimal import Decimal, localcontext
    with localcontext() as ctx:
        ctx.prec = 40
        vals = [((Decimal(2).ln() / n) * j).exp() for j in range(n)]
        hi = [float(v) for v in vals]
        return np.array(hi), np.array([float(v - Decimal(h)) for v, h in zip(vals, hi)])


_EXP_HI, _EXP_LO = _exp_tables()
