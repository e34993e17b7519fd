"""Makespan as the largest GPU load, for batches that need no sequencing decisions.

When every job is a single-GPU job, no two jobs can share a GPU, all jobs are released
together and there are no dependencies or deadlines, any order of a GPU's jobs is as good
as any other: the jobs run back to back from the common release, and the makespan is the
release plus the largest load. Planning is then only assignment: the unrelated parallel
machine problem R||Cmax, which :mod:`gpuplan.models.assignment_makespan` formulates and
:mod:`gpuplan.parts.unrelated_machines` solves; :func:`back_to_back` turns an assignment
into start times.
"""

from __future__ import annotations

import numpy as np

from gpuplan.core.instance import FloatArray, Instance, IntArray
from gpuplan.core.objectives import ObjectiveKind
from gpuplan.models.scheduling import exclusive_types


def sequencing_free(instance: Instance) -> bool:
    """Whether the makespan of the best plan is its common release plus the largest load."""
    return bool(
        instance.objective is ObjectiveKind.MAKESPAN
        and (instance.gang == 1).all()
        and not any(instance.predecessors)
        and len(set(instance.release.tolist())) <= 1
        and not np.isfinite(instance.deadline).any()
        and exclusive_types(instance).all()
        # Node resources tie the GPUs of a node together: no longer machines apart.
        and not instance.features
    )


def back_to_back(
    instance: Instance, gpu: IntArray
) -> tuple[IntArray, IntArray, tuple[IntArray, ...], FloatArray, FloatArray]:
    """The plan that runs job ``j`` on GPU ``gpu[j]``: each GPU's jobs back to back.

    They start at the common release, in job order. Returns the segments' job, GPU type,
    GPUs, start and end, as :class:`~gpuplan.core.result.Result` takes them.
    """
    job = np.arange(instance.n_jobs, dtype=np.int64)
    types = instance.gpu_type[gpu].astype(np.int64)
    duration = instance.duration[job, types]
    start = np.zeros(instance.n_jobs)
    end = np.zeros(instance.n_jobs)
    free = np.full(instance.n_gpus, float(instance.release.max(initial=0.0)))
    for j in job.tolist():
        # The next start is exactly the float the previous end holds: no overlap.
        start[j] = free[gpu[j]]
        end[j] = free[gpu[j]] = start[j] + duration[j]
    return job, types, tuple(gpu[:, None]), start, end
