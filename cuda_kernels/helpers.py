"""Scalar helper functions that kernel templates call, as source text: the helper table both
backends start from.

Each helper is plain Python that Numba compiles for both targets (njit on the CPU, inline device
functions on CUDA); codegen pastes in only the helpers a kernel uses, decorated for its backend.
They mirror NumPy's C loops (npymath) so results match NumPy, NaN and signed zeros included.
Templates name helpers only; a backend's own table (cpu/helpers.py, cuda/codegen.py) replaces
some of them with its own source under the same name.
"""
from __future__ import annotations

import re
from typing import Mapping

HELPERS: dict[str, str] = {}


def define(name: str, src: str, table: dict[str, str] = HELPERS) -> None:
    """Add helper `name` to `table` (a backend's own table gives its own `table`)."""
    table[name] = src.strip("\n")


def _typed(src: str) -> None:
    """A float helper in one variant per float type: `_T` becomes `_f32` or `_f64` (the type
    aliases of every generated module), in names and in casts. NumPy's float32 loops compute
    in float32 with float32 constants; a float64 literal or a float64 intermediate would round
    differently (floor_divide, logaddexp2) or promote the whole function."""
    name = src.split("def ", 1)[1].split("(", 1)[0]
    for t in ("_f32", "_f64"):
        define(name.replace("_T", t), src.replace("_T", t))


define("_maximum", """
def _maximum(a, b):
    return a if (a > b or a != a) else b
""")
define("_minimum", """
def _minimum(a, b):
    return a if (a < b or a != a) else b
""")
define("_fmax", """
def _fmax(a, b):
    return a if (a > b or b != b) else b
""")
define("_fmin", """
def _fmin(a, b):
    return a if (a < b or b != b) else b
""")
define("_ifloordiv", """
def _ifloordiv(a, b):
    if b == 0:
        return a - a
    if b == -1:
        return -a
    return a // b
""")
define("_iremainder", """
def _iremainder(a, b):
    if b == 0 or b == -1:
        return a - a
    return a % b
""")
define("_ifmod", """
def _ifmod(a, b):
    if b == 0 or b == -1:
        return a - a
    r = a % b
    if r != 0 and (r < 0) != (a < 0):
        r -= b
    return r
""")
define("_sign", """
def _sign(a):
    if a != a:
        return a
    return int(a > 0) - int(a < 0)  # NumPy bools (the cuda simulator) do not subtract
""")
define("_floor", """
def _floor(a):
    if a != a or math.isinf(a) or abs(a) >= 4503599627370496.0:
        return a
    return math.copysign(math.floor(a) * 1.0, a)
""")
define("_ceil", """
def _ceil(a):
    if a != a or math.isinf(a) or abs(a) >= 4503599627370496.0:
        return a
    return math.copysign(math.ceil(a) * 1.0, a)
""")
define("_trunc", """
def _trunc(a):
    if a != a or math.isinf(a) or abs(a) >= 4503599627370496.0:
        return a
    return math.copysign(math.trunc(a) * 1.0, a)
""")
define("_rint", """
def _rint(a):
    if a != a or math.isinf(a) or abs(a) >= 4503599627370496.0:
        return a
    r = math.floor(a) * 1.0
    d = a - r
    if d > 0.5 or (d == 0.5 and r % 2.0 != 0.0):
        r += 1.0
    return math.copysign(r, a)
""")
# pow refined by a Newton step: numba.cuda has no cbrt (the cpu backend calls libm's). A
# subnormal is scaled by 2**54 first: its cube's few bits of precision would spoil the step.
define("_cbrt", """
def _cbrt(a):
    if a == 0 or a != a or math.isinf(a):
        return a
    scale = 1.0
    if abs(a) < 2.2250738585072014e-308:
        a = a * 18014398509481984.0
        scale = 3.814697265625e-06
    y = math.copysign(math.pow(abs(a), 1.0 / 3.0), a)
    return (y - (y * y * y - a) / (3.0 * y * y)) * scale
""")
define("_signbit", """
def _signbit(a):
    return math.copysign(1.0, a) < 0
""")
define("_heaviside", """
def _heaviside(x, h0):
    if x != x:
        return math.nan  # npy_heaviside returns NPY_NAN, whatever x's sign
    if x == 0:
        return h0
    return 1.0 if x > 0 else 0.0
""")
define("_lshift", """
def _lshift(a, b, bits):
    if b < 0 or b >= bits:
        return a - a
    return a << b
""")
define("_rshift", """
def _rshift(a, b, bits):
    if b < 0 or b >= bits:
        return (a - a) - 1 if a < 0 else a - a
    return a >> b
""")
define("_urshift", """
def _urshift(a, b, bits):
    if b >= bits:
        return a - a
    return a >> b
""")
define("_gcd", """
def _gcd(a, b):
    while b != 0:
        a, b = b, a % b
    return abs(a)
""")
define("_lcm", """
def _lcm(a, b):
    a = abs(a)
    b = abs(b)
    if a == 0 or b == 0:
        return a - a
    x = a
    y = b
    while y != 0:
        x, y = y, x % y
    return (a // x) * b
""")
# NumPy's float to integer casts, as x86 computes them: a signed conversion gives the signed
# minimum for an out-of-range or NaN x; an unsigned one converts x, or x - 2**63 (2**31) with
# the top bit set again where x is at least that
for _b in (32, 64):
    define(f"_f2i{_b}", f"""
def _f2i{_b}(a):
    if a >= -{2.0 ** (_b - 1)!r} and a < {2.0 ** (_b - 1)!r}:
        return _i{_b}(a)
    return _i{_b}(-{2 ** (_b - 1)})
""")
    define(f"_f2u{_b}", f"""
def _f2u{_b}(a):
    if a >= {2.0 ** (_b - 1)!r}:
        return _u{_b}(_f2i{_b}(a - {2.0 ** (_b - 1)!r})) ^ _u{_b}({2 ** (_b - 1)})
    return _u{_b}(_f2i{_b}(a))
""")
# x86's default NaN, the result of an invalid operation (0/0, inf - inf, log(-1)): its sign bit
# is set, and NumPy's loops return it. A NaN constant (math.nan) is positive, and so is the
# NaN that LLVM folds or libm's log10, asin and acos return.
define("_dnan", """
def _dnan():
    return math.copysign(math.nan, -1.0)
""")
define("_dnan_of", """
def _dnan_of(x, r):
    if r != r and x == x:
        return math.copysign(r, -1.0)
    return r
""")
define("_fpow", """
def _fpow(a, b):
    if a != a and b != 0:  # libm hands back a NaN operand as it is; numba's pow clears its sign
        return a
    if b != b and a != 1:
        return b
    return a ** b
""")


# npy_fmod, npy_divmod, npy_floor_divide and npy_remainder, statement for statement. libm's
# fmod returns (a * b) / (a * b) for its special cases: a NaN operand (the first, as x86 does),
# else the default NaN
_typed("""
def _fmod_T(a, b):
    if a != a:
        return a
    if b != b:
        return b
    if b == 0 or math.isinf(a):
        return _T(_dnan())
    return math.copysign(_absmod(a, b), a)
""")
# |a| mod |b|; the cuda backend has its own (cuda/codegen.py HELPER_SOURCES)
define("_absmod", """
def _absmod(a, b):
    return abs(a) % abs(b)
""")
_typed("""
def _ffloordiv_T(a, b):
    if b == 0:
        return a / b
    mod = _fmod_T(a, b)
    div = (a - mod) / b
    if mod != 0 and (b < 0) != (mod < 0):
        div = div - _T(1.0)
    if div != 0:
        if div != div or abs(div) >= _T(4503599627370496.0):
            return div  # NaN, inf, or a float that is already an integer: its own floor
        fl = _T(math.floor(div))
        if div - fl > _T(0.5):
            fl = fl + _T(1.0)
        return fl
    return math.copysign(_T(0.0), a / b)
""")
_typed("""
def _fremainder_T(a, b):
    mod = _fmod_T(a, b)
    if b == 0:
        return mod
    if mod != 0:
        if (b < 0) != (mod < 0):
            mod = mod + b
        return mod
    return math.copysign(_T(0.0), b)
""")
# NumPy's power loop with one exponent for all elements (POWER_FAST_PATH): sqrt for 0.5
# (sqrt(-0.0) is -0.0 and sqrt(-inf) NaN, where pow gives 0.0 and inf) and 1 / a for -1
_typed("""
def _fpow1_T(a, b):
    if b == _T(0.5):
        return math.sqrt(a)
    if b == _T(-1.0):
        return _T(1.0) / a
    if a != a and b != 0:  # (as _fpow)
        return a
    return a ** b
""")
_typed("""
def _exp2_T(a):
    return math.pow(_T(2.0), a)
""")
# npy_logaddexp and npy_logaddexp2
_typed("""
def _logaddexp_T(x, y):
    if x == y:
        return x + _T(0.6931471805599453)
    t = x - y
    if t > 0:
        return x + math.log1p(math.exp(-t))
    if t <= 0:
        return y + math.log1p(math.exp(t))
    return t
""")
_typed("""
def _logaddexp2_T(x, y):
    if x == y:
        return x + _T(1.0)
    t = x - y
    if t > 0:
        return x + _T(1.4426950408889634) * math.log1p(_exp2_T(-t))
    if t <= 0:
        return y + _T(1.4426950408889634) * math.log1p(_exp2_T(t))
    return t
""")


# Transcendental functions: one helper per float type (the loop's output type), libm's call
# here; the cpu backend computes some of them with vectorizable arithmetic instead.
for _m in ("exp", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "asin",
           "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh"):
    for _t in ("_f32", "_f64"):
        define(f"_{_m}{_t}", f"""
def _{_m}{_t}(a):
    return math.{_m}(a)
""")


_CALL = re.compile(r"\b(_\w+)\(")


def needed_helpers(text: str, have: set[str], table: Mapping[str, str]) -> set[str]:
    """Add to `have` the helpers of `table` that `text` calls, and the helpers they call."""
    for h in _CALL.findall(text):
        if h in table and h not in have:
            have.add(h)
            needed_helpers(table[h], have, table)
    return have


def helper_source(helpers: set[str], decorator: str, table: Mapping[str, str]) -> str:
    return "\n\n".join(f"{decorator}\n{table[h]}" for h in sorted(helpers))
