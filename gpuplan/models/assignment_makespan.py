"""The assignment MILP of R||Cmax: the makespan model of batches with nothing to sequence.

Columns
    ``x[j, g]`` (binary) job ``j`` runs on GPU ``g``, for every GPU of a type it may use;
    ``C`` the largest load (continuous, or integer for a backend with integer columns only).
Rows
    each job on exactly one GPU; per GPU, ``sum_j p[j, g] x[j, g] - C <= 0``.

Minimise ``C``. It is the model an operations-research user writes for the unrelated
parallel machine problem, the peer ``--method textbook`` hands to ``--solver``, and the
model of the branch-and-cut lane of ``--method cp`` on such batches
(:mod:`gpuplan.parts.unrelated_machines`). The makespan of a plan is the common release
plus ``C`` (:func:`~gpuplan.models.machine_load.sequencing_free`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from gpuplan.core.instance import BoolArray, FloatArray, Instance, IntArray
from gpuplan.models.linear import LazyNames, LinearProgram, RowBuilder


@dataclass(frozen=True)
class AssignmentMakespanModel:
    """The assignment MILP of a sequencing-free instance, and the job and GPU of each column.

    Attributes
    ----------
    program
        The canonical program; its last column is ``C``.
    x_job, x_gpu
        Job and GPU of each assignment column (all columns but the last).
    column
        ``(J, G)`` the column of each (job, GPU) pair, -1 where the job may not use the GPU.
    """

    program: LinearProgram
    x_job: IntArray
    x_gpu: IntArray
    column: IntArray

    @classmethod
    def build(cls, instance: Instance, duration: FloatArray | IntArray,
              integer_makespan: bool) -> AssignmentMakespanModel:
        """Write the model of an instance out, one column per eligible (job, GPU) pair.

        Parameters
        ----------
        instance
            A sequencing-free instance.
        duration
            ``(J, T)`` the durations in the model's unit (seconds, or whole ticks when
            ``integer_makespan``).
        integer_makespan
            Whether ``C`` is an integer column (for a backend without continuous ones).
        """
        gpu_type = instance.gpu_type
        return cls.of_times(duration[:, gpu_type], instance.eligible[:, gpu_type],
                            integer_makespan, instance.job_ids, instance.gpu_ids)

    @classmethod
    def of_times(cls, times: FloatArray | IntArray, eligible: BoolArray,
                 integer_makespan: bool, job_ids: Sequence[str],
                 gpu_ids: Sequence[str]) -> AssignmentMakespanModel:
        """Write the model of ``(J, G)`` processing times out (a whole batch or a part).

        Parameters
        ----------
        times
            ``(J, G)`` each job's duration on each GPU, read where ``eligible``.
        eligible
            ``(J, G)`` whether the job may run on the GPU.
        integer_makespan
            Whether ``C`` is an integer column.
        job_ids, gpu_ids
            Names of the rows and columns.
        """
        jobs, gpus = (a.astype(np.int64) for a in np.nonzero(eligible))
        p = times[jobs, gpus].astype(float)
        n_x, (n_jobs, n_gpus) = jobs.size, eligible.shape
        rows = RowBuilder()
        rows.add(jobs, np.arange(n_x), np.ones(n_x), np.ones(n_jobs), np.ones(n_jobs),
                 LazyNames(n_jobs, lambda j: f"assign[{job_ids[j]}]"))
        rows.add(np.r_[gpus, np.arange(n_gpus)], np.r_[np.arange(n_x), np.full(n_gpus, n_x)],
                 np.r_[p, -np.ones(n_gpus)], np.full(n_gpus, -np.inf), np.zeros(n_gpus),
                 LazyNames(n_gpus, lambda g: f"load[{gpu_ids[g]}]"))
        # Every plan's largest load is at most the sum of each job's slowest duration.
        slowest = np.where(eligible, times, 0).max(axis=1, initial=0).sum()
        program = rows.program(
            "min", np.r_[np.zeros(n_x), 1.0], np.zeros(n_x + 1),
            np.r_[np.ones(n_x), np.ceil(slowest)], np.r_[np.ones(n_x, dtype=bool),
                                                         integer_makespan],
            LazyNames(n_x + 1, lambda k: "C" if k == n_x
                      else f"x[{job_ids[jobs[k]]},{gpu_ids[gpus[k]]}]"))
        column = np.full((n_jobs, n_gpus), -1, dtype=np.int64)
        column[jobs, gpus] = np.arange(n_x)
        return cls(program, jobs, gpus, column)

    def encode(self, gpu: IntArray, makespan: float) -> FloatArray:
        """Column values of the plan that runs job ``j`` on GPU ``gpu[j]``, with ``C``."""
        values = np.zeros(self.program.n_cols)
        values[self.column[np.arange(gpu.size), gpu]] = 1.0
        values[-1] = makespan
        return values

    def decode(self, values: FloatArray) -> IntArray:
        """The GPU of each job in a solution's column values."""
        chosen = np.flatnonzero(np.round(values[:-1]) > 0.5)
        gpu = np.full(int(self.column.shape[0]), -1, dtype=np.int64)
        gpu[self.x_job[chosen]] = self.x_gpu[chosen]
        return gpu
