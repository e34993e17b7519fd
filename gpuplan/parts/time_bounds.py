"""Bounds on time-based objectives that need no search, shared by the time-based methods."""

from __future__ import annotations

from gpuplan.backends import get_backend
from gpuplan.core.budget import Limits
from gpuplan.core.instance import Instance
from gpuplan.core.objectives import ObjectiveKind
from gpuplan.core.status import Status
from gpuplan.models.bounds import objective_bound
from gpuplan.models.energetic import energetic_bound
from gpuplan.models.scheduling import workload_program

#: The backend of the bounding LPs, which every method's bound solves the same way.
BOUND_BACKEND = "highs"


def simple_bound(instance: Instance, limits: Limits) -> float:
    """The best bound that needs no search: combinatorial, and LPs for makespan.

    For makespan, within ``limits`` (give it a part of the solve's budget): the workload
    LP (:func:`~gpuplan.models.scheduling.workload_program`, the quickest), then
    :func:`~gpuplan.models.energetic.energetic_bound` (the window LP with completion
    times, windows and packing rows, then trial makespans refuted by energetic
    reasoning). What was proven before the budget ran out is kept; an LP cut short
    proves nothing and adds nothing, and the combinatorial bound is always there.
    """
    bound = objective_bound(instance)
    if instance.objective is ObjectiveKind.MAKESPAN:
        backend = get_backend(BOUND_BACKEND)
        solution = backend.solve_program(workload_program(instance), limits)
        if solution.status is Status.OPTIMAL and solution.objective is not None:
            bound = max(bound, solution.objective)
        bound = energetic_bound(instance, backend, limits, bound).value
    return bound
