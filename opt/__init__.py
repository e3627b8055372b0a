"""Graph-to-graph passes, the pipeline that runs them, and memory planning (liveness).

It imports nothing of the package at load time: each public name is imported from the
submodule that defines it on first use (PEP 562, `tracer.ir.exports`), so `import tracer.opt.x`
runs no other submodule.
"""
from __future__ import annotations

from tracer.ir.exports import attach

_EXPORTS = {  # public name -> the submodule that defines it
    "PIPELINE": ".pipeline", "OptResult": ".pipeline", "PassError": ".pipeline",
    "optimize": ".pipeline",
}
__all__ = list(_EXPORTS)

__getattr__, __dir__ = attach(globals(), _EXPORTS)
