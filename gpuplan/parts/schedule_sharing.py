"""List scheduling that lets jobs share GPUs: a start for CP-SAT on batches with shares.

Greedy list scheduling (:func:`~gpuplan.parts.construct.list_schedule`) gives each job
whole GPUs. Where jobs ask for a share of a GPU (compute 0.5, 20 GiB of 80), two or more
of them can run on one GPU at once, and a plan that never does so wastes much of the
fleet: on operator batches with compute shares, list scheduling's plan is far from what
CP-SAT's per-GPU model allows, and LNS from it has far to go.

Here jobs are taken in the same priority order (:func:`~gpuplan.parts.construct.list_order`)
and each starts at its earliest finish on some (node, type) group: the earliest time from
which ``gang`` GPUs of the group keep room for its demand in every resource over its
whole run, on the GPUs most used at that time (packing shares together and leaving empty
GPUs to wide gangs). A GPU's use over a window is largest at the window's start or at
some job's start within it, so only those times are checked, for all of a group's GPUs
and candidate starts at once.
"""

from __future__ import annotations

import math

import numpy as np

from gpuplan.core.budget import Budget
from gpuplan.core.instance import FloatArray, Instance, IntArray
from gpuplan.core.objectives import ObjectiveKind, time_objective
from gpuplan.core.result import Result, plan_status
from gpuplan.core.status import Status
from gpuplan.models.bounds import objective_bound
from gpuplan.parts.construct import CLOCK_EVERY, NOT_REACHED, list_order

#: What results and messages call this plan.
SOLVER = "list scheduling with GPU sharing"
#: Capacity slack (relative) within which a demand counts as fitting, as in greedy.
_FIT_EPS = 1e-9
#: The orders tried after list scheduling's own, as (``a``, patience): jobs by deadline,
#: then by chain time x gang^a (makespan), or weight over run time x gang^a (weighted
#: completion), largest first: wide gangs placed early waste less room. Exponents 0.75
#: and 1 and patience 0.35 or more were never the best on the operator's batches.
RULES = ((0.25, 0.0), (0.5, 0.0), (0.0, 0.2), (0.25, 0.2), (0.5, 0.2))
#: Exponents of the perturbed orders tried after those.
GANG_EXPONENTS = (0.0, 0.25, 0.5)
#: Spread of the log-normal noise on the keys of the orders tried after those.
NOISE = 0.3
#: The most patience (:func:`sharing_list_schedule`) of the perturbed orders: 0.2-0.35
#: gave shorter plans than 0 on some of the operator's batches, 0.5 much longer ones.
MAX_PATIENCE = 0.3
#: Orders tried at most (list scheduling's own included), however long the budget.
ORDERS = 32
#: The range of the target makespans (:func:`sharing_list_schedule`) that every other
#: pass plans for, relative to the best plan so far: on the operator's base batches the
#: best targets lay well inside this range.
TARGETS = (0.75, 0.98)


class _Group:
    """The jobs placed on one (node, type) group: start, end, demand, local GPU mask."""

    def __init__(self, size: int, n_resources: int) -> None:
        self.size = size
        self.start = np.zeros(0)
        self.end = np.zeros(0)
        self.demand = np.zeros((0, n_resources))
        self.on = np.zeros((0, size), dtype=bool)

    def add(self, start: float, end: float, demand: FloatArray, on: np.ndarray) -> None:
        """Record a job placed on the GPUs ``on`` (a mask over the group's GPUs)."""
        self.start = np.r_[self.start, start]
        self.end = np.r_[self.end, end]
        self.demand = np.vstack([self.demand, demand[None]])
        self.on = np.vstack([self.on, on[None]])

    def earliest(self, ready: float, run: float, gang: int, demand: FloatArray,
                 capacity: FloatArray) -> tuple[float, np.ndarray] | None:
        """The earliest start with room for a job, and the GPUs it takes; None if never.

        From ``ready`` on, the first time at which ``gang`` GPUs each hold ``demand``
        beside what they run, for ``run`` seconds; the GPUs are those most used then.
        """
        if gang > self.size:
            return None
        # Jobs that end by ``ready`` no longer matter.
        live = self.end > ready
        if not live.any():
            chosen = np.zeros(self.size, dtype=bool)
            chosen[:gang] = True
            return ready, chosen
        start, end = self.start[live], self.end[live]
        candidates = np.unique(np.r_[ready, end])
        points = np.unique(np.r_[candidates, start[start > ready]])
        # Use of each GPU in each resource at each point: (points, GPUs, resources).
        active = (start[None] <= points[:, None]) & (end[None] > points[:, None])
        use = np.einsum("pj,jg,jr->pgr", active.astype(float), self.on[live].astype(float),
                        self.demand[live])
        room = (use + demand <= capacity * (1 + _FIT_EPS) + _FIT_EPS).all(axis=2)
        window = ((points[None] >= candidates[:, None])
                  & (points[None] < candidates[:, None] + run))
        blocked = (window[:, :, None] & ~room[None]).any(axis=1)
        fits = ~blocked
        enough = np.flatnonzero(fits.sum(axis=1) >= gang)
        if enough.size == 0:
            return None
        c = int(enough[0])
        at = int(np.searchsorted(points, candidates[c]))
        load = use[at].sum(axis=1)
        order = np.lexsort((np.arange(self.size), -load, ~fits[c]))
        chosen = np.zeros(self.size, dtype=bool)
        chosen[order[:gang]] = True
        return float(candidates[c]), chosen


def sharing_list_schedule(instance: Instance, keys: FloatArray | None = None,
                          budget: Budget | None = None, patience: float = 0.0,
                          target: float = math.inf) -> Result:
    """A start-time plan in list order where jobs may share GPUs within their capacity.

    Parameters
    ----------
    instance
        A time-based instance. Jobs run whole (never in segments), each at its earliest
        finish (for the cost objective, the cheapest place that meets its deadline).
    keys
        ``(J,)`` priorities (lower first) that replace list scheduling's priority rule.
    budget
        When it is spent, the remaining jobs are left out (and the plan has no value);
        None: never.
    patience
        Each job goes where its start plus ``1 - patience`` times its run time is least:
        0 is its earliest finish; above, an earlier start on a slower type may win over a
        later one on a faster type, which uses slow GPUs that would idle while fast ones
        queue (the cost objective ranks by cost first, then so).
    target
        A makespan to plan for: a job that can end by then, with the chain of run times
        after it (:func:`_chain_time`), goes to the slowest type where it can, at its
        earliest finish there, saving the fast types for jobs that cannot; the others go
        by ``patience``. Slow GPUs (L4 beside A100s and H100s) left idle while fast ones
        queue are what an earliest-finish rule wastes most (on an operator base batch the
        L4s idled much of the time while the A100s and H100s were nearly always busy;
        docs/benchmarks.md, "cp against greedy and sa"). Infinite: no target.
    """
    n_types = instance.n_types
    counts = instance.node_gpus.ravel()
    groups = np.flatnonzero(counts)
    group_type = groups % n_types
    first_gpu = np.r_[0, np.cumsum(counts)][groups]
    n_resources = len(instance.packing_resources)
    placed = [_Group(int(counts[q]), n_resources) for q in groups]
    end = np.full(instance.n_jobs, np.nan)
    rows: list[tuple[int, int, IntArray, float, float]] = []
    unplaced: dict[int, str] = {}
    order = list_order(instance, keys)
    after = _chain_time(instance) - instance.min_duration if math.isfinite(target) else None
    for done, j in enumerate(order):
        if budget is not None and done % CLOCK_EVERY == 0 and budget.spent():
            unplaced.update(dict.fromkeys(order[done:], NOT_REACHED))
            break
        if any(np.isnan(end[p]) for p in instance.predecessors[j]):
            unplaced[j] = "a job it depends on is not placed"
            continue
        ready = max([float(instance.release[j]), *(end[p] for p in instance.predecessors[j])])
        k = int(instance.gang[j])
        best: tuple[float, bool, float, int, float, np.ndarray] | None = None
        for q in np.flatnonzero(instance.eligible[j, group_type]).tolist():
            t = int(group_type[q])
            run = float(instance.duration[j, t])
            found = placed[q].earliest(ready, run, k, instance.packing_demand[j, t],
                                       instance.packing_capacity[t])
            if found is None or found[0] + run > instance.deadline[j]:
                continue
            cost = (float(np.nan_to_num(instance.cost[j, t]))
                    if instance.objective is ObjectiveKind.COST else 0.0)
            # Under the target, the slowest type first; otherwise the earliest finish.
            spare = after is not None and found[0] + run + after[j] <= target
            key = (cost, not spare, -run if spare else found[0] + (1.0 - patience) * run, q,
                   found[0], found[1])
            if best is None or key[:4] < best[:4]:
                best = key
        if best is None:
            unplaced[j] = "no group has room for it before its deadline"
            continue
        _, _, _, q, begin, on = best
        t = int(group_type[q])
        finish = begin + float(instance.duration[j, t])
        placed[q].add(begin, finish, instance.packing_demand[j, t], on)
        end[j] = finish
        rows.append((j, t, first_gpu[q] + np.flatnonzero(on), begin, finish))
    job = np.array([r[0] for r in rows], dtype=np.int64)
    types = np.array([r[1] for r in rows], dtype=np.int64)
    objective = None if unplaced else time_objective(instance, job, types, end[job])
    bound = objective_bound(instance)
    return Result(status=plan_status(objective, bound) if objective is not None
                  else Status.NO_SOLUTION, objective=objective, bound=bound, solver=SOLVER,
                  job=job, gpu_type=types, gpus=tuple(r[2] for r in rows),
                  start=np.array([r[3] for r in rows]), end=np.array([r[4] for r in rows]),
                  unplaced=unplaced)


def _chain_time(instance: Instance) -> FloatArray:
    """``(J,)`` each job's run time plus the longest chain of run times after it."""
    chain = instance.min_duration.copy()
    for j in instance.topological_order[::-1]:
        after = instance.successors[j]
        if after:
            chain[j] += chain[list(after)].max()
    return chain


def _keys(instance: Instance, chain: FloatArray, exponent: float,
          noise: FloatArray) -> FloatArray:
    """Keys (lower first) of one order: deadline first, then the objective's rule.

    The rule is the chain time (:func:`_chain_time`) x gang^``exponent`` (largest first)
    for makespan and cost, weight over run time x gang^``exponent`` (largest first) for
    weighted completion, the due date for tardiness; each job's rule is scaled by its
    ``noise`` factor.
    """
    widen = instance.gang.astype(float) ** exponent
    size = instance.min_duration * widen
    match instance.objective:
        case ObjectiveKind.WEIGHTED_COMPLETION:
            rule = -instance.weight / size
        case ObjectiveKind.TARDINESS:
            due = instance.due
            latest = float(due[np.isfinite(due)].max(initial=0.0)) + float(size.sum())
            rule = np.where(np.isfinite(due), due, latest) + size
        case _:
            rule = -chain * widen
    order = np.lexsort((np.arange(instance.n_jobs), rule * noise, instance.deadline))
    keys = np.empty(instance.n_jobs)
    keys[order] = np.arange(instance.n_jobs)
    return keys


def best_sharing_schedule(instance: Instance, budget: Budget, seed: int = 0) -> Result:
    """The best of :func:`sharing_list_schedule` over several orders, within ``budget``.

    List scheduling's own order first, then those of :data:`RULES`, then orders of
    :data:`GANG_EXPONENTS` with their keys perturbed by a log-normal factor
    (:data:`NOISE`, seeded), each with a patience drawn up to :data:`MAX_PATIENCE`, while
    the budget lasts, :data:`ORDERS` in all at most. For makespan, every other pass after
    :data:`RULES` takes their orders again in turn, each planned for a target makespan
    (:func:`sharing_list_schedule`) drawn from :data:`TARGETS` times the best plan so
    far. A pass cut short by the budget is no plan.
    """
    best = sharing_list_schedule(instance, budget=budget)
    rng = np.random.default_rng(seed)
    ones = np.ones(instance.n_jobs)
    chain = _chain_time(instance)
    makespan = instance.objective is ObjectiveKind.MAKESPAN
    tried = 0
    while tried < ORDERS - 1 and not budget.spent():
        target = math.inf
        if (makespan and best.objective is not None and tried >= len(RULES)
                and (tried - len(RULES)) % 2 == 0):
            target = best.objective * float(rng.uniform(*TARGETS))
        if tried < len(RULES) or math.isfinite(target):
            exponent, patience = RULES[tried % len(RULES)]
            keys = _keys(instance, chain, exponent, ones)
        else:
            keys = _keys(instance, chain, float(rng.choice(GANG_EXPONENTS)),
                         rng.lognormal(0.0, NOISE, instance.n_jobs))
            patience = float(rng.uniform(0.0, MAX_PATIENCE))
        tried += 1
        found = sharing_list_schedule(instance, keys, budget, patience, target)
        if found.objective is not None and (best.objective is None
                                            or found.objective < best.objective):
            best = found
    return best
