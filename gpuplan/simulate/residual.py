"""The residual instance: what is left of a run at one instant, as an offline problem.

At simulated time ``now`` the active jobs (arrived, predecessors done, not finished) with
the work they have left form a closed batch that any registered method can plan. Times in
the residual instance count from ``now``; everything that is left is available at once.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from gpuplan.core.instance import FloatArray, Instance, IntArray
from gpuplan.core.objectives import ObjectiveKind


def residual_instance(instance: Instance, jobs: IntArray, remaining: FloatArray,
                      resume_s: FloatArray, now: float,
                      objective: ObjectiveKind = ObjectiveKind.WEIGHTED_COMPLETION) -> Instance:
    """The jobs ``jobs`` with the work they have left, as a batch released at ``now``.

    Parameters
    ----------
    instance
        The run's instance.
    jobs
        The active jobs, by index into ``instance``; their predecessors have completed.
    remaining
        ``(len(jobs),)`` share of each job's work left, in ``(0, 1]``.
    resume_s
        ``(len(jobs),)`` seconds each job pays before it works again if it starts now
        (the restore overhead of a paused job; 0 for one that never ran or runs now).
    now
        The instant; due dates count from it.
    objective
        What plans of the residual batch optimise.

    Returns
    -------
    Instance
        Jobs in the order of ``jobs`` (job ``k`` of the result is ``jobs[k]``), the same
        cluster; durations are ``remaining * duration + resume_s`` (an elastic job's work
        is ``remaining * work``: :meth:`~gpuplan.core.instance.Instance.work_left`),
        releases 0, no dependencies and no hard deadlines.
    """
    n = jobs.size
    return dataclasses.replace(
        instance.take(jobs).work_left(remaining, resume_s), name=f"{instance.name}@{now:g}s",
        release=np.zeros(n), deadline=np.full(n, np.inf),
        due=np.maximum(0.0, instance.due[jobs] - now), predecessors=((),) * n,
        objective=objective)
