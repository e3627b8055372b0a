"""The cpu backend: numba.njit kernels over host (NumPy) arrays."""
