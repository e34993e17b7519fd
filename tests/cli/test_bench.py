"""``gpuplan bench``: method specs checked like the flags, before any run."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import INSTANCES, Gpuplan
from core.test_files import at_most, pipe_in

from gpuplan.core.errors import InputError
from gpuplan.core.objectives import ObjectiveKind
from gpuplan.harness.bench import (
    BEST_KNOWN,
    Record,
    improve_best_known,
    quote_tables,
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


def _suite_with_piped_table(folder: Path) -> tuple[tuple[str | Path, ...], Path]:
    """A suite folder whose best_known.csv is a named pipe: the bench arguments and the pipe."""
    shutil.copy(INSTANCES / "quickstart.json", folder / "quickstart.json")
    return (folder,), pipe_in(folder, BEST_KNOWN)


def _gap_root_with_piped_table(folder: Path) -> tuple[tuple[str | Path, ...], Path]:
    """A benchmarks root whose GAP table is a named pipe: the bench arguments and the pipe."""
    (folder / "gap").mkdir()
    return ("chu-beasley", "--benchmarks", folder), pipe_in(folder / "gap", "known_values.csv")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX named pipes")
@pytest.mark.parametrize("make", [_suite_with_piped_table, _gap_root_with_piped_table],
                         ids=["best-known", "gap-known-values"])
def test_a_table_that_is_a_pipe_is_exit_2_at_once(
        gpuplan: Gpuplan, tmp_path: Path,
        make: Callable[[Path], tuple[tuple[str | Path, ...], Path]]) -> None:
    """A suite's table that is a named pipe is exit 2 at once, naming it; nothing runs.

    A piped GAP table used to wait for a writer for ever, and a piped best_known.csv was
    taken for no table at all.
    """
    args, pipe = make(tmp_path)
    with at_most(5):
        ran = gpuplan("bench", *args, "--methods", "greedy")
    assert ran.code == 2
    assert f"{pipe}: not a regular file (it is a pipe)" in ran.err


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX named pipes")
def test_a_quoted_results_file_that_is_a_pipe_is_named_as_one(tmp_path: Path) -> None:
    """A page quoting a table of a named pipe says it is a pipe, not that it does not exist."""
    pipe = pipe_in(tmp_path, "results.md")
    page = tmp_path / "page.md"
    page.write_text("<!-- table results.md 1 -->\n<!-- end table -->\n")
    with at_most(5), pytest.raises(InputError) as caught:
        quote_tables(page)
    assert str(caught.value) == f"{pipe}: not a regular file (it is a pipe)"
