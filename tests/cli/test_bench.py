"""``gpuplan bench``: method specs checked like the flags, before any run."""

from __future__ import annotations

import pytest
from conftest import INSTANCES

from cli.conftest import Gpuplan


@pytest.mark.parametrize(("spec", "words"), [
    ("milp:solver=gurobi", "unknown value 'gurobi'"),
    ("sa:moves=jump", "jump"),
    ("cp:tick_s=0", "--tick: expected a number above 0"),
    ("greedy:policy=makespan", "does not take policy"),
])
def test_bench_specs_are_checked(gpuplan: Gpuplan, spec: str, words: str) -> None:
    """A method spec's settings meet the same checks as the flags, before any run."""
    result = gpuplan("bench", INSTANCES, "--methods", spec)
    assert result.code == 2
    assert words in result.err


def test_bench_run_settings_are_range_checked(gpuplan: Gpuplan) -> None:
    """``--threads 1000`` is exit 2 naming --threads, before any run."""
    result = gpuplan("bench", INSTANCES, "--threads", "1000")
    assert result.code == 2
    assert "--threads: 1000 is out of range" in result.err
