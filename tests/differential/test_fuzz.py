"""The CI slice of the differential fuzzer (tests/fuzz.py): fixed seeds, every mode.

Programs run in this process in the compiled, small-graph, lifted and eager modes and in two
subprocesses on the cuda backend under Numba's simulator (NUMBA_ENABLE_CUDASIM must be set before
numba loads).
`python -m tests.fuzz --programs N --mode all --show` runs any number and prints failures."""
from __future__ import annotations

import pytest

import fuzz

# seeds that expose bugs not fixed yet: {mode: {seed: cause}}; put each back once fixed
KNOWN: dict[str, dict[int, str]] = {"compiled": {}, "small": {}, "lifted": {}, "cuda": {},
                                    "eager": {}}
SLICE = {"compiled": range(0, 300), "small": range(0, 600), "lifted": range(300, 450),
         "cuda": range(0, 500), "eager": range(0, 600)}


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
def test_random_programs_match_numpy_on_cuda_simulator():
    """Two child processes (NUMBA_ENABLE_CUDASIM before numba loads), half the seeds each."""
    seeds = SLICE["cuda"]
    data = fuzz.run_children("cuda", seeds.start, len(seeds), 2, False, KNOWN["cuda"], timeout=600)
    assert data is not None, "a child process crashed or hung: see its output above"
    assert data["counts"]["programs"] == len([s for s in seeds if s not in KNOWN["cuda"]])
    assert not data["failures"], _report("cuda", data["failures"])
