"""Bounds on time-based objectives that need no search, shared by the time-based methods."""

from __future__ import annotations

from gpuplan.backends import get_backend
from gpuplan.backends.base import Limits
from gpuplan.instance import Instance, ObjectiveKind
from gpuplan.models.bounds import objective_bound
from gpuplan.models.scheduling import workload_program
from gpuplan.status import Status

#: The backend of the workload LP: an LP, which every method's bound solves the same way.
BOUND_BACKEND = "highs"


def simple_bound(instance: Instance, limits: Limits) -> float:
    """The best bound that needs no search: combinatorial, and the workload LP for makespan.

    The LP runs within ``limits`` (give it a part of the solve's budget); when it stops
    before its optimum, only the combinatorial bound is returned (a stopped LP proves
    nothing).
    """
    bound = objective_bound(instance)
    if instance.objective is ObjectiveKind.MAKESPAN:
        solution = get_backend(BOUND_BACKEND).solve_program(workload_program(instance), limits)
        if solution.status is Status.OPTIMAL and solution.objective is not None:
            bound = max(bound, solution.objective)
    return bound
