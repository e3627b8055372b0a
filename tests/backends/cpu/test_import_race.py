"""A generated module is visible to other threads only once it has finished executing (issue 22
item 2: four threads evaluating at once raised `module 'tracer_gen...' has no attribute`)."""
from __future__ import annotations

import threading
import time

from tracer.cuda_kernels import compiler


def test_a_module_still_executing_is_not_handed_to_another_thread(tmp_path, monkeypatch):
    path = tmp_path / "slow_mod.py"
    path.write_text("import time\ntime.sleep(0.3)\ndef f():\n    return 7\n")
    got, errors = [], []

    def load():
        try:
            got.append(compiler.import_module("slow_mod_race_test", str(path)).f())
        except Exception as e:  # noqa: BLE001 - the failure this test is about
            errors.append(e)
    first = threading.Thread(target=load)
    first.start()
    time.sleep(0.1)  # the first import is executing the module's body
    load()
    first.join()
    assert not errors and got == [7, 7]
