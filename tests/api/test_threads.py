"""Threads evaluating at once (issue 22 item 2), a short run of tests/stress_threads.py: four
threads of random small programs checked against NumPy, and a writer beside a lazy reader, in a
cold process and a warm one. `python -m tests.stress_threads --runs 10` is the long run."""
from __future__ import annotations

import pytest

import stress_threads


@pytest.mark.slow
@pytest.mark.parametrize("mode,eager", [("tiered", False), ("sync", False), ("tiered", True)])
def test_threads_evaluating_at_once_get_numpys_values(tmp_path, mode, eager):
    assert stress_threads.run(40, mode, str(tmp_path), eager) == []
