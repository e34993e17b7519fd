"""LP-guided list scheduling: each job on the type the makespan LP gives it, then listed.

Greedy list scheduling (:func:`~gpuplan.parts.construct.list_schedule`) picks each job's
type when it reaches it, at its earliest finish: a myopic choice that crowds the fast
types early and leaves the slow ones idle late (on Gavel's 700-job batches, well above the
bound: docs/benchmarks.md, "Gavel's static makespan batches, and gpuplan's own plans of
them"). The work-over-capacity LP (:func:`~gpuplan.models.scheduling.workload_program`,
the makespan bound the time-based methods report) spreads the work over the types at best.
Here each job takes the type of its largest LP share among those where it alone fits
before the LP's makespan, a repair moves jobs off the most loaded type while that lowers
the largest load (rounding the few split jobs overloads a type), and list scheduling runs
with each job held to its type. Releases, dependencies and deadlines are list
scheduling's to keep: a job it cannot place in time leaves the plan without a solution,
never an invalid one.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator

import numpy as np

from gpuplan.core.budget import Limits
from gpuplan.core.instance import FloatArray, Instance, IntArray
from gpuplan.core.result import Result, better, no_plan, plan_status
from gpuplan.core.status import Status
from gpuplan.models.bounds import objective_bound
from gpuplan.models.scheduling import workload_program
from gpuplan.parts.bounds import lp_backend
from gpuplan.parts.construct import list_order, list_schedule

logger = logging.getLogger(__name__)

#: What results and messages call this plan.
SOLVER = "LP-guided list scheduling"
#: Relative slack within which a job's run time counts as fitting before the LP makespan
#: (the LP's own optimality tolerance).
_FIT_EPS = 1e-7
#: List orders tried per plan, at most: run time x gang^a, largest first, for each
#: exponent a here, then random exponents in their range with keys perturbed by a
#: log-normal factor of spread :data:`NOISE`.
ORDERS = 64
GANG_EXPONENTS = (0.0, 0.25, 0.5, 0.75, 1.0)
NOISE = 0.3


def workload_shares(instance: Instance, limits: Limits) -> tuple[FloatArray, float] | None:
    """The work-over-capacity LP's ``(J, T)`` shares and its makespan; None if unsolved.

    The LP's columns are the eligible (job, type) pairs in row-major order, then the
    makespan (:func:`~gpuplan.models.scheduling.workload_program`).
    """
    solution = lp_backend().solve_program(workload_program(instance), limits)
    if (solution.status is not Status.OPTIMAL or solution.values is None
            or solution.objective is None):
        return None
    jobs, types = np.nonzero(instance.eligible)
    shares = np.zeros(instance.eligible.shape)
    shares[jobs, types] = solution.values[:jobs.size]
    return shares, float(solution.objective)


def lp_types(instance: Instance, shares: FloatArray, makespan: float) -> IntArray:
    """Each job's type: its largest share where it fits, repaired towards even loads.

    A job fits a type when its release plus its run time there is within ``makespan``
    (the LP's own row for it says some type does): a job split between a type where it
    alone would outlast the plan and another goes to the other. The load of a type is its
    jobs' GPU-seconds over its GPUs; while moving one job off the most loaded type lowers
    the largest of the two loads and the job's own end there (its release plus run time),
    the move that lowers it most is made. Every move lowers the sorted loads
    lexicographically, so the repair ends.
    """
    n_jobs = instance.n_jobs
    eligible = instance.eligible
    duration = np.where(eligible, instance.duration, 0.0)
    gpus = instance.node_gpus.sum(axis=0).astype(float)
    load_of = instance.gang[:, None] * duration / np.maximum(gpus, 1.0)
    alone = instance.release[:, None] + duration
    fits = eligible & (alone <= makespan * (1 + _FIT_EPS))
    # Guard against LP tolerances: a job that fits nowhere keeps all its eligible types.
    fits |= eligible & ~fits.any(axis=1, keepdims=True)
    types: IntArray = np.where(fits, shares, -1.0).argmax(axis=1)
    load = np.bincount(types, weights=load_of[np.arange(n_jobs), types],
                       minlength=instance.n_types)
    for _ in range(n_jobs * instance.n_types):
        t = int(load.argmax())
        on = np.flatnonzero(types == t)
        moved = np.where(eligible[on], np.maximum(load[None, :] + load_of[on], alone[on]),
                         np.inf)
        moved[:, t] = np.inf
        peak = np.maximum(moved, (load[t] - load_of[on, t])[:, None])
        if on.size == 0 or peak.min() >= load[t] * (1 - _FIT_EPS):
            break
        i, u = np.unravel_index(int(peak.argmin()), peak.shape)
        j = on[i]
        load[t] -= load_of[j, t]
        load[u] += load_of[j, u]
        types[j] = u
    return types


def _type_ends(instance: Instance, plan: Result) -> FloatArray:
    """``(T,)`` the last end of the plan's jobs on each type (0 where none)."""
    ends = np.zeros(instance.n_types)
    np.maximum.at(ends, plan.gpu_type, plan.end)
    return ends


def _orders(instance: Instance, run_time: FloatArray, seed: int) -> Iterator[FloatArray]:
    """List-scheduling keys (lower first): run time x gang^a, largest first, then perturbed.

    The exponents of :data:`GANG_EXPONENTS` come first; then random exponents with each
    job's key scaled by a log-normal factor (:data:`NOISE`), seeded.
    """
    gang = instance.gang.astype(float)
    for exponent in GANG_EXPONENTS:
        yield -run_time * gang ** exponent
    rng = np.random.default_rng(seed)
    for _ in range(ORDERS - len(GANG_EXPONENTS)):
        exponent = rng.uniform(GANG_EXPONENTS[0], GANG_EXPONENTS[-1])
        yield -run_time * gang ** exponent * rng.lognormal(0.0, NOISE, run_time.size)


def lp_list_schedule(instance: Instance, limits: Limits) -> Result:
    """A start-time plan with each job on its LP type (:func:`lp_types`), listed.

    List scheduling runs with the jobs held to their types, first in its own priority
    order (deadlines, then the longest chain of run times on the chosen types), then in
    :func:`_orders`' orders while ``limits`` allow: a wide gang waits for GPUs that
    narrower jobs listed before it leave idle, and which order wastes least differs from
    type to type. Without dependencies, the types' schedules do not interact once the
    types are fixed, so the order with the earliest last end on each type is kept for
    that type's jobs and the types' best schedules are listed together; with
    dependencies, the best whole plan is kept. Its bound is the LP's makespan (or the
    combinatorial bound, if higher).

    Parameters
    ----------
    instance
        A time-based instance; the plan is made for makespan, valid for any objective.
    limits
        Time for the LP and the orders (give it a part of the solve's budget), and the
        seed of the perturbed orders. When the LP stops before its optimum, no plan is
        returned.
    """
    solved = workload_shares(instance, limits)
    if solved is None:
        return no_plan(instance, "the makespan LP was not solved within its time", SOLVER)
    shares, makespan = solved
    types = lp_types(instance, shares, makespan)
    held = np.zeros_like(instance.eligible)
    held[np.arange(instance.n_jobs), types] = True
    restricted = dataclasses.replace(instance, eligible=held & instance.eligible)
    plan = list_schedule(restricted)
    independent = not any(instance.predecessors)
    best_end = _type_ends(instance, plan) if plan.status.has_plan else np.full(
        instance.n_types, np.inf)
    # Per type, each job's rank in the order that scheduled that type best so far.
    rank = np.empty(instance.n_jobs)
    rank[list_order(restricted)] = np.arange(instance.n_jobs)
    tried = 1
    for keys in _orders(instance, restricted.min_duration, limits.seed):
        if limits.budget.spent():
            break
        listed = list_schedule(restricted, keys=keys)
        tried += 1
        if not listed.status.has_plan:
            continue
        plan = better(instance, plan, listed)
        ends = _type_ends(instance, listed)
        improved = np.flatnonzero(ends < best_end)
        best_end[improved] = ends[improved]
        order_rank = np.argsort(np.argsort(keys, kind="stable"), kind="stable")
        mine = np.isin(types, improved)
        rank[mine] = order_rank[mine]
    if independent and np.isfinite(best_end).all():
        plan = better(instance, plan, list_schedule(restricted, keys=rank))
    # The restricted instance's bound holds for these types only; the LP's for all plans.
    bound = max(objective_bound(instance), makespan)
    logger.debug("lp-list: LP makespan %.6g s, plan %s after %d orders", makespan,
                 plan.objective, tried)
    return dataclasses.replace(plan, bound=bound, solver=SOLVER,
                               status=plan_status(plan.objective, bound)
                               if plan.status.has_plan else plan.status)
