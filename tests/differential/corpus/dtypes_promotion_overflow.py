"""dtypes, type promotion, casting and integer overflow."""

# %% default_dtypes
import numpy as np

print(np.array([1, 2]).dtype)
print(np.array([1.0, 2]).dtype)
print(np.array([True, False]).dtype)
print(np.array([1, 2], dtype=np.int16).dtype)
print(np.arange(3).dtype, np.linspace(0, 1, 3).dtype, np.zeros(2).dtype)

# %% promotion_rules
import numpy as np

i8 = np.array([1, 2], dtype=np.int8)
u8 = np.array([1, 2], dtype=np.uint8)
f32 = np.array([1, 2], dtype=np.float32)
print((i8 + u8).dtype)
print((i8 + f32).dtype)
print((u8 + np.array([1], dtype=np.int64)).dtype)
print((f32 + 1.5).dtype, (i8 + 1).dtype, (i8 * 2.0).dtype)
print(np.result_type(np.int32, np.float32))

# %% true_division_dtype
import numpy as np

a = np.array([1, 2, 3])
print((a / 2).dtype, a / 2)
print((a // 2).dtype, a // 2)
print((np.float32(1) / a).dtype)

# %% astype_conversions
import numpy as np

x = np.array([1.7, -2.3, 3.5, 250.9])
print(x.astype(int))
print(x.astype(np.uint8))
print(x.astype(np.float32))
print(np.array([0, 1, 5]).astype(bool))
print(np.array(["1", "22", "333"]).astype(int) + 1)

# %% int8_wraparound
import numpy as np

a = np.array([100, 120, -128], dtype=np.int8)
print(a + a)
print(a * 2)
print(-a)
print(np.abs(a))

# %% uint8_image_overflow
import numpy as np

img = np.array([[250, 10], [128, 255]], dtype=np.uint8)
print(img + 10)
print(img.astype(np.int16) + 10)
print(np.clip(img.astype(np.int16) + 10, 0, 255).astype(np.uint8))
print(255 - img)

# %% int64_overflow_sum
import numpy as np

big = np.array([2**62, 2**62], dtype=np.int64)
print(big.sum())
print(np.iinfo(np.int64).max)
print(np.array([2**31 - 1], dtype=np.int32) + 1)

# %% finfo_iinfo
import numpy as np

print(np.finfo(np.float32).eps)
print(np.finfo(np.float64).max)
print(np.iinfo(np.uint16).max, np.iinfo(np.int8).min)
print(np.finfo(np.float32).tiny)

# %% float32_precision
import numpy as np

a = np.float32(0.1) * np.ones(10, dtype=np.float32)
print(a.sum())
print(a.sum(dtype=np.float64))
print(np.float32(16777216) + np.float32(1))
print(np.array([0.1, 0.2], dtype=np.float32) + np.array([0.3], dtype=np.float32))

# %% bool_arithmetic
import numpy as np

flags = np.array([True, False, True, True])
print(flags.sum(), flags.mean())
print(flags + flags)
print(flags * 3)
print(np.cumsum(flags))

# %% python_scalar_weak_promotion
import numpy as np

a = np.array([1, 2, 3], dtype=np.float32)
print((a * 3).dtype, (a + np.float64(1)).dtype)
b = np.array([1, 2], dtype=np.int16)
print((b + 300).dtype, b + 300)
print((b + np.int64(1)).dtype)

# %% complex_numbers
import numpy as np

z = np.array([1 + 2j, 3 - 1j, -2j])
print(z.real, z.imag)
print(np.abs(z))
print(np.conj(z))
print(z * 1j)
print(z.dtype, np.angle(np.array([1j, -1 + 0j])))

# %% float16_storage
import numpy as np

h = np.array([0.1, 1000.0, 65504.0], dtype=np.float16)
print(h)
print(h.astype(np.float32))
print(h * 2)
print(h.dtype, h.itemsize)

# %% structured_dtype_names
import numpy as np

dt = np.dtype([("name", "U10"), ("age", np.int32), ("score", np.float64)])
people = np.array([("ann", 31, 88.5), ("bo", 25, 92.0), ("cy", 40, 79.5)], dtype=dt)
print(people["age"].mean())
print(people[people["score"] > 80]["name"])
print(np.sort(people, order="age")["name"])

# %% integer_division_by_zero
import numpy as np

a = np.array([1, 0, -3])
b = np.array([0, 0, 2])
with np.errstate(divide="ignore", invalid="ignore"):
    print(a // b)
    print(a % b)
    print(a / b)

# %% dtype_of_reductions
import numpy as np

i32 = np.arange(5, dtype=np.int32)
print(i32.sum().dtype, i32.mean().dtype, i32.max().dtype)
u8 = np.arange(5, dtype=np.uint8)
print(u8.sum().dtype, u8.prod().dtype)
f16 = np.arange(5, dtype=np.float16)
print(f16.mean().dtype, f16.sum())
