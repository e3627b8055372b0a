"""The drop-in promise on a corpus of ordinary NumPy snippets.

`tests/corpus/<topic>.py` holds snippets written the way tutorials, exercise sets and notebook
cells use NumPy, each after a line `# %% <name>` and each starting with its own
`import numpy as np`. Every snippet runs twice: as written, and with that line rewritten to
`import tracer.numpy as np`. Both runs must print the same text and end the same way: no
exception, or the same exception type raised at the same line of the snippet (and the same
message where the message is NumPy's own, not Python's words about a type).

    python -m pytest -q -p no:warnings tests/differential/test_corpus.py
    python -m tests.differential.test_corpus [-v] [substring ...]  # summary table: passed/failed per file,
                                                      # each failure's first differing line
                                                      # (-v: each snippet's time on stderr)
"""
from __future__ import annotations

import builtins
import contextlib
import io
import os
import re
import sys
import tempfile
import time
import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path

if __name__ == "__main__":  # the same setup as tests/conftest.py
    os.environ.setdefault("TRACER_BACKEND", "cpu")
    os.environ.setdefault("TRACER_CACHE_DIR",
                          os.path.join(tempfile.gettempdir(), "tracer-test-cache"))

import numpy
import pytest

from tracer.ir.config import EAGER_SIZE, SMALL_GRAPH, context

CORPUS_DIR = Path(__file__).parent / "corpus"
MARKER = re.compile(r"^# %% (\S.*?)\s*$")
IMPORT_LINE = re.compile(r"^([ \t]*)import numpy as np[ \t]*$", re.M)
MIN_PASS_RATE = 0.97

# Messages that are Python's words about types rather than NumPy's own: type and line only.
PYTHON_MESSAGES = re.compile(r"object has no attribute|unsupported operand type|not subscriptable|"
                             r"object is not callable|unhashable type|object is not iterable|"
                             r"can only concatenate|'ndarray'|"
                             r"numpy\.(ndarray|u?int\d*|float\d*|bool_?|complex\d*)\b")

# "file::name" -> why tracer's run differs today. Each entry is xfail(strict=True): a snippet
# that starts passing must be taken out of here.
KNOWN_FAILURES: dict[str, str] = {
    "python_interop::isinstance_checks":
        "type(a) is np.ndarray is False: a tracer array's type is tracer.ndarray (isinstance "
        "holds; a.mean() and a[0] are NumPy's scalars now)",
    "errors::write_to_diagonal_view":
        "np.diagonal is a writable copy (README): NumPy's read-only view raises ValueError "
        "'assignment destination is read-only' on d[0] = 100",
}


@dataclass(frozen=True)
class Snippet:
    file: str   # "creation"
    name: str   # "arange_linspace"
    code: str   # the lines after the marker; line 1 is the line after `# %% name`

    @property
    def id(self) -> str:
        return f"{self.file}::{self.name}"

    @property
    def filename(self) -> str:
        return f"corpus/{self.file}.py::{self.name}"


def load_corpus(directory: Path = CORPUS_DIR) -> list[Snippet]:
    snippets: list[Snippet] = []
    for path in sorted(directory.glob("*.py")):
        name, lines = None, []

        def close():
            if name is not None:
                snippets.append(Snippet(path.stem, name, "".join(lines)))

        for line in path.read_text().splitlines(keepends=True):
            m = MARKER.match(line)
            if m:
                close()
                name, lines = m.group(1), []
            elif name is not None:
                lines.append(line)
        close()
    ids = [s.id for s in snippets]
    dupes = {i for i in ids if ids.count(i) > 1}
    assert not dupes, f"duplicate snippet names: {sorted(dupes)}"
    return snippets


def to_tracer(code: str) -> str:
    return IMPORT_LINE.sub(r"\1import tracer.numpy as np", code)


@dataclass
class Outcome:
    stdout: str
    exc_type: str | None = None
    exc_line: int | None = None
    exc_msg: str | None = None
    exc_tb: str | None = None

    def ending(self) -> str:
        if self.exc_type is None:
            return "no exception"
        return f"{self.exc_type} at line {self.exc_line}: {self.exc_msg}"


def run_snippet(snippet: Snippet, use_tracer: bool) -> Outcome:
    """Exec the snippet in fresh globals, stdout captured; NumPy's print options and error
    state are restored afterwards, so one snippet cannot change another's output."""
    code = to_tracer(snippet.code) if use_tracer else snippet.code
    compiled = compile(code, snippet.filename, "exec")
    glb = {"__name__": "__main__", "__builtins__": builtins}
    out = io.StringIO()
    exc = None
    # tracer runs as a user's script would: small ops and small graphs by NumPy (the suite's
    # default is to record and compile everything)
    user = context(small_graph=SMALL_GRAPH, eager_size=EAGER_SIZE) if use_tracer else \
        contextlib.nullcontext()
    with user, warnings.catch_warnings(), numpy.printoptions(), numpy.errstate():
        warnings.simplefilter("ignore")  # warnings are not compared (TracerFallbackWarning too)
        with contextlib.redirect_stdout(out):
            try:
                exec(compiled, glb)
            except Exception as e:  # noqa: BLE001
                exc = e
            finally:
                # a script's arrays die with its process: drop this snippet's names (and the
                # cycles a function defined in it makes through its globals), so no lazy array
                # of it is still pending when the next snippet's evaluation flushes
                glb.clear()
    result = Outcome(out.getvalue())
    if exc is not None:
        line = None
        for fs in traceback.extract_tb(exc.__traceback__):
            if fs.filename == snippet.filename:
                line = fs.lineno
        result.exc_type = type(exc).__name__
        result.exc_line = line
        result.exc_msg = str(exc)
        result.exc_tb = "".join(traceback.format_exception(exc))
        exc.__traceback__ = None  # its frames would keep the snippet's arrays alive
    return result


def compare(want: Outcome, got: Outcome) -> str | None:
    """None when the runs agree, else the first difference in words."""
    if want.stdout != got.stdout:
        a, b = want.stdout.splitlines(), got.stdout.splitlines()
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return f"stdout line {i + 1}: numpy {x!r} / tracer {y!r}"
        i = min(len(a), len(b))
        x = a[i] if i < len(a) else "<end>"
        y = b[i] if i < len(b) else "<end>"
        return f"stdout line {i + 1}: numpy {x!r} / tracer {y!r}"
    if (want.exc_type, want.exc_line) != (got.exc_type, got.exc_line):
        return f"ending: numpy {want.ending()} / tracer {got.ending()}"
    if want.exc_type is not None and want.exc_msg != got.exc_msg and \
            not PYTHON_MESSAGES.search(want.exc_msg):
        return f"message: numpy {want.exc_msg!r} / tracer {got.exc_msg!r}"
    return None


def check(snippet: Snippet) -> tuple[str | None, Outcome, Outcome]:
    want = run_snippet(snippet, use_tracer=False)
    got = run_snippet(snippet, use_tracer=True)
    return compare(want, got), want, got


SNIPPETS = load_corpus()


def _param(s: Snippet):
    marks = []
    if s.id in KNOWN_FAILURES:
        marks.append(pytest.mark.xfail(strict=True, reason=KNOWN_FAILURES[s.id]))
    return pytest.param(s, id=s.id, marks=marks)


@pytest.mark.parametrize("snippet", [_param(s) for s in SNIPPETS])
def test_snippet(snippet: Snippet):
    diff, want, got = check(snippet)
    if diff is not None:
        detail = f"{diff}\n--- numpy stdout\n{want.stdout}--- tracer stdout\n{got.stdout}"
        if got.exc_tb and got.exc_type != want.exc_type:
            detail += f"--- tracer traceback\n{got.exc_tb}"
        pytest.fail(detail, pytrace=False)


def test_corpus_shape():
    assert len(SNIPPETS) >= 170
    assert all(IMPORT_LINE.search(s.code) for s in SNIPPETS), "each snippet imports numpy as np"
    stale = set(KNOWN_FAILURES) - {s.id for s in SNIPPETS}
    assert not stale, f"KNOWN_FAILURES names snippets that do not exist: {sorted(stale)}"


def test_pass_rate():
    passing = sum(s.id not in KNOWN_FAILURES for s in SNIPPETS)
    assert passing / len(SNIPPETS) >= MIN_PASS_RATE, \
        f"{passing}/{len(SNIPPETS)} snippets expected to pass, below {MIN_PASS_RATE:.0%}"


# ------------------------------------------------------------------ summary table

def summary(filters: list[str] | None = None, out=sys.stdout, verbose: bool = False) -> int:
    """Run the corpus (snippets whose id contains any of `filters`), print passed/failed per
    file and each failure's first difference. Returns the number of failures."""
    try:
        from tracer.ir.config import CONFIG
        CONFIG.verify = True
        CONFIG.compile_mode = "sync"
        CONFIG.compile_workers = 0
    except ImportError:
        pass
    snippets = [s for s in SNIPPETS if not filters or any(f in s.id for f in filters)]
    per_file: dict[str, list[int]] = {}
    failures: list[tuple[Snippet, str]] = []
    t0 = time.perf_counter()
    times: list[tuple[float, str]] = []
    for s in snippets:
        t1 = time.perf_counter()
        diff, _, _ = check(s)
        times.append((time.perf_counter() - t1, s.id))
        if verbose:
            print(f"{times[-1][0]:7.2f}s {'ok  ' if diff is None else 'FAIL'} {s.id}",
                  file=sys.stderr, flush=True)
        row = per_file.setdefault(s.file, [0, 0])
        row[diff is not None] += 1
        if diff is not None:
            failures.append((s, diff))
    dt = time.perf_counter() - t0
    w = max([len(f) for f in per_file] + [4])
    print(f"{'file':<{w}}  passed  failed", file=out)
    for f, (p, n) in per_file.items():
        print(f"{f:<{w}}  {p:>6}  {n:>6}", file=out)
    total_p = sum(p for p, _ in per_file.values())
    print(f"{'total':<{w}}  {total_p:>6}  {len(failures):>6}   "
          f"({total_p / max(len(snippets), 1):.1%} pass, {dt:.1f} s)", file=out)
    print("\nslowest:", ", ".join(f"{i} {t:.1f}s" for t, i in sorted(times)[::-1][:8]), file=out)
    if failures:
        print("\nfailures:", file=out)
        for s, diff in failures:
            known = "  [known]" if s.id in KNOWN_FAILURES else ""
            print(f"  {s.id}{known}\n      {diff[:300]}", file=out)
    newly = [s.id for s in snippets if s.id in KNOWN_FAILURES and
             s.id not in {f.id for f, _ in failures}]
    if newly:
        print("\nin KNOWN_FAILURES but passing now:", file=out)
        for i in newly:
            print(f"  {i}", file=out)
    return len(failures)


if __name__ == "__main__":
    args = sys.argv[1:]
    summary([a for a in args if a != "-v"], verbose="-v" in args)
