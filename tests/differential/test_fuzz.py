"""The CI slice of the differential fuzzer (tests/fuzz.py): fixed seeds, every mode.

Programs run in this process in the compiled, small-graph, lifted and eager modes and in a
subprocess on the cuda backend under Numba's simulator (NUMBA_ENABLE_CUDASIM must be set before
numba loads).
`python -m tests.fuzz --programs N --mode all --show` runs any number and prints failures."""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile

import pytest

import fuzz

# seeds that expose bugs not fixed yet: {mode: {seed: cause}}; put each back once fixed
KNOWN: dict[str, dict[int, str]] = {"compiled": {}, "small": {}, "lifted": {}, "cuda": {},
                                    "eager": {}}
SLICE = {"compiled": range(0, 300), "small": range(0, 600), "lifted": range(300, 450),
         "cuda": range(0, 10), "eager": range(0, 600)}


def _report(mode, failures):
    return "\n\n".join(f"--- {mode} seed {f['seed']}: {f['kind']}\n{f['detail']}\n{f['snippet']}"
                       for f in failures)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["compiled", "small", "lifted", "eager"])
def test_random_programs_match_numpy(mode):
    seeds = [s for s in SLICE[mode] if s not in KNOWN[mode]]
    counts, failures = fuzz.run_mode(mode, seeds)
    assert counts["programs"] == len(seeds)
    assert not failures, _report(mode, failures)


@pytest.mark.slow
@pytest.mark.cuda
def test_random_programs_match_numpy_on_cuda_simulator(tmp_path):
    seeds = [s for s in SLICE["cuda"] if s not in KNOWN["cuda"]]
    out = tmp_path / "cuda.json"
    cmd = [sys.executable, "-m", "tests.fuzz", "--mode", "cuda", "--programs", "1", "--json"]
    failures = []
    for s in seeds:  # one seed a run keeps the known-bad seeds out
        p = subprocess.run(cmd + [str(out), "--seed", str(s)], cwd=fuzz.ROOT,
                           env=fuzz.child_env("cuda", tempfile.mkdtemp(dir=tmp_path)),
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr[-3000:]
        failures += json.loads(out.read_text())["failures"]
    assert not failures, _report("cuda", failures)
