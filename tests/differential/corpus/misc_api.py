"""The rest of a tutorial's table of contents: fft, interp, index tricks, dates, io, masked arrays."""

# %% fft_dominant_frequency
import numpy as np

fs = 100
t = np.arange(0, 2, 1 / fs)
signal = np.sin(2 * np.pi * 5 * t) + 0.5 * np.sin(2 * np.pi * 12 * t)
spectrum = np.abs(np.fft.rfft(signal))
freqs = np.fft.rfftfreq(t.size, 1 / fs)
top = freqs[np.argsort(spectrum)[-2:]]
print(np.sort(top))
print(np.round(spectrum.max(), 3))

# %% fft_roundtrip
import numpy as np

x = np.array([1.0, 2.0, 0.0, -1.0])
X = np.fft.fft(x)
print(np.round(X, 6))
print(np.round(np.fft.ifft(X).real, 6))

# %% interp_table_lookup
import numpy as np

xp = np.array([0.0, 10.0, 20.0, 30.0])
fp = np.array([1.0, 3.0, 2.0, 5.0])
print(np.interp(np.array([5.0, 15.0, 25.0, -1.0, 40.0]), xp, fp))
print(np.interp(12.5, xp, fp))

# %% mgrid_ogrid
import numpy as np

yy, xx = np.mgrid[0:3, 0:4]
print(yy)
print(xx)
r = np.hypot(*np.ogrid[-2:3, -2:3])
print(np.round(r, 3))

# %% r_and_c_
import numpy as np

print(np.r_[1:4, 0, 10:13])
print(np.r_[np.array([1, 2]), [7, 8]])
print(np.c_[np.array([1, 2, 3]), np.array([4, 5, 6])])
print(np.r_[0:1:5j])

# %% ravel_unravel_multi_index
import numpy as np

shape = (3, 4)
flat = np.ravel_multi_index((np.array([0, 1, 2]), np.array([3, 0, 2])), shape)
print(flat)
print(np.unravel_index(flat, shape))
print(np.unravel_index(7, shape))

# %% datetime_ranges
import numpy as np

days = np.arange("2024-02-26", "2024-03-03", dtype="datetime64[D]")
print(days)
print(days[-1] - days[0])
print((days + np.timedelta64(1, "W"))[:2])
print(np.is_busday(days))

# %% masked_array_mean
import numpy as np

data = np.array([12.0, -999.0, 15.0, 14.0, -999.0, 13.0])
m = np.ma.masked_equal(data, -999.0)
print(m)
print(m.mean(), m.count())
print(np.ma.masked_where(data < 13, data).sum())

# %% loadtxt_genfromtxt
import io
import numpy as np

text = "x,y\n1,2.5\n2,3.5\n3,nan\n4,6.0\n"
arr = np.genfromtxt(io.StringIO(text), delimiter=",", skip_header=1)
print(arr)
print(np.nanmean(arr[:, 1]))
nums = np.loadtxt(io.StringIO("1 2 3\n4 5 6"), dtype=int)
print(nums.sum(axis=0))

# %% save_load_bytes
import io
import numpy as np

a = np.arange(12).reshape(3, 4) * 1.5
buf = io.BytesIO()
np.save(buf, a)
buf.seek(0)
b = np.load(buf)
print(b.dtype, b.shape, np.array_equal(a, b))
buf2 = io.BytesIO()
np.savez(buf2, first=a, second=a.T)
buf2.seek(0)
z = np.load(buf2)
print(sorted(z.files), z["second"].shape)

# %% testing_asserts
import numpy as np

a = np.array([1.0, 2.0, 3.0])
np.testing.assert_allclose(a * 3 / 3, a)
np.testing.assert_array_equal(np.arange(3), [0, 1, 2])
print("asserts passed")
try:
    np.testing.assert_array_equal(a, [1.0, 2.0, 3.5])
except AssertionError:
    print("mismatch detected")

# %% polynomial_class_fit
import numpy as np

from numpy.polynomial import Polynomial
x = np.linspace(0, 1, 11)
y = 1 + 2 * x - 3 * x ** 2
p = Polynomial.fit(x, y, 2).convert()
print(np.round(p.coef, 6))
print(np.round(p(0.5), 6))
print(np.round(np.roots([1, -3, 2]), 6))

# %% correlate_and_convolve_full
import numpy as np

a = np.array([1, 2, 3])
v = np.array([0, 1, 0.5])
print(np.convolve(a, v))
print(np.correlate(a, v, mode="full"))
print(np.correlate(np.array([1, 2, 3, 4]), np.array([1, 1]), mode="valid"))

# %% char_and_string_arrays
import numpy as np

names = np.array(["Alice", "bob", "CHARLIE"])
print(np.char.lower(names))
print(np.char.str_len(names))
print(np.char.add(names, "!"))
print(names.astype("U3"))

# %% object_array_mixed
import numpy as np

objs = np.array([1, "two", 3.0, None], dtype=object)
print(objs)
print(objs[[0, 2]].sum())
print([type(o).__name__ for o in objs])

# %% out_parameter_ufuncs
import numpy as np

a = np.arange(5, dtype=float)
b = np.ones(5)
out = np.empty(5)
np.multiply(a, 2, out=out)
np.add(out, b, out=out)
print(out)
np.sqrt(a, out=a)
print(np.round(a, 4))

# %% frompyfunc_and_vectorize_otypes
import numpy as np

def clamp_label(x):
    return "low" if x < 3 else "high"

f = np.vectorize(clamp_label)
print(f(np.arange(5)))
g = np.frompyfunc(lambda a, b: a * 10 + b, 2, 1)
print(g(np.arange(3), np.array([7, 8, 9])))

# %% histogram_bin_edges_auto
import numpy as np

rng = np.random.default_rng(6)
x = rng.normal(50, 10, 1000)
edges = np.histogram_bin_edges(x, bins="auto")
print(len(edges) - 1)
counts, _ = np.histogram(x, bins=edges)
print(counts.sum(), counts.argmax())

# %% meshgrid_ij_and_surface
import numpy as np

x = np.linspace(-1, 1, 5)
y = np.linspace(0, 2, 3)
XX, YY = np.meshgrid(x, y, indexing="ij")
print(XX.shape)
Z = np.exp(-(XX ** 2 + (YY - 1) ** 2))
print(np.round(Z, 4))
i, j = np.unravel_index(Z.argmax(), Z.shape)
print(x[i], y[j])
