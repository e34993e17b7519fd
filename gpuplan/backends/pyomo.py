"""Pyomo: the same canonical program as a Pyomo model, solved by HiGHS through Pyomo.

This is the portable path: the model can be written as LP or MPS for any solver
(``gpuplan export-model``), and solved by whichever solver Pyomo has.

Pyomo spends seconds of Python on a model of a hundred thousand columns, first building
it and then handing it to HiGHS, before HiGHS starts. The time limit covers both: rows are
built, and handed over, a few at a time with the budget read in between, and HiGHS gets
what is left less its reserve (:func:`~gpuplan.backends.highs_runtime.reserve_s`). When the budget
is spent first, the answer is ``no_solution`` with the stage it was spent in. Pyomo's log
messages and HiGHS's output go to the debug log.

Unlike a direct HiGHS solve, this one is not run on a thread left behind when it is busy
past its time limit (:func:`~gpuplan.backends.highs_runtime.run_guarded`): Pyomo points the
process's standard output at a pipe of its own while HiGHS runs, so a solve left running
would swallow what the caller writes next (the schedule of ``gpuplan solve -o -``). HiGHS
still stops at its first reading of the clock past the limit.
"""

from __future__ import annotations

import io
import itertools
import logging
import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

import numpy as np

from gpuplan.backends.base import Capabilities, ProgramSolution, SolveOnly, check_program
from gpuplan.backends.highs_runtime import quiet_banner, reserve_s, size_pool
from gpuplan.core.budget import Budget, Limits
from gpuplan.core.errors import BackendUnavailableError
from gpuplan.core.instance import FloatArray, IntArray
from gpuplan.core.status import Status
from gpuplan.models.linear import LinearProgram, OutOfTimeError, check_budget

logger = logging.getLogger(__name__)

#: Matrix entries built, or handed to HiGHS, between two readings of the clock.
ENTRIES_PER_CHECK = 4096
#: Columns (or objective terms) made between two readings of the clock.
COLUMNS_PER_CHECK = 4096
#: Handing the objective to HiGHS, which cannot be split, takes about this many times as
#: long per term as handing over the rows takes per nonzero (measured on an assignment
#: model); it is not begun when less time is left.
OBJECTIVE_COST = 1.5


def _pyomo() -> Any:
    try:
        import pyomo.environ as pyo
    except ImportError as exc:  # pragma: no cover - pyomo is a declared dependency
        raise BackendUnavailableError("pyomo", "pyomo", exc) from None
    return pyo


@contextmanager
def pyomo_log_to_debug() -> Iterator[None]:
    """Send what Pyomo logs (its own handler prints to the terminal) to the debug log."""
    from pyomo.common.log import LoggingIntercept

    sink = io.StringIO()
    with LoggingIntercept(sink, "pyomo", logging.DEBUG):
        yield
    if sink.getvalue().strip():
        logger.debug("Pyomo: %s", sink.getvalue().strip())


def pyomo_model(program: LinearProgram, budget: Budget | None = None) -> Any:
    """The program as a Pyomo ``ConcreteModel`` with named variables and constraints.

    Parameters
    ----------
    program
        The model in canonical form.
    budget
        What building may spend; None for no limit.

    Raises
    ------
    OutOfTimeError
        When the budget is spent first (see :func:`~gpuplan.models.linear.check_budget`).
    """
    pyo = _pyomo()
    with pyomo_log_to_debug():
        return _build(pyo, program, Budget() if budget is None else budget)


def _build(pyo: Any, program: LinearProgram, budget: Budget) -> Any:
    def check(stage: str) -> None:
        check_budget(budget, stage)

    model = pyo.ConcreteModel(name="gpuplan")
    names = list(program.col_names)
    model.columns = pyo.Set(initialize=names, ordered=True)
    lower, upper = program.col_lower.tolist(), program.col_upper.tolist()
    integer = program.integer.tolist()
    index = {name: k for k, name in enumerate(names)}

    def domain(_: Any, name: str) -> Any:
        return pyo.Integers if integer[index[name]] else pyo.Reals

    def bounds(_: Any, name: str) -> tuple[float | None, float | None]:
        k = index[name]
        lo, hi = lower[k], upper[k]
        return (lo if math.isfinite(lo) else None, hi if math.isfinite(hi) else None)

    check("columns")
    # Sparse: each variable is made when first asked for, a few thousand at a time here.
    model.x = pyo.Var(model.columns, domain=domain, bounds=bounds, dense=False)
    variables: list[Any] = []
    for first in range(0, len(names), COLUMNS_PER_CHECK):
        check("columns")
        variables.extend(model.x[name] for name in names[first:first + COLUMNS_PER_CHECK])
    check("rows")
    model.row_names = pyo.Set(initialize=list(program.row_names), ordered=True)
    model.rows = pyo.Constraint(model.row_names)
    row_lower, row_upper = program.row_lower.tolist(), program.row_upper.tolist()
    checks = set(_batches(program).tolist())
    for i, name in enumerate(model.row_names):
        if i in checks:
            check("rows")
        cols, coefficients = program.row(i)
        if cols.size:
            expression = pyo.quicksum(c * variables[k] for k, c in
                                      zip(cols.tolist(), coefficients.tolist(), strict=True))
        else:
            # A row without entries (a symmetry row among jobs of zero demand) is the
            # constant 0, which Pyomo refuses as a constraint: a column fixed at 0 stands in.
            if not hasattr(model, "zero"):
                model.zero = pyo.Var(bounds=(0, 0))
            expression = model.zero
        lo, hi = row_lower[i], row_upper[i]
        model.rows[name] = (lo if math.isfinite(lo) else None, expression,
                            hi if math.isfinite(hi) else None)
    cost = program.cost.tolist()
    parts: list[Any] = []
    for first in range(0, len(names), COLUMNS_PER_CHECK):
        check("objective")
        chunk = range(first, min(first + COLUMNS_PER_CHECK, len(names)))
        parts.append(pyo.quicksum(cost[k] * variables[k] for k in chunk if cost[k]))
    linear = pyo.quicksum(parts)
    if program.hessian is not None:
        linear += pyo.quicksum(0.5 * q * v**2
                               for q, v in zip(program.hessian.tolist(), variables, strict=True)
                               if q)
    model.objective = pyo.Objective(
        expr=linear, sense=pyo.maximize if program.sense == "max" else pyo.minimize)
    return model


def _batches(program: LinearProgram) -> IntArray:
    """First rows of batches of about :data:`ENTRIES_PER_CHECK` entries (0 first)."""
    batch = program.row_start[:-1] // ENTRIES_PER_CHECK
    return np.flatnonzero(np.r_[True, batch[1:] != batch[:-1]]) if batch.size else batch


def write_model(program: LinearProgram, path: str, file_format: str) -> None:
    """Write the program as an LP or MPS file through Pyomo's writers."""
    model = pyomo_model(program)
    with pyomo_log_to_debug():
        model.write(path, format=file_format, io_options={"symbolic_solver_labels": True})


class PyomoBackend(SolveOnly):
    """Pyomo's HiGHS interface, for LPs, MILPs and convex QPs.

    Starts are not passed on (it takes no MIP start), and it declares no incumbents:
    :attr:`offer` is not read and :meth:`cancel` does nothing, the solve ending at its
    time limit.
    """

    name = "pyomo"
    capabilities: ClassVar[Capabilities] = Capabilities(
        integer=True, continuous=True, quadratic=True, time_limit=True, threads=True,
    )

    def __init__(self) -> None:
        self.offer: Callable[[float], FloatArray | None] | None = None

    def solve_program(self, program: LinearProgram, limits: Limits,
                      start: FloatArray | None = None) -> ProgramSolution:
        """Build the Pyomo model and solve it with HiGHS through Pyomo.

        Parameters
        ----------
        program
            The model in canonical form.
        limits
            Budget (for building, handing over and solving), threads, seed and gap.
        start
            Ignored: Pyomo's HiGHS interface takes no MIP start.

        Raises
        ------
        InputError
            Naming ``--solver``, for a quadratic objective with integer columns.
        """
        check_program(self, program)
        _pyomo()
        import pyomo

        name = f"pyomo {pyomo.__version__} + highs"
        quiet_banner()
        try:
            with pyomo_log_to_debug():
                model = _build(_pyomo(), program.equilibrated(), limits.budget)
                return self._solve(program, model, limits, name)
        except OutOfTimeError as spent:
            logger.debug("Pyomo: the time limit was spent on the model's %s", spent)
            return ProgramSolution(Status.NO_SOLUTION, None, None, None,
                                   f"{name} (not started: the time limit was spent on the "
                                   f"model's {spent})")

    @staticmethod
    def _solve(program: LinearProgram, model: Any, limits: Limits,
               name: str) -> ProgramSolution:
        """Hand the model to HiGHS a few rows at a time, then solve in the time left."""
        from pyomo.common.tee import capture_output
        from pyomo.contrib.solver.common.results import SolutionStatus, TerminationCondition
        from pyomo.contrib.solver.solvers.highs import Highs

        budget = limits.budget
        table = {
            TerminationCondition.convergenceCriteriaSatisfied: Status.OPTIMAL,
            TerminationCondition.emptyModel: Status.OPTIMAL,
            TerminationCondition.provenInfeasible: Status.INFEASIBLE,
            TerminationCondition.locallyInfeasible: Status.INFEASIBLE,
            TerminationCondition.infeasibleOrUnbounded: Status.INFEASIBLE,
        }
        solver = Highs()
        if not solver.available():
            raise BackendUnavailableError("pyomo", "highspy", RuntimeError("HiGHS not found"))
        # The persistent interface takes the rows in batches, then the objective; the model
        # is not walked again at the solve (nothing changes in between).
        updates = solver.config.auto_updates
        for option in ("check_for_new_or_removed_constraints", "check_for_new_or_removed_vars",
                       "check_for_new_or_removed_params", "update_constraints", "update_vars",
                       "update_parameters", "update_named_expressions", "update_objective"):
            setattr(updates, option, False)
        rows = list(model.rows.values())
        model.rows.deactivate()
        model.objective.deactivate()
        solver.set_instance(model)
        model.rows.activate()
        model.objective.activate()
        began = time.perf_counter()
        # HiGHS's own warnings while the rows arrive (Pyomo leaves its output on) go to
        # the debug log, as Pyomo does with the solve's.
        printed = io.StringIO()
        try:
            with capture_output(printed, capture_fd=True):
                bounds = [*_batches(program).tolist(), len(rows)]
                for first, end in itertools.pairwise(bounds):
                    check_budget(budget, "rows, handing them to HiGHS")
                    solver.add_constraints(rows[first:end])
                per_entry = (time.perf_counter() - began) / max(int(program.value.size), 1)
                terms = int(np.count_nonzero(program.cost))
                if budget.left() < OBJECTIVE_COST * per_entry * terms or budget.stop():
                    raise OutOfTimeError("objective, handing it to HiGHS")
                solver.set_objective(model.objective)
        finally:
            if printed.getvalue().strip():
                logger.debug("HiGHS (through Pyomo): %s", printed.getvalue().strip())
        config: dict[str, Any] = {
            # HiGHS runs on this thread, so this thread's pool is sized for it.
            "threads": size_pool(limits.threads),
            "load_solutions": False,
            "raise_exception_on_nonoptimal_result": False,
            "solver_options": {"mip_rel_gap": float(limits.gap),
                               "random_seed": int(limits.seed),
                               "output_flag": False},
        }
        if budget.limited:
            # HiGHS may run past its limit by up to its reserve (see highs_runtime.reserve_s).
            left = budget.left() - reserve_s(program)
            if left <= 0 or budget.stop():
                raise OutOfTimeError("objective, handing it to HiGHS")
            config["time_limit"] = float(left)
        results = solver.solve(model, **config)
        status = table.get(results.termination_condition, Status.NO_SOLUTION)
        has_solution = results.solution_status in (SolutionStatus.feasible, SolutionStatus.optimal)
        if status is Status.NO_SOLUTION and has_solution:
            status = Status.FEASIBLE
        values: FloatArray | None = None
        value: float | None = None
        if has_solution:
            primals = results.solution_loader.get_vars()
            values = np.array([primals.get(v, 0.0) or 0.0 for v in model.x.values()])
            value = program.objective_value(values)
        bound = results.objective_bound
        bound = float(bound) if bound is not None and np.isfinite(bound) else None
        logger.debug("Pyomo/HiGHS %s: %s\n%s", results.termination_condition, value,
                     results.solver_log)
        return ProgramSolution(status, values, value, bound, name)

