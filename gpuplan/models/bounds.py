"""Combinatorial relaxations: valid bounds on the optimum and proofs of infeasibility.

These are the cheap relaxations every method can report against (relaxing capacity,
sharing or integrality), and the explanations of infeasibility that hold whatever solver
is used. Each bound is valid for the problem as the verifier defines it.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

from gpuplan.core.instance import BoolArray, FloatArray, Instance, IntArray
from gpuplan.core.objectives import ObjectiveKind
from gpuplan.core.status import TOLERANCE

#: Parameters of the dual-feasible functions the bounds count per type and resource: the
#: thresholds ``eps`` of :func:`dff_threshold` and the ``k`` of :func:`dff_rounding`.
THRESHOLDS = (0.1, 0.2, 0.3, 0.4)
ROUNDINGS = (1, 2, 3, 4)
#: Weights of each type's capacity tried by :func:`area_bound`, in every combination
#: while there are at most MAX_WEIGHINGS of them.
TYPE_WEIGHTS = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0)
#: How far a share may be from a boundary of a dual-feasible function and still be
#: taken on the side that counts less, so that float rounding never counts more.
NOISE = 1e-9
MAX_WEIGHINGS = 1296


@dataclass(frozen=True)
class EarliestCompletion:
    """Earliest completion of each job when capacity is unlimited.

    Attributes
    ----------
    time
        ``(J,)`` earliest completion: release and predecessor chains, shortest durations.
    critical
        ``(J,)`` the predecessor that sets each job's earliest start, or -1 where the
        release does.
    """

    time: FloatArray
    critical: IntArray

    def chain(self, job: int) -> list[int]:
        """The dependency chain that forces ``job``'s earliest completion, first job first."""
        chain = [job]
        while self.critical[chain[-1]] >= 0:
            chain.append(int(self.critical[chain[-1]]))
        return chain[::-1]


def earliest_completion(instance: Instance) -> EarliestCompletion:
    """Compute each job's earliest completion with unlimited GPUs.

    Parameters
    ----------
    instance
        The instance; its dependency graph is acyclic.
    """
    time = np.zeros(instance.n_jobs)
    critical = np.full(instance.n_jobs, -1, dtype=np.int64)
    for j in instance.topological_order:
        start = float(instance.release[j])
        for p in instance.predecessors[j]:
            if time[p] > start:
                start, critical[j] = float(time[p]), p
        time[j] = start + instance.min_duration[j]
    return EarliestCompletion(time=time, critical=critical)


def infeasibility_reasons(instance: Instance) -> dict[int, str]:
    """Jobs that no plan can serve, each with the reason, for objectives that need them all.

    Time-based objectives: a job whose release and dependency chain, at the shortest
    durations, end after its deadline. Static objectives that place every job: a set of GPU
    types whose GPUs cannot hold, in some resource, the jobs that can run only on them (a
    Hall-type condition, checked for every set of types some job is limited to, and for the
    whole fleet). Empty when none applies, which does not prove feasibility.

    Parameters
    ----------
    instance
        The instance to examine.

    Returns
    -------
    dict[int, str]
        Job index to a sentence naming the job and the constraint.
    """
    if instance.objective.allows_unplaced:
        return {}
    reasons: dict[int, str] = {}
    if not instance.objective.is_static:
        ect = earliest_completion(instance)
        for j in np.flatnonzero(ect.time > instance.deadline * (1 + 1e-9)):
            chain = ect.chain(int(j))
            names = " -> ".join(repr(instance.job_ids[k]) for k in chain)
            via = f" through dependency chain {names}" if len(chain) > 1 else ""
            reasons[int(j)] = (
                f"job {instance.job_ids[j]!r} cannot meet its deadline "
                f"{instance.deadline[j]:g} s: with release "
                f"{instance.release[chain[0]]:g} s{via} at the shortest durations it ends "
                f"no earlier than {ect.time[j]:g} s"
            )
        return reasons
    need = _least_demand(instance)
    supply = instance.packing_capacity * instance.node_gpus.sum(axis=0)[:, None]
    type_sets = np.unique(instance.eligible, axis=0)
    # Smallest sets first, so the most specific explanation wins.
    for allowed in sorted(type_sets, key=lambda s: int(s.sum())):
        limited = ~(instance.eligible & ~allowed).any(axis=1)
        total, room = need[limited].sum(axis=0), supply[allowed].sum(axis=0)
        for r in np.flatnonzero(total > room * (1 + 1e-9)):
            # Name the largest consumers so the user knows where to cut.
            jobs = np.flatnonzero(limited)
            top = jobs[np.argsort(-need[jobs, r], kind="stable")[:3]]
            names = ", ".join(repr(instance.job_ids[k]) for k in top)
            who = ("the jobs" if allowed.all() else "the jobs that can run only on "
                   + ", ".join(t for t, a in zip(instance.type_ids, allowed, strict=True) if a))
            where = "the fleet has" if allowed.all() else "those GPUs hold"
            for j in top:
                reasons.setdefault(
                    int(j),
                    f"{who} ({int(limited.sum())}) need {total[r]:g} "
                    f"{instance.packing_resources[r]} "
                    f"in all; {where} {room[r]:g} (largest: {names})",
                )
        if reasons:
            return reasons
    return reasons


def _least_demand(instance: Instance) -> FloatArray:
    """``(J, R)`` smallest total demand of each job (gang included) over its eligible types."""
    demand: FloatArray = np.where(instance.eligible[:, :, None], instance.packing_demand, np.inf)
    least: FloatArray = demand.min(axis=1) * instance.gang[:, None]
    return least


def resource_share(instance: Instance) -> FloatArray:
    """``(J, T, R)`` the share of one GPU's capacity each job uses, per type and resource."""
    share: FloatArray = instance.packing_demand / instance.packing_capacity[None]
    return share


def dff_threshold(share: FloatArray, eps: float) -> FloatArray:
    """The dual-feasible function ``f0``: 1 above ``1 - eps``, 0 below ``eps``, else ``s``.

    Valid for ``0 < eps <= 1/2``: at most one share exceeds ``1 - eps`` when shares sum
    to at most 1, and then the others (below ``eps``) count 0. A share within
    :data:`NOISE` of ``1 - eps`` counts as itself: a smaller value is valid too.
    """
    out: FloatArray = np.where(share > 1 - eps + NOISE, 1.0,
                               np.where(share < eps, 0.0, share))
    return out


def dff_rounding(share: FloatArray, k: int) -> FloatArray:
    """The dual-feasible function ``u(k)``, rounded down: ``floor((k + 1) s) / k``.

    ``k = 1`` counts a share above 1/2 as a whole GPU; ``k = 2`` counts one in (1/3, 2/3)
    as half a GPU (no three fit); and so on. Where ``(k + 1) s`` is whole (or within
    :data:`NOISE` of it, where float rounding cannot tell) the share counts as the
    smaller neighbour's value, ``(n - 1) / k``: below the classic ``s`` there, so still
    valid.
    """
    out: FloatArray = np.maximum(np.floor(share * (k + 1) - NOISE), 0.0) / k
    return out


def accepted_share(instance: Instance) -> FloatArray:
    """``(J, T, R)`` each job's share of the load the verifier accepts on one GPU.

    The verifier accepts loads up to ``capacity * (1 + TOLERANCE) + TOLERANCE``; shares of
    that sum to at most 1 on every GPU of every plan it accepts.
    """
    share: FloatArray = instance.packing_demand / (instance.packing_capacity[None] * (1 + TOLERANCE)
                                           + TOLERANCE)
    return share


def preemptive_wspt(release: FloatArray, size: FloatArray, weight: FloatArray) -> FloatArray:
    """Mean busy times under preemptive WSPT on one machine of speed 1 (Goemans 1997).

    At every instant the released, unfinished job of the largest ``weight / size`` runs.
    Among all schedules of the jobs on one machine (preemptive, or sharing it at any
    rates) that respect the releases, this one minimises ``sum(weight * mean busy time)``,
    where a job's mean busy time is the average instant at which its work is done.

    Parameters
    ----------
    release, size, weight
        ``(n,)`` each job's release, processing time (positive) and weight.
    """
    order = np.argsort(release, kind="stable")
    left = size.astype(float).copy()
    mean = np.zeros(size.size)
    ready: list[tuple[float, int]] = []
    now, k = 0.0, 0
    while k < order.size or ready:
        if not ready:
            now = max(now, float(release[order[k]]))
        while k < order.size and release[order[k]] <= now:
            j = int(order[k])
            heapq.heappush(ready, (-float(weight[j]) / float(size[j]), j))
            k += 1
        j = ready[0][1]
        until = float(release[order[k]]) if k < order.size else np.inf
        run = min(float(left[j]), until - now)
        # The work done over [now, now + run] is done at its midpoint on average.
        mean[j] += (now + run / 2) * run / size[j]
        now += run
        if run >= left[j]:
            heapq.heappop(ready)
        left[j] -= run
    return mean


def mean_busy_bound(instance: Instance) -> float:
    """A weighted-completion bound from the fleet as one fast machine.

    Count each job's work in one resource ``r``: on type ``t`` it holds
    ``gang * f(share_r)`` of the type's ``gpus_t`` GPUs for ``duration[j, t]`` seconds
    (``f`` the identity or a dual-feasible function, so what the jobs on a type hold sums
    to at most ``gpus_t``, or ``pair_gain`` times that with space sharing). Weigh each
    type's GPUs by ``scale_t >= 0`` (1 per GPU, 1 per type, or the weighing of
    :func:`_type_weights` under which the work over the capacity is largest): the fleet
    is one machine doing ``sum_t scale_t * gpus_t`` units per second, a job on ``t`` takes
    ``scale_t * gang * f(share_r)`` units per second, and it needs at least
    ``work_j = min_t scale_t * gang * f(share_r) * duration[j, t]`` units. On that
    machine, with jobs released at their earliest starts, preemptive WSPT gives the least
    ``sum(w_j M_j)`` of mean busy times (:func:`preemptive_wspt`), and a job done at rate
    at most ``fastest_j = max_t scale_t * gang * f(share_r)`` ends at least half its
    least run time ``work_j / fastest_j`` after its mean busy time, so
    ``sum(w_j C_j) >= sum(w_j (M_j + work_j / (2 fastest_j)))``. Jobs that use none of
    ``r`` count their earliest completion. The bound is the best over resources,
    functions and scales.
    """
    ect = earliest_completion(instance)
    start = ect.time - instance.min_duration
    gpus = instance.node_gpus.sum(axis=0) * instance.pair_gain
    hosting = (gpus > 0) & instance.eligible.any(axis=0)
    share = np.clip(np.nan_to_num(accepted_share(instance)), 0.0, 1.0)
    duration = np.where(instance.eligible, instance.duration, np.nan)
    functions: list[Callable[[FloatArray], FloatArray]] = [np.asarray,
                                                           partial(dff_rounding, k=1)]
    grid = _type_weights(gpus)
    grid = grid[grid @ gpus > 0]
    best = 0.0
    for r in range(len(instance.packing_resources)):
        for f in functions:
            held = np.where(instance.eligible & hosting[None],
                            instance.gang[:, None] * f(share[:, :, r]), np.nan)
            for scale in (np.ones_like(gpus), 1.0 / np.maximum(gpus, 1.0),
                          _widest(grid, held * duration, gpus)):
                best = max(best, _wspt_bound(instance, ect.time, start, held * scale,
                                             duration, float(scale @ gpus)))
    return best


def _widest(grid: FloatArray, held: FloatArray, gpus: FloatArray) -> FloatArray:
    """The weighing of :func:`_type_weights` whose weighted work over capacity is largest."""
    least = np.where(np.isnan(held)[None], np.inf,
                     grid[:, None, :] * np.nan_to_num(held)[None]).min(axis=2)
    total = np.where(np.isfinite(least), least, 0.0).sum(axis=1)
    widest: FloatArray = grid[int(np.argmax(total / (grid @ gpus)))]
    return widest


def _wspt_bound(instance: Instance, ect: FloatArray, start: FloatArray, rate: FloatArray,
                duration: FloatArray, speed: float) -> float:
    """:func:`mean_busy_bound` for one resource, function and weighing (NaN: ineligible)."""
    valid = ~np.isnan(rate)
    work = np.min(rate * duration, axis=1, initial=np.inf, where=valid)
    fastest = np.max(rate, axis=1, initial=0.0, where=valid)
    used = np.isfinite(work) & (work > 0) & (fastest > 0)
    weight = instance.weight
    mean = preemptive_wspt(start[used], work[used] / speed, weight[used])
    least = work[used] / fastest[used]
    return (float((weight[used] * (mean + least / 2)).sum())
            + float((weight[~used] * ect[~used]).sum()))


def tails(instance: Instance) -> FloatArray:
    """``(J,)`` least time from each job's end to the makespan: its successors' chains."""
    tail = np.zeros(instance.n_jobs)
    for j in instance.topological_order[::-1]:
        for s in instance.successors[j]:
            tail[j] = max(tail[j], tail[s] + instance.min_duration[s])
    return tail


def _type_weights(gpus: FloatArray) -> FloatArray:
    """``(L, T)`` weights of the types' capacity rows tried by :func:`area_bound`.

    Every combination of :data:`TYPE_WEIGHTS` when there are few types, else equal
    weights per GPU and per type; never all zero.
    """
    n = gpus.size
    if len(TYPE_WEIGHTS) ** n <= MAX_WEIGHINGS:
        grid = np.array(np.meshgrid(*[TYPE_WEIGHTS] * n, indexing="ij")).reshape(n, -1).T
    else:
        grid = np.array([np.ones(n), 1.0 / np.maximum(gpus, 1.0)])
    picked: FloatArray = grid[grid.any(axis=1)]
    return picked


def area_bound(instance: Instance) -> float:
    """A makespan bound from the work that must follow a head or precede a tail.

    At any time the shares of one resource on a GPU sum to at most 1, and so do their
    images by a dual-feasible function ``f`` (:func:`dff_rounding`), so on its type ``t``
    a job holds ``gang * duration[j, t] * f(share[j, t, r])`` GPU-seconds of the type's
    ``gpus_t`` (``pair_gain`` times as many with space sharing). Weighing each type's
    GPU-seconds by ``lambda_t >= 0`` (a Lagrangian of the workload LP's capacity rows),
    the jobs that cannot start before ``a`` (their head: release and predecessors at
    their fastest) all run in ``[a, C]``, so ``C >= a + sum_j min_t lambda_t * work[j, t]
    / sum_t lambda_t * gpus_t``; those followed by chains of at least ``b`` run in
    ``[0, C - b]``. The best over resources, functions, weights, heads and tails, and the
    same count of node resources (:func:`_node_area`).
    """
    head = earliest_completion(instance).time - instance.min_duration
    tail = tails(instance)
    share = np.clip(np.nan_to_num(accepted_share(instance)), 0.0, 1.0)
    gpus = instance.node_gpus.sum(axis=0).astype(float)
    weights = _type_weights(gpus)
    weights = weights[weights @ gpus > 0]
    fleet = weights @ gpus * instance.pair_gain
    functions: list[Callable[[FloatArray], FloatArray]] = [np.asarray,
                                                           partial(dff_rounding, k=1)]
    orders = [np.argsort(-offset, kind="stable") for offset in (head, tail)]
    best = _node_area(instance, head, tail, orders)
    rows = [(r, f) for r in range(len(instance.packing_resources)) for f in functions]
    if not instance.shared.any():
        # Every GPU held whole: the whole-GPU column counts each job at 1 under the
        # rounding, the most any resource's share can count, so no other row is higher.
        rows = [(len(instance.packing_resources) - 1, functions[1])]
    for r, f in rows:
        held = np.where(instance.eligible, instance.gang[:, None]
                        * np.nan_to_num(instance.duration) * f(share[:, :, r]), 0.0)
        # (L, J): each job's least weighted GPU-seconds under each weighing.
        least = np.where(instance.eligible[None], weights[:, None, :] * held[None],
                         np.inf).min(axis=2)
        least = np.where(np.isfinite(least), least, 0.0)
        for offset, order in zip((head, tail), orders, strict=True):
            # Jobs by offset, largest first: each prefix waits at least its last's.
            total = np.cumsum(least[:, order], axis=1) / fleet[:, None]
            best = max(best, float((offset[order][None] + total).max(initial=0.0)))
    return best


def _node_area(instance: Instance, head: FloatArray, tail: FloatArray,
               orders: list[IntArray]) -> float:
    """:func:`area_bound` of the node resources: their time over the fleet's capacity.

    A job draws its node demand on each of its nodes for its whole run, so it holds
    ``gang_nodes * node_demand * duration`` of a resource's node-seconds at least (on its
    fastest type); the nodes hold their summed capacity per second. A job that takes every
    GPU of its nodes leaves their resources to no other job (:func:`_whole_nodes`): it
    counts a whole node's.
    """
    if not instance.node_demand.any():
        return 0.0
    duration = np.where(instance.eligible, instance.duration, np.inf).min(axis=1)
    whole = _whole_nodes(instance)
    best = 0.0
    for q in range(len(instance.node_resources)):
        supply = float(instance.node_capacity[:, q].sum())
        # A job that takes every GPU of its nodes keeps all of each node's resource from
        # other GPU jobs: it holds at least the smallest capacity of a node it may use.
        smallest = np.array([instance.node_capacity[hosts, q].min(initial=np.inf)
                             for hosts in whole])
        draw = np.where(np.isfinite(smallest), np.maximum(instance.node_demand[:, q],
                                                          smallest), instance.node_demand[:, q])
        least = instance.gang_nodes * draw * duration
        for offset, order in zip((head, tail), orders, strict=True):
            total = np.cumsum(least[order]) / supply
            best = max(best, float((offset[order] + total).max(initial=0.0)))
    return best


def _whole_nodes(instance: Instance) -> list[BoolArray]:
    """Per job, the nodes it may use when it takes all of their GPUs there, else none.

    A job takes every GPU of each node it runs on when each node holding its GPUs per
    node of a type it may use holds no other GPU. With CPU-only jobs about (they share a
    node whose GPUs are all taken), no job counts as taking whole nodes.
    """
    none = np.zeros(instance.n_nodes, dtype=bool)
    if (instance.gang == 0).any():
        return [none] * instance.n_jobs
    total = instance.node_gpus.sum(axis=1)
    out: list[BoolArray] = []
    for j in range(instance.n_jobs):
        per_node = int(instance.gpus_per_node[j])
        hosts = np.asarray((instance.node_gpus[:, instance.eligible[j]] >= per_node)
                           .any(axis=1), dtype=bool)
        out.append(hosts if hosts.any() and (total[hosts] == per_node).all() else none)
    return out


def objective_bound(instance: Instance) -> float:
    """A valid bound on the optimal objective: lower when minimising, upper when maximising.

    Parameters
    ----------
    instance
        The instance, with its objective.
    """
    objective = instance.objective
    eligible = instance.eligible
    match objective:
        case ObjectiveKind.ASSIGN_COST | ObjectiveKind.COST:
            return float(np.where(eligible, instance.cost, np.inf).min(axis=1).sum())
        case ObjectiveKind.ASSIGN_PROFIT:
            return float(np.where(eligible, instance.profit, -np.inf).max(axis=1).sum())
        case ObjectiveKind.MAX_WEIGHT:
            return float(instance.weight.sum())
        case ObjectiveKind.MIN_GPUS:
            volume = _least_demand(instance).sum(axis=0) / instance.packing_capacity.max(axis=0)
            return float(max(instance.gang.max(), np.ceil(volume.max() - 1e-9)))
        case ObjectiveKind.MIN_GPU_COST:
            # Each unit of resource r on type t costs price[t] / capacity[t, r] at best.
            unit = instance.price_per_hour[:, None] / instance.packing_capacity
            per_job = np.where(eligible[:, :, None], instance.packing_demand * unit[None], np.inf)
            fractional = (per_job.min(axis=1) * instance.gang[:, None]).sum(axis=0).max()
            return float(max(fractional, instance.price_per_hour.min() * instance.gang.max()))
        case ObjectiveKind.MIN_MAX_LOAD:
            supply = instance.packing_capacity[instance.gpu_type].sum(axis=0)
            average = (_least_demand(instance).sum(axis=0) / supply).max()
            alone = np.where(eligible, (instance.packing_demand
                                        / instance.packing_capacity[None]).max(axis=2),
                             np.inf).min(axis=1)
            return float(max(average, alone.max()))
        case ObjectiveKind.MAKESPAN:
            return max(float(earliest_completion(instance).time.max()), area_bound(instance))
        case ObjectiveKind.WEIGHTED_COMPLETION:
            chains = float((instance.weight * earliest_completion(instance).time).sum())
            return max(chains, mean_busy_bound(instance))
        case ObjectiveKind.TARDINESS:
            late = np.maximum(0.0, earliest_completion(instance).time - instance.due)
            return float((instance.weight * late).sum())
    raise AssertionError(f"objective {objective} has no bound")
