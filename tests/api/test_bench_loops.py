"""The loop suite (bench/loops.py): a quick run of two cases, and its table rows for a case
that ran out of time or disagreed with NumPy."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # bench/ is not installed; plain `pytest` does not add the root
    sys.path.insert(0, str(ROOT))
from bench import loops  # noqa: E402


def test_quick_run_agrees_with_numpy(tmp_path, monkeypatch):
    monkeypatch.delenv("TRACER_SMALL_GRAPH")  # the workers run as a user's script would
    out = tmp_path / "loops.md"
    assert loops.main(["--quick", "--repeat", "1", "--timeout", "120", "--cases", "cholesky",
                       "--out", str(out)]) == 0
    rows = [r for r in out.read_text().splitlines() if r.startswith("| ") and " | ---" not in r]
    names = [r.split(" | ")[0][2:] for r in rows[1:]]
    assert names == ["cholesky 100", "cholesky 400"]
    assert not any("ERROR" in r or "MISMATCH" in r or "> " in r for r in rows)
    assert "geometric mean" in out.read_text()


def test_rows_show_timeouts_as_bounds_and_mismatches_loudly():
    text, ratio, failed = loops.row("c", {"numpy": 0.01, "cold": 2.0, "at": 2.0}, 5.0, 3)
    assert text == "| c | 10.00 | > 3 s | > 300.0 | 2000.00 |  |" and ratio == 300 and not failed
    text, ratio, failed = loops.row("c", {"numpy": 0.01, "at": 0.0}, 5.0, 3)
    assert "| > 5 s | > 500.0 | > 5 s |" in text and not failed
    res = {"numpy": 0.01, "cold": 0.02, "warm": 0.02, "runs": 1, "mismatch": "Not equal"}
    text, ratio, failed = loops.row("c", res, 5.0, 3)
    assert failed and "**MISMATCH**: Not equal" in text and "median of 1 (budget)" in text
    text, ratio, failed = loops.row("c", {"numpy": 0.01, "error": "Traceback\nValueError: x"},
                                    5.0, 3)
    assert failed and ratio is None and "**ERROR**: Traceback ValueError: x" in text
