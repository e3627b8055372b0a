"""`tracer.numpy.linalg`: re-exports tracer/linalg.py; NumPy's other linalg functions run as
counted fallbacks."""
from ..linalg import *  # noqa: F401,F403
from ..linalg import __getattr__  # noqa: F401
