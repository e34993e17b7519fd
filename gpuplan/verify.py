"""The independent verifier: recompute every constraint and the objective from the instance.

Nothing here trusts a solver. The verifier reads only the :class:`~gpuplan.instance.Instance`
and the :class:`~gpuplan.schedule.Schedule` (by ids, as a user's file would hold them), and
reports each broken constraint as one readable line. :func:`gpuplan.planning.plan` runs it on
every result, and ``gpuplan check`` runs it on any schedule file.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from gpuplan.instance import FloatArray, Instance, IntArray, ObjectiveKind
from gpuplan.schedule import Schedule, Verification, Violation, ViolationKind
from gpuplan.status import OPTIMAL_GAP, Status, relative_gap

#: Tolerance for capacities and objective values (relative), and for times (absolute
#: seconds, plus the float rounding of times far from zero, see :func:`_rounding`).
TOLERANCE = 1e-6
#: At most this many violations of one kind are listed; the rest are counted.
MAX_LISTED = 20


@dataclass
class _Collector:
    """Violations grouped by kind, listing the first few of each."""

    listed: list[Violation] = field(default_factory=list)
    counts: dict[ViolationKind, int] = field(default_factory=lambda: defaultdict(int))

    def add(self, kind: ViolationKind, message: str) -> None:
        self.counts[kind] += 1
        if self.counts[kind] <= MAX_LISTED:
            self.listed.append(Violation(kind=kind, message=message))

    def result(self, objective: float | None) -> Verification:
        violations = list(self.listed)
        for kind, count in self.counts.items():
            if count > MAX_LISTED:
                violations.append(
                    Violation(kind=kind, message=f"... and {count - MAX_LISTED} more like these")
                )
        return Verification(ok=not violations, violations=violations, objective=objective)


@dataclass
class _Placed:
    """The placements that reference known jobs, GPUs and types, by index.

    A preemptible job may have several placements (its segments); every other job has one.
    """

    job: list[int] = field(default_factory=list)
    gpu_type: list[int] = field(default_factory=list)
    start: list[float] = field(default_factory=list)
    end: list[float] = field(default_factory=list)
    gpus: list[list[int]] = field(default_factory=list)
    #: Per placement: its speed (below 1 while space-shared) and the placement it shares
    #: its GPUs with (-1: none); set by :func:`_pair_up`.
    speed: FloatArray | None = None
    partner: IntArray | None = None

    def first_start(self, n_jobs: int) -> FloatArray:
        """``(J,)`` each job's earliest segment start; NaN where not placed."""
        first = np.full(n_jobs, np.inf)
        np.minimum.at(first, np.asarray(self.job, dtype=np.int64), np.asarray(self.start))
        return np.where(np.isinf(first), np.nan, first)

    def last_end(self, n_jobs: int) -> FloatArray:
        """``(J,)`` each job's latest segment end (its completion); NaN where not placed."""
        last = np.full(n_jobs, -np.inf)
        np.maximum.at(last, np.asarray(self.job, dtype=np.int64), np.asarray(self.end))
        return np.where(np.isinf(last), np.nan, last)

    def work(self, instance: Instance) -> FloatArray:
        """Share of its job's work each placement does: its length over the duration.

        A job that is not preemptible does all of its work in its one placement; a
        space-shared segment does its work at its colocation speed.
        """
        job = np.asarray(self.job, dtype=np.int64)
        kind = np.asarray(self.gpu_type, dtype=np.int64)
        length = np.asarray(self.end, dtype=float) - np.asarray(self.start, dtype=float)
        share = length / np.where(instance.eligible[job, kind], instance.duration[job, kind], 1.0)
        if self.speed is not None:
            share = share * self.speed
        work: FloatArray = np.where(instance.preemptible[job], share, 1.0)
        return work


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= TOLERANCE * max(1.0, abs(a), abs(b))


def _rounding(*times: float) -> float:
    """What float arithmetic on these times may be off by: a few units in the last place.

    A length ``end - start`` far from time zero carries the rounding of ``start`` and
    ``end``, which no relative tolerance on the length covers.
    """
    return 8.0 * float(np.spacing(max(abs(t) for t in times)))


def _ineligibility(instance: Instance, j: int, t: int) -> str:
    if np.isnan(instance.duration[j, t]):
        return "the job has no duration for it or does not allow it"
    over = instance.demand[j, t] > instance.capacity[t]
    if over.any():
        r = int(np.argmax(over))
        return (
            f"{instance.resources[r]} demand {instance.demand[j, t, r]:g} exceeds the "
            f"capacity {instance.capacity[t, r]:g}"
        )
    return "the job does not allow it"


def _check_placements(instance: Instance, schedule: Schedule, out: _Collector) -> _Placed:
    """Check each placement on its own and translate the valid ones to indices."""
    placed = _Placed()
    seen: set[int] = set()
    static = instance.objective.is_static
    for p in schedule.placements:
        j = instance.job_index.get(p.job)
        if j is None:
            out.add(ViolationKind.REFERENCE, f"placement of unknown job {p.job!r}")
            continue
        segmented = instance.preemptible[j] and not static
        if j in seen and not segmented:
            out.add(ViolationKind.DUPLICATE, f"job {p.job!r} is placed more than once"
                    + ("" if static else " but is not preemptible"))
            continue
        seen.add(j)
        t = instance.type_index.get(p.gpu_type)
        n = instance.node_index.get(p.node)
        gpus = [instance.gpu_index.get(g) for g in p.gpu_ids]
        unknown = [name for name, k in ((p.gpu_type, t), (p.node, n)) if k is None] + [
            g for g, k in zip(p.gpu_ids, gpus, strict=True) if k is None
        ]
        if unknown or t is None or n is None:
            out.add(ViolationKind.REFERENCE, f"job {p.job!r}: unknown {', '.join(unknown)}")
            continue
        indices = [int(g) for g in gpus if g is not None]
        if len(set(indices)) != len(indices):
            out.add(ViolationKind.GANG, f"job {p.job!r} lists a GPU more than once")
            continue
        if len(indices) != instance.gang[j]:
            out.add(
                ViolationKind.GANG,
                f"job {p.job!r} needs {instance.gang[j]} GPUs at once but is given "
                f"{len(indices)}",
            )
        for g in indices:
            if instance.gpu_node[g] != n:
                out.add(
                    ViolationKind.GANG,
                    f"job {p.job!r}: GPU {instance.gpu_ids[g]} is not on node {p.node!r} "
                    "(a gang runs on one node)",
                )
            if instance.gpu_type[g] != t:
                out.add(
                    ViolationKind.TYPE,
                    f"job {p.job!r}: GPU {instance.gpu_ids[g]} is a "
                    f"{instance.type_ids[instance.gpu_type[g]]}, not a {p.gpu_type}",
                )
        if not instance.eligible[j, t]:
            out.add(
                ViolationKind.TYPE,
                f"job {p.job!r} may not run on {p.gpu_type}: {_ineligibility(instance, j, t)}",
            )
        elif segmented and not p.end_s > p.start_s:
            out.add(ViolationKind.DURATION,
                    f"job {p.job!r} has a segment of length {p.end_s - p.start_s:g} s")
        elif not segmented and abs((p.end_s - p.start_s) - instance.duration[j, t]) > (
                TOLERANCE + _rounding(p.start_s, p.end_s)):
            out.add(
                ViolationKind.DURATION,
                f"job {p.job!r} runs {p.end_s - p.start_s:g} s on {p.gpu_type} but takes "
                f"{instance.duration[j, t]:g} s there",
            )
        if static and p.start_s != 0:
            out.add(
                ViolationKind.START,
                f"job {p.job!r} starts at {p.start_s:g} s, but objective "
                f"{instance.objective.value!r} places the batch at once (start 0)",
            )
        if not static and p.start_s < instance.release[j] - TOLERANCE - _rounding(p.start_s):
            out.add(
                ViolationKind.RELEASE,
                f"job {p.job!r} starts at {p.start_s:g} s, before its release at "
                f"{instance.release[j]:g} s",
            )
        if not static and p.end_s > instance.deadline[j] + TOLERANCE + _rounding(p.end_s):
            out.add(
                ViolationKind.DEADLINE,
                f"job {p.job!r} ends at {p.end_s:g} s, after its deadline at "
                f"{instance.deadline[j]:g} s",
            )
        placed.job.append(j)
        placed.gpu_type.append(t)
        placed.start.append(p.start_s)
        placed.end.append(p.end_s)
        placed.gpus.append(indices)
    return placed


def _check_coverage(
    instance: Instance, schedule: Schedule, placed: _Placed, out: _Collector
) -> None:
    """Every job is placed exactly once, or listed as unplaced where that is allowed."""
    is_placed = np.zeros(instance.n_jobs, dtype=bool)
    is_placed[placed.job] = True
    listed: set[int] = set()
    for u in schedule.unplaced:
        j = instance.job_index.get(u.job)
        if j is None:
            out.add(ViolationKind.REFERENCE, f"unplaced entry for unknown job {u.job!r}")
        elif is_placed[j]:
            out.add(ViolationKind.DUPLICATE, f"job {u.job!r} is both placed and unplaced")
        elif j in listed:
            out.add(ViolationKind.DUPLICATE, f"job {u.job!r} is listed as unplaced twice")
        else:
            listed.add(j)
            if not instance.objective.allows_unplaced:
                out.add(
                    ViolationKind.UNPLACED,
                    f"job {u.job!r} is not placed ({u.reason}), but objective "
                    f"{instance.objective.value!r} requires every job",
                )
    for missing in np.flatnonzero(~is_placed):
        if int(missing) not in listed:
            out.add(
                ViolationKind.UNPLACED,
                f"job {instance.job_ids[missing]!r} is neither placed nor listed as unplaced",
            )


def _pair_up(instance: Instance, placed: _Placed) -> None:
    """Find the space-shared segments and set their speeds.

    Two placements share GPUs when they hold the same GPUs of one type over the same
    interval, their jobs are preemptible with the same gang size, and the instance lists
    their classes as a pair on that type. Anything else that overlaps is ordinary
    sharing, held to the GPUs' capacities.
    """
    n = len(placed.job)
    speed, partner = np.ones(n), np.full(n, -1, dtype=np.int64)
    placed.speed, placed.partner = speed, partner
    if not instance.class_ids:
        return
    waiting: dict[tuple[tuple[int, ...], float, float], int] = {}
    for k in range(n):
        j = placed.job[k]
        if not instance.preemptible[j] or instance.job_class[j] < 0:
            continue
        key = (tuple(sorted(placed.gpus[k])), round(placed.start[k], 6), round(placed.end[k], 6))
        other = waiting.get(key)
        if other is None:
            waiting[key] = k
            continue
        a, b, t = instance.job_class[placed.job[other]], instance.job_class[j], placed.gpu_type[k]
        pair = (instance.colocation_speed[a, b, t], instance.colocation_speed[b, a, t])
        if min(pair) > 0 and instance.gang[j] == instance.gang[placed.job[other]]:
            speed[other], speed[k] = pair
            partner[other], partner[k] = k, other
            del waiting[key]


def _check_segments(instance: Instance, placed: _Placed, out: _Collector) -> None:
    """A preemptible job runs in one place at a time, and its segments do all its work."""
    job = np.asarray(placed.job, dtype=np.int64)
    work = placed.work(instance)
    done = np.bincount(job, weights=work, minlength=instance.n_jobs)
    start, end = np.asarray(placed.start), np.asarray(placed.end)
    for j in np.flatnonzero(instance.preemptible & (np.bincount(job, minlength=instance.n_jobs)
                                                    > 0)):
        mine = np.flatnonzero(job == j)
        mine = mine[np.argsort(start[mine], kind="stable")]
        overlap = np.flatnonzero(start[mine[1:]] < end[mine[:-1]] - TOLERANCE
                                 - 8.0 * np.spacing(np.abs(end[mine[:-1]])))
        if overlap.size:
            at = float(start[mine[1:]][overlap[0]])
            out.add(ViolationKind.SEGMENT, f"job {instance.job_ids[j]!r} runs in two places "
                    f"at once at {at:g} s (its segments overlap)")
        if not _close(float(done[j]), 1.0):
            out.add(ViolationKind.SEGMENT, f"the segments of job {instance.job_ids[j]!r} do "
                    f"{done[j]:.6g} of its work; they must add up to 1")


def _check_dependencies(instance: Instance, placed: _Placed, out: _Collector) -> None:
    """Each placed job starts after every predecessor ends; predecessors must run."""
    end = placed.last_end(instance.n_jobs)
    first = placed.first_start(instance.n_jobs)
    for j in np.flatnonzero(~np.isnan(first)).tolist():
        start = float(first[j])
        for p in instance.predecessors[j]:
            if np.isnan(end[p]):
                out.add(
                    ViolationKind.DEPENDENCY,
                    f"job {instance.job_ids[j]!r} runs but its predecessor "
                    f"{instance.job_ids[p]!r} is not placed",
                )
            elif start < end[p] - TOLERANCE - _rounding(float(end[p])):
                out.add(
                    ViolationKind.DEPENDENCY,
                    f"job {instance.job_ids[j]!r} starts at {start:g} s, before its "
                    f"predecessor {instance.job_ids[p]!r} ends at {end[p]:g} s",
                )


def _gpu_entries(
    instance: Instance, placed: _Placed
) -> tuple[IntArray, IntArray, FloatArray, FloatArray]:
    """One row per (placement, GPU): placement number, GPU, start and end."""
    counts = np.array([len(g) for g in placed.gpus], dtype=np.int64)
    owner = np.repeat(np.arange(len(placed.gpus)), counts)
    gpu = np.array([g for gpus in placed.gpus for g in gpus], dtype=np.int64)
    if instance.objective.is_static:
        # The whole batch holds its GPUs at once, whatever times the file claims.
        start, end = np.zeros(owner.size), np.ones(owner.size)
    else:
        start = np.asarray(placed.start)[owner]
        end = np.asarray(placed.end)[owner]
    return owner, gpu, start, end


def _check_capacity(instance: Instance, placed: _Placed, out: _Collector) -> FloatArray:
    """Sweep each GPU's events in time order and flag any resource above capacity.

    Returns the ``(G, R)`` peak load of every GPU, which the load objective needs.
    """
    n_gpus, n_res = instance.n_gpus, len(instance.resources)
    peak = np.zeros((n_gpus, n_res))
    owner, gpu, start, end = _gpu_entries(instance, placed)
    if owner.size == 0:
        return peak
    jobs = np.asarray(placed.job)[owner]
    demand = instance.demand[jobs, np.asarray(placed.gpu_type)[owner]]
    if placed.partner is not None and (placed.partner >= 0).any():
        # A space-shared pair takes its GPUs as one occupant with the larger demand.
        partner = placed.partner[owner]
        paired = partner >= 0
        first = paired & (partner > owner)
        mate = instance.demand[np.asarray(placed.job)[partner[first]],
                               np.asarray(placed.gpu_type)[owner[first]]]
        demand = demand.copy()
        demand[first] = np.maximum(demand[first], mate)
        demand[paired & ~first] = 0.0
    # Ends sort before starts at the same instant, so back-to-back jobs do not overlap.
    times = np.concatenate([start, end])
    is_start = np.concatenate([np.ones(owner.size), np.zeros(owner.size)])
    gpus = np.concatenate([gpu, gpu])
    delta = np.concatenate([demand, -demand])
    order = np.lexsort((is_start, times, gpus))
    # Every interval closes on its own GPU, so the running sum over the GPU-sorted events
    # is back to zero at each GPU boundary and equals that GPU's load in between.
    load = np.cumsum(delta[order], axis=0)
    event_gpu = gpus[order]
    np.maximum.at(peak, event_gpu, load)
    capacity = instance.capacity[instance.gpu_type]
    over = peak > capacity * (1 + TOLERANCE) + TOLERANCE
    for g, r in np.argwhere(over):
        on_gpu = np.flatnonzero(event_gpu == g)
        worst = on_gpu[int(np.argmax(load[on_gpu, r]))]
        instant = times[order][worst]
        active = (gpu == g) & (start <= instant) & (end > instant)
        names = ", ".join(repr(instance.job_ids[k]) for k in jobs[active])
        when = "" if instance.objective.is_static else f" at {instant:g} s"
        out.add(
            ViolationKind.CAPACITY,
            f"GPU {instance.gpu_ids[g]}: {instance.resources[r]} load {peak[g, r]:g} exceeds "
            f"capacity {capacity[g, r]:g}{when} (jobs {names})",
        )
    return peak


def _objective_value(instance: Instance, placed: _Placed, peak: FloatArray) -> float:
    """The objective of the placed jobs, from the instance's data alone."""
    jobs = np.asarray(placed.job, dtype=np.int64)
    types = np.asarray(placed.gpu_type, dtype=np.int64)
    completion = placed.last_end(instance.n_jobs)
    finished = np.flatnonzero(~np.isnan(completion))
    end = completion[finished]
    used = np.zeros(instance.n_gpus, dtype=bool)
    for gpus in placed.gpus:
        used[gpus] = True
    match instance.objective:
        case ObjectiveKind.ASSIGN_COST:
            return float(instance.cost[jobs, types].sum())
        case ObjectiveKind.COST:
            # A segment costs its share of the job's work on its type.
            return float((instance.cost[jobs, types] * placed.work(instance)).sum())
        case ObjectiveKind.ASSIGN_PROFIT:
            return float(instance.profit[jobs, types].sum())
        case ObjectiveKind.MAX_WEIGHT:
            return float(instance.weight[jobs].sum())
        case ObjectiveKind.MIN_GPUS:
            return float(used.sum())
        case ObjectiveKind.MIN_GPU_COST:
            return float(instance.price_per_hour[instance.gpu_type[used]].sum())
        case ObjectiveKind.MIN_MAX_LOAD:
            capacity = instance.capacity[instance.gpu_type]
            return float((peak / capacity).max()) if peak.size else 0.0
        case ObjectiveKind.MAKESPAN:
            return float(end.max()) if end.size else 0.0
        case ObjectiveKind.WEIGHTED_COMPLETION:
            return float((instance.weight[finished] * end).sum())
        case ObjectiveKind.TARDINESS:
            late = np.maximum(0.0, end - instance.due[finished])
            return float((instance.weight[finished] * late).sum())
    raise AssertionError(f"objective {instance.objective} has no evaluation")


def _check_certificate(
    instance: Instance, schedule: Schedule, value: float, out: _Collector
) -> None:
    """The certificate holds: status, objective, bound and gap agree with the placements.

    ``optimal`` needs a bound within :data:`~gpuplan.schedule.OPTIMAL_GAP` of the plan's
    value; a bound lies on the right side of that value; ``infeasible`` places nothing; a
    status without a plan claims no objective.
    """
    status = schedule.status
    if not status.has_plan and schedule.objective is not None:
        out.add(ViolationKind.OBJECTIVE, f"status {status.value!r} has no plan but claims "
                f"objective {schedule.objective:g}")
    if status is Status.INFEASIBLE and schedule.placements:
        out.add(ViolationKind.STATUS, f"status 'infeasible' claims no plan exists, yet "
                f"{len(schedule.placements)} placement(s) are given")
    if status is Status.OPTIMAL:
        proven = relative_gap(schedule.objective, schedule.bound)
        if proven is None:
            out.add(ViolationKind.STATUS, "status 'optimal' without a bound that proves it")
        elif proven > OPTIMAL_GAP * (1 + TOLERANCE):
            out.add(ViolationKind.STATUS, f"status 'optimal' with a gap of {proven:.4%}: "
                    f"optimal needs a gap of at most {OPTIMAL_GAP:.2%}")
    if schedule.objective is not None and not _close(schedule.objective, value):
        out.add(
            ViolationKind.OBJECTIVE,
            f"reported objective {schedule.objective:g} but the placements give {value:g}",
        )
    gap = relative_gap(schedule.objective, schedule.bound)
    if (gap is None) != (schedule.gap is None) or (
        gap is not None and schedule.gap is not None and not _close(gap, schedule.gap)
    ):
        out.add(
            ViolationKind.BOUND,
            f"reported gap {schedule.gap} does not follow from objective {schedule.objective} "
            f"and bound {schedule.bound}",
        )
    if schedule.bound is None or not schedule.status.has_plan:
        return
    slack = TOLERANCE * max(1.0, abs(value))
    minimise = instance.objective.sense == "min"
    if (minimise and schedule.bound > value + slack) or (
        not minimise and schedule.bound < value - slack
    ):
        side = "lower" if minimise else "upper"
        out.add(
            ViolationKind.BOUND,
            f"reported {side} bound {schedule.bound:g} is beyond the plan's objective {value:g}",
        )


def verify_schedule(instance: Instance, schedule: Schedule) -> Verification:
    """Check a schedule against an instance, recomputing everything from the instance.

    Checks that every job is placed at most once (exactly once unless the objective lets
    jobs be dropped), or, if preemptible, in segments that never overlap and add up to its
    work; that each gang has its size, on one node and one type, that the type is
    allowed and fits, that durations match the chosen type, release times, deadlines and
    dependency order (time-based objectives), that no named resource of any GPU is exceeded
    at any instant (a space-shared pair, see :func:`_pair_up`, counts once with the larger
    demand and runs at its colocation speeds), and that the reported objective and bound
    are consistent.

    Parameters
    ----------
    instance
        The problem, as read from its file.
    schedule
        The schedule to check, referring to jobs, nodes, types and GPUs by id.

    Returns
    -------
    Verification
        ``ok`` and one violation per broken constraint (the first
        :data:`MAX_LISTED` of each kind), with the recomputed objective.
    """
    out = _Collector()
    if schedule.objective_kind != instance.objective.value:
        out.add(
            ViolationKind.OBJECTIVE,
            f"the schedule was planned for {schedule.objective_kind!r}, the instance asks "
            f"for {instance.objective.value!r}",
        )
    placed = _check_placements(instance, schedule, out)
    _check_coverage(instance, schedule, placed, out)
    if not instance.objective.is_static:
        _pair_up(instance, placed)
        _check_segments(instance, placed, out)
        _check_dependencies(instance, placed, out)
    peak = _check_capacity(instance, placed, out)
    value = _objective_value(instance, placed, peak)
    _check_certificate(instance, schedule, value, out)
    return out.result(value)
