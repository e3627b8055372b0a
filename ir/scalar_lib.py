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
    return int(a > 0) - int(a < 0)  # NumPy bools (the cuda simulator) do not subtract
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
        return math.nan  # npy_heaviside returns NPY_NAN, whatever x's sign
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
# NumPy's float to integer casts, as x86 computes them: a signed conversion gives the signed
# minimum for an out-of-range or NaN x; an unsigned one converts x, or x - 2**63 (2**31) with
# the top bit set again where x is at least that
for _b in (32, 64):
    _h(f"_f2i{_b}", f"""
def _f2i{_b}(a):
    if a >= -{2.0 ** (_b - 1)!r} and a < {2.0 ** (_b - 1)!r}:
        return _i{_b}(a)
    return _i{_b}(-{2 ** (_b - 1)})
""")
    _h(f"_f2u{_b}", f"""
def _f2u{_b}(a):
    if a >= {2.0 ** (_b - 1)!r}:
        return _u{_b}(_f2i{_b}(a - {2.0 ** (_b - 1)!r})) ^ _u{_b}({2 ** (_b - 1)})
    return _u{_b}(_f2i{_b}(a))
""")
# x86's default NaN, the result of an invalid operation (0/0, inf - inf, log(-1)): its sign bit
# is set, and NumPy's loops return it. A NaN constant (math.nan) is positive, and so is the
# NaN that LLVM folds or libm's log10, asin and acos return.
_h("_dnan", """
def _dnan():
    return math.copysign(math.nan, -1.0)
""")
_h("_dnan_of", """
def _dnan_of(x, r):
    if r != r and x == x:
        return math.copysign(r, -1.0)
    return r
""")
_h("_fpow", """
def _fpow(a, b):
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
# |a| mod |b|; the cuda backend has its own (cuda_kernels/cuda/codegen.py HELPER_SOURCES)
_h("_absmod", """
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


# ---- vectorizable math for the cpu backend (cuda_kernels/vecmath.py has the bit casts).
# Branch-free: every path is computed and selected, so LLVM vectorizes a loop that calls them
# where a libm call keeps it scalar. float32 functions compute in float64, whose errors are
# far below half a float32 ulp, so results are float32's correctly rounded value but for
# rare ties; float64 exp and log follow fdlibm (under 1 ulp).

# Conversions between integer-valued float64 (|k| < 2**51) and int64 through the bits of
# k + 1.5 * 2**52: packed float64 <-> int64 conversions need AVX-512, so a plain cast would
# run scalar inside an AVX2 loop.
_h("_f2i", """
def _f2i(k):
    return _f64_bits(k + 6755399441055744.0) - 4843621399236968448
""")
_h("_i2f", """
def _i2f(i):
    return _bits_f64(i + 4843621399236968448) - 6755399441055744.0
""")

# exp of a float64 argument to about 2e-10 relative: for float32 results (and float32 tanh)
_h("_vexp_d", """
def _vexp_d(d):
    dc = d if abs(d) <= 200.0 else (200.0 if d > 0 else -200.0)
    k = np.floor(dc * 1.4426950408889634 + 0.5)
    r = _fma(k, -0.6931471805599453, dc)
    p = _fma(r, 2.48015873015873e-05, 0.0001984126984126984)
    p = _fma(r, p, 0.001388888888888889)
    p = _fma(r, p, 0.008333333333333333)
    p = _fma(r, p, 0.041666666666666664)
    p = _fma(r, p, 0.16666666666666666)
    p = _fma(r, p, 0.5)
    p = _fma(r, p, 1.0)
    p = _fma(r, p, 1.0)
    return p * _bits_f64((_f2i(k) + 1023) << 52) if d == d else d
""")
_h("_vexp32", """
def _vexp32(x):
    return _vexp_d(float(x))
""")
# glibc's method: x = (64 m + j) ln2/64 + r, exp(x) = 2**m * 2**(j/64) * exp(r), |r| <= ln2/128,
# with 2**(j/64) from a hi + lo table (vecmath._EXP_HI/_EXP_LO): about 0.5 ulp
_h("_vexp64", """
def _vexp64(x):
    dc = x if abs(x) <= 746.0 else (746.0 if x > 0 else -746.0)
    k = np.floor(dc * 92.33248261689366 + 0.5)
    r = _fma(k, -1.162596423439437e-12, _fma(k, -0.010830424695086549, dc))
    ki = _f2i(k)
    j = ki & 63
    p = _fma(r, 0.001388888888888889, 0.008333333333333333)
    p = _fma(r, p, 0.041666666666666664)
    p = _fma(r, p, 0.16666666666666666)
    p = _fma(r, p, 0.5)
    p = _fma(r * r, p, r)
    t = _EXP_HI[j]
    y = t + _fma(t, p, _EXP_LO[j])
    m = ki >> 6
    m1 = m >> 1
    y = y * _bits_f64((m1 + 1023) << 52) * _bits_f64((m - m1 + 1023) << 52)
    return y if x == x else x
""")
# fdlibm's e_log.c: x = 2**k * m, m in [sqrt(2)/2, sqrt(2)), log(m) = f - s*(f - R(s*s))
_h("_vlog64", """
def _vlog64(x):
    sub = x < 2.2250738585072014e-308
    b = _f64_bits(x * 18014398509481984.0 if sub else x)
    k = ((b >> 52) & 2047) - (1077 if sub else 1023)
    hb = b & 4503599627370495
    i = (hb + 2638157891764224) & 4503599627370496
    f = _bits_f64(hb | (i ^ 4607182418800017408)) - 1.0
    dk = _i2f(k + (i >> 52))
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    t1 = _fma(w, _fma(w, _fma(w, 1.479819860511658591e-01, 1.818357216161805012e-01),
                      2.857142874366239149e-01), 6.666666666666735130e-01)
    t2 = _fma(w, _fma(w, 1.531383769920937332e-01, 2.222219843214978396e-01),
              3.999999999940941908e-01)
    R = _fma(z, t1, w * t2)
    hfsq = 0.5 * f * f
    y = dk * 6.93147180369123816490e-01 - ((hfsq - (s * (hfsq + R) + dk * 1.90821492927058770002e-10)) - f)
    if x > 0 and x < math.inf:
        return y
    if x != x:
        return x
    return math.inf if x == math.inf else (-math.inf if x == 0 else _dnan())
""")
# NumPy's float32 log returns a positive NaN for any NaN (its log2 and log10 keep the sign)
_h("_vlog32", """
def _vlog32(x):
    return _vlog64(float(x)) if x == x else math.nan
""")
_h("_vlog2_32", """
def _vlog2_32(x):
    return _vlog64(float(x)) * 1.4426950408889634
""")
_h("_vlog10_32", """
def _vlog10_32(x):
    return _vlog64(float(x)) * 0.4342944819032518
""")
# float32 tanh: tanh(x) = 1 - 2 / (exp(2x) + 1), in float64 (the exp to full precision: the
# difference cancels); below 2e-4 tanh(x) rounds to x in float32
_h("_vtanh32", """
def _vtanh32(x):
    d = float(x)
    t = 1.0 - 2.0 / (_vexp64(2.0 * d) + 1.0)
    return d if abs(d) < 2e-4 else t
""")
# float32 sin and cos: x = (q + f) * pi/2 with |f| <= 1/2, r = f * pi/2. Below 2**16, Cody-Waite
# with fdlibm's two-part pi/2 (exact products for |q| < 2**20); above, Payne-Hanek: x's 24-bit
# mantissa m times three 28-bit words of 2/pi for x's exponent (vecmath._PH*), products exact
# in float64; the words before them would only add multiples of 4 to x * 2/pi.
_h("_vtrig_cw32", """
def _vtrig_cw32(d):
    k = np.floor(d * 0.6366197723675814 + 0.5)
    k = k if abs(d) < 65536.0 else 0.0
    return _f2i(k), _fma(k, -6.07710050650619224932e-11, _fma(k, -1.57079632673412561417e+00, d))
""")
_h("_vtrig_red32", """
def _vtrig_red32(d):
    q1, r1 = _vtrig_cw32(d)
    e = ((_f64_bits(d) >> 52) & 2047) - 1023
    e = -16 if e < -16 else (128 if e > 128 else e)
    m = abs(d) * _bits_f64((1046 - e) << 52)
    p0 = m * _PH0[e + 16]
    y0 = (p0 - math.floor(p0 * 3.725290298461914e-09) * 268435456.0) * 1.4901161193847656e-08
    y1 = m * _PH1[e + 16] * 5.551115123125783e-17
    q2 = math.floor(y0 + y1 + 0.5)
    r2 = (((y0 - q2) + y1) + m * _PH2[e + 16] * 2.0679515313825692e-25) * 1.5707963267948966
    q2 = -q2 if d < 0 else q2
    r2 = -r2 if d < 0 else r2
    big = abs(d) >= 65536.0
    return (_i64(q2) if big else q1), (r2 if big else r1)
""")
_h("_vsincos_poly", """
def _vsincos_poly(q, r):
    z = r * r
    s = _fma(z, -2.505210838544172e-08, 2.7557319223985893e-06)
    s = _fma(z, s, -0.0001984126984126984)
    s = _fma(z, s, 0.008333333333333333)
    s = _fma(z, s, -0.16666666666666666)
    s = _fma(r * z, s, r)
    c = _fma(z, 2.08767569878681e-09, -2.755731922398589e-07)
    c = _fma(z, c, 2.48015873015873e-05)
    c = _fma(z, c, -0.001388888888888889)
    c = _fma(z, c, 0.041666666666666664)
    c = _fma(z, c, -0.5)
    c = _fma(z, c, 1.0)
    v = c if (q & 1) != 0 else s
    return -v if (q & 2) != 0 else v
""")
# sin and cos of any float32; the `s` variants reduce with Cody-Waite alone (|x| < 2**16 or not
# finite), for loops that check their block's arguments first (cpu.gen_trig_loop)
_h("_vsin_fin", """
def _vsin_fin(d, v):
    v = v if d != 0 else d
    return v if abs(d) < math.inf else d - d
""")
_h("_vcos_fin", """
def _vcos_fin(d, v):
    return v if abs(d) < math.inf else d - d
""")
for _f, _red in (("", "_vtrig_red32"), ("s", "_vtrig_cw32")):
    _h(f"_vsin32{_f}", f"""
def _vsin32{_f}(x):
    d = float(x)
    q, r = {_red}(d)
    return _vsin_fin(d, _vsincos_poly(q, r))
""")
    _h(f"_vcos32{_f}", f"""
def _vcos32{_f}(x):
    d = float(x)
    q, r = {_red}(d)
    return _vcos_fin(d, _vsincos_poly(q + 1, r))
""")
