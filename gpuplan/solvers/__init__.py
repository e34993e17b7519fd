"""Solver backends and heuristics, by name.

:data:`SOLVERS` is the registry the CLI's ``--method`` choices come from. Every entry follows
the :class:`~gpuplan.solvers.base.Solver` protocol and returns one
:class:`~gpuplan.solvers.base.Result`.
"""

from __future__ import annotations

from gpuplan.solvers.assignment import LpSolver, MilpSolver
from gpuplan.solvers.balance import BalanceSolver
from gpuplan.solvers.base import Result, SolveOptions, Solver
from gpuplan.solvers.cp import CpSolver
from gpuplan.solvers.greedy import GreedySolver
from gpuplan.solvers.metaheuristics import AnnealingSolver, GeneticSolver
from gpuplan.solvers.textbook import TextbookSolver

SOLVERS: dict[str, Solver] = {
    solver.name: solver
    for solver in (GreedySolver(), MilpSolver(), LpSolver(), CpSolver(), BalanceSolver(),
                   AnnealingSolver(), GeneticSolver(), TextbookSolver())
}

__all__ = ["SOLVERS", "Result", "SolveOptions", "Solver", "get_solver"]


def get_solver(name: str) -> Solver:
    """Return the registered solver called ``name``.

    Raises
    ------
    KeyError
        With the known names, if there is no such solver.
    """
    try:
        return SOLVERS[name]
    except KeyError:
        raise KeyError(f"unknown method {name!r}; choose one of: {', '.join(SOLVERS)}") from None
