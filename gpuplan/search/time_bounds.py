"""Bounds on time-based objectives that need no search, shared by the time-based methods."""

from __future__ import annotations

from gpuplan.backends.highs import HighsBackend
from gpuplan.instance import Instance, ObjectiveKind
from gpuplan.models.bounds import objective_bound
from gpuplan.models.scheduling import workload_program
from gpuplan.solvers.base import SolveOptions
from gpuplan.status import Status


def simple_bound(instance: Instance, options: SolveOptions) -> float:
    """The best bound that needs no search: combinatorial, and the workload LP for makespan.

    The LP runs within ``options.time_limit_s``; when it stops before its optimum, only the
    combinatorial bound is returned (a stopped LP proves nothing).
    """
    bound = objective_bound(instance)
    if instance.objective is ObjectiveKind.MAKESPAN:
        solution = HighsBackend().solve_program(workload_program(instance), options)
        if solution.status is Status.OPTIMAL and solution.objective is not None:
            bound = max(bound, solution.objective)
    return bound
