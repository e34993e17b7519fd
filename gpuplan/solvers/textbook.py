"""``--method textbook``: the plain assignment model handed straight to ``--solver``.

The peer every gpuplan assignment method is measured against: what a user would write
first (:class:`~gpuplan.models.textbook.TextbookModel`), solved by the backend with its
default settings, no start plan and nothing else. Its answer is verified like every
other, so a benchmark compares plans, not claims.
"""

from __future__ import annotations

import numpy as np

from gpuplan.instance import Instance
from gpuplan.models.textbook import TextbookModel
from gpuplan.schedule import Status
from gpuplan.solvers.assignment import static_result
from gpuplan.solvers.backends import get_backend
from gpuplan.solvers.base import Result, SolveOptions


class TextbookSolver:
    """The textbook assignment MILP on HiGHS, CP-SAT or Pyomo (``--solver``)."""

    name = "textbook"
    description = ("the plain assignment MILP on --solver, defaults only (a peer; single-GPU "
                   "jobs, assign-cost/-profit, max-weight)")

    def supports(self, instance: Instance) -> bool:
        """Single-GPU jobs and an additive objective."""
        return TextbookModel.supports(instance)

    def solve(self, instance: Instance, options: SolveOptions) -> Result:
        """Build the model and solve it within the options' limits.

        Parameters
        ----------
        instance
            The validated problem.
        options
            Backend, time limit and threads.
        """
        model = TextbookModel.build(instance)
        solution = get_backend(options.backend).solve_program(model.program, options)
        solver = f"textbook on {solution.solver}"
        if solution.values is None:
            status = (Status.INFEASIBLE if solution.status is Status.INFEASIBLE
                      else Status.NO_SOLUTION)
            return static_result(instance, {}, status, None, solution.bound, solver,
                                 "the textbook model found no plan")
        chosen = np.round(solution.values) > 0.5
        placed = {int(j): np.array([int(g)]) for j, g in
                  zip(model.x_job[chosen].tolist(), model.x_gpu[chosen].tolist(), strict=True)}
        value = float(model.program.cost[chosen].sum())
        status = Status.OPTIMAL if solution.status is Status.OPTIMAL else Status.FEASIBLE
        return static_result(instance, placed, status, value, solution.bound, solver,
                             "left out by the textbook model")
