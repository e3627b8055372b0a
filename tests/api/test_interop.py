"""What libraries ask of the arrays they are handed (issue 22 item 3)."""
from __future__ import annotations

import numpy

import tracer.numpy as np


def test_numpy_snapshot_shares_memory_with_the_array_it_came_from():
    """np.asarray(t) views t's realized buffer (read-only): NumPy's memory questions say so, as
    scikit-learn's and pandas' copy decisions need."""
    t = np.arange(6.0)
    snap = numpy.asarray(t)
    for fn in (numpy.may_share_memory, numpy.shares_memory, np.may_share_memory,
               np.shares_memory):
        assert fn(snap, t) and fn(t, snap)
    assert not numpy.shares_memory(snap[:2], t[3:])  # NumPy's exact answer on the views
    other = numpy.arange(6.0)
    assert not numpy.may_share_memory(other, np.asarray(other))  # tracer copied it
    assert not numpy.may_share_memory(snap, t * 2)  # pending: nothing views it yet


def test_file_io_and_other_libraries_ufuncs_run_by_numpy_without_warning(tmp_path):
    """Nothing to fuse: counted as fallbacks, not warned (issue 22 item 6)."""
    import warnings

    import tracer
    from tracer.fallback import _nothing_to_fuse
    t = np.arange(4.0) * 2
    before = tracer.stats().fallbacks
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.save(tmp_path / "t.npy", t)
        back = np.load(tmp_path / "t.npy")
    numpy.testing.assert_array_equal(numpy.asarray(back), [0.0, 2.0, 4.0, 6.0])
    assert tracer.stats().fallbacks == before + 2
    other = numpy.frompyfunc(lambda x: x, 1, 1)  # a ufunc that is not NumPy's own
    assert _nothing_to_fuse("f", other) and _nothing_to_fuse("f.reduce", other.reduce)
    assert not _nothing_to_fuse("sin", numpy.sin) and not _nothing_to_fuse("pad", numpy.pad)


def test_the_array_api_namespace_and_device_need_no_evaluation():
    """Issue 22 item 4's start: tracer.numpy is the namespace of its arrays (its own claim of
    2024.12), `.device` and `to_device` answer as NumPy's, without evaluating."""
    import pytest

    import tracer
    t = np.arange(3.0) * 2
    before = tracer.stats().evaluations
    xp = t.__array_namespace__()  # tracer.numpy's functions with the standard's results
    assert xp is t.__array_namespace__(api_version="2023.12") and xp.add is not None
    assert np.__array_api_version__ == "2024.12"
    assert t.device == numpy.arange(3.0).device == "cpu" and t.to_device("cpu") is t
    assert tracer.stats().evaluations == before
    h = numpy.arange(3.0)
    for call in (lambda a: a.__array_namespace__(api_version="2020.1"),
                 lambda a: a.to_device("gpu"), lambda a: a.to_device("cpu", stream=1)):
        with pytest.raises(ValueError) as want:
            call(h)
        with pytest.raises(ValueError) as got:
            call(t)
        assert str(got.value) == str(want.value)
