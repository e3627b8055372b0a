"""Scalar helper functions that kernel templates call, as source text.

Each helper is plain Python that Numba compiles for both targets (njit on the CPU, inline device
functions on CUDA); codegen pastes in only the helpers a kernel uses, decorated for its backend.
They mirror NumPy's C loops (npymath) so results match NumPy, NaN and signed zeros included.
"""

HELPERS: dict[str, str] = {}


def _h(name: str, src: str) -> None:
    HELPERS[name] = src.strip("\n")


def _typed(src: str) -> None:
    """A float helper in one variant per float type: `_T` becomes `_f32` or `_f64` (the type
    aliases of every generated module), in names and in casts. NumPy's float32 loops compute
    in float32 with float32 constants; a float64 literal or a float64 intermediate would round
    differently (floor_divide, logaddexp2) or promote the whole function."""
    name = src.split("def ", 1)[1].split("(", 1)[0]
    for t in ("_f32", "_f64"):
        _h(name.replace("_T", t), src.replace("_T", t))


_h("_maximum", """
def _maximum(a, b):
    return a if (a > b or a != a) else b
""")
_h("_minimum", """
def _minimum(a, b):
    return a if (a < b or a != a) else b
""")
_h("_fmax", """
def _fmax(a, b):
    return a if (a > b or b != b) else b
""")
_h("_fmin", """
def _fmin(a, b):
    return a if (a < b or b != b) else b
""")
_h("_ifloordiv", """
def _ifloordiv(a, b):
    if b == 0:
        return a - a
    if b == -1:
        return -a
    return a // b
""")
_h("_iremainder", """
def _iremainder(a, b):
    if b == 0 or b == -1:
        return a - a
    return a % b
""")
_h("_ifmod", """
def _ifmod(a, b):
    if b == 0 or b == -1:
        return a - a
    r = a % b
    if r != 0 and (r < 0) != (a < 0):
        r -= b
    return r
""")
_h("_sign", """
def _sign(a):
    if a != a:
        return a
    return (a > 0) - (a < 0)
""")
_h("_floor", """
def _floor(a):
    if a != a or math.isinf(a) or abs(a) >= 4503599627370496.0:
        return a
    return math.copysign(math.floor(a) * 1.0, a)
""")
_h("_ceil", """
def _ceil(a):
    if a != a or math.isinf(a) or abs(a) >= 4503599627370496.0:
        return a
    return math.copysign(math.ceil(a) * 1.0, a)
""")
_h("_trunc", """
def _trunc(a):
    if a != a or math.isinf(a) or abs(a) >= 4503599627370496.0:
        return a
    return math.copysign(math.trunc(a) * 1.0, a)
""")
_h("_rint", """
def _rint(a):
    if a != a or math.isinf(a) or abs(a) >= 4503599627370496.0:
        return a
    r = math.floor(a) * 1.0
    d = a - r
    if d > 0.5 or (d == 0.5 and r % 2.0 != 0.0):
        r += 1.0
    return math.copysign(r, a)
""")
_h("_cbrt", """
def _cbrt(a):
    if a == 0 or a != a or math.isinf(a):
        return a
    y = math.copysign(math.pow(abs(a), 1.0 / 3.0), a)
    return y - (y * y * y - a) / (3.0 * y * y)
""")
_h("_signbit", """
def _signbit(a):
    return math.copysign(1.0, a) < 0
""")
_h("_heaviside", """
def _heaviside(x, h0):
    if x != x:
        return x
    if x == 0:
        return h0
    return 1.0 if x > 0 else 0.0
""")
_h("_lshift", """
def _lshift(a, b, bits):
    if b < 0 or b >= bits:
        return a - a
    return a << b
""")
_h("_rshift", """
def _rshift(a, b, bits):
    if b < 0 or b >= bits:
        return (a - a) - 1 if a < 0 else a - a
    return a >> b
""")
_h("_urshift", """
def _urshift(a, b, bits):
    if b >= bits:
        return a - a
    return a >> b
""")
_h("_gcd", """
def _gcd(a, b):
    while b != 0:
        a, b = b, a % b
    return abs(a)
""")
_h("_lcm", """
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
_h("_fpow", """
def _fpow(a, b):
    return a ** b
""")


# npy_fmod, npy_divmod, npy_floor_divide and npy_remainder, statement for statement
_typed("""
def _fmod_T(a, b):
    if b == 0 or a != a or b != b:
        return _T(math.nan)
    return math.copysign(abs(a) % abs(b), a)
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


# float32 tanh on the cpu through one float64 exp (glibc's tanhf costs ~16 ns, exp ~5 ns): the
# float64 quotient is far inside float32's precision, so the rounded result matches tanhf to
# an ulp; below 2e-4, tanh(x) rounds to x in float32 (x**3/3 < half an ulp), sign of zero kept.
_h("_tanhf", """
def _tanhf(x):
    d = float(x)
    if abs(d) < 2e-4:
        return x
    return 1.0 - 2.0 / (math.exp(2.0 * d) + 1.0)
""")
