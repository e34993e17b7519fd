"""Combinatorial relaxations: valid bounds on the optimum and proofs of infeasibility.

These are the cheap relaxations every method can report against (relaxing capacity,
sharing or integrality), and the explanations of infeasibility that hold whatever solver
is used. Each bound is valid for the problem as the verifier defines it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpuplan.instance import FloatArray, Instance, IntArray, ObjectiveKind


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
    supply = instance.capacity * instance.node_gpus.sum(axis=0)[:, None]
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
                    f"{who} ({int(limited.sum())}) need {total[r]:g} {instance.resources[r]} "
                    f"in all; {where} {room[r]:g} (largest: {names})",
                )
        if reasons:
            return reasons
    return reasons


def _least_demand(instance: Instance) -> FloatArray:
    """``(J, R)`` smallest total demand of each job (gang included) over its eligible types."""
    demand: FloatArray = np.where(instance.eligible[:, :, None], instance.demand, np.inf)
    least: FloatArray = demand.min(axis=1) * instance.gang[:, None]
    return least


def resource_share(instance: Instance) -> FloatArray:
    """``(J, T, R)`` the share of one GPU's capacity each job uses, per type and resource."""
    share: FloatArray = instance.demand / instance.capacity[None]
    return share


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
            volume = _least_demand(instance).sum(axis=0) / instance.capacity.max(axis=0)
            return float(max(instance.gang.max(), np.ceil(volume.max() - 1e-9)))
        case ObjectiveKind.MIN_GPU_COST:
            # Each unit of resource r on type t costs price[t] / capacity[t, r] at best.
            unit = instance.price_per_hour[:, None] / instance.capacity
            per_job = np.where(eligible[:, :, None], instance.demand * unit[None], np.inf)
            fractional = (per_job.min(axis=1) * instance.gang[:, None]).sum(axis=0).max()
            return float(max(fractional, instance.price_per_hour.min() * instance.gang.max()))
        case ObjectiveKind.MIN_MAX_LOAD:
            supply = instance.capacity[instance.gpu_type].sum(axis=0)
            average = (_least_demand(instance).sum(axis=0) / supply).max()
            alone = np.where(
                eligible, (instance.demand / instance.capacity[None]).max(axis=2), np.inf
            ).min(axis=1)
            return float(max(average, alone.max()))
        case ObjectiveKind.MAKESPAN:
            chains = earliest_completion(instance).time.max()
            # Jobs may share a GPU, so work counts per resource: at any time the shares of
            # one resource on a GPU sum to at most 1.
            work = np.where(eligible[:, :, None], instance.duration[:, :, None]
                            * resource_share(instance), np.inf).min(axis=1)
            area = (instance.gang[:, None] * work).sum(axis=0).max() / instance.n_gpus
            # Space-shared pairs do up to pair_gain GPU-seconds of work per GPU-second.
            area /= instance.pair_gain
            return float(max(chains, area))
        case ObjectiveKind.WEIGHTED_COMPLETION:
            return float((instance.weight * earliest_completion(instance).time).sum())
        case ObjectiveKind.TARDINESS:
            late = np.maximum(0.0, earliest_completion(instance).time - instance.due)
            return float((instance.weight * late).sum())
    raise AssertionError(f"objective {objective} has no bound")
