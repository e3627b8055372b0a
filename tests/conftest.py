"""Test setup: cpu backend, verifier after every pass, a kernel cache shared by the whole run."""
from __future__ import annotations

import os
import tempfile

os.environ.setdefault("TRACER_BACKEND", "cpu")
os.environ.setdefault("TRACER_SMALL_GRAPH", "0")  # small test arrays still get kernels (and
                                                  # so do the test programs run as subprocesses)
os.environ.setdefault("TRACER_CACHE_DIR", os.path.join(tempfile.gettempdir(), "tracer-test-cache"))

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from tracer.ir.config import CONFIG  # noqa: E402

CONFIG.verify = True
CONFIG.compile_mode = "sync"  # tiered and worker compiles have tests of their own
CONFIG.compile_workers = 0


@pytest.fixture
def rng():
    return np.random.default_rng(0)
