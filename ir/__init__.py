"""The graph: interned nodes, the op registry (machinery and catalogue), printer, verifier and
NumPy interpreter.

It imports nothing of the package at load time but `exports.py` (which imports no project
module): each public name is imported from the submodule that defines it on first use
(PEP 562), so `import tracer.ir.x` runs no other submodule. The registry's names come from
`registry.py`, which registers every op.
"""
from __future__ import annotations

from .exports import attach

_EXPORTS = {  # public name -> the submodule that defines it
    "Buffer": ".node", "Node": ".node", "Slot": ".node", "make": ".node", "toposort": ".node",
    "users": ".node", "OPS": ".registry", "Kind": ".registry", "OpDef": ".registry",
    "Props": ".registry", "get": ".registry", "format_graph": ".printer",
    "VerifyError": ".verifier", "verify": ".verifier", "run_graph": ".interp",
}
__all__ = list(_EXPORTS)

__getattr__, __dir__ = attach(globals(), _EXPORTS)
