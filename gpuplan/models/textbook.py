"""The textbook models: what a user of this field writes first, for ``--method textbook``.

:class:`TextbookModel`, the plain assignment MILP:

Columns
    ``x[j, g]`` (binary) job ``j`` runs on GPU ``g``, for every GPU of a type it may use.
Rows
    each job on exactly one GPU (at most one where the objective lets jobs go unplaced);
    per GPU and resource, the placed demands within its capacity.

:class:`IntervalModel`, the plain CP-SAT model of unrelated machines for ``makespan``
batches that need sequencing: one optional interval per job and GPU, no overlap per GPU,
releases, deadlines and dependencies as bounds and precedences, durations rounded up to
whole seconds. Makespan batches with nothing to sequence (R||Cmax) get the assignment MILP
of :mod:`gpuplan.models.assignment_makespan` instead.

No sparsification by node, no symmetry breaking among identical GPUs, no strengthening,
no start plan: these are the peers that gpuplan's own models are measured against
(docs/benchmarks.md), and they cover what they cover in the literature, single-GPU jobs,
and objectives that add up over placed jobs or the makespan.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpuplan.core.budget import Budget
from gpuplan.core.instance import Instance, IntArray
from gpuplan.core.objectives import ObjectiveKind
from gpuplan.models.assignment import job_value
from gpuplan.models.linear import LazyNames, LinearProgram, RowBuilder, check_budget

#: Objectives that are a sum over placed jobs: the assignment MILP's.
ADDITIVE = frozenset({ObjectiveKind.ASSIGN_COST, ObjectiveKind.ASSIGN_PROFIT,
                      ObjectiveKind.MAX_WEIGHT})
#: Jobs whose intervals are made between two readings of the budget.
CLOCK_EVERY = 16


@dataclass(frozen=True)
class TextbookModel:
    """The textbook assignment model of an instance, and the job and GPU of each column.

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

    @classmethod
    def build(cls, instance: Instance, budget: Budget | None = None) -> TextbookModel:
        """Write the model out, one column per eligible (job, GPU) pair.

        Parameters
        ----------
        instance
            An instance of single-GPU jobs with an :data:`ADDITIVE` objective.
        budget
            The time building may take; None: no limit.

        Raises
        ------
        OutOfTimeError
            When the budget is spent before the model is built.
        """
        budget = budget or Budget()
        jobs, gpus = (a.astype(np.int64) for a in
                      np.nonzero(instance.eligible[:, instance.gpu_type]))
        types = instance.gpu_type[gpus]
        n_cols, n_jobs, n_res = jobs.size, instance.n_jobs, instance.packing_demand.shape[2]
        rows = RowBuilder()
        once = 0.0 if instance.objective.allows_unplaced else 1.0
        rows.add(jobs, np.arange(n_cols), np.ones(n_cols), np.full(n_jobs, once),
                 np.ones(n_jobs), [f"assign[{j}]" for j in instance.job_ids])
        check_budget(budget, "rows")
        gpu_ids = instance.gpu_ids
        resources = range(n_res)
        rows.add((gpus[:, None] * n_res + np.arange(n_res)).ravel(),
                 np.repeat(np.arange(n_cols), n_res), instance.packing_demand[jobs, types].ravel(),
                 np.full(instance.n_gpus * n_res, -np.inf),
                 instance.packing_capacity[instance.gpu_type].ravel(),
                 [f"capacity[{g},{r}]" for g in gpu_ids for r in resources])
        program = rows.program(
            instance.objective.sense, job_value(instance)[jobs, types], np.zeros(n_cols),
            np.ones(n_cols), np.ones(n_cols, dtype=bool),
            LazyNames(n_cols, lambda k: f"x[{instance.job_ids[jobs[k]]},{gpu_ids[gpus[k]]}]"))
        check_budget(budget, "matrix")
        return cls(program, jobs, gpus)


@dataclass(frozen=True)
class IntervalModel:
    """The textbook CP-SAT model of unrelated machines (``makespan``), and its variables.

    Attributes
    ----------
    model
        The ``CpModel``, minimising the makespan.
    starts
        Per job, its start variable (whole seconds).
    options
        Per job, its options: (presence literal, GPU, whole-second duration).
    """

    model: Any
    starts: list[Any]
    options: list[list[tuple[Any, int, int]]]

    @classmethod
    def build(cls, instance: Instance, budget: Budget | None = None) -> IntervalModel:
        """Write the model out, one optional interval per eligible (job, GPU) pair.

        Parameters
        ----------
        instance
            A ``makespan`` instance of single-GPU jobs.
        budget
            The time building may take; None: no limit.

        Raises
        ------
        OutOfTimeError
            When the budget is spent before the model is built.
        """
        budget = budget or Budget()
        # ortools is the modelling language here, as in the scheduling model.
        from ortools.sat.python import cp_model

        model = cp_model.CpModel()
        ticks = [[math.ceil(d) if math.isfinite(d) else -1 for d in row]
                 for row in instance.duration.tolist()]
        release = [math.ceil(r) for r in instance.release.tolist()]
        # Without deadlines a plan ends within this horizon: every job on its fastest type,
        # one after another in dependency order, after the last release.
        horizon = max(release, default=0) + sum(
            min(t for t in row if t >= 0) if any(t >= 0 for t in row) else 0 for row in ticks)
        makespan = model.new_int_var(0, horizon, "makespan")
        per_gpu: list[list[Any]] = [[] for _ in range(instance.n_gpus)]
        starts = []
        options: list[list[tuple[Any, int, int]]] = []
        for j in range(instance.n_jobs):
            if j % CLOCK_EVERY == 0:
                check_budget(budget, "intervals")
            start = model.new_int_var(release[j], horizon, f"s{j}")
            options_j = []
            for g in range(instance.n_gpus):
                t = int(instance.gpu_type[g])
                if not instance.eligible[j, t] or ticks[j][t] < 0:
                    continue
                present = model.new_bool_var(f"x{j}_{g}")
                per_gpu[g].append(model.new_optional_fixed_size_interval_var(
                    start, ticks[j][t], present, f"i{j}_{g}"))
                model.add(start + ticks[j][t] <= makespan).only_enforce_if(present)
                if math.isfinite(instance.deadline[j]):
                    model.add(start + ticks[j][t] <= math.floor(instance.deadline[j])
                              ).only_enforce_if(present)
                options_j.append((present, g, ticks[j][t]))
            model.add_exactly_one(p for p, _, _ in options_j)
            starts.append(start)
            options.append(options_j)
        check_budget(budget, "precedences")
        for j, preds in enumerate(instance.predecessors):
            for p in preds:
                for present, _, t in options[p]:
                    model.add(starts[j] >= starts[p] + t).only_enforce_if(present)
        for intervals in per_gpu:
            model.add_no_overlap(intervals)
        model.minimize(makespan)
        check_budget(budget, "objective")
        return cls(model, starts, options)
