"""Methods side by side on a suite of instances (``gpuplan bench``).

A suite is a folder of instance files, or a named set of ``../shared/benchmarks/`` with its
known values (:data:`NAMED`). Every (instance, method) pair is planned with the same time
limit through :func:`~gpuplan.planning.plan`, so every plan is verified, and becomes a row:
objective, best known value, gap to it, bound, seconds, verified.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuplan.batch import expand_inputs
from gpuplan.errors import InputError
from gpuplan.instance import Instance
from gpuplan.planning import plan
from gpuplan.readers import read_instance
from gpuplan.solvers import SolveOptions


@dataclass(frozen=True)
class Problem:
    """One instance of a suite: how to read it, and its best known value if any."""

    name: str
    load: Callable[[], Instance]
    best: float | None


def _gap_set(root: Path, family: str) -> list[Problem]:
    """GAP problems of ``known_values.csv`` (minimisation) whose file is in ``family``."""
    table = root / "gap" / "known_values.csv"
    problems = []
    with table.open() as handle:
        for row in csv.DictReader(handle):
            file = row["file"]
            kind = ("gap1-12" if file[9:].split(".")[0].isdigit() and file.startswith("orlib/")
                    else "chu-beasley" if file.startswith("orlib/") else "yagiura")
            if kind != family:
                continue
            spec = f"{root / 'gap' / file}#{row['index_in_file']}"
            best = float(row["best_known_min"]) if row["best_known_min"] else None
            problems.append(Problem(row["instance"], _reader(spec, "orlib-gap"), best))
    return problems


def _reader(spec: str, file_format: str) -> Callable[[], Instance]:
    def load() -> Instance:
        return read_instance(spec, file_format=file_format, sense="min")
    return load


#: Named suites and the folder under the benchmarks root they come from.
NAMED: dict[str, Callable[[Path], list[Problem]]] = {
    "gap1-12": lambda root: _gap_set(root, "gap1-12"),
    "chu-beasley": lambda root: _gap_set(root, "chu-beasley"),
    "yagiura": lambda root: _gap_set(root, "yagiura"),
}


def load_suite(suite: str, benchmarks: Path, only: Sequence[str] = ()) -> list[Problem]:
    """The problems of a named suite or of a folder (or glob) of instance files.

    Raises
    ------
    InputError
        If the suite is neither a known name nor a path with instance files.
    """
    if suite in NAMED:
        if not (benchmarks / "gap" / "known_values.csv").exists():
            raise InputError("--benchmarks", "", f"suite {suite!r} needs the shared "
                             f"benchmarks, not found under {benchmarks}")
        problems = NAMED[suite](benchmarks)
    else:
        paths = [p for p in expand_inputs([suite]) if p.exists()]
        if not paths:
            raise InputError(suite, "", f"not a suite ({', '.join(NAMED)}) nor a folder or "
                             "pattern with instance files")
        problems = [Problem(p.stem, _reader(str(p), "gpuplan"), None) for p in paths]
    if only:
        problems = [p for p in problems if p.name in set(only)]
    return problems


def run_bench(problems: Sequence[Problem], methods: Sequence[str], options: SolveOptions,
              on_row: Callable[[dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
    """Plan every problem with every method; one row each.

    An instance that cannot be read or planned is a row with status ``error``.
    """
    rows = []
    for problem in problems:
        try:
            instance = problem.load()
        except InputError as exc:
            rows.append({"instance": problem.name, "method": "-", "status": "error",
                         "error": str(exc)})
            continue
        for method in methods:
            row: dict[str, Any]
            try:
                schedule = plan(instance, method, options)
            except InputError as exc:
                row = {"instance": problem.name, "method": method, "status": "error",
                       "error": str(exc)}
            else:
                value, best = schedule.objective, problem.best
                row = {
                    "instance": problem.name, "method": method,
                    "status": schedule.status.value, "objective": value, "best_known": best,
                    "gap_pct": (None if value is None or not best
                                else 100.0 * abs(value - best) / abs(best)),
                    "bound": schedule.bound, "seconds": schedule.wall_time_s,
                    "verified": bool(schedule.verification and schedule.verification.ok
                                     and schedule.status.has_plan),
                }
            rows.append(row)
            if on_row is not None:
                on_row(row)
    return rows


#: Column titles of a bench table.
COLUMNS = ("instance", "method", "status", "objective", "best known", "gap %", "bound",
           "seconds", "verified")


def cells(row: dict[str, Any]) -> list[str]:
    """A row's values as text, in :data:`COLUMNS` order."""
    def text(value: Any, digits: int = 6) -> str:
        if value is None:
            return "-"
        if isinstance(value, bool):
            return "yes" if value else "no"
        if isinstance(value, float):
            return f"{value:.{digits}g}"
        return str(value)

    return [text(row["instance"]), text(row["method"]), text(row["status"]),
            text(row.get("objective")), text(row.get("best_known")),
            text(row.get("gap_pct"), 3), text(row.get("bound")),
            text(row.get("seconds"), 3), text(row.get("verified"))]


def markdown(rows: Sequence[dict[str, Any]]) -> str:
    """The rows as a Markdown table."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|---|---|---|---:|---:|---:|---:|---:|---|"]
    lines += ["| " + " | ".join(cells(r)) + " |" for r in rows]
    return "\n".join(lines) + "\n"
