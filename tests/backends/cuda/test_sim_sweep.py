"""The registry sweep (tests/sweep/test_registry_sweep.py) on the cuda backend under Numba's
simulator: every elementwise ufunc and reduction the cpu sweep checks, with the same inputs and
the same rules. The registry's own checks (completeness, templates, loop table) run once, there.

The whole sweep runs here: at 8 threads a block (codegen.SIM_TPB) and a short GIL switch
interval, the simulator takes about as long as the cpu sweep takes to compile."""
from __future__ import annotations

import sys

import pytest

from tracer.ir.config import context
from sweep.test_registry_sweep import (  # noqa: F401 - collected here: run on the simulator
    test_0d_kernels, test_binary_with_python_scalar,
    test_complex_and_float16_go_through_the_interpreter, test_empty_and_0d_lazy_inputs,
    test_float32_product_rounds_and_overflows_in_float32, test_float32_sum_overflows_in_float32,
    test_integer_power, test_negative_zero_constant_is_not_zero, test_reduction,
    test_reduction_0d, test_subtracting_negative_zero, test_ufunc, test_ufunc_0d,
    test_ufunc_mixed_dtypes, test_ufunc_reduction)

pytestmark = [pytest.mark.lazy, pytest.mark.slow]  # ~1400 cases: about 85 s

# Cases the device gets wrong today: {test id: why}. Remove a line once it passes (strict).
_ORDER = ("the device combines a reduction's threads in a tree, NumPy in sequence: where a "
          "partial overflows (max + max, 1e30 * 1e30, then * 0 or + -inf) they disagree on "
          "inf, nan or finite")
KNOWN = {
    "test_reduction[sum-float64]": _ORDER,
    "test_float32_sum_overflows_in_float32": "float32 sums accumulate in float64 on the device "
                                             "(planning.acc_dtype): 3e38 + 3e38 does not "
                                             "overflow there; " + _ORDER,
}


@pytest.fixture(autouse=True)
def sim(request):
    if request.node.name in KNOWN:
        request.applymarker(pytest.mark.xfail(reason=KNOWN[request.node.name], strict=True))
    # the simulator's block manager polls its threads at every syncthreads while holding the
    # GIL: at Python's 5 ms switch interval a reduction costs several times more
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)
    try:
        with context(backend="cuda", cuda_sim=True):
            yield
    finally:
        sys.setswitchinterval(interval)
