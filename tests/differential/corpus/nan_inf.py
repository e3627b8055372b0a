"""NaN and infinity handling."""

# %% nan_propagation
import numpy as np

a = np.array([1.0, np.nan, 3.0])
print(a.sum(), a.max(), a.mean())
print(np.nansum(a), np.nanmax(a), np.nanmean(a))
print(np.nan == np.nan, np.isnan(a))

# %% nan_reductions_axis
import numpy as np

m = np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, 6.0], [7.0, 8.0, 9.0]])
print(np.nanmean(m, axis=0))
print(np.nanmin(m, axis=1))
print(np.round(np.nanstd(m, axis=1), 4))
print(np.nanmedian(m, axis=0))
print(np.nanpercentile(m, 50, axis=1))

# %% nanargmax_nanargmin
import numpy as np

a = np.array([np.nan, 2.0, 7.0, np.nan, 5.0])
print(np.nanargmax(a), np.nanargmin(a))
print(np.argmax(a))
m = np.array([[np.nan, 1.0], [4.0, np.nan]])
print(np.nanargmax(m, axis=1))

# %% fill_missing_with_column_mean
import numpy as np

X = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, np.nan], [np.nan, 8.0, 9.0]])
col_mean = np.nanmean(X, axis=0)
rows, cols = np.where(np.isnan(X))
X[rows, cols] = col_mean[cols]
print(X)

# %% inf_arithmetic
import numpy as np

with np.errstate(divide="ignore", invalid="ignore"):
    x = np.array([1.0, -1.0, 0.0]) / 0.0
print(x)
print(np.isinf(x), np.isfinite(x))
print(np.inf - np.inf, np.inf * 0)
print(np.array([np.inf, 1.0]).min(), -np.inf < -1e308)

# %% nan_to_num
import numpy as np

a = np.array([np.nan, np.inf, -np.inf, 1.5])
print(np.nan_to_num(a))
print(np.nan_to_num(a, nan=0.0, posinf=100.0, neginf=-100.0))

# %% drop_nan_rows
import numpy as np

data = np.array([[1.0, 2.0], [np.nan, 3.0], [4.0, 5.0], [6.0, np.nan]])
clean = data[~np.isnan(data).any(axis=1)]
print(clean)
print(np.isnan(data).sum(axis=0))

# %% log_of_zero_and_negative
import numpy as np

with np.errstate(divide="ignore", invalid="ignore"):
    print(np.log(np.array([0.0, 1.0, -1.0])))
    print(np.sqrt(np.array([-4.0, 4.0])))
    print(np.log1p(np.array([-1.0, 0.0])))

# %% nan_comparisons_sorting
import numpy as np

a = np.array([2.0, np.nan, 1.0])
print(a > 1.5)
print(np.maximum(a, 1.5))
print(np.fmax(a, 1.5))
print(np.sort(a), np.nanmin(a))

# %% isclose_allclose_nan
import numpy as np

a = np.array([1.0, np.nan, 1e-9])
b = np.array([1.0 + 1e-10, np.nan, 0.0])
print(np.isclose(a, b))
print(np.isclose(a, b, equal_nan=True))
print(np.allclose(a, b), np.allclose(a, b, equal_nan=True))

# %% nancumsum_and_nanprod
import numpy as np

a = np.array([1.0, np.nan, 2.0, 3.0])
print(np.nancumsum(a))
print(np.nanprod(a))
print(np.cumsum(a))

# %% all_nan_slice
import numpy as np

m = np.array([[np.nan, np.nan], [1.0, 2.0]])
print(np.nanmax(m, axis=1))
print(np.nanmean(m, axis=1))
print(np.nansum(m, axis=1))

# %% signed_zero
import numpy as np

z = np.array([0.0, -0.0])
print(z)
print(np.signbit(z))
print(np.copysign(1.0, z))
print(z.sum(), (-z).min())
