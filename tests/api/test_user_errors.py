"""Bad input raises NumPy's exception while tracing, at the user's own line, before anything
is evaluated."""
from __future__ import annotations

import traceback

import numpy
import pytest

import tracer
import tracer.numpy as tnp

OUR_PACKAGES = ("/tracer/", "/ir/", "/opt/", "/cuda_kernels/")


def both(fn_numpy, fn_tracer):
    """Both raise the same exception type (message too, where tracer reproduces NumPy's)."""
    with pytest.raises(Exception) as want:
        fn_numpy()
    evals = tracer.stats().evaluations
    with pytest.raises(type(want.value)) as got:
        fn_tracer()
    assert tracer.stats().evaluations == evals  # raised while tracing
    return str(want.value), str(got.value), got


def user_frame(excinfo) -> traceback.FrameSummary:
    frames = traceback.extract_tb(excinfo.tb)
    mine = [f for f in frames if not any(p in f.filename for p in OUR_PACKAGES) and
            "numpy" not in f.filename and "_pytest" not in f.filename]
    return mine[-1]


def test_shape_mismatch_at_user_line():
    ha, hb = numpy.ones((3, 4)), numpy.ones((5,))
    a, b = tnp.asarray(ha), tnp.asarray(hb)
    want, got, info = both(lambda: ha + hb, lambda: a + b)
    assert got == want
    frame = user_frame(info)
    assert frame.filename.endswith("test_user_errors.py") and "a + b" in frame.line


CASES = {
    "reshape": (lambda m: m.ones(6).reshape(4, 2), True),
    "reshape_two_unknown": (lambda m: m.ones(6).reshape(-1, -1), True),
    "axis": (lambda m: m.ones((2, 3)).sum(axis=2), True),
    "transpose_axes": (lambda m: m.ones((2, 3)).transpose(0, 0), False),
    "matmul_core": (lambda m: m.ones((2, 3)) @ m.ones((4, 2)), True),
    "index_out_of_bounds": (lambda m: m.ones((2, 3))[2], True),
    "too_many_indices": (lambda m: m.ones(3)[0, 0], True),
    "bool_subtract": (lambda m: m.ones(3, bool) - m.ones(3, bool), True),
    "concat_dims": (lambda m: m.concatenate([m.ones((2, 3)), m.ones((2, 4))]), True),
    "int8_python_overflow": (lambda m: m.ones(3, m.int8) + 1000, True),
    "broadcast_to": (lambda m: m.broadcast_to(m.ones(3), (2, 4)), True),
    "empty_max": (lambda m: m.ones((2, 0)).max(axis=1), True),
    "squeeze": (lambda m: m.ones((2, 3)).squeeze(0), True),
    "stack_shapes": (lambda m: m.stack([m.ones(2), m.ones(3)]), True),
    "setitem_shape": (lambda m: m.ones((2, 3)).__setitem__(0, m.ones(4)), True),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_numpy_exception_types(name):
    fn, same_message = CASES[name]
    want, got, _ = both(lambda: fn(numpy), lambda: fn(tnp))
    if same_message:
        assert got == want


def test_axis_error_is_numpys():
    with pytest.raises(numpy.exceptions.AxisError):
        tnp.ones((2, 3)).mean(axis=-3)
