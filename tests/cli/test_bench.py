"""``gpuplan bench``: method specs checked like the flags, before any run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import INSTANCES, Gpuplan

from gpuplan.core.objectives import ObjectiveKind
from gpuplan.harness.bench import (
    BEST_KNOWN,
    Record,
    improve_best_known,
    read_best_known,
    write_best_known,
)
from gpuplan.harness.library import operator_document


@pytest.mark.parametrize(("spec", "words"), [
    ("milp:solver=gurobi", "unknown value 'gurobi'"),
    ("sa:moves=jump", "jump"),
    ("cp:tick_s=0", "cp:tick_s=0: tick_s: expected a number above 0"),
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
    # The quickstart holds GPUs whole: there is no load of shared GPUs to balance.
    assert "error:" in row and "min-max-load" in row and "sharing: true" in row


def test_a_folders_best_known_table_is_the_reference(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """With best_known.csv in the folder, the gap is to its value, not to a run's bound."""
    document = operator_document(8, 1)
    (tmp_path / "batch.json").write_text(json.dumps(document))
    write_best_known(tmp_path / BEST_KNOWN, {"batch": Record(ObjectiveKind.MAKESPAN, 1e5,
                                                               "by hand")})
    out = tmp_path / "bench.md"
    assert gpuplan("bench", tmp_path, "--methods", "greedy", "-o", out).code == 0
    (row,) = [line for line in out.read_text().splitlines() if line.startswith("| batch")]
    cells = [cell.strip() for cell in row.split("|")]
    assert cells[5] == "100000" and float(cells[6]) == pytest.approx(
        100 * abs(float(cells[4]) - 1e5) / 1e5, rel=1e-2)


def _row(value: float | None, bound: float | None, verified: bool = True,
         kind: str = "makespan", method: str = "m") -> dict[str, Any]:
    """A bench row of instance ``x``."""
    return {"instance": "x", "method": method, "status": "feasible", "objective": value,
            "bound": bound, "verified": verified, "objective_kind": kind}


def test_best_known_values_never_get_worse(tmp_path: Path) -> None:
    """Only strictly better verified plans and tighter bounds are recorded, with the method."""
    old = {"x": Record(ObjectiveKind.MAKESPAN, 100.0, "cp", 80.0, "cp")}
    records, changes = improve_best_known(old, [
        _row(120.0, 70.0), _row(90.0, 85.0, verified=False),
        _row(50.0, 99.0, kind="weighted-completion")])
    assert records == {"x": Record(ObjectiveKind.MAKESPAN, 100.0, "cp", 85.0, "m")}
    assert len(changes) == 1
    records, _ = improve_best_known(records, [_row(95.0, 96.0, method="sa")])
    # 96 is beyond the verified 95: not a valid bound, so it is not recorded.
    assert records["x"] == Record(ObjectiveKind.MAKESPAN, 95.0, "sa", 85.0, "m")
    table = tmp_path / BEST_KNOWN
    write_best_known(table, records)
    assert read_best_known(table) == records
    maximum, _ = improve_best_known({}, [_row(10.0, 12.0, kind="max-weight"),
                                         _row(9.0, 11.0, kind="max-weight")])
    assert maximum["x"] == Record(ObjectiveKind.MAX_WEIGHT, 10.0, "m", 11.0, "m")
