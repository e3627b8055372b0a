"""`with Delta() as d:` the device counters' changes within the block (d.host_waits, ...)."""
from __future__ import annotations

from tracer.ir.stats import STATS

COUNTERS = ("kernels_launched", "host_waits", "h2d_copies", "h2d_bytes", "d2h_copies",
            "d2h_bytes")


class Delta:
    def __enter__(self):
        self._before = {c: getattr(STATS, c) for c in COUNTERS}
        return self

    def __exit__(self, *exc):
        for c in COUNTERS:
            setattr(self, c, getattr(STATS, c) - self._before[c])
