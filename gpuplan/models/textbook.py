"""The textbook assignment model: the plain MILP a user of this field writes first.

Columns
    ``x[j, g]`` (binary) job ``j`` runs on GPU ``g``, for every GPU of a type it may use.
Rows
    each job on exactly one GPU (at most one where the objective lets jobs go unplaced);
    per GPU and resource, the placed demands within its capacity.

No sparsification by node, no symmetry breaking among identical GPUs, no strengthening:
this is the peer that gpuplan's own assignment model is measured against
(``--method textbook``, docs/benchmarks.md), and it covers what it covers in the
literature, single-GPU jobs and objectives that add up over placed jobs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from gpuplan.instance import Instance, IntArray, ObjectiveKind
from gpuplan.models.assignment import job_value
from gpuplan.models.linear import LazyNames, LinearProgram, RowBuilder, check_deadline

#: Objectives that are a sum over placed jobs.
ADDITIVE = frozenset({ObjectiveKind.ASSIGN_COST, ObjectiveKind.ASSIGN_PROFIT,
                      ObjectiveKind.MAX_WEIGHT})


@dataclass(frozen=True)
class TextbookModel:
    """The textbook model of an instance, and the job and GPU of each column.

    Attributes
    ----------
    program
        The canonical program.
    x_job, x_gpu
        Job and GPU of each column.
    """

    program: LinearProgram
    x_job: IntArray
    x_gpu: IntArray

    @staticmethod
    def supports(instance: Instance) -> bool:
        """Single-GPU jobs and an additive objective."""
        return instance.objective in ADDITIVE and bool((instance.gang == 1).all())

    @classmethod
    def build(cls, instance: Instance, deadline: float = math.inf) -> TextbookModel:
        """Write the model out, one column per eligible (job, GPU) pair.

        Raises
        ------
        OutOfTimeError
            When ``deadline`` (a ``time.perf_counter()`` time) passes before it is built.
        """
        jobs, gpus = (a.astype(np.int64) for a in
                      np.nonzero(instance.eligible[:, instance.gpu_type]))
        types = instance.gpu_type[gpus]
        n_cols, n_jobs, n_res = jobs.size, instance.n_jobs, instance.demand.shape[2]
        rows = RowBuilder()
        once = 0.0 if instance.objective.allows_unplaced else 1.0
        rows.add(jobs, np.arange(n_cols), np.ones(n_cols), np.full(n_jobs, once),
                 np.ones(n_jobs), [f"assign[{j}]" for j in instance.job_ids])
        check_deadline(deadline, "rows")
        gpu_ids = instance.gpu_ids
        resources = range(n_res)
        rows.add((gpus[:, None] * n_res + np.arange(n_res)).ravel(),
                 np.repeat(np.arange(n_cols), n_res), instance.demand[jobs, types].ravel(),
                 np.full(instance.n_gpus * n_res, -np.inf),
                 instance.capacity[instance.gpu_type].ravel(),
                 [f"capacity[{g},{r}]" for g in gpu_ids for r in resources])
        program = rows.program(
            instance.objective.sense, job_value(instance)[jobs, types], np.zeros(n_cols),
            np.ones(n_cols), np.ones(n_cols, dtype=bool),
            LazyNames(n_cols, lambda k: f"x[{instance.job_ids[jobs[k]]},{gpu_ids[gpus[k]]}]"))
        check_deadline(deadline, "matrix")
        return cls(program, jobs, gpus)
