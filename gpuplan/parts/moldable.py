"""Moldable planning of elastic jobs: each runs whole on one GPU count it chooses.

An elastic job (:attr:`~gpuplan.core.instance.Instance.elastic`) may run on any count of
its speed table. Planning a batch, ``greedy`` and ``cp`` give it one *shape* for its whole
run: a GPU type and a count ``c`` with a speed there, laid out as
:meth:`~gpuplan.core.instance.Instance.piece_nodes` says, for ``rescale_s + work / speed``
seconds (one piece, which pays its restore overhead once, at its start).

:class:`Shapes` lists every job's shapes as the rows of a *table*: a rigid instance on the
same fleet with one row per (job, count, GPUs per node), whose ``gang``, ``gpus_per_node``,
``duration`` and ``eligible`` are those of the shape, everything else the job's. Rigid
jobs are one row, as they are. The parts that place a gang (list scheduling's
:class:`~gpuplan.parts.free_gpus.FreeGpus`, the CP-SAT model) read a row where they read a
job, and the plan names the job. A count is dropped where a smaller count of the same
type is at least as fast: any plan running the larger count runs the smaller on a subset
of its GPUs no later, so no objective loses by the pruning.

With ``moldable`` false each elastic job runs at its reference count (its ``gang``), as a
gang scheduler would run it, and the table is the instance itself.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpuplan.core.budget import Budget
from gpuplan.core.instance import FloatArray, Instance, IntArray
from gpuplan.core.objectives import ObjectiveKind, time_objective
from gpuplan.core.options import option, parse_bool
from gpuplan.core.result import Result, better, plan_status
from gpuplan.models.bounds import objective_bound
from gpuplan.parts.construct import NOT_REACHED, expired, list_order, ready_at
from gpuplan.parts.free_gpus import FreeGpus, Slot

#: The list scheduler's passes: each job takes the shape that ends first among those whose
#: GPU-seconds are at most its least GPU-seconds over this share (0: any shape). Taking the
#: earliest end alone lets the first jobs take the whole fleet at a poor speedup per GPU
#: and the others wait; the tighter passes keep the batch's work near its least.
EFFICIENCY = (0.0, 0.5, 0.75, 1.0)


def moldable_option() -> Any:
    """The ``moldable`` option, as every method that plans elastic jobs declares it."""
    return option(True, "--moldable", "elastic jobs choose their GPU type and count for "
                  "the whole run (default: true); false: each runs at the count it asked "
                  "for", parse=parse_bool, metavar="BOOL")


@dataclass(frozen=True)
class Shapes:
    """Every job's ways to run whole: the rows of a rigid table, and whose row each is.

    Attributes
    ----------
    table
        A rigid instance with a row per shape (see the module); the instance itself when
        no job has a choice.
    job
        ``(rows,)`` the job of each row.
    rows
        Per job, its rows.
    """

    table: Instance
    job: IntArray
    rows: tuple[tuple[int, ...], ...]

    @classmethod
    def of(cls, instance: Instance, moldable: bool = True) -> Shapes:
        """The shapes of the instance's jobs; only their reference shape unless ``moldable``."""
        n = instance.n_jobs
        if not moldable or not instance.elastic.any():
            return cls(instance, np.arange(n, dtype=np.int64),
                       tuple((j,) for j in range(n)))
        job: list[int] = []
        count: list[int] = []
        per_node: list[int] = []
        duration: list[FloatArray] = []
        for j in range(n):
            shapes = _shapes(instance, j) if instance.elastic[j] else {}
            if not shapes:
                # A rigid job, or an elastic one with no shape (left out with the reason
                # its reference row gives).
                shapes = {(int(instance.gang[j]), int(instance.gpus_per_node[j])):
                          np.where(instance.eligible[j], instance.duration[j], np.nan)}
            for (c, k), seconds in shapes.items():
                job.append(j)
                count.append(c)
                per_node.append(k)
                duration.append(seconds)
        rows = np.array(job, dtype=np.int64)
        ids = [f"{instance.job_ids[j]}@{c}" for j, c in zip(job, count, strict=True)]
        # Rows of one job are copies: dependencies are the instance's, kept by the planners.
        loose = dataclasses.replace(instance, predecessors=((),) * n)
        table = loose.take(rows, ids)
        seconds = np.array(duration)
        elastic = instance.elastic[rows]
        preferred = table.preferred_level
        if instance.levels:
            # A piece's speed is its table's, wherever its nodes are.
            preferred = np.where(elastic, -1, preferred)
        table = dataclasses.replace(
            table, gang=np.array(count, dtype=np.int64),
            gpus_per_node=np.array(per_node, dtype=np.int64), duration=seconds,
            eligible=np.where(elastic[:, None], ~np.isnan(seconds), table.eligible),
            preferred_level=preferred, counts=np.zeros(0, dtype=np.int64),
            speed=np.zeros((0, 0, 0)), work=np.zeros(0), rescale_s=np.zeros(0))
        mine: list[list[int]] = [[] for _ in range(n)]
        for r, j in enumerate(job):
            mine[j].append(r)
        return cls(table, rows, tuple(tuple(m) for m in mine))

    @property
    def identity(self) -> bool:
        """Whether every job has one row, its own: the table is the instance."""
        return self.job.size == len(self.rows) and bool(
            (self.job == np.arange(self.job.size)).all())

    def row_of(self, j: int, gpus: IntArray) -> int:
        """The row of job ``j`` that holds these GPUs; -1 if none does.

        Its count is theirs, and so is its layout (GPUs per node).
        """
        table = self.table
        nodes = np.unique(table.gpu_node[gpus]).size if gpus.size else 1
        for r in self.rows[j]:
            if int(table.gang[r]) == gpus.size and (
                    not gpus.size or int(table.gpus_per_node[r]) * nodes == gpus.size):
                return r
        return -1


def _shapes(instance: Instance, j: int) -> dict[tuple[int, int], FloatArray]:
    """Elastic job ``j``'s undominated shapes: (count, GPUs per node) to seconds per type.

    NaN where the shape cannot run on the type; a count is dropped on a type where a smaller
    one runs at least as fast (see the module).
    """
    fits = (instance.packing_demand[j] <= instance.packing_capacity + 1e-9).all(axis=1)
    fastest = np.full(instance.n_types, np.inf)
    shapes: dict[tuple[int, int], FloatArray] = {}
    for k, c in enumerate(instance.counts.tolist()):
        for t in np.flatnonzero(fits & (instance.speed[j, :, k] > 0)).tolist():
            nodes = instance.piece_nodes(t, c)
            seconds = float(instance.rescale_s[j] + instance.work[j] / instance.speed[j, t, k])
            if not nodes or seconds >= fastest[t]:
                continue
            fastest[t] = seconds
            key = (c, c if nodes == 1 else int(instance.node_size[t]))
            shapes.setdefault(key, np.full(instance.n_types, np.nan))[t] = seconds
    return shapes


def relaxation(instance: Instance, shapes: Shapes) -> Instance:
    """A rigid instance whose optimum bounds the moldable one's: elastic jobs on one GPU.

    Each elastic job holds one GPU for its shortest time on each type over its shapes. A
    moldable plan gives a plan of it (keep one of each job's GPUs, end it sooner), so every
    bound of the relaxation bounds the instance (for the time-based objectives, which no
    earlier end makes worse).
    """
    if shapes.identity:
        return instance
    table = shapes.table
    shortest = np.full((instance.n_jobs, instance.n_types), np.inf)
    np.fmin.at(shortest, shapes.job, np.where(table.eligible, table.duration, np.inf))
    elastic = instance.elastic & np.isfinite(shortest).any(axis=1)
    one = np.where(elastic, 1, instance.gang)
    return dataclasses.replace(
        instance, gang=one, gpus_per_node=np.where(elastic, 1, instance.gpus_per_node),
        duration=np.where(elastic[:, None], np.where(np.isfinite(shortest), shortest, np.nan),
                          instance.duration),
        eligible=np.where(elastic[:, None], np.isfinite(shortest), instance.eligible),
        counts=np.zeros(0, dtype=np.int64), speed=np.zeros((0, 0, 0)), work=np.zeros(0),
        rescale_s=np.zeros(0))


def moldable_bound(instance: Instance, shapes: Shapes) -> float:
    """A valid bound for moldable plans: the relaxation's, for makespan also the GPU-seconds.

    For makespan, the least GPU-seconds of every job over its shapes fill the fleet's GPUs
    after the earliest release at best.
    """
    bound = objective_bound(relaxation(instance, shapes))
    if instance.objective is not ObjectiveKind.MAKESPAN or shapes.identity:
        return bound
    table = shapes.table
    area = np.where(table.eligible, table.gang[:, None] * table.duration, np.inf).min(axis=1)
    least = np.full(instance.n_jobs, np.inf)
    np.minimum.at(least, shapes.job, area)
    if not np.isfinite(least).all() or not instance.n_gpus:
        return bound
    return max(bound, float(instance.release.min(initial=0.0)
                            + least.sum() / instance.n_gpus))


def as_pieces(instance: Instance, plan: Result) -> Result:
    """A plan of whole jobs, its elastic segments stated as pieces.

    Each segment does its job's whole work, and an elastic job's pays its restore overhead
    (``rescale_s``) at its start: the verifier reads a piece's progress from these.
    """
    if not instance.elastic.any() or not plan.status.has_plan:
        return plan
    job = plan.job
    restore = np.where(instance.elastic[job], instance.rescale_s[job], 0.0)
    return dataclasses.replace(plan, work=np.ones(job.size), restore_s=restore)


def at_counts_asked(instance: Instance, plan: Result) -> Result:
    """A plan that runs elastic jobs at the counts they asked for, as a plan of the instance.

    Its pieces stated (:func:`as_pieces`), and its bound dropped where some job is elastic:
    a bound of runs at the counts asked for bounds no plan that chooses them.
    """
    if not instance.elastic.any():
        return plan
    return as_pieces(instance, dataclasses.replace(
        plan, bound=None, status=plan_status(plan.objective, None)
        if plan.status.has_plan else plan.status))


def moldable_list_schedule(instance: Instance, shapes: Shapes,
                           budget: Budget | None = None) -> Result:
    """List scheduling that gives each job one of its shapes: the best of a few passes.

    Each pass (:data:`EFFICIENCY`) takes jobs in list scheduling's priority order
    (:func:`~gpuplan.parts.construct.list_order`, on the shortest shape of each) and
    places each at its earliest end on whole GPUs, over its shapes within the pass's share
    of its least GPU-seconds (ties: fewer GPUs, then the lower type), meeting its deadline
    where any does; its segments are stated as pieces (:func:`as_pieces`). Jobs not reached
    when ``budget`` is spent are left out.
    """
    order = list_order(relaxation(instance, shapes))
    best: Result | None = None
    for efficiency in EFFICIENCY:
        found = _pass(instance, shapes, order, efficiency, budget)
        best = found if best is None else better(instance, best, found)
        if budget is not None and budget.spent():
            break
    assert best is not None
    return best


def _pass(instance: Instance, shapes: Shapes, order: list[int], efficiency: float,
          budget: Budget | None) -> Result:
    """One list-scheduling pass over the shapes (see :func:`moldable_list_schedule`)."""
    table = shapes.table
    fleet = FreeGpus(table)
    end = np.full(instance.n_jobs, np.nan)
    placed: list[tuple[int, Slot]] = []
    unplaced: dict[int, str] = {}
    area = table.gang[:, None] * np.where(table.eligible, table.duration, np.inf)
    for done, j in enumerate(order):
        if expired(budget, done):
            unplaced.update(dict.fromkeys(order[done:], NOT_REACHED))
            break
        ready = ready_at(instance, j, end)
        if isinstance(ready, str):
            unplaced[j] = ready
            continue
        least = float(area[list(shapes.rows[j])].min())
        slots = [(r, found) for r in shapes.rows[j]
                 for t in np.flatnonzero(table.eligible[r]).tolist()
                 if area[r, t] * efficiency <= least * (1 + 1e-9)
                 and (found := fleet.earliest(r, t, ready)) is not None]
        if not slots:
            unplaced[j] = ("no GPU it may run on is up" if instance.node_demand.size == 0
                           else "no node it may run on is up with room for it")
            continue
        finish = np.array([found.end for _, found in slots])
        on_time = finish <= instance.deadline[j]
        if not on_time.any():
            unplaced[j] = (f"its earliest finish {finish.min():g} s is after its "
                           f"deadline {instance.deadline[j]:g} s")
            continue
        types = np.array([found.gpu_type for _, found in slots])
        gangs = np.array([int(table.gang[r]) for r, _ in slots])
        cost = np.nan_to_num(instance.cost[j, types], nan=0.0)
        if instance.objective is ObjectiveKind.COST:
            pick = np.lexsort((types, gangs, finish, cost, ~on_time))[0]
        else:
            pick = np.lexsort((types, gangs, cost, finish))[0]
        r, slot = slots[int(pick)]
        fleet.take(r, slot)
        end[j] = slot.end
        placed.append((j, slot))
    return _result(instance, shapes, placed, unplaced)


def _result(instance: Instance, shapes: Shapes, placed: list[tuple[int, Slot]],
            unplaced: dict[int, str]) -> Result:
    """The pass's plan, with the moldable bound; no plan when some job is left out."""
    bound = moldable_bound(instance, shapes)
    job = np.array([j for j, _ in placed], dtype=np.int64)
    types = np.array([slot.gpu_type for _, slot in placed], dtype=np.int64)
    end = np.array([slot.end for _, slot in placed])
    value = None if unplaced else time_objective(instance, job, types, end)
    plan = Result(
        status=plan_status(value, bound), objective=value, bound=bound,
        solver="gpuplan-greedy (moldable)", job=job, gpu_type=types,
        gpus=tuple(slot.gpus for _, slot in placed),
        start=np.array([slot.start for _, slot in placed]), end=end,
        node=np.array([slot.node for _, slot in placed], dtype=np.int64),
        unplaced=unplaced)
    return as_pieces(instance, plan)
