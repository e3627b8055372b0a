"""Graph-to-graph passes, the pipeline that runs them, and memory planning (liveness)."""
from .pipeline import PIPELINE, OptResult, PassError, optimize

__all__ = ["PIPELINE", "OptResult", "PassError", "optimize"]
