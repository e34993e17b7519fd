"""Makespan as the largest GPU load, for batches that need no sequencing decisions.

When every job is a single-GPU job, no two jobs can share a GPU, all jobs are released
together and there are no dependencies or deadlines, any order of a GPU's jobs is as good
as any other: the jobs run back to back from the common release, and the makespan is the
release plus the largest load. Planning is then only assignment: the unrelated parallel
machine problem R||Cmax. Its assignment model (one literal per job and eligible GPU, a
load row per GPU) has the machine loads in its LP relaxation; the interval model, whose
start variables add nothing here, reaches the same optimum far more slowly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from gpuplan.instance import BoolArray, FloatArray, Instance, IntArray, ObjectiveKind
from gpuplan.models.scheduling import TickScale, exclusive_types


def sequencing_free(instance: Instance) -> bool:
    """Whether the makespan of the best plan is its common release plus the largest load."""
    return bool(
        instance.objective is ObjectiveKind.MAKESPAN
        and (instance.gang == 1).all()
        and not any(instance.predecessors)
        and len(set(instance.release.tolist())) <= 1
        and not np.isfinite(instance.deadline).any()
        and exclusive_types(instance).all()
    )


def _twin_of_previous(instance: Instance) -> BoolArray:
    """``(G,)`` whether each GPU has the previous GPU's node and type (the first: False)."""
    node, gpu_type = instance.gpu_node, instance.gpu_type
    twin: BoolArray = np.r_[False, (node[1:] == node[:-1]) & (gpu_type[1:] == gpu_type[:-1])]
    return twin


@dataclass
class MachineLoadModel:
    """A CP-SAT model of R||Cmax over the GPUs of a sequencing-free instance.

    Build it with :meth:`build`. The objective is the release plus the largest load in
    ticks, so :attr:`objective_scale` is the tick; :attr:`exact` is the tick's exactness.
    """

    instance: Instance
    scale: TickScale
    model: Any
    #: Per job, each eligible GPU's literal.
    on_gpu: list[dict[int, Any]]
    #: ``(J, T)`` durations in ticks.
    ticks: IntArray
    makespan: Any
    objective_scale: float
    exact: bool

    @classmethod
    def build(cls, instance: Instance, scale: TickScale) -> MachineLoadModel:
        """Formulate a sequencing-free instance (see :func:`sequencing_free`)."""
        from ortools.sat.python import cp_model

        model = cp_model.CpModel()
        gpu_type = instance.gpu_type
        ticks = scale.up(np.where(instance.eligible, instance.duration, 0.0))
        fastest = np.where(instance.eligible, ticks, np.iinfo(np.int64).max).min(axis=1)
        release = int(scale.up(instance.release.max(initial=0.0)))
        makespan = model.new_int_var(release, release + int(fastest.sum()), "makespan")
        on_gpu: list[dict[int, Any]] = []
        load: list[list[Any]] = [[] for _ in range(instance.n_gpus)]
        for j in range(instance.n_jobs):
            options = {int(g): model.new_bool_var(f"on_{j}_{g}")
                       for g in np.flatnonzero(instance.eligible[j, gpu_type])}
            model.add_exactly_one(options.values())
            for g, literal in options.items():
                load[g].append(int(ticks[j, gpu_type[g]]) * literal)
            on_gpu.append(options)
        loads = [model.new_int_var(0, int(fastest.sum()), f"load_{g}")
                 for g in range(instance.n_gpus)]
        for g, terms in enumerate(load):
            model.add(loads[g] == sum(terms))
            model.add(release + loads[g] <= makespan)
        # Twins (same node and type) are interchangeable: order their loads.
        for twin in np.flatnonzero(_twin_of_previous(instance)[1:]).tolist():
            model.add(loads[twin] >= loads[twin + 1])
        model.minimize(makespan)
        return cls(instance, scale, model, on_gpu, ticks, makespan, scale.tick_s, scale.exact)

    def hint(self, job: IntArray, gpus: tuple[IntArray, ...], start_s: FloatArray) -> None:
        """Offer a known plan's assignment as the search's first guess.

        The plan's GPUs are renamed among twins so that their loads decrease, as the model
        orders them: a plan seldom has that order, and without the renaming the hint broke
        the ordering rows (CP-SAT then had to repair it). Renaming twins changes nothing
        else in the plan. ``start_s`` is not needed: each GPU's jobs run back to back from
        the common release.
        """
        self.model.clear_hints()
        instance = self.instance
        gpu_type = instance.gpu_type
        gpu = np.array([int(used[0]) for used in gpus], dtype=np.int64)
        load = np.zeros(instance.n_gpus, dtype=np.int64)
        np.add.at(load, gpu, self.ticks[job, gpu_type[gpu]])
        rename = np.arange(instance.n_gpus)
        first = np.flatnonzero(~_twin_of_previous(instance))
        for begin, stop in zip(first, np.r_[first[1:], instance.n_gpus], strict=True):
            run = np.arange(begin, stop)
            rename[run[np.argsort(-load[run], kind="stable")]] = run
        for j, g in zip(job.tolist(), rename[gpu].tolist(), strict=True):
            for other, literal in self.on_gpu[j].items():
                self.model.add_hint(literal, other == g)
        release = int(self.scale.up(instance.release.max(initial=0.0)))
        self.model.add_hint(self.makespan, release + int(load.max(initial=0)))

    def decode(
        self, solver: Any
    ) -> tuple[IntArray, IntArray, tuple[IntArray, ...], FloatArray, FloatArray]:
        """The plan of the solver's assignment (:func:`back_to_back`)."""
        return back_to_back(self.instance, np.array(
            [next(g for g, lit in options.items() if solver.boolean_value(lit))
             for options in self.on_gpu], dtype=np.int64))


def back_to_back(
    instance: Instance, gpu: IntArray
) -> tuple[IntArray, IntArray, tuple[IntArray, ...], FloatArray, FloatArray]:
    """The plan that runs job ``j`` on GPU ``gpu[j]``: each GPU's jobs back to back.

    They start at the common release, in job order. Returns the segments' job, GPU type,
    GPUs, start and end, as :class:`~gpuplan.solution.Result` takes them.
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
