"""Graph-to-graph passes and the pipeline that runs them."""
from .pipeline import PIPELINE, OptResult, PassError, optimize

__all__ = ["PIPELINE", "OptResult", "PassError", "optimize"]
