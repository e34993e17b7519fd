"""OR-Tools CP-SAT as a backend for canonical linear programs.

CP-SAT works on integers, so each row is scaled by the smallest power of ten that makes its
coefficients and bounds integral. Where none up to 10**6 does, the row is scaled so that
its largest coefficient is 10**6 and rounded conservatively (it can only get tighter):
every plan found is still feasible, and the bound and any optimality claim are dropped
because they refer to the tightened problem. A non-integral objective is scaled to about
six significant digits and rounded; its bound is widened by the largest error that
rounding can cause, so it stays valid.

The time limit covers building the CP-SAT model, which on half a million columns takes
seconds of Python: the budget is read as the columns and rows are made, and a build that
spends it ends with status ``no_solution`` and no solve. CP-SAT logs nothing.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from importlib.metadata import version
from typing import Any, ClassVar

import numpy as np

from gpuplan.backends.base import Capabilities, ProgramSolution, SolveOnly, check_program
from gpuplan.core.budget import Limits
from gpuplan.core.errors import BackendUnavailableError
from gpuplan.core.instance import FloatArray
from gpuplan.core.status import Status
from gpuplan.models.linear import LinearProgram

logger = logging.getLogger(__name__)

#: Largest power of ten tried when making a row integral.
MAX_DIGITS = 6
#: Columns made between two readings of the clock while building (rows: a 16th of it).
CLOCK_EVERY = 4096
#: Setting the objective, which cannot be split, takes about this many times as long as
#: making the columns (measured on a model of half a million columns); it is not begun
#: when less time than that is left.
OBJECTIVE_COST = 1.5


def import_cp_model() -> Any:
    """The ``ortools.sat.python.cp_model`` module, or an error that says what to install."""
    try:
        from ortools.sat.python import cp_model
    except ImportError as exc:  # pragma: no cover - ortools is a declared dependency
        raise BackendUnavailableError("cpsat", "ortools", exc) from None
    return cp_model


def status_table(cp_model: Any) -> dict[int, Status]:
    """CP-SAT status -> gpuplan status."""
    return {
        cp_model.OPTIMAL: Status.OPTIMAL,
        cp_model.FEASIBLE: Status.FEASIBLE,
        cp_model.INFEASIBLE: Status.INFEASIBLE,
        cp_model.UNKNOWN: Status.NO_SOLUTION,
        cp_model.MODEL_INVALID: Status.NO_SOLUTION,
    }


def new_solver(limits: Limits, seconds: float | None = None) -> Any:
    """A silent ``CpSolver`` with the limits' workers, seed and gap, and a time limit.

    Parameters
    ----------
    limits
        Threads (CP-SAT workers), seed and relative gap.
    seconds
        The solve's time limit (at least 10 ms), or None for none.
    """
    solver = import_cp_model().CpSolver()
    parameters = solver.parameters
    parameters.log_search_progress = False
    # CP-SAT's own SIGINT handler logs from inside the signal and can deadlock on malloc;
    # Ctrl-C belongs to gpuplan (exit 130), which stops the solve by ending the process.
    parameters.catch_sigint_signal = False
    parameters.log_to_stdout = False
    parameters.num_workers = max(1, int(limits.threads))
    parameters.random_seed = int(limits.seed)
    parameters.relative_gap_limit = float(limits.gap)
    if seconds is not None:
        parameters.max_time_in_seconds = max(float(seconds), 0.01)
    return solver


def search_solver(limits: Limits, presolve: bool) -> Any:
    """A CP-SAT solver for the limits' budget (a part begun just now), for a hinted search.

    Workers, seed, gap and time come from :func:`new_solver`,
    like every CP-SAT solve's; presolve is switched by the caller, which knows how large
    its model is, and probing is off.
    """
    solver = new_solver(limits, limits.budget.time_limit_s)
    parameters = solver.parameters
    # Probing took most of the first seconds of a search on the 500-job Gavel cluster and
    # found few clauses; the search does better with that time.
    parameters.cp_model_probing_level = 0
    parameters.cp_model_presolve = presolve
    if not presolve:
        # Without presolve, finding symmetries still took much of a short time limit on a
        # 2000-job model.
        parameters.symmetry_level = 0
    return solver


def integral_scale(numbers: FloatArray) -> int | None:
    """The smallest power of ten that makes all numbers integral, or None.

    A number counts as integral within a relative 1e-9 of its own size (the error of a
    decimal fraction in binary), never absolutely: 6e-10 is not the integer 0.
    """
    finite = numbers[np.isfinite(numbers)]
    for digits in range(MAX_DIGITS + 1):
        scaled = finite * 10**digits
        if np.all(np.abs(scaled - np.round(scaled)) <= 1e-9 * np.abs(scaled)):
            return int(10**digits)
    return None


def _out_of_time(program: LinearProgram, built: str) -> ProgramSolution:
    logger.debug("CP-SAT not started: the time limit was spent building %s of %d columns, "
                 "%d rows", built, program.n_cols, program.n_rows)
    return ProgramSolution(Status.NO_SOLUTION, None, None, None,
                           f"cpsat {version('ortools')} (not started: the time limit was "
                           f"spent building the model's {built})")



class CpSatBackend(SolveOnly):
    """CP-SAT with solution hints, for linear programs whose columns are all integer.

    It declares no incumbents: :attr:`offer` is not read and :meth:`cancel` does nothing,
    the search ending at the budget's time limit.
    """

    name = "cpsat"
    capabilities: ClassVar[Capabilities] = Capabilities(
        integer=True, warm_start=True, time_limit=True, threads=True,
    )

    def __init__(self) -> None:
        self.offer: Callable[[float], FloatArray | None] | None = None

    def solve_program(self, program: LinearProgram, limits: Limits,
                      start: FloatArray | None = None) -> ProgramSolution:
        """Solve with CP-SAT; a start vector becomes a solution hint.

        Parameters
        ----------
        program
            The model in canonical form; every column must be integer, the objective
            linear.
        limits
            Budget (for building and search), threads (CP-SAT workers), seed and gap.
        start
            Column values of a known solution, given as a hint.

        Raises
        ------
        InputError
            Naming ``--solver``, if the program has continuous columns (an LP relaxation,
            the load level of ``min-max-load``) or a quadratic objective.
        """
        check_program(self, program)
        budget = limits.budget
        began = time.perf_counter()
        cp_model = import_cp_model()
        model = cp_model.CpModel()
        # Unnamed: a name per column costs noticeably more time and is never read back.
        columns = []
        for k, (lo, hi) in enumerate(zip(program.col_lower.tolist(),
                                         program.col_upper.tolist(), strict=True)):
            if k % CLOCK_EVERY == 0 and budget.spent():
                return _out_of_time(program, "columns")
            columns.append(model.new_bool_var("") if lo == 0 and hi == 1
                           else model.new_int_var(int(lo), int(hi), ""))
        column_s = time.perf_counter() - began
        exact = True
        for i in range(program.n_rows):
            if i % (CLOCK_EVERY // 16) == 0 and budget.spent():
                return _out_of_time(program, "rows")
            index, coefficient = program.row(i)
            lower, upper = program.row_lower[i], program.row_upper[i]
            scale = integral_scale(np.concatenate([coefficient, [lower, upper]]))
            if scale is None:
                exact = False
                # The largest coefficient becomes 10**MAX_DIGITS, whatever its size: a
                # fixed scale would round 6e-10 up to 1 and 1e12 past CP-SAT's integers.
                largest = float(np.abs(coefficient).max(initial=0.0))
                scale = 10**MAX_DIGITS / largest if largest > 0 else 10**MAX_DIGITS
                if np.isfinite(lower) and np.isfinite(upper):
                    raise ValueError(f"row {program.row_names[i]} cannot be made integral")
                # Tighten: x >= 0, so rounding coefficients up (down) and the bound down (up)
                # only removes solutions.
                up = np.isfinite(upper)
                coefficient = np.ceil(coefficient * scale) if up else np.floor(coefficient * scale)
                lower, upper = (-math.inf, math.floor(upper * scale)) if up else (
                    math.ceil(lower * scale), math.inf)
            else:
                coefficient, lower, upper = coefficient * scale, lower * scale, upper * scale
            expression = cp_model.LinearExpr.weighted_sum(
                [columns[k] for k in index], [round(c) for c in coefficient]
            )
            if np.isfinite(lower):
                model.add(expression >= round(lower))
            if np.isfinite(upper):
                model.add(expression <= round(upper))
        objective_scale = integral_scale(program.cost)
        # Rounding the objective moves each column's term by at most half a unit, so the
        # bound stays valid once widened by that much times the columns' upper bounds.
        slack = 0.0
        if objective_scale is None:
            objective_scale = int(10**MAX_DIGITS / max(np.abs(program.cost).max(), 1e-12))
            objective_scale = max(objective_scale, 1)
            slack = 0.5 * float(program.col_upper[program.cost != 0].sum()) / objective_scale
        weights = np.round(program.cost * objective_scale).astype(np.int64).tolist()
        if budget.left() < OBJECTIVE_COST * column_s or budget.stop():
            return _out_of_time(program, "objective")
        objective = cp_model.LinearExpr.weighted_sum(columns, weights)
        if program.sense == "max":
            model.maximize(objective)
        else:
            model.minimize(objective)
        if start is not None:
            hints = np.round(start).astype(np.int64).tolist()
            for k, (column, hint) in enumerate(zip(columns, hints, strict=True)):
                if k % CLOCK_EVERY == 0 and budget.spent():
                    return _out_of_time(program, "hints")
                model.add_hint(column, hint)
        if budget.spent():
            return _out_of_time(program, "hints")
        left = budget.left()
        solver = new_solver(limits, left if math.isfinite(left) else None)
        code = solver.solve(model)
        status = status_table(cp_model).get(code, Status.NO_SOLUTION)
        values: FloatArray | None = None
        value: float | None = None
        bound: float | None = None
        if status in (Status.OPTIMAL, Status.FEASIBLE):
            values = np.array([solver.value(column) for column in columns], dtype=float)
            value = float(program.cost @ values)
            if exact:
                sign = 1.0 if program.sense == "max" else -1.0
                bound = float(solver.best_objective_bound) / objective_scale + sign * slack
                if status is Status.OPTIMAL and abs(value - bound) > limits.gap * max(
                    abs(value), 1e-9
                ):
                    status = Status.FEASIBLE  # optimal for the rounded objective only
            elif status is Status.OPTIMAL:
                status = Status.FEASIBLE  # optimal for the tightened problem only
        elif status is Status.INFEASIBLE and not exact:
            status = Status.NO_SOLUTION  # the tightened problem only; proves nothing here
        logger.debug("CP-SAT %s: objective %s, bound %s", solver.status_name(code), value, bound)
        return ProgramSolution(status, values, value, bound, f"cpsat {version('ortools')}")

