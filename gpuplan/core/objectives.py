"""What a plan optimises: the objectives, their sets, and the value of a timed plan.

Static objectives place the whole batch at once; time-based ones build a timeline. The
sets here are what methods declare they plan (``Method.objectives``).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal, Protocol

import numpy as np
from numpy.typing import NDArray

from gpuplan.core.status import TOLERANCE


class ObjectiveKind(StrEnum):
    """What a plan optimises.

    Static objectives place the whole batch at once: every placed job holds its GPUs at the
    same time, so capacity is checked over all of them together and time fields (release,
    deadline, due date, dependencies) play no part. Time-based objectives build a timeline in
    which jobs start and end and GPUs are reused. ``deadlines-met`` (time-based) maximises
    the weight of the jobs that complete by their due date, and may leave jobs out
    (declined, as admission control declines them).
    """

    ASSIGN_COST = "assign-cost"
    ASSIGN_PROFIT = "assign-profit"
    MAX_WEIGHT = "max-weight"
    MIN_GPUS = "min-gpus"
    MIN_GPU_COST = "min-gpu-cost"
    MIN_MAX_LOAD = "min-max-load"
    MAKESPAN = "makespan"
    WEIGHTED_COMPLETION = "weighted-completion"
    TARDINESS = "tardiness"
    COST = "cost"
    DEADLINES_MET = "deadlines-met"

    @property
    def is_static(self) -> bool:
        """Whether the objective places the batch at once rather than over time."""
        return self in _STATIC

    @property
    def sense(self) -> Literal["min", "max"]:
        """Whether larger or smaller objective values are better."""
        return "max" if self in (ObjectiveKind.MAX_WEIGHT, ObjectiveKind.ASSIGN_PROFIT,
                                 ObjectiveKind.DEADLINES_MET) else "min"

    @property
    def allows_unplaced(self) -> bool:
        """Whether a feasible plan may leave jobs out (weight placed, or done in time, counts)."""
        return self in (ObjectiveKind.MAX_WEIGHT, ObjectiveKind.DEADLINES_MET)

    @property
    def needs_job_cost(self) -> bool:
        """Whether every eligible (job, GPU type) pair needs a cost."""
        return self in (ObjectiveKind.ASSIGN_COST, ObjectiveKind.COST)

    @property
    def needs_job_profit(self) -> bool:
        """Whether every eligible (job, GPU type) pair needs a profit."""
        return self is ObjectiveKind.ASSIGN_PROFIT

    @property
    def needs_gpu_price(self) -> bool:
        """Whether every GPU type needs ``cost_per_hour``."""
        return self is ObjectiveKind.MIN_GPU_COST


_STATIC = frozenset(
    {
        ObjectiveKind.ASSIGN_COST,
        ObjectiveKind.ASSIGN_PROFIT,
        ObjectiveKind.MAX_WEIGHT,
        ObjectiveKind.MIN_GPUS,
        ObjectiveKind.MIN_GPU_COST,
        ObjectiveKind.MIN_MAX_LOAD,
    }
)


#: The objectives that decide which jobs run at all, as admission control does: a method
#: plans one only if it names it among its objectives (none of the sets below holds it).
ADMISSION_OBJECTIVES = frozenset({ObjectiveKind.DEADLINES_MET})
#: Every objective, static and time-based, that a general method plans.
ALL_OBJECTIVES = frozenset(ObjectiveKind) - ADMISSION_OBJECTIVES
#: The objectives that place the whole batch at once.
STATIC_OBJECTIVES = frozenset(k for k in ObjectiveKind if k.is_static)
#: The objectives with a timeline that a general method plans.
TIME_OBJECTIVES = frozenset(k for k in ObjectiveKind if not k.is_static) - ADMISSION_OBJECTIVES


class Batch(Protocol):
    """What :func:`time_objective` reads of an :class:`~gpuplan.core.instance.Instance`."""

    @property
    def n_jobs(self) -> int:
        """Number of jobs."""
        ...

    @property
    def objective(self) -> ObjectiveKind:
        """The instance's objective."""
        ...

    @property
    def weight(self) -> NDArray[np.float64]:
        """``(J,)`` job weights."""
        ...

    @property
    def due(self) -> NDArray[np.float64]:
        """``(J,)`` due dates."""
        ...

    @property
    def cost(self) -> NDArray[np.float64]:
        """``(J, T)`` run costs."""
        ...


def time_objective(
    instance: Batch, job: NDArray[np.int64], gpu_type: NDArray[np.int64],
    end: NDArray[np.float64], kind: ObjectiveKind | None = None,
    work: NDArray[np.float64] | None = None,
) -> float:
    """The value of a time-based objective (the instance's by default) for a full plan.

    ``job``, ``gpu_type`` and ``end`` are per segment; a preemptible job may have several,
    each doing the share ``work`` of the job (1 by default). A job completes at its last
    segment's end.
    """
    completion = np.full(instance.n_jobs, -np.inf)
    np.maximum.at(completion, job, end)
    done = np.flatnonzero(np.isfinite(completion))
    finish = completion[done]
    match kind or instance.objective:
        case ObjectiveKind.MAKESPAN:
            return float(finish.max(initial=0.0))
        case ObjectiveKind.WEIGHTED_COMPLETION:
            return float((instance.weight[done] * finish).sum())
        case ObjectiveKind.TARDINESS:
            late = np.maximum(0.0, finish - instance.due[done])
            return float((instance.weight[done] * late).sum())
        case ObjectiveKind.COST:
            share = np.ones(job.size) if work is None else work
            return float((instance.cost[job, gpu_type] * share).sum())
        case ObjectiveKind.DEADLINES_MET:
            return float(instance.weight[done][met_due(finish, instance.due[done])].sum())
    raise AssertionError(f"{kind or instance.objective} is not a time-based objective")


def met_due(completion: NDArray[np.float64], due: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Whether each job, completing at ``completion``, is done by its ``due`` date.

    Within the verifier's tolerance on times (a job with no due date, ``inf``, always is).
    """
    finite = np.isfinite(due)
    slack = TOLERANCE + 8.0 * np.spacing(np.abs(np.where(finite, due, 0.0)))
    met: NDArray[np.bool_] = ~finite | (completion <= due + slack)
    return met
