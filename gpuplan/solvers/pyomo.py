"""Pyomo: the same canonical program as a Pyomo model, solved by HiGHS through Pyomo.

This is the portable path: the model can be written as LP or MPS for any solver
(``gpuplan export-model``), and solved by whichever solver Pyomo has.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from gpuplan.errors import BackendUnavailableError
from gpuplan.instance import FloatArray
from gpuplan.models.linear import LinearProgram
from gpuplan.schedule import Status
from gpuplan.solvers.base import ProgramSolution, SolveOptions
from gpuplan.solvers.highs import divert_banner

logger = logging.getLogger(__name__)


def _pyomo() -> Any:
    try:
        import pyomo.environ as pyo
    except ImportError as exc:  # pragma: no cover - pyomo is a declared dependency
        raise BackendUnavailableError("pyomo", "pyomo", exc) from None
    return pyo


def pyomo_model(program: LinearProgram) -> Any:
    """The program as a Pyomo ``ConcreteModel`` with named variables and constraints."""
    pyo = _pyomo()
    model = pyo.ConcreteModel(name="gpuplan")
    model.columns = pyo.Set(initialize=program.col_names, ordered=True)
    names = program.col_names

    def domain(_: Any, name: str) -> Any:
        return pyo.Integers if program.integer[index[name]] else pyo.Reals

    def bounds(_: Any, name: str) -> tuple[float | None, float | None]:
        k = index[name]
        lo, hi = program.col_lower[k], program.col_upper[k]
        return (lo if np.isfinite(lo) else None, hi if np.isfinite(hi) else None)

    index = {name: k for k, name in enumerate(names)}
    model.x = pyo.Var(model.columns, domain=domain, bounds=bounds)
    variables = [model.x[name] for name in names]

    row_index = {name: i for i, name in enumerate(program.row_names)}

    def row(_: Any, name: str) -> Any:
        i = row_index[name]
        cols, coefficients = program.row(i)
        expression = pyo.quicksum(
            float(c) * variables[k] for k, c in zip(cols, coefficients, strict=True)
        )
        lo, hi = program.row_lower[i], program.row_upper[i]
        return (lo if np.isfinite(lo) else None, expression, hi if np.isfinite(hi) else None)

    model.row_names = pyo.Set(initialize=program.row_names, ordered=True)
    model.rows = pyo.Constraint(model.row_names, rule=row)
    linear = pyo.quicksum(float(c) * v for c, v in zip(program.cost, variables, strict=True) if c)
    if program.hessian is not None:
        linear += pyo.quicksum(0.5 * float(q) * v**2
                               for q, v in zip(program.hessian, variables, strict=True) if q)
    model.objective = pyo.Objective(
        expr=linear, sense=pyo.maximize if program.sense == "max" else pyo.minimize)
    return model


def write_model(program: LinearProgram, path: str, file_format: str) -> None:
    """Write the program as an LP or MPS file through Pyomo's writers."""
    pyomo_model(program).write(
        path, format=file_format, io_options={"symbolic_solver_labels": True}
    )


class PyomoBackend:
    """Pyomo's HiGHS interface; starts are not passed on (it does not take MIP starts)."""

    name = "pyomo"

    def solve_program(
        self, program: LinearProgram, options: SolveOptions, start: FloatArray | None = None
    ) -> ProgramSolution:
        """Build the Pyomo model and solve it with HiGHS through Pyomo.

        Parameters
        ----------
        program
            The model in canonical form.
        options
            Time limit, threads and gap tolerance.
        start
            Ignored: Pyomo's HiGHS interface takes no MIP start.
        """
        _pyomo()
        from pyomo.contrib.solver.common.results import SolutionStatus, TerminationCondition
        from pyomo.contrib.solver.solvers.highs import Highs

        table = {
            TerminationCondition.convergenceCriteriaSatisfied: Status.OPTIMAL,
            TerminationCondition.emptyModel: Status.OPTIMAL,
            TerminationCondition.provenInfeasible: Status.INFEASIBLE,
            TerminationCondition.locallyInfeasible: Status.INFEASIBLE,
            TerminationCondition.infeasibleOrUnbounded: Status.INFEASIBLE,
        }
        model = pyomo_model(program)
        divert_banner()
        solver = Highs()
        if not solver.available():
            raise BackendUnavailableError("pyomo", "highspy", RuntimeError("HiGHS not found"))
        config: dict[str, Any] = {
            "threads": int(options.threads),
            "load_solutions": False,
            "raise_exception_on_nonoptimal_result": False,
            "solver_options": {"mip_rel_gap": float(options.gap_tolerance),
                               "random_seed": int(options.seed)},
        }
        if options.time_limit_s is not None:
            config["time_limit"] = float(options.time_limit_s)
        results = solver.solve(model, **config)
        status = table.get(results.termination_condition, Status.NO_SOLUTION)
        has_solution = results.solution_status in (SolutionStatus.feasible, SolutionStatus.optimal)
        if status is Status.NO_SOLUTION and has_solution:
            status = Status.FEASIBLE
        values: FloatArray | None = None
        value: float | None = None
        if has_solution:
            results.solution_loader.load_vars()
            values = np.array([model.x[name].value or 0.0 for name in program.col_names])
            value = program.objective_value(values)
        bound = results.objective_bound
        bound = float(bound) if bound is not None and np.isfinite(bound) else None
        import pyomo

        logger.debug("Pyomo/HiGHS %s: %s", results.termination_condition, value)
        return ProgramSolution(status, values, value, bound, f"pyomo {pyomo.__version__} + highs")
