"""The registry sweep (tests/sweep/test_registry_sweep.py) on the cuda backend under Numba's
simulator: every elementwise ufunc and reduction the cpu sweep checks, with the same inputs and
the same rules. The registry's own checks (completeness, templates, loop table) run once, there.

The whole sweep runs here: at 8 threads a block (codegen.SIM_TPB) and a short GIL switch
interval, the simulator takes about as long as the cpu sweep takes to compile."""
from __future__ import annotations

import pytest

from tracer.ir.config import context
from sweep.test_registry_sweep import (  # noqa: F401 - collected here: run on the simulator
    test_0d_kernels, test_binary_with_python_scalar,
    test_complex_and_float16_go_through_the_interpreter, test_empty_and_0d_lazy_inputs,
    test_float32_product_rounds_and_overflows_in_float32, test_float32_sum_overflows_in_float32,
    test_integer_power, test_negative_zero_constant_is_not_zero, test_reduction,
    test_reduction_0d, test_subtracting_negative_zero, test_ufunc, test_ufunc_0d,
    test_ufunc_mixed_dtypes, test_ufunc_reduction)

# ~1400 cases: about 70-85 s. The simulator computes with NumPy scalars, which warn where
# the device silently gives inf or NaN (the values are checked against NumPy)
pytestmark = [pytest.mark.lazy, pytest.mark.slow,
              pytest.mark.filterwarnings("ignore::RuntimeWarning")]


@pytest.fixture(autouse=True)
def sim(request):
    with context(backend="cuda", cuda_sim=True):  # (conftest sets the GIL switch interval)
        yield
