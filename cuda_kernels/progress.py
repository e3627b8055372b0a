"""A progress bar for compiles the user waits on: shown on a terminal once a compile has taken
about a second, quiet otherwise (pipes, logs, tests, short compiles)."""
from __future__ import annotations

import sys
import threading
import time

DELAY_S = 1.0
WIDTH = 24


class Bar:
    """`with Bar(n) as bar: ... bar.step()` around n kernel compiles."""

    def __init__(self, total: int, stream=None, delay: float = DELAY_S):
        self.total, self.done = total, 0
        self.stream = stream if stream is not None else sys.stderr
        self.delay = delay
        self.t0 = time.perf_counter()
        self.shown = False
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = None

    def __enter__(self) -> "Bar":
        isatty = getattr(self.stream, "isatty", None)
        if self.total > 0 and isatty is not None and isatty():
            self._thread = threading.Thread(target=self._tick, daemon=True)
            self._thread.start()
        return self

    def _tick(self) -> None:
        if self._stop.wait(self.delay):
            return
        while not self._stop.is_set():
            self._draw()
            self._stop.wait(0.2)

    def _draw(self) -> None:
        with self._lock:
            filled = WIDTH * self.done // max(self.total, 1)
            s = "s" if self.total != 1 else ""
            line = (f"\rcompiling {self.total} kernel{s} [{'#' * filled}{' ' * (WIDTH - filled)}]"
                    f" {self.done}/{self.total} {time.perf_counter() - self.t0:.1f} s")
            self.stream.write(line)
            self.stream.flush()
            self.shown = True

    def step(self) -> None:
        self.done += 1

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.shown:  # leave the terminal line as it was
            self.stream.write("\r" + " " * (WIDTH + 48) + "\r")
            self.stream.flush()
