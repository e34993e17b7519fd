"""``gpuplan bench``: method specs checked like the flags, before any run."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import INSTANCES

from cli.conftest import Gpuplan


@pytest.mark.parametrize(("spec", "words"), [
    ("milp:solver=gurobi", "unknown value 'gurobi'"),
    ("sa:moves=jump", "jump"),
    ("cp:tick_s=0", "--tick: expected a number above 0"),
    ("greedy:policy=makespan", "does not take policy"),
    ("milp:objective=makespan", "method 'milp' cannot plan objective 'makespan'"),
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


def test_a_comma_inside_a_value_stays_in_its_spec(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """``sa:moves=shift,swap,greedy`` is two methods, sa with both moves and greedy."""
    out = tmp_path / "bench.md"
    result = gpuplan("bench", INSTANCES, "--only", "quickstart", "--methods",
                     "sa:moves=shift,swap,greedy", "-o", out)
    assert result.code == 0, result.err
    rows = [line for line in out.read_text().splitlines() if line.startswith("| quickstart")]
    assert [row.split("|")[2].strip() for row in rows] == ["sa:moves=shift,swap", "greedy"]


def test_an_error_row_says_why(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """A combination refused for the instance is a row whose status says why, not a bare error."""
    out = tmp_path / "bench.md"
    gpuplan("bench", INSTANCES, "--only", "quickstart", "--methods",
            "milp:backend=cpsat:objective=min-max-load", "-o", out)
    (row,) = [line for line in out.read_text().splitlines() if line.startswith("| quickstart")]
    assert "error: --solver" in row and "cpsat" in row
