"""Environment variables are checked when tracer is imported: a value tracer does not accept
raises an error naming the variable and what it accepts (issue 22 item 6)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tracer.ir.config import PASS_NAMES, Config, ConfigError

BAD = {
    "TRACER_DEBUG": ("abc", "a level 0-4"),
    "TRACER_BACKEND": ("gpu", "cpu or cuda"),
    "TRACER_DISABLE_PASSES": ("fusion,fusionn", "pass names separated by commas"),
    "TRACER_COMPILE": ("fast", "tiered or sync"),
    "TRACER_COMPILE_WORKERS": ("-3", "processes"),
    "TRACER_EAGER": ("maybe", "1 or 0"),
    "TRACER_CHECK_NANS": ("2", "1 or 0"),
    "TRACER_VERIFY": ("si", "1 or 0"),
    "TRACER_SMALL_GRAPH": ("4k", "elements"),
    "TRACER_MISS_GRAPH": ("-1", "elements"),
    "TRACER_EAGER_SIZE": ("1e4", "elements"),
    "TRACER_LIFT": ("some", "changed, all or none"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_bad_value_names_the_variable_and_what_it_accepts(name, monkeypatch):
    value, accepted = BAD[name]
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError, match=f"{name}={value!r} is not valid: .*{accepted}"):
        Config()


def test_good_values_and_empty_ones(monkeypatch):
    for k, v in {"TRACER_DEBUG": "2", "TRACER_DISABLE_PASSES": " fusion , cse",
                 "TRACER_EAGER": "true", "TRACER_SMALL_GRAPH": "0", "TRACER_LIFT": "all",
                 "TRACER_BACKEND": ""}.items():
        monkeypatch.setenv(k, v)
    c = Config()
    assert (c.debug, c.disable_passes, c.eager, c.small_graph, c.lift, c.backend) == \
        (2, frozenset({"fusion", "cse"}), True, 0, "all", "")


def test_the_pass_names_are_the_pipelines():
    from tracer.opt.pipeline import PIPELINE
    assert PASS_NAMES == tuple(name for name, _, _ in PIPELINE)


def test_import_fails_at_once_with_the_variables_name():
    env = dict(os.environ, TRACER_DEBUG="abc")
    p = subprocess.run([sys.executable, "-c", "import tracer.numpy"], env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode != 0
    assert "ConfigError: TRACER_DEBUG='abc' is not valid: a level 0-4" in p.stderr
