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
