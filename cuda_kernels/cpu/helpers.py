"""The cpu backend's helper table: the shared helpers (cuda_kernels/helpers.py), with
vectorizable math in place of some libm calls.

Branch-free: every path is computed and selected, so LLVM vectorizes a loop that calls them
where a libm call keeps it scalar (vecmath.py has the bit casts and tables they use). float32
functions compute in float64, whose errors are far below half a float32 ulp, so results are
float32's correctly rounded value but for rare ties; float64 exp and log follow fdlibm (under
1 ulp).
"""
from __future__ import annotations

from collections import ChainMap

from ..helpers import HELPERS as SHARED, define

_OWN: dict[str, str] = {}

# Conversions between integer-valued float64 (|k| < 2**51) and int64 through the bits of
# k + 1.5 * 2**52: packed float64 <-> int64 conversions need AVX-512, so a plain cast would
# run scalar inside an AVX2 loop.
define("_f2i", """
def _f2i(k):
    return _f64_bits(k + 6755399441055744.0) - 4843621399236968448
""", _OWN)
define("_i2f", """
def _i2f(i):
    return _bits_f64(i + 4843621399236968448) - 6755399441055744.0
""", _OWN)

# exp of a float64 argument to about 2e-10 relative: for float32 results (and float32 tanh)
define("_vexp_d", """
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
""", _OWN)
define("_exp_f32", """
def _exp_f32(x):
    return _vexp_d(float(x))
""", _OWN)
# glibc's method: x = (64 m + j) ln2/64 + r, exp(x) = 2**m * 2**(j/64) * exp(r), |r| <= ln2/128,
# with 2**(j/64) from a hi + lo table (vecmath._EXP_HI/_EXP_LO): about 0.5 ulp
define("_exp_f64", """
def _exp_f64(a):
    x = _f64(a)
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
""", _OWN)
# fdlibm's e_log.c: x = 2**k * m, m in [sqrt(2)/2, sqrt(2)), log(m) = f - s*(f - R(s*s))
define("_log_f64", """
def _log_f64(a):
    x = _f64(a)
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
""", _OWN)
# NumPy's float32 log returns a positive NaN for any NaN (its log2 and log10 keep the sign)
define("_log_f32", """
def _log_f32(x):
    return _log_f64(float(x)) if x == x else math.nan
""", _OWN)
define("_log2_f32", """
def _log2_f32(x):
    return _log_f64(float(x)) * 1.4426950408889634
""", _OWN)
define("_log10_f32", """
def _log10_f32(x):
    return _log_f64(float(x)) * 0.4342944819032518
""", _OWN)
# float32 tanh: tanh(x) = 1 - 2 / (exp(2x) + 1), in float64 (the exp to full precision: the
# difference cancels); below 2e-4 tanh(x) rounds to x in float32
define("_tanh_f32", """
def _tanh_f32(x):
    d = float(x)
    t = 1.0 - 2.0 / (_exp_f64(2.0 * d) + 1.0)
    return d if abs(d) < 2e-4 else t
""", _OWN)
# float32 sin and cos: x = (q + f) * pi/2 with |f| <= 1/2, r = f * pi/2. Below 2**16, Cody-Waite
# with fdlibm's two-part pi/2 (exact products for |q| < 2**20); above, Payne-Hanek: x's 24-bit
# mantissa m times three 28-bit words of 2/pi for x's exponent (vecmath._PH*), products exact
# in float64; the words before them would only add multiples of 4 to x * 2/pi.
define("_vtrig_cw32", """
def _vtrig_cw32(d):
    k = np.floor(d * 0.6366197723675814 + 0.5)
    k = k if abs(d) < 65536.0 else 0.0
    return _f2i(k), _fma(k, -6.07710050650619224932e-11, _fma(k, -1.57079632673412561417e+00, d))
""", _OWN)
define("_vtrig_red32", """
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
""", _OWN)
define("_vsincos_poly", """
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
""", _OWN)
# sin and cos of any float32; the `s` variants reduce with Cody-Waite alone (|x| < 2**16 or not
# finite), for loops that check their block's arguments first (codegen.gen_trig_loop)
define("_vsin_fin", """
def _vsin_fin(d, v):
    v = v if d != 0 else d
    return v if abs(d) < math.inf else d - d
""", _OWN)
define("_vcos_fin", """
def _vcos_fin(d, v):
    return v if abs(d) < math.inf else d - d
""", _OWN)
for _sin, _cos, _red in (("_sin_f32", "_cos_f32", "_vtrig_red32"),
                         ("_vsin32s", "_vcos32s", "_vtrig_cw32")):
    define(_sin, f"""
def {_sin}(x):
    d = float(x)
    q, r = {_red}(d)
    return _vsin_fin(d, _vsincos_poly(q, r))
""", _OWN)
    define(_cos, f"""
def {_cos}(x):
    d = float(x)
    q, r = {_red}(d)
    return _vcos_fin(d, _vsincos_poly(q + 1, r))
""", _OWN)


# libm's cbrt, as NumPy calls it (the shared helper is for numba.cuda, which has none)
define("_cbrt", """
def _cbrt(a):
    return np.cbrt(a)
""", _OWN)

# a fused gather's index (emit.Emitter._gather): from the end where negative; one out of
# bounds is flagged in the record (the backend then lets NumPy raise its error) and reads 0
define("_gidx", """
def _gidx(v, n, err, j):
    w = v + n if v < 0 else v
    if w < 0 or w >= n:
        err[0] = 1
        err[1] = v
        err[2] = j
        return _i64(0)
    return w
""", _OWN)

HELPERS = ChainMap(_OWN, SHARED)
