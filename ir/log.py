"""Debug output (TRACER_DEBUG) through Python's logging, logger `tracer`: a user can route,
filter or silence it as any library's. Unless the user gave that logger a handler, the first
message adds one that writes `[tracer] message` lines to stderr. logging is imported at the
first message, not with tracer (it costs about 6 ms)."""
from __future__ import annotations

import sys

_LOGGER: list = []  # the logger, once made


def debug(message: str) -> None:
    """Log `message` at DEBUG on logger `tracer` (callers test CONFIG.debug's level first)."""
    if not _LOGGER:
        import logging  # here, not at import: only debug output needs it (about 6 ms)
        logger = logging.getLogger("tracer")
        if not logger.handlers:
            handler = _stderr_handler(logging)
            handler.setFormatter(logging.Formatter("[tracer] %(message)s"))
            logger.addHandler(handler)
            logger.propagate = False  # (not twice through a root handler)
        if logger.level == logging.NOTSET:
            logger.setLevel(logging.DEBUG)  # TRACER_DEBUG asked for it
        _LOGGER.append(logger)
    _LOGGER[0].debug(message)


def _stderr_handler(logging):
    """A handler writing to whatever sys.stderr is when a message comes (pytest's capture,
    a notebook's redirection), not the one there when it was made."""
    class Stderr(logging.StreamHandler):
        @property
        def stream(self):
            return sys.stderr

        @stream.setter
        def stream(self, value):
            pass
    return Stderr()
