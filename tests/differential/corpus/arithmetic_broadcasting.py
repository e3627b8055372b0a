"""Elementwise arithmetic, ufuncs and broadcasting."""

# %% elementwise_basics
import numpy as np

a = np.array([1, 2, 3, 4])
b = np.array([10, 20, 30, 40])
print(a + b)
print(b - a)
print(a * b)
print(b / a)
print(b // 3)
print(b % 3)
print(a ** 2)

# %% scalar_broadcast
import numpy as np

a = np.arange(6).reshape(2, 3)
print(a * 10)
print(a + 0.5)
print(1 / (a + 1))
print(2 ** a)

# %% row_column_broadcast
import numpy as np

row = np.array([1, 2, 3])
col = np.array([[10], [20], [30], [40]])
print(row + col)
print((row * col).shape)

# %% outer_product_broadcast
import numpy as np

x = np.arange(1, 6)
table = x[:, np.newaxis] * x[np.newaxis, :]
print(table)
print(np.outer(x, x).sum() == table.sum())

# %% subtract_row_means
import numpy as np

X = np.array([[1.0, 2.0, 3.0],
              [4.0, 6.0, 8.0],
              [0.0, 0.0, 3.0]])
Xc = X - X.mean(axis=1, keepdims=True)
print(Xc)
print(Xc.sum(axis=1))

# %% subtract_column_means
import numpy as np

X = np.arange(12, dtype=float).reshape(4, 3) ** 1.5
centered = X - X.mean(axis=0)
print(np.round(centered, 3))
print(np.allclose(centered.mean(axis=0), 0))

# %% math_ufuncs
import numpy as np

x = np.array([0.0, np.pi / 6, np.pi / 4, np.pi / 2])
print(np.round(np.sin(x), 4))
print(np.round(np.cos(x), 4))
print(np.exp(np.array([0.0, 1.0, 2.0])))
print(np.log(np.array([1.0, np.e, 10.0])))
print(np.sqrt(np.array([4.0, 9.0, 2.0])))

# %% comparison_and_logic
import numpy as np

a = np.array([3, 8, 1, 9, 4])
print(a > 4)
print((a > 2) & (a < 9))
print((a < 2) | (a > 8))
print(~(a == 8))
print(np.logical_xor(a > 3, a % 2 == 0))

# %% abs_sign_rounding
import numpy as np

v = np.array([-2.5, -1.5, -0.4, 0.0, 0.6, 1.5, 2.5])
print(np.abs(v))
print(np.sign(v))
print(np.floor(v))
print(np.ceil(v))
print(np.round(v))
print(np.trunc(v))

# %% clip_and_where
import numpy as np

a = np.array([-3, 5, 12, 7, -1, 20])
print(np.clip(a, 0, 10))
print(np.where(a < 0, 0, a))
print(np.where(a % 2 == 0, a // 2, 3 * a + 1))
print(a.clip(min=1))

# %% inplace_ops
import numpy as np

a = np.ones(5)
a += 2
a *= np.arange(5)
a -= 1
print(a)
b = np.arange(5)
b //= 2
print(b)

# %% maximum_minimum_fmax
import numpy as np

a = np.array([1.0, 5.0, np.nan, 3.0])
b = np.array([4.0, 2.0, 1.0, np.nan])
print(np.maximum(a, b))
print(np.minimum(a, b))
print(np.fmax(a, b))
print(np.fmin(a, b))

# %% broadcast_3d_shapes
import numpy as np

a = np.ones((2, 1, 4))
b = np.arange(3).reshape(3, 1)
c = a * b
print(c.shape)
print(c.sum(axis=(0, 2)))
print(np.broadcast_shapes((2, 1, 4), (3, 1)))

# %% hypot_arctan2
import numpy as np

x = np.array([3.0, -1.0, 0.0, 1.0])
y = np.array([4.0, 1.0, 2.0, -1.0])
print(np.hypot(x, y))
print(np.round(np.degrees(np.arctan2(y, x)), 2))

# %% bitwise_ops
import numpy as np

a = np.array([0b1100, 0b1010, 0b0110], dtype=np.uint8)
b = np.array([0b1010, 0b0101, 0b1111], dtype=np.uint8)
print(a & b, a | b, a ^ b)
print(a << 2)
print(a >> 1)
print(np.invert(a))

# %% divmod_and_remainder_negative
import numpy as np

a = np.array([-7, -3, 3, 7])
print(a // 2)
print(a % 2)
print(np.fmod(a, 2))
q, r = np.divmod(a, 3)
print(q, r)

# %% polynomial_horner
import numpy as np

coeffs = [2.0, -3.0, 0.5, 1.0]   # 2x^3 - 3x^2 + 0.5x + 1
x = np.linspace(-2, 2, 9)
y = np.zeros_like(x)
for c in coeffs:
    y = y * x + c
print(y)
print(np.polyval(coeffs, x))

# %% float32_chain_large
import numpy as np

a = np.linspace(0, 1, 200_000, dtype=np.float32)
b = np.float32(2.5) * a * a - a + np.float32(0.25)
print(b.dtype, b.shape)
print(b[:4])
print(float(b.max()), float(b.min()))

# %% ufunc_reduce_accumulate
import numpy as np

a = np.arange(1, 7)
print(np.add.reduce(a))
print(np.multiply.reduce(a))
print(np.add.accumulate(a))
print(np.maximum.accumulate(np.array([3, 1, 4, 1, 5, 9, 2, 6])))

# %% ufunc_outer
import numpy as np

print(np.multiply.outer(np.arange(1, 4), np.arange(1, 5)))
print(np.subtract.outer(np.array([1.0, 2.0]), np.array([0.5, 1.5, 2.5])))
