"""The graph: interned nodes, the op registry (machinery and catalogue), printer, verifier and
NumPy interpreter."""
from .node import Buffer, Node, Slot, make, toposort, users
from .registry import OPS, Kind, OpDef, Props, get
from . import catalogue, elementwise_ops, library_ops  # noqa: F401  (registers every op)
from .printer import format_graph
from .verify import VerifyError, verify
from .interp import run_graph

__all__ = ["Buffer", "Node", "Slot", "make", "toposort", "users", "OPS", "Kind", "OpDef", "Props", "get",
           "format_graph", "VerifyError", "verify", "run_graph"]
