"""Bounds on time-based objectives that need no search, shared by the time-based methods."""

from __future__ import annotations

from gpuplan.backends import get_backend
from gpuplan.backends.base import Limits
from gpuplan.instance import Instance, ObjectiveKind
from gpuplan.models.bounds import objective_bound
from gpuplan.models.energetic import energetic_bound

#: The backend of the bounding LPs, which every method's bound solves the same way.
BOUND_BACKEND = "highs"


def simple_bound(instance: Instance, limits: Limits) -> float:
    """The best bound that needs no search: combinatorial, and the window LPs for makespan.

    For makespan, :func:`~gpuplan.models.energetic.energetic_bound` runs within ``limits``
    (give it a part of the solve's budget): the workload LP with completion times,
    windows and packing rows, then trial makespans refuted by energetic reasoning. What
    it proved before the budget ran out is kept (a stopped LP proves nothing, so a solve
    cut short adds nothing); the combinatorial bound is always there.
    """
    bound = objective_bound(instance)
    if instance.objective is ObjectiveKind.MAKESPAN:
        bound = energetic_bound(instance, get_backend(BOUND_BACKEND), limits, bound).value
    return bound
