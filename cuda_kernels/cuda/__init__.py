"""The cuda backend: numba.cuda kernels over device arrays (or on Numba's simulator)."""
