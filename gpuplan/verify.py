"""The independent verifier: recompute every constraint and the objective from the instance.

Nothing here trusts a solver. The verifier reads only the :class:`~gpuplan.core.instance.Instance`
and the :class:`~gpuplan.core.schedule.Schedule` (by ids, as a user's file would hold them), and
reports each broken constraint as one readable line. :func:`gpuplan.planning.plan` runs it on
every result, and ``gpuplan check`` runs it on any schedule file. A long simulated run is read
as a :class:`~gpuplan.core.schedule.ResultSchedule`, whose segments and events are made in ids
one at a time as they are checked, the same checks on the same ids.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from gpuplan.core.instance import FloatArray, Instance, IntArray
from gpuplan.core.objectives import ObjectiveKind, met_due
from gpuplan.core.result import EventKind, Result
from gpuplan.core.schedule import (
    Event,
    FreeDomains,
    GangSpan,
    Plan,
    ResultSchedule,
    RunRecord,
    Segment,
    TopologyFacts,
    Verification,
    Violation,
    ViolationKind,
    segment_facts,
)
from gpuplan.core.status import OPTIMAL_GAP, TOLERANCE, Status, relative_gap

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

    def result(self, objective: float | None,
               topology: TopologyFacts | None = None) -> Verification:
        violations = list(self.listed)
        for kind, count in self.counts.items():
            if count > MAX_LISTED:
                violations.append(
                    Violation(kind=kind, message=f"... and {count - MAX_LISTED} more like these")
                )
        return Verification(ok=not violations, violations=violations, objective=objective,
                            topology=topology)


@dataclass
class _Placed:
    """The segments that reference known jobs, GPUs and types, by index.

    A preemptible job may have several segments; every other job has one. What a segment
    declares (its work, partner, overheads, the GPUs it migrated from) is kept to be
    checked against what the instance gives.
    """

    job: list[int] = field(default_factory=list)
    gpu_type: list[int] = field(default_factory=list)
    node: list[int] = field(default_factory=list)
    start: list[float] = field(default_factory=list)
    end: list[float] = field(default_factory=list)
    gpus: list[list[int]] = field(default_factory=list)
    restore: list[float] = field(default_factory=list)
    migrate: list[float] = field(default_factory=list)
    declared_work: list[float | None] = field(default_factory=list)
    declared_partner: list[str | None] = field(default_factory=list)
    migrated_from: list[list[str] | None] = field(default_factory=list)
    lost: list[float] = field(default_factory=list)
    #: Per segment: the distinct nodes its GPUs are on (its own node for a CPU-only job).
    nodes: list[list[int]] = field(default_factory=list)
    #: Per segment: how many times its job's duration it runs there (its spread slowdown
    #: when the gang spans several domains of its preferred topology level, else 1).
    slow: list[float] = field(default_factory=list)
    #: Per segment: its speed (below 1 while space-shared) and the segment it shares its
    #: GPUs with (-1: none); set by :func:`_check_partners` and :func:`_pair_up`.
    speed: FloatArray | None = None
    partner: IntArray | None = None

    def add(self, j: int, t: int, n: int, gpus: list[int], nodes: list[int], slow: float,
            segment: Segment) -> None:
        """Keep one segment, by index."""
        self.nodes.append(nodes)
        self.slow.append(slow)
        self.job.append(j)
        self.gpu_type.append(t)
        self.node.append(n)
        self.start.append(segment.start_s)
        self.end.append(segment.end_s)
        self.gpus.append(gpus)
        self.restore.append(segment.restore_s)
        self.migrate.append(segment.migrate_s)
        self.declared_work.append(segment.work)
        self.declared_partner.append(segment.partner)
        self.migrated_from.append(segment.migrated_from)
        self.lost.append(segment.lost)

    def attempts(self, instance: Instance) -> np.ndarray:
        """``(S,)`` whether each segment is a failed attempt of a job run whole.

        A job that is not preemptible (or any job, under a static objective) runs whole
        in one segment; one that a failure stopped loses all it did and starts again, so
        its earlier segments declare work lost.
        """
        job = np.asarray(self.job, dtype=np.int64)
        whole = ~instance.preemptible[job] | instance.objective.is_static
        attempt: np.ndarray = whole & (np.asarray(self.lost, dtype=float) > 0)
        return attempt

    def by_job(self) -> dict[int, list[int]]:
        """Each placed job's segments, in start order."""
        mine: dict[int, list[int]] = defaultdict(list)
        for k in sorted(range(len(self.job)), key=lambda k: self.start[k]):
            mine[self.job[k]].append(k)
        return mine

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

    def duration(self, instance: Instance) -> FloatArray:
        """``(S,)`` how long each segment's job takes where it runs (1 where it may not).

        Its duration on the type, times the segment's spread slowdown; for a piece of an
        elastic job, the run time in which its count of GPUs does all the job's work
        (``work / speed``, overheads aside).
        """
        job = np.asarray(self.job, dtype=np.int64)
        kind = np.asarray(self.gpu_type, dtype=np.int64)
        seconds: FloatArray = np.where(instance.eligible[job, kind],
                                       instance.duration[job, kind], 1.0)
        elastic = instance.elastic[job]
        if elastic.any():
            counts = np.array([len(g) for g in self.gpus], dtype=np.int64)
            run = instance.run_seconds(job[elastic], kind[elastic], counts[elastic])
            seconds[elastic] = np.where(np.isfinite(run), run, 1.0)
        seconds *= np.asarray(self.slow, dtype=float)
        return seconds

    def work(self, instance: Instance) -> FloatArray:
        """Share of its job's work each segment does: its run time over the duration.

        The run time is the segment's length less its restore and migration overheads. A
        job that is not preemptible (or any job, under a static objective) does all of its
        work in its one segment, unless it is elastic (its one piece does what its run
        time at its count's speed gives); a space-shared segment does its work at its
        colocation speed, and a gang spread over its preferred topology level at its
        slowdown.
        """
        job = np.asarray(self.job, dtype=np.int64)
        run = np.maximum(0.0, np.asarray(self.end, dtype=float)
                         - np.asarray(self.start, dtype=float) - np.asarray(self.restore)
                         - np.asarray(self.migrate))
        share = run / self.duration(instance)
        if self.speed is not None:
            share = share * self.speed
        # An elastic job's piece does what its count's speed gives, run whole or not.
        segmented = ((instance.preemptible[job] | instance.elastic[job])
                     & (not instance.objective.is_static))
        work: FloatArray = np.where(segmented | self.attempts(instance), share, 1.0)
        return work


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= TOLERANCE * max(1.0, abs(a), abs(b))


def _rounding(*times: float) -> float:
    """What float arithmetic on these times may be off by: a few units in the last place.

    A length ``end - start`` far from time zero carries the rounding of ``start`` and
    ``end``, which no relative tolerance on the length covers.
    """
    # math.ulp is np.spacing for the non-negative float here, at a fraction of the cost.
    return 8.0 * math.ulp(max(abs(t) for t in times))


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
    if instance.partition_ids and instance.job_partition[j] >= 0:
        partition = instance.partition_ids[instance.job_partition[j]]
        return (f"the job does not allow it, or its partition {partition!r} holds no node "
                "of the type that fits it")
    return "the job does not allow it"


def _check_each_segment(instance: Instance, schedule: Plan, out: _Collector) -> _Placed:
    """Check each segment on its own and translate the valid ones to indices."""
    placed = _Placed()
    seen: set[int] = set()
    static = instance.objective.is_static
    for p in schedule.segments:
        j = instance.job_index.get(p.job)
        if j is None:
            out.add(ViolationKind.REFERENCE, f"segment of unknown job {p.job!r}")
            continue
        segmented = instance.preemptible[j] and not static
        # A failed attempt of a job run whole: it ran, lost what it did, and runs again.
        attempt = not segmented and p.lost > 0
        if j in seen and not segmented and not attempt:
            out.add(ViolationKind.DUPLICATE, f"job {p.job!r} is placed more than once"
                    + ("" if static else " but is not preemptible"))
            continue
        if not attempt:
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
        elastic = bool(instance.elastic[j])
        if elastic:
            nodes = _check_piece(instance, j, t, n, indices, p, out)
        else:
            if len(indices) != instance.gang[j]:
                out.add(
                    ViolationKind.GANG,
                    f"job {p.job!r} needs {instance.gang[j]} GPUs at once but is given "
                    f"{len(indices)}",
                )
            nodes = _check_gang_nodes(instance, j, n, indices, p, out)
        for g in indices:
            if instance.gpu_type[g] != t:
                out.add(
                    ViolationKind.TYPE,
                    f"job {p.job!r}: GPU {instance.gpu_ids[g]} is a "
                    f"{instance.type_ids[instance.gpu_type[g]]}, not a {p.gpu_type}",
                )
        if instance.gang[j] == 0 and instance.node_gpus[n, t] == 0:
            out.add(ViolationKind.TYPE, f"job {p.job!r} is placed by {p.gpu_type} on node "
                    f"{p.node!r}, which holds no {p.gpu_type}")
        slow = instance.spread_factor(j, np.asarray(nodes, dtype=np.int64))
        takes = float(instance.duration[j, t]) * slow
        spread = "" if slow == 1.0 else (
            f" spread over {instance.levels[instance.preferred_level[j]]}s (its duration "
            f"{instance.duration[j, t]:g} s times its spread_slowdown {slow:g})")
        if elastic:
            # Its count and type are checked by _check_piece, its length by the work its
            # pieces do (_check_segments).
            if not static and not p.end_s > p.start_s:
                out.add(ViolationKind.DURATION, f"job {p.job!r} has a piece of length "
                        f"{p.end_s - p.start_s:g} s")
        elif not instance.eligible[j, t]:
            out.add(
                ViolationKind.TYPE,
                f"job {p.job!r} may not run on {p.gpu_type}: {_ineligibility(instance, j, t)}",
            )
        elif (segmented or attempt) and not p.end_s > p.start_s:
            out.add(ViolationKind.DURATION,
                    f"job {p.job!r} has a segment of length {p.end_s - p.start_s:g} s")
        elif attempt and p.end_s - p.start_s > takes + TOLERANCE + _rounding(
                p.start_s, p.end_s):
            out.add(ViolationKind.DURATION,
                    f"job {p.job!r}: a failed attempt runs {p.end_s - p.start_s:g} s on "
                    f"{p.gpu_type}, longer than the job takes there ({takes:g} s{spread})")
        elif not segmented and not attempt and abs(
                (p.end_s - p.start_s) - takes) > (
                TOLERANCE + _rounding(p.start_s, p.end_s)):
            out.add(
                ViolationKind.DURATION,
                f"job {p.job!r} runs {p.end_s - p.start_s:g} s on {p.gpu_type} but takes "
                f"{takes:g} s there{spread}",
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
        placed.add(j, t, n, indices, nodes, slow, p)
    return placed


def _columns_placed(instance: Instance, schedule: ResultSchedule) -> _Placed | None:
    """An in-memory run's segments by index, if each keeps :func:`_check_each_segment`'s rules.

    The same rules on the facts the document states (:func:`~gpuplan.core.schedule.
    segment_facts`), for all segments at once; a gang over several nodes, bound to a
    topology level or holding no GPU is checked on its own by :func:`_check_gang_nodes`.
    None when some segment may break a rule: the caller then checks the segments one by
    one, which names what is wrong.
    """
    result = schedule.result
    facts = segment_facts(instance, result)
    order = facts.order
    n_segments = order.size
    job, kind, node = result.job[order], result.gpu_type[order], facts.node[order]
    start, end = result.start[order], result.end[order]
    gpus = [result.gpus[i] for i in order.tolist()]
    sizes = np.array([g.size for g in gpus], dtype=np.int64)
    flat = np.concatenate([*gpus, np.zeros(0, dtype=np.int64)]).astype(np.int64)
    owner = np.repeat(np.arange(n_segments), sizes)
    if not (((job >= 0) & (job < instance.n_jobs)).all()
            # An elastic job's pieces are checked one by one (their counts, layouts).
            and not instance.elastic[job].any()
            and ((kind >= 0) & (kind < instance.n_types)).all()
            and ((node >= 0) & (node < instance.n_nodes)).all()
            and ((flat >= 0) & (flat < instance.n_gpus)).all()):
        return None
    static = instance.objective.is_static
    restore, migrate = (column[order] for column in result.overheads())
    lost = result.lost_work()[order]
    segmented = instance.preemptible[job] & (not static)
    attempt = ~segmented & (lost > 0)
    whole_runs = np.bincount(job[~segmented & ~attempt], minlength=instance.n_jobs)
    twice = np.sort(flat + owner * (instance.n_gpus + 1))
    if ((whole_runs > 1).any() or (twice[1:] == twice[:-1]).any()
            or (sizes != instance.gang[job]).any()
            or (instance.gpu_type[flat] != kind[owner]).any()):
        return None
    complex_ = (instance.gang_nodes[job] > 1) | (instance.gang[job] == 0)
    if instance.levels:
        complex_ |= instance.required_level[job] >= 0
    if (instance.gpu_node[flat] != node[owner])[~complex_[owner]].any():
        return None
    nodes: list[list[int]] = [[n] for n in node.tolist()]
    slow = np.ones(n_segments)
    scratch = _Collector()
    for k in np.flatnonzero(complex_).tolist():
        j, t, n = int(job[k]), int(kind[k]), int(node[k])
        if instance.gang[j] == 0 and instance.node_gpus[n, t] == 0:
            return None
        segment = Segment(job=instance.job_ids[j], node=instance.node_ids[n],
                          gpu_type=instance.type_ids[t],
                          gpu_ids=[instance.gpu_ids[g] for g in gpus[k].tolist()],
                          start_s=float(start[k]), end_s=float(end[k]))
        nodes[k] = _check_gang_nodes(instance, j, n, gpus[k].tolist(), segment, scratch)
        slow[k] = instance.spread_factor(j, np.asarray(nodes[k], dtype=np.int64))
    if scratch.counts:
        return None
    eligible = instance.eligible[job, kind]
    takes = np.where(eligible, instance.duration[job, kind], 0.0) * slow
    length = end - start
    rounding = 8.0 * np.spacing(np.maximum(np.abs(start), np.abs(end)))
    broken = ~eligible
    broken |= (segmented | attempt) & ~(end > start)
    broken |= attempt & (length > takes + TOLERANCE + rounding)
    broken |= ~segmented & ~attempt & (np.abs(length - takes) > TOLERANCE + rounding)
    if static:
        broken |= start != 0
    else:
        broken |= start < instance.release[job] - TOLERANCE - 8.0 * np.spacing(np.abs(start))
        broken |= end > instance.deadline[job] + TOLERANCE + 8.0 * np.spacing(np.abs(end))
    if broken.any():
        return None
    placed = _Placed()
    placed.job, placed.gpu_type, placed.node = job.tolist(), kind.tolist(), node.tolist()
    placed.start, placed.end = start.tolist(), end.tolist()
    placed.gpus = [g.tolist() for g in gpus]
    placed.restore, placed.migrate, placed.lost = restore.tolist(), migrate.tolist(), lost.tolist()
    placed.declared_work = [None if math.isnan(w) else w for w in facts.work[order].tolist()]
    mates = facts.partner[order]
    placed.declared_partner = [None if m < 0 else instance.job_ids[result.job[m]]
                               for m in mates.tolist()]
    placed.migrated_from = [None if before is None else [instance.gpu_ids[g] for g in before]
                            for before in (facts.moved_from[i] for i in order.tolist())]
    placed.nodes, placed.slow = nodes, slow.tolist()
    return placed


#: Event kinds by a number, for sorting them with numpy.
_KIND_CODE = {kind: code for code, kind in enumerate(EventKind)}


def _columns_events_hold(instance: Instance, result: Result, placed: _Placed) -> bool:
    """Whether an in-memory run's events are in time order and exactly its segments'.

    Every event :func:`_expected_events` calls for (the optional ones at a pause that
    did not pause included), each once, on its segment's GPUs, at its instant to the
    bit. True proves what :func:`_check_events` checks; False: the caller checks the
    events one by one, which names what is wrong (or accepts what is within tolerance).
    """
    events = result.events
    if not events:
        return not placed.job
    times = np.array([e.time_s for e in events])
    latest = np.maximum.accumulate(times)
    if (times[1:] < latest[:-1] - TOLERANCE - 8.0 * np.spacing(np.abs(latest[:-1]))).any():
        return False
    job = np.asarray(placed.job, dtype=np.int64)
    start, end = np.asarray(placed.start), np.asarray(placed.end)
    # Each job's segments in start order (as by_job lists them).
    order = np.lexsort((np.arange(job.size), start, job))
    ordered = job[order]
    first = np.r_[True, ordered[1:] != ordered[:-1]]
    last = np.r_[ordered[1:] != ordered[:-1], True]
    moved = np.array([placed.migrated_from[k] is not None for k in order.tolist()], dtype=bool)
    begin_kind = np.where(first, _KIND_CODE[EventKind.START],
                          np.where(moved, _KIND_CODE[EventKind.MIGRATE],
                                   _KIND_CODE[EventKind.RESUME]))
    end_kind = np.where(last, _KIND_CODE[EventKind.COMPLETE], _KIND_CODE[EventKind.PREEMPT])
    want_job = np.concatenate([ordered, ordered])
    want_kind = np.concatenate([begin_kind, end_kind])
    want_time = np.concatenate([start[order], end[order]])
    want_segment = np.concatenate([order, order])
    if want_job.size != len(events):
        return False
    got_job = np.array([e.job for e in events], dtype=np.int64)
    got_kind = np.array([_KIND_CODE[e.kind] for e in events], dtype=np.int64)
    want = np.lexsort((want_time, want_kind, want_job))
    got = np.lexsort((times, got_kind, got_job))
    if not (np.array_equal(want_job[want], got_job[got])
            and np.array_equal(want_kind[want], got_kind[got])
            and np.array_equal(want_time[want], times[got])):
        return False
    return _same_gpu_sets([events[e].gpus for e in got.tolist()],
                          [placed.gpus[k] for k in want_segment[want].tolist()])


def _same_gpu_sets(left: Sequence[Sequence[int] | IntArray],
                   right: Sequence[Sequence[int] | IntArray]) -> bool:
    """Whether each entry of ``left`` holds the GPUs of its partner in ``right``."""
    sizes = np.fromiter(map(len, left), dtype=np.int64, count=len(left))
    if not np.array_equal(sizes, np.fromiter(map(len, right), dtype=np.int64,
                                             count=len(right))):
        return False
    if not sizes.sum():
        return True
    group = np.repeat(np.arange(sizes.size), sizes)

    def each_sorted(arrays: Sequence[Sequence[int] | IntArray]) -> IntArray:
        flat = np.concatenate(arrays).astype(np.int64, copy=False)
        ordered: IntArray = flat[np.lexsort((flat, group))]
        return ordered

    return bool(np.array_equal(each_sorted(left), each_sorted(right)))


def _check_gang_nodes(instance: Instance, j: int, n: int, gpus: list[int], segment: Segment,
                      out: _Collector, shape: tuple[int, int] | None = None) -> list[int]:
    """A gang's GPUs fill its nodes evenly, within its required topology domain.

    ``gpus_per_node`` GPUs on each of ``gang / gpus_per_node`` nodes, one of which is the
    segment's ``node`` (``shape``: these two numbers, for an elastic job's piece). Returns
    the gang's nodes (the segment's node for a CPU-only job).
    """
    me = segment.job
    if not gpus:
        return [n]
    per_node, wanted = shape or (int(instance.gpus_per_node[j]), int(instance.gang_nodes[j]))
    hosts = instance.gpu_node[gpus]
    bound = bool(instance.levels) and instance.required_level[j] >= 0
    if wanted == 1 and len(gpus) == per_node and not bound and (hosts == n).all():
        # The common case, a whole gang on the segment's node: nothing more to check.
        return [n]
    nodes, counts = np.unique(hosts, return_counts=True)
    if n not in nodes:
        out.add(ViolationKind.GANG, f"job {me!r}: node {segment.node!r} holds none of its "
                f"GPUs ({_ids(instance, gpus)})")
    if nodes.size != wanted or (counts != per_node).any():
        spread = ", ".join(f"{c} on {instance.node_ids[m]}"
                           for m, c in zip(nodes.tolist(), counts.tolist(), strict=True))
        layout = ("all on one node" if wanted == 1 else
                  f"{per_node} on each of {wanted} nodes"
                  + (" (a piece of more GPUs than a node holds takes whole nodes)" if shape
                     else " (gpus_per_node)"))
        out.add(ViolationKind.GANG, f"job {me!r} runs its {len(gpus)} GPUs as {spread}, but "
                f"its {'piece' if shape else 'gang'} takes {layout}")
    if bound:
        level = int(instance.required_level[j])
        domains = instance.node_domain[nodes, level]
        if (domains < 0).any() or (domains != domains[0]).any():
            name = instance.levels[level]
            where = ", ".join(f"{instance.node_ids[m]} in "
                              + (instance.domain_ids[level][d] if d >= 0 else f"no {name}")
                              for m, d in zip(nodes.tolist(), domains.tolist(), strict=True))
            out.add(ViolationKind.TOPOLOGY, f"job {me!r} must stay within one {name} but "
                    f"runs on {where}")
    result: list[int] = nodes.tolist()
    return result


def _check_piece(instance: Instance, j: int, t: int, n: int, gpus: list[int],
                 segment: Segment, out: _Collector) -> list[int]:
    """An elastic job's piece runs on a count of GPUs it has a speed for, laid out as one.

    A count it may use on the type (a speed above 0 there), on one node up to a node's
    GPUs, on whole nodes beyond (:meth:`~gpuplan.core.instance.Instance.piece_nodes`).
    Returns the piece's nodes.
    """
    me, count = segment.job, len(gpus)
    at = f"the piece at {segment.start_s:g} s"
    if instance.piece_speed(j, t, count) <= 0:
        usable = [str(c) for c in instance.counts.tolist()
                  if instance.piece_speed(j, t, c) > 0]
        out.add(ViolationKind.GANG, f"job {me!r}: {at} runs on {count} {segment.gpu_type} "
                f"GPUs, a count the job has no speed for there (its counts on "
                f"{segment.gpu_type}: {', '.join(usable) or 'none'})")
        return sorted(set(instance.gpu_node[gpus].tolist())) if gpus else [n]
    nodes = instance.piece_nodes(t, count)
    return _check_gang_nodes(instance, j, n, gpus, segment, out, (count // nodes, nodes))


def _check_coverage(
    instance: Instance, schedule: Plan, placed: _Placed, out: _Collector
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


def _same_time(a: float, b: float) -> bool:
    """Whether two instants are one, within the time tolerance."""
    return abs(a - b) <= TOLERANCE + _rounding(a, b)


def _ids(instance: Instance, gpus: list[int] | frozenset[int]) -> str:
    return ", ".join(instance.gpu_ids[g] for g in sorted(gpus))


def _pair_speeds(instance: Instance, j: int, other: int, t: int) -> tuple[float, float] | None:
    """The speeds of jobs ``j`` and ``other`` sharing GPUs of type ``t``; None: they may not.

    Only preemptible jobs with the same gang size whose classes the instance lists as a pair
    on the type share GPUs.
    """
    if (not instance.class_ids or not (instance.preemptible[j] and instance.preemptible[other])
            or instance.gang[j] != instance.gang[other]):
        return None
    a, b = int(instance.job_class[j]), int(instance.job_class[other])
    if a < 0 or b < 0:
        return None
    pair = (float(instance.colocation_speed[a, b, t]), float(instance.colocation_speed[b, a, t]))
    return pair if min(pair) > 0 else None


def _check_partners(instance: Instance, placed: _Placed, out: _Collector) -> None:
    """Check the declared space-sharing partners and set the speeds of the valid pairs.

    A segment naming a partner must hold exactly the GPUs, over the same interval, of a
    segment of that job which names it back, and the two jobs must be able to share (see
    :func:`_pair_speeds`). A segment whose partner fails this runs alone in every later
    check. Under a static objective no job shares GPUs by pairing.
    """
    n = len(placed.job)
    speed, partner = np.ones(n), np.full(n, -1, dtype=np.int64)
    placed.speed, placed.partner = speed, partner
    if all(name is None for name in placed.declared_partner):
        return
    where: dict[tuple[int, tuple[int, ...]], list[int]] = defaultdict(list)
    for k in range(n):
        where[placed.job[k], tuple(sorted(placed.gpus[k]))].append(k)
    for k, name in enumerate(placed.declared_partner):
        if name is None:
            continue
        j, t = placed.job[k], placed.gpu_type[k]
        me, gpus = instance.job_ids[j], tuple(sorted(placed.gpus[k]))
        at = (f"on {_ids(instance, placed.gpus[k])} over [{placed.start[k]:g}, "
              f"{placed.end[k]:g}] s")
        other = instance.job_index.get(name)
        if instance.objective.is_static:
            out.add(ViolationKind.PARTNER, f"job {me!r} names {name!r} as its partner, but "
                    f"objective {instance.objective.value!r} places the batch at once: jobs "
                    "share GPUs only within their capacities")
            continue
        if other is None or other == j:
            out.add(ViolationKind.PARTNER, f"job {me!r} names "
                    + ("itself" if other == j else f"unknown job {name!r}") + " as its partner")
            continue
        mate = next((m for m in where.get((other, gpus), ())
                     if _same_time(placed.start[m], placed.start[k])
                     and _same_time(placed.end[m], placed.end[k])), None)
        if mate is None:
            out.add(ViolationKind.PARTNER, f"job {me!r} shares its GPUs {at} with job "
                    f"{name!r}, which has no segment on exactly those GPUs over that interval")
            continue
        if placed.declared_partner[mate] != me:
            back = placed.declared_partner[mate]
            out.add(ViolationKind.PARTNER, f"job {me!r} names {name!r} as its partner {at}, "
                    f"but {name!r} names " + ("no partner" if back is None else repr(back))
                    + " there")
            continue
        pair = _pair_speeds(instance, j, other, t)
        if pair is None:
            if k < mate:
                out.add(ViolationKind.PARTNER, f"jobs {me!r} and {name!r} share GPUs {at}, "
                        "but the instance lists no colocation speeds for them on "
                        f"{instance.type_ids[t]} (only preemptible jobs of a listed class "
                        "pair, with the same gang size, share GPUs)")
            continue
        speed[k], partner[k] = pair[0], mate


def _pair_up(instance: Instance, placed: _Placed) -> None:
    """Find the space-shared segments among those that name no partner (version 1 files).

    Two segments share GPUs when they hold the same GPUs of one type over the same
    interval, their jobs are preemptible with the same gang size, and the instance lists
    their classes as a pair on that type. Anything else that overlaps is ordinary
    sharing, held to the GPUs' capacities.
    """
    assert placed.speed is not None and placed.partner is not None
    speed, partner = placed.speed, placed.partner
    if not instance.class_ids:
        return
    waiting: dict[tuple[tuple[int, ...], float, float], int] = {}
    for k in range(len(placed.job)):
        j = placed.job[k]
        if (placed.declared_partner[k] is not None or not instance.preemptible[j]
                or instance.job_class[j] < 0):
            continue
        key = (tuple(sorted(placed.gpus[k])), round(placed.start[k], 6), round(placed.end[k], 6))
        other = waiting.get(key)
        if other is None:
            waiting[key] = k
            continue
        pair = _pair_speeds(instance, placed.job[other], j, placed.gpu_type[k])
        if pair is not None:
            speed[other], speed[k] = pair
            partner[other], partner[k] = k, other
            del waiting[key]


def _check_overheads(instance: Instance, placed: _Placed, out: _Collector) -> None:
    """Overheads are not negative, fit in their segment, and only a paused job pays them."""
    restore, migrate = np.asarray(placed.restore), np.asarray(placed.migrate)
    first = placed.first_start(instance.n_jobs)
    for k in np.flatnonzero((restore != 0) | (migrate != 0)).tolist():
        j = placed.job[k]
        me, start, end = instance.job_ids[j], placed.start[k], placed.end[k]
        paid = f"restore {restore[k]:g} s, migration {migrate[k]:g} s"
        if restore[k] < 0 or migrate[k] < 0:
            out.add(ViolationKind.OVERHEAD, f"job {me!r}: the segment at {start:g} s pays a "
                    f"negative overhead ({paid})")
        elif instance.elastic[j] and not instance.objective.is_static:
            # An elastic piece pays its rescale_s where it starts, resumes or changes GPUs
            # (_check_rescale); here only that it fits in the piece.
            if restore[k] + migrate[k] > end - start + TOLERANCE + _rounding(start, end):
                out.add(ViolationKind.OVERHEAD, f"job {me!r}: the piece at {start:g} s pays "
                        f"{restore[k] + migrate[k]:g} s of overheads ({paid}) but lasts "
                        f"{end - start:g} s")
        elif instance.objective.is_static or not instance.preemptible[j]:
            why = ("it is not preemptible" if not instance.preemptible[j] else
                   f"objective {instance.objective.value!r} places the batch at once")
            out.add(ViolationKind.OVERHEAD, f"job {me!r} pays overheads ({paid}) at "
                    f"{start:g} s, but it is never paused: {why}")
        elif start <= first[j]:
            out.add(ViolationKind.OVERHEAD, f"job {me!r} pays overheads ({paid}) at "
                    f"{start:g} s, its first start: there is nothing to restore or move yet")
        elif restore[k] + migrate[k] > end - start + TOLERANCE + _rounding(start, end):
            out.add(ViolationKind.OVERHEAD, f"job {me!r}: the segment at {start:g} s pays "
                    f"{restore[k] + migrate[k]:g} s of overheads ({paid}) but lasts "
                    f"{end - start:g} s")


def _check_work(instance: Instance, placed: _Placed, out: _Collector) -> None:
    """Each declared work share is the one the segment's interval gives.

    That is the run time (length less overheads) over the job's duration on the type,
    times the pair's colocation speed when it shares; 1 for a job run whole. Segments on a
    type the job may not use, or whose overheads outlast them, are reported as such
    instead.
    """
    declared = np.array([np.nan if w is None else w for w in placed.declared_work])
    if np.isnan(declared).all():
        return
    job = np.asarray(placed.job, dtype=np.int64)
    kind = np.asarray(placed.gpu_type, dtype=np.int64)
    start, end = np.asarray(placed.start), np.asarray(placed.end)
    overheads = np.asarray(placed.restore) + np.asarray(placed.migrate)
    computed = placed.work(instance)
    eligible = instance.eligible[job, kind]
    duration = placed.duration(instance)
    speed = np.ones(job.size) if placed.speed is None else placed.speed
    whole = ((~instance.preemptible[job] & ~instance.elastic[job])
             | instance.objective.is_static) & ~placed.attempts(instance)
    rounding = 8.0 * np.spacing(np.maximum(np.abs(start), np.abs(end)))
    slack = np.where(whole, TOLERANCE * np.maximum(1.0, np.maximum(np.abs(declared),
                                                                   np.abs(computed))),
                     TOLERANCE + rounding * speed / duration)
    with np.errstate(invalid="ignore"):
        wrong = eligible & (overheads <= end - start) & (np.abs(declared - computed) > slack)
    for k in np.flatnonzero(wrong).tolist():
        me, t = instance.job_ids[job[k]], int(kind[k])
        if whole[k]:
            out.add(ViolationKind.WORK, f"job {me!r} runs whole in one segment, which "
                    f"does all its work (1), but declares work {declared[k]:.6g}")
            continue
        shared = ("" if placed.partner is None or placed.partner[k] < 0
                  else f" at its shared speed {speed[k]:g}")
        out.add(ViolationKind.WORK, f"job {me!r}: the segment at {start[k]:g} s declares "
                f"work {declared[k]:.6g}, but {end[k] - start[k] - overheads[k]:g} s of run "
                f"time on {instance.type_ids[t]}{shared} do {computed[k]:.6g} of the job (it "
                f"takes {duration[k]:g} s there)")


def _check_migrations(instance: Instance, placed: _Placed, out: _Collector) -> None:
    """``migrated_from`` names the job's previous GPUs, which differ from its new ones.

    Only a segment that migrated pays migration overhead.
    """
    if all(m is None for m in placed.migrated_from) and not any(m > 0 for m in placed.migrate):
        return
    for j, mine in placed.by_job().items():
        me = instance.job_ids[j]
        for before, k in zip([None, *mine], mine, strict=False):
            source = placed.migrated_from[k]
            at = f"the segment at {placed.start[k]:g} s"
            if source is None:
                if placed.migrate[k] > 0:
                    out.add(ViolationKind.MIGRATION, f"job {me!r}: {at} pays "
                            f"{placed.migrate[k]:g} s of migration but does not migrate (its "
                            "migrated_from is null)")
                continue
            if before is None:
                out.add(ViolationKind.MIGRATION, f"job {me!r}: {at} migrated from "
                        f"{', '.join(source)}, but it is the job's first segment")
                continue
            previous = {instance.gpu_ids[g] for g in placed.gpus[before]}
            if set(source) != previous:
                out.add(ViolationKind.MIGRATION, f"job {me!r}: {at} migrated from "
                        f"{', '.join(source)}, but the job's previous segment ran on "
                        f"{', '.join(sorted(previous))}")
            elif set(source) == {instance.gpu_ids[g] for g in placed.gpus[k]}:
                out.add(ViolationKind.MIGRATION, f"job {me!r}: {at} migrated from "
                        f"{', '.join(source)}, the GPUs it runs on: a migration moves the job")


def _check_charged(instance: Instance, run: RunRecord, placed: _Placed,
                   out: _Collector) -> None:
    """A simulated run charges the overheads its record says, on every resume and move.

    A run log splits a job into segments only where the run paused it (the simulator
    never splits a job that keeps running), so every later segment of a job resumed it
    and pays ``run.restart_overhead_s`` of restore, plus ``run.migration_overhead_s`` when
    it runs on other GPUs than its previous segment did; however short the pause was. A
    segment shorter than those (a failure stopped it) pays them up to its end. Whether it
    moved is read from the GPUs, and ``migrated_from`` must say the same.
    """
    restore_s, migrate_s = run.restart_overhead_s, run.migration_overhead_s
    attempts = placed.attempts(instance)
    _check_lost(instance, run, placed, out)
    for j, mine in placed.by_job().items():
        if instance.elastic[j]:
            # Its pieces pay its own rescale_s (_check_rescale), not the run's settings.
            continue
        for before, k in itertools.pairwise(mine):
            if attempts[before]:
                # A job run whole starts again from nothing: no restore, no move to pay.
                restore, migrate = 0.0, 0.0
            else:
                restore, migrate = restore_s, migrate_s
            # A move is read from the GPUs, never from what the segment says of itself.
            moved = set(placed.gpus[k]) != set(placed.gpus[before])
            if moved != (placed.migrated_from[k] is not None):
                out.add(ViolationKind.MIGRATION, f"job {instance.job_ids[j]!r}: the segment "
                        f"at {placed.start[k]:g} s runs on "
                        f"{'other GPUs than' if moved else 'the GPUs of'} the job's previous "
                        f"segment, but its migrated_from says it "
                        f"{'did not move' if moved else 'moved'}")
            # A segment a failure stopped while it paid its overheads paid them until then.
            length = placed.end[k] - placed.start[k]
            owed_restore = min(restore, length)
            owed = (owed_restore, min(migrate if moved else 0.0, length - owed_restore))
            paid = (placed.restore[k], placed.migrate[k])
            if not all(_close(a, b) for a, b in zip(paid, owed, strict=True)):
                out.add(ViolationKind.OVERHEAD, f"job {instance.job_ids[j]!r}: the segment "
                        f"at {placed.start[k]:g} s pays restore {paid[0]:g} s and migration "
                        f"{paid[1]:g} s, but the run charges {owed[0]:g} s and {owed[1]:g} s "
                        f"for {'a move' if moved else 'a resume'} (run.restart_overhead_s "
                        f"{restore_s:g}, run.migration_overhead_s {migrate_s:g})")


def _check_lost(instance: Instance, run: RunRecord, placed: _Placed, out: _Collector) -> None:
    """A run loses, at a failure, the work since the job's last checkpoint.

    Every ``run.checkpoint_s`` seconds of a segment's run time (after its overheads) is a
    checkpoint; with none, a preemptible job loses all the segment did. A job that is not
    preemptible always loses all it did (checked with the outages).
    """
    lost = np.asarray(placed.lost, dtype=float)
    every = run.checkpoint_s
    takes = placed.duration(instance)
    for k in np.flatnonzero(lost > 0).tolist():
        j = placed.job[k]
        if not instance.preemptible[j]:
            continue
        ran = max(0.0, placed.end[k] - placed.start[k] - placed.restore[k] - placed.migrate[k])
        since = ran if every is None else math.fmod(ran, every)
        owed = since / float(takes[k])
        if not _close(owed, float(lost[k])) and abs(owed - lost[k]) > TOLERANCE:
            out.add(ViolationKind.OUTAGE, f"job {instance.job_ids[j]!r}: the segment ending at "
                    f"{placed.end[k]:g} s loses {lost[k]:.6g} of its work, but the work since "
                    f"its last checkpoint is {owed:.6g} (run.checkpoint_s {every})")


@dataclass(slots=True)
class _Slot:
    """An event the segments call for: its kind, instant and GPUs."""

    kind: EventKind
    time: float
    gpus: frozenset[int]
    #: False between two segments that continue each other (same GPUs, no gap, e.g. a new
    #: partner): the job is not paused there, so the events may be left out.
    required: bool
    used: bool = False


def _expected_events(placed: _Placed, mine: list[int], elastic: bool = False) -> list[_Slot]:
    """The events one job's segments (in start order) call for.

    An elastic job that goes on at once on other GPUs (a count change) is rescaled there:
    one event on the new GPUs, no preempt.
    """
    first, last = mine[0], mine[-1]
    gpus = {k: frozenset(placed.gpus[k]) for k in mine}
    slots = [_Slot(EventKind.START, placed.start[first], gpus[first], True)]
    for before, k in itertools.pairwise(mine):
        at_once = _same_time(placed.end[before], placed.start[k])
        if elastic and at_once and gpus[before] != gpus[k]:
            slots.append(_Slot(EventKind.RESCALE, placed.start[k], gpus[k], True))
            continue
        paused = not (gpus[before] == gpus[k] and at_once)
        slots.append(_Slot(EventKind.PREEMPT, placed.end[before], gpus[before], paused))
        moved = placed.migrated_from[k] is not None
        slots.append(_Slot(EventKind.MIGRATE if moved else EventKind.RESUME, placed.start[k],
                           gpus[k], paused))
    slots.append(_Slot(EventKind.COMPLETE, placed.end[last], gpus[last], True))
    return slots


_WHEN = {
    EventKind.START: "the start of the job's first segment",
    EventKind.PREEMPT: "the end of one of the job's segments other than its last",
    EventKind.RESUME: "the start of one of the job's segments other than its first",
    EventKind.MIGRATE: "the start of a segment that migrated the job (migrated_from)",
    EventKind.COMPLETE: "the end of the job's last segment",
    EventKind.RESCALE: ("the start of an elastic job's piece on other GPUs than the piece "
                        "ending then"),
}


class _Slots:
    """One job's expected events, found by kind and instant in logarithmic time.

    Each kind's slots are kept sorted by time (then by their place in the job's list), so
    an event looks only at the slots within the time tolerance of its instant.
    """

    def __init__(self, slots: list[_Slot]) -> None:
        self.slots = slots
        #: Slots not used yet.
        self.left = sum(not slot.used for slot in slots)
        self.by_kind: dict[EventKind, tuple[list[float], list[int]]] = {}
        ranked = sorted(range(len(slots)), key=lambda k: (slots[k].kind, slots[k].time, k))
        for kind, group in itertools.groupby(ranked, key=lambda k: slots[k].kind):
            members = list(group)
            self.by_kind[kind] = ([slots[k].time for k in members], members)

    def near(self, kind: EventKind, time: float) -> list[int]:
        """The places of the slots of ``kind`` at the instant ``time``, in the job's order."""
        times, members = self.by_kind.get(kind, ([], []))
        # A window wider than any tolerance of _same_time, so the exact test decides.
        wide = 2 * TOLERANCE + 1e-14 * abs(time)
        first = bisect.bisect_left(times, time - wide)
        last = bisect.bisect_right(times, time + wide)
        return sorted(k for k in members[first:last] if _same_time(self.slots[k].time, time))

    def take(self, kind: EventKind, time: float) -> _Slot | None:
        """The job's first unused slot of ``kind`` at ``time``; None if there is none."""
        return next((self.slots[k] for k in self.near(kind, time) if not self.slots[k].used),
                    None)


def _stray_event(at: _EventName, kind: EventKind, time: float, mine: _Slots) -> str:
    """Why an event matches none of its job's expected events."""
    then = {other for other in EventKind if mine.near(other, time)}
    if kind is EventKind.MIGRATE and EventKind.RESUME in then:
        return (f"{at} is no migration: the segment starting then does not move the job "
                "(its migrated_from is null); that is a resume event")
    if kind is EventKind.RESUME and EventKind.MIGRATE in then:
        return f"{at} should be a migrate event: the segment starting then migrated the job"
    if kind in (EventKind.PREEMPT, EventKind.RESUME, EventKind.MIGRATE) and (
            EventKind.RESCALE in then):
        return (f"{at} should be one rescale event: the elastic job goes on at once on other "
                "GPUs then")
    if kind is EventKind.RESCALE and then & {EventKind.RESUME, EventKind.MIGRATE}:
        return f"{at} is no rescale: the job was paused before (a resume or migrate event)"
    if kind in then:
        return f"{at} is given twice"
    return f"{at} is not at {_WHEN[kind]}"


@dataclass(frozen=True)
class _EventName:
    """How a message names an event, formatted only when one is said."""

    event: Event

    def __str__(self) -> str:
        event = self.event
        return f"job {event.job!r}: the {event.kind.value} event at {event.time_s:g} s"


def _check_events(instance: Instance, schedule: Plan, placed: _Placed,
                  out: _Collector) -> None:
    """Given events are in time order and are exactly what the segments show.

    Each placed job starts at its first segment's start and completes at its last
    segment's end; between two segments it is preempted at the end of the one and resumes
    (or migrates, when the later segment declares ``migrated_from``) at the start of the
    next, each event on that segment's GPUs. A schedule without events has nothing to check.
    """
    if not schedule.events:
        return
    segments = placed.by_job()
    # A job's expected events are made at its first event and let go once all are used,
    # so a long run holds those of the jobs under way, not of every job.
    slots: dict[int, _Slots] = {}
    finished: dict[int, list[int]] = {}
    latest = -np.inf
    for event in schedule.events:
        time, kind = event.time_s, event.kind
        # Said only when something is wrong: formatting it for every event is most of the
        # cost of a long run log.
        at = _EventName(event)
        if time < latest - TOLERANCE - _rounding(latest):
            out.add(ViolationKind.EVENT, f"{at} is listed after an event at {latest:g} s "
                    "(events are in time order)")
        latest = max(latest, time)
        j = instance.job_index.get(event.job)
        unknown = [g for g in event.gpu_ids if g not in instance.gpu_index]
        if j is None:
            out.add(ViolationKind.EVENT, f"a {kind.value} event at {time:g} s names unknown "
                    f"job {event.job!r}")
            continue
        if unknown:
            out.add(ViolationKind.EVENT, f"{at} names unknown GPU(s) {', '.join(unknown)}")
            continue
        mine = slots.get(j)
        if mine is None and j in finished:
            # Every event of the job came already: this one is stray; say how.
            mine = _Slots([dataclasses.replace(slot, used=True) for slot in _expected_events(
                placed, finished[j], bool(instance.elastic[j]))])
        elif mine is None:
            if j not in segments:
                out.add(ViolationKind.EVENT, f"{at} is for a job with no segments")
                continue
            mine = slots[j] = _Slots(_expected_events(placed, segments[j],
                                                      bool(instance.elastic[j])))
        slot = mine.take(kind, time)
        if slot is None:
            out.add(ViolationKind.EVENT, _stray_event(at, kind, time, mine))
            continue
        slot.used = True
        mine.left -= 1
        if not mine.left:
            del slots[j]
            finished[j] = segments.pop(j)
        gpus = [instance.gpu_index[g] for g in event.gpu_ids]
        if frozenset(gpus) != slot.gpus or len(set(gpus)) != len(gpus):
            out.add(ViolationKind.EVENT, f"{at} names GPU(s) {', '.join(event.gpu_ids)}, but "
                    f"the segment then runs on {_ids(instance, slot.gpus)}")
    missing = [*slots.items(), *((j, _Slots(_expected_events(placed, mine,
                                                             bool(instance.elastic[j]))))
                                 for j, mine in segments.items() if j not in slots)]
    for j, mine in sorted(missing, key=lambda item: item[0]):
        for slot in mine.slots:
            if slot.required and not slot.used:
                out.add(ViolationKind.EVENT, f"job {instance.job_ids[j]!r} has no "
                        f"{slot.kind.value} event at {slot.time:g} s")


def _check_segments(instance: Instance, placed: _Placed, out: _Collector) -> None:
    """A preemptible job runs in one place at a time, and its segments do all its work."""
    job = np.asarray(placed.job, dtype=np.int64)
    work = placed.work(instance) - np.asarray(placed.lost, dtype=float)
    done = np.bincount(job, weights=work, minlength=instance.n_jobs)
    start, end = np.asarray(placed.start), np.asarray(placed.end)
    # All segments at once, by job, then start, then their order: each job's run of them
    # is its segments in start order.
    order = np.lexsort((np.arange(job.size), start, job))
    after, before = order[1:], order[:-1]
    overlaps = (job[after] == job[before]) & (
        start[after] < end[before] - TOLERANCE - 8.0 * np.spacing(np.abs(end[before])))
    # The first overlap of each job, in start order.
    hits = np.flatnonzero(overlaps)
    jobs_hit, first_hit = np.unique(job[after[hits]], return_index=True)
    overlap_at = dict(zip(jobs_hit.tolist(), start[after[hits[first_hit]]].tolist(),
                          strict=True))
    for j in np.flatnonzero((instance.preemptible | instance.elastic)
                            & (np.bincount(job, minlength=instance.n_jobs) > 0)):
        at = overlap_at.get(int(j))
        if at is not None:
            out.add(ViolationKind.SEGMENT, f"job {instance.job_ids[j]!r} runs in two places "
                    f"at once at {at:g} s (its segments overlap)")
        if instance.elastic[j] and not _close(float(done[j]), 1.0):
            _report_progress(instance, placed, int(j), float(done[j]), out)
        elif not _close(float(done[j]), 1.0):
            out.add(ViolationKind.SEGMENT, f"the segments of job {instance.job_ids[j]!r} do "
                    f"{done[j]:.6g} of its work; they must add up to 1")


def _report_progress(instance: Instance, placed: _Placed, j: int, done: float,
                     out: _Collector) -> None:
    """Say that elastic job ``j``'s pieces do ``done`` of its work, naming a piece's numbers."""
    me, work = instance.job_ids[j], float(instance.work[j])
    mine = [k for k in range(len(placed.job)) if placed.job[k] == j]
    rows = []
    for k in mine[:3]:
        t, count = placed.gpu_type[k], len(placed.gpus[k])
        overhead = placed.restore[k] + placed.migrate[k]
        run = max(0.0, placed.end[k] - placed.start[k] - overhead)
        rows.append(f"the piece at {placed.start[k]:g} s on {count} {instance.type_ids[t]} "
                    f"GPUs runs {run:g} s after {overhead:g} s of overhead at "
                    f"{instance.piece_speed(j, t, count) / placed.slow[k]:g} it/s")
    more = f" and {len(mine) - 3} more" if len(mine) > 3 else ""
    out.add(ViolationKind.SEGMENT, f"the pieces of elastic job {me!r} do {done * work:.6g} "
            f"of its {work:.6g} iterations ({done:.6g} of its work; they must add up to "
            f"all of it): {'; '.join(rows)}{more}")


def _check_rescale(instance: Instance, placed: _Placed, out: _Collector) -> None:
    """Each elastic piece that starts, resumes or moves its job pays the job's rescale_s.

    A piece owes it when it is its job's first, starts after the piece before it ended
    (a pause), or holds other GPUs than that piece (a count change is a change of GPUs):
    its restore and migration seconds together are then at least ``rescale_s`` (or the
    whole piece, when a failure stops it sooner). A piece that goes on where the one
    before it ended, on the same GPUs, owes nothing.
    """
    if not instance.elastic.any():
        return
    for j, mine in placed.by_job().items():
        if not instance.elastic[j] or not instance.rescale_s[j] > 0:
            continue
        for before, k in zip([None, *mine], mine, strict=False):
            why = _rescale_owed(placed, before, k)
            if why is None:
                continue
            start, end = placed.start[k], placed.end[k]
            owed = min(float(instance.rescale_s[j]), end - start)
            paid = placed.restore[k] + placed.migrate[k]
            if paid < owed - TOLERANCE - _rounding(start, end):
                out.add(ViolationKind.OVERHEAD, f"job {instance.job_ids[j]!r}: the piece at "
                        f"{start:g} s on {len(placed.gpus[k])} "
                        f"{instance.type_ids[placed.gpu_type[k]]} GPUs {why}, which costs "
                        f"its rescale_s {instance.rescale_s[j]:g} s, but pays {paid:g} s "
                        f"(restore_s {placed.restore[k]:g}, migrate_s {placed.migrate[k]:g})")


def _rescale_owed(placed: _Placed, before: int | None, k: int) -> str | None:
    """Why piece ``k`` (after piece ``before`` of its job) owes its rescale; None: it does not."""
    if before is None:
        return "starts the job"
    if not _same_time(placed.end[before], placed.start[k]):
        return "resumes it"
    if set(placed.gpus[before]) != set(placed.gpus[k]):
        counts = (len(placed.gpus[before]), len(placed.gpus[k]))
        return ("moves it to other GPUs" if counts[0] == counts[1]
                else f"changes its count from {counts[0]} to {counts[1]} GPUs")
    return None


def _check_outages(instance: Instance, placed: _Placed, out: _Collector) -> None:
    """No segment runs on a GPU while it is down; work is lost only where a GPU fails.

    A segment that declares lost work ends at the start of an outage of one of its GPUs
    (the failure stopped it), loses no more than it did, and, for a job run whole, loses
    all of it (the job starts again from nothing).
    """
    lost = np.asarray(placed.lost, dtype=float)
    if not instance.outages and not lost.any():
        return
    owner, gpu, start, end = _gpu_entries(instance, placed)
    failing: dict[int, list[float]] = defaultdict(list)
    for outage in instance.outages:
        down = np.zeros(instance.n_gpus, dtype=bool)
        down[outage.gpus] = True
        for g in outage.gpus.tolist():
            failing[g].append(outage.start_s)
        hit = down[gpu] & (start < outage.end_s - TOLERANCE) & (end > outage.start_s + TOLERANCE)
        for i in np.flatnonzero(hit).tolist():
            k = int(owner[i])
            out.add(ViolationKind.OUTAGE, f"job {instance.job_ids[placed.job[k]]!r} runs on "
                    f"GPU {instance.gpu_ids[gpu[i]]} over [{placed.start[k]:g}, "
                    f"{placed.end[k]:g}] s, but it is down over [{outage.start_s:g}, "
                    f"{outage.end_s:g}) s ({outage.reason})")
    if not lost.any():
        return
    work = placed.work(instance)
    attempts = placed.attempts(instance)
    for k in np.flatnonzero(lost > 0).tolist():
        me, at = instance.job_ids[placed.job[k]], placed.end[k]
        if not any(_same_time(at, when) for g in placed.gpus[k] for when in failing[g]):
            out.add(ViolationKind.OUTAGE, f"job {me!r}: the segment ending at {at:g} s loses "
                    f"{lost[k]:.6g} of its work, but no GPU of it fails then")
        elif lost[k] > work[k] + TOLERANCE:
            out.add(ViolationKind.OUTAGE, f"job {me!r}: the segment ending at {at:g} s loses "
                    f"{lost[k]:.6g} of its work but did only {work[k]:.6g}")
        elif attempts[k] and not _close(float(lost[k]), float(work[k])):
            out.add(ViolationKind.OUTAGE, f"job {me!r} is not preemptible: the failed attempt "
                    f"ending at {at:g} s loses all it did ({work[k]:.6g}), not {lost[k]:.6g}")


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
    """One row per (segment, GPU): segment number, GPU, start and end."""
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


class _Sweep(NamedTuple):
    """Per event of a capacity sweep, in sweep order: its key, the load after it, its time."""

    key: IntArray
    load: FloatArray
    time: FloatArray


def _sweep(keys: IntArray, start: FloatArray, end: FloatArray, amount: FloatArray,
           n_keys: int) -> tuple[FloatArray, _Sweep]:
    """Peak load of each key (a GPU or a node) over intervals holding amounts of resources.

    Returns the ``(n_keys, R)`` peaks and the sweep's events (to name the jobs behind a
    peak).
    """
    peak = np.zeros((n_keys, amount.shape[1]))
    # Ends sort before starts at the same instant, so back-to-back jobs do not overlap.
    times = np.concatenate([start, end])
    is_start = np.concatenate([np.ones(keys.size), np.zeros(keys.size)])
    both = np.concatenate([keys, keys])
    order = np.lexsort((is_start, times, both))
    # Every interval closes on its own key, so the running sum over the key-sorted events
    # is back to zero at each key boundary and equals that key's load in between.
    load = np.cumsum(np.concatenate([amount, -amount])[order], axis=0)
    event_key = both[order]
    if keys.size:
        np.maximum.at(peak, event_key, load)
    return peak, _Sweep(event_key, load, times[order])


def _at_peak(sweep: _Sweep, key: int, column: int,
             held: tuple[IntArray, IntArray, FloatArray, FloatArray]) -> tuple[float, IntArray]:
    """The instant the load of ``key`` peaks in ``column``, and the jobs holding it then.

    ``held`` are the swept intervals: their keys, jobs, starts and ends.
    """
    mine = np.flatnonzero(sweep.key == key)
    instant = float(sweep.time[mine[int(np.argmax(sweep.load[mine, column]))]])
    keys, jobs, start, end = held
    active: IntArray = jobs[(keys == key) & (start <= instant) & (end > instant)]
    return instant, active


def _holders(instance: Instance, active: IntArray) -> str:
    """The jobs holding something at an instant, by id; -1 is work held before (an outage)."""
    return ", ".join(repr(instance.job_ids[j]) if j >= 0 else "work held before"
                     for j in active.tolist())


def _report_over(instance: Instance, what: str, names: tuple[str, ...],
                 resources: tuple[str, ...], peak: FloatArray, capacity: FloatArray,
                 sweep: _Sweep,
                 held: tuple[IntArray, IntArray, FloatArray, FloatArray],
                 out: _Collector) -> None:
    """Flag every (key, resource) whose peak load exceeds its capacity, naming the jobs."""
    over = peak > capacity * (1 + TOLERANCE) + TOLERANCE
    for k, r in np.argwhere(over):
        instant, active = _at_peak(sweep, int(k), int(r), held)
        when = "" if instance.objective.is_static else f" at {instant:g} s"
        out.add(
            ViolationKind.CAPACITY,
            f"{what} {names[k]}: {resources[r]} load {peak[k, r]:g} exceeds capacity "
            f"{capacity[k, r]:g}{when} (jobs {_holders(instance, active)})",
        )


def _check_capacity(instance: Instance, placed: _Placed, out: _Collector) -> FloatArray:
    """Sweep each GPU's events in time order and flag any resource above capacity.

    On a type held whole (not ``sharing``), also flag a GPU that two jobs hold at once
    (a colocation pair counts as one occupant). Returns the ``(G, R)`` peak load of every
    GPU, which the load objective needs.
    """
    owner, gpu, start, end = _gpu_entries(instance, placed)
    jobs = np.asarray(placed.job, dtype=np.int64)[owner]
    demand = instance.demand[jobs, np.asarray(placed.gpu_type, dtype=np.int64)[owner]]
    occupant = np.ones((owner.size, 1))
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
        occupant[paired & ~first] = 0.0
    demand = demand.reshape(owner.size, len(instance.resources))
    peak, sweep = _sweep(gpu, start, end, demand, instance.n_gpus)
    _report_over(instance, "GPU", instance.gpu_ids, instance.resources, peak,
                 instance.capacity[instance.gpu_type],
                 sweep, (gpu, jobs, start, end), out)
    whole = ~instance.shared[instance.gpu_type[gpu]]
    if whole.any():
        held, sweep = _sweep(gpu[whole], start[whole], end[whole], occupant[whole],
                             instance.n_gpus)
        _report_shared(instance, held[:, 0], sweep,
                       (gpu[whole], jobs[whole], start[whole], end[whole]), out)
    return peak


def _report_shared(instance: Instance, held: FloatArray, sweep: _Sweep,
                   entries: tuple[IntArray, IntArray, FloatArray, FloatArray],
                   out: _Collector) -> None:
    """Flag every GPU held whole that two occupants hold at once, naming the jobs."""
    for g in np.flatnonzero(held > 1).tolist():
        instant, active = _at_peak(sweep, g, 0, entries)
        names = ", ".join(repr(instance.job_ids[j]) for j in active)
        when = "" if instance.objective.is_static else f" at {instant:g} s"
        t = instance.gpu_type[g]
        out.add(ViolationKind.EXCLUSIVE, f"GPU {instance.gpu_ids[g]} is held by "
                f"{int(held[g])} jobs at once{when} ({names}), but {instance.type_ids[t]} "
                "GPUs are held whole: the instance does not declare them sharing")


def _check_node_capacity(instance: Instance, placed: _Placed, out: _Collector) -> None:
    """Sweep each node's events in time order and flag any node resource above capacity.

    A job draws its node demand on each node its segment uses (once per node, for the
    gang's GPUs there).
    """
    if not instance.node_resources:
        return
    counts = np.array([len(nodes) for nodes in placed.nodes], dtype=np.int64)
    owner = np.repeat(np.arange(counts.size), counts)
    jobs = np.asarray(placed.job, dtype=np.int64)[owner]
    node = np.array([m for nodes in placed.nodes for m in nodes], dtype=np.int64)
    if instance.objective.is_static:
        start, end = np.zeros(jobs.size), np.ones(jobs.size)
    else:
        start = np.asarray(placed.start, dtype=float)[owner]
        end = np.asarray(placed.end, dtype=float)[owner]
    draw = instance.node_demand[jobs].reshape(jobs.size, len(instance.node_resources))
    held = [(o, n) for o in instance.outages for n in o.nodes.tolist()]
    if held:
        # Node resources held by work planned before (a re-plan's jobs that run on).
        jobs = np.r_[jobs, np.full(len(held), -1, dtype=np.int64)]
        node = np.r_[node, [n for _, n in held]]
        start = np.r_[start, [o.start_s for o, _ in held]]
        end = np.r_[end, [o.end_s for o, _ in held]]
        draw = np.vstack([draw, [o.draw for o, _ in held]])
    peak, sweep = _sweep(node, start, end, draw, instance.n_nodes)
    _report_over(instance, "node", instance.node_ids, instance.node_resources, peak,
                 instance.node_capacity,
                 sweep, (node, jobs, start, end), out)


def _listed(names: Sequence[str], most: int = 5) -> str:
    """Names joined, the first ``most`` of them and how many more."""
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def _check_partitions(instance: Instance, placed: _Placed, out: _Collector) -> None:
    """Each job that names a partition runs on the partition's nodes only."""
    if not instance.partition_ids or not placed.job:
        return
    counts = np.array([len(nodes) for nodes in placed.nodes], dtype=np.int64)
    owner = np.repeat(np.arange(counts.size), counts)
    node = np.array([n for nodes in placed.nodes for n in nodes], dtype=np.int64)
    partition = instance.job_partition[np.asarray(placed.job, dtype=np.int64)[owner]]
    outside = (partition >= 0) & ~instance.partition_nodes[np.maximum(partition, 0), node]
    for k in np.unique(owner[outside]).tolist():
        j, p = placed.job[k], int(instance.job_partition[placed.job[k]])
        away = [instance.node_ids[n] for n in placed.nodes[k]
                if not instance.partition_nodes[p, n]]
        members = [instance.node_ids[n] for n in np.flatnonzero(instance.partition_nodes[p])]
        out.add(ViolationKind.PARTITION, f"job {instance.job_ids[j]!r} runs on "
                f"{', '.join(away)} over [{placed.start[k]:g}, {placed.end[k]:g}] s, outside "
                f"its partition {instance.partition_ids[p]!r} (nodes {_listed(members)})")


def _check_gpu_limits(instance: Instance, placed: _Placed, out: _Collector) -> None:
    """At every instant, the running jobs of each account (QOS) hold at most its GPU limit.

    Each running job counts all the GPUs its segment holds, shared or not, and so does the
    work held before that counts against the limit (a re-plan's running jobs, outages).
    """
    limits = instance.gpu_limits
    if not limits or not placed.job:
        return
    job = np.asarray(placed.job, dtype=np.int64)
    member = np.zeros((len(limits), instance.n_jobs), dtype=bool)
    for k, limit in enumerate(limits):
        member[k, limit.jobs] = True
    key, segment = np.nonzero(member[:, job])
    jobs = job[segment]
    if instance.objective.is_static:
        # The whole batch holds its GPUs at once.
        start, end = np.zeros(segment.size), np.ones(segment.size)
    else:
        start, end = np.asarray(placed.start)[segment], np.asarray(placed.end)[segment]
    held = np.array([len(placed.gpus[k]) for k in segment.tolist()], dtype=float)
    before = [(k, o) for o in instance.outages for k in o.limits(instance)]
    if before:
        key = np.r_[key, [k for k, _ in before]]
        jobs = np.r_[jobs, np.full(len(before), -1, dtype=np.int64)]
        start = np.r_[start, [o.start_s for _, o in before]]
        end = np.r_[end, [o.end_s for _, o in before]]
        held = np.r_[held, [float(o.gpus.size) for _, o in before]]
    peak, sweep = _sweep(key, start, end, held[:, None], len(limits))
    caps = np.array([limit.gpus for limit in limits], dtype=float)
    for k in np.flatnonzero(peak[:, 0] > caps + TOLERANCE).tolist():
        instant, active = _at_peak(sweep, k, 0, (key, jobs, start, end))
        when = "" if instance.objective.is_static else f" at {instant:g} s"
        out.add(ViolationKind.GPU_LIMIT, f"the jobs of {limits[k]} hold {peak[k, 0]:g} GPUs "
                f"at once{when} ({_holders(instance, active)}), over its limit of "
                f"{limits[k].gpus}")


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
        case ObjectiveKind.DEADLINES_MET:
            return float(instance.weight[finished][met_due(end, instance.due[finished])].sum())
    raise AssertionError(f"objective {instance.objective} has no evaluation")


def _check_certificate(
    instance: Instance, schedule: Plan, value: float, out: _Collector
) -> None:
    """The certificate holds: status, objective, bound and gap agree with the segments.

    ``optimal`` needs a bound within :data:`~gpuplan.core.schedule.OPTIMAL_GAP` of the plan's
    value; a bound lies on the right side of that value; ``infeasible`` places nothing; a
    status without a plan claims no objective.
    """
    status = schedule.status
    if not status.has_plan and schedule.objective is not None:
        out.add(ViolationKind.OBJECTIVE, f"status {status.value!r} has no plan but claims "
                f"objective {schedule.objective:g}")
    if status is Status.INFEASIBLE and schedule.segments:
        out.add(ViolationKind.STATUS, f"status 'infeasible' claims no plan exists, yet "
                f"{len(schedule.segments)} segment(s) are given")
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
            f"reported objective {schedule.objective:g} but the segments give {value:g}",
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


def verify_schedule(instance: Instance, schedule: Plan) -> Verification:
    """Check a schedule against an instance, recomputing everything from the instance.

    Checks that every job is placed at most once (exactly once unless the objective lets
    jobs be dropped), or, if preemptible, in segments that never overlap and add up to its
    work; that each gang has its size, on one node and one type, that the type is
    allowed and fits, that durations match the chosen type, release times, deadlines and
    dependency order (time-based objectives), that no named resource of any GPU is exceeded
    at any instant (a space-shared pair counts once with the larger demand and runs at its
    colocation speeds), that jobs run within their partitions and accounts and QOS within
    their GPU limits, and that the reported objective and bound are consistent.

    What a segment declares is checked, never used on trust: its work against its interval
    (run time less overheads, at the type's speed and its pair's), its partner against the
    segments and the instance's class pairs (segments naming none are paired as version 1
    files are, see :func:`_pair_up`), its overheads against its length, ``migrated_from``
    against the job's previous segment, and the events against the segments. A simulated
    run's log must list its events and charge the overheads its run record states on every
    resume and move (:func:`gpuplan.simulate.check.check_run` holds it to the rest of its
    record).

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
    if schedule.run is not None:
        # A run is checked against what it met: its failures and its actual durations.
        instance = schedule.run.actual(instance)
    if schedule.objective_kind != instance.objective.value:
        out.add(
            ViolationKind.OBJECTIVE,
            f"the schedule was planned for {schedule.objective_kind!r}, the instance asks "
            f"for {instance.objective.value!r}",
        )
    # An in-memory run is checked from its columns at once; only when some segment or
    # event may break a rule are they checked one by one, for the messages.
    fast = _columns_placed(instance, schedule) if isinstance(schedule, ResultSchedule) else None
    placed = fast if fast is not None else _check_each_segment(instance, schedule, out)
    _check_coverage(instance, schedule, placed, out)
    _check_partners(instance, placed, out)
    static = instance.objective.is_static
    if not static:
        _pair_up(instance, placed)
    _check_overheads(instance, placed, out)
    if not static:
        _check_rescale(instance, placed, out)
    _check_work(instance, placed, out)
    _check_migrations(instance, placed, out)
    if schedule.run is not None:
        _check_charged(instance, schedule.run, placed, out)
        if schedule.segments and not schedule.events:
            out.add(ViolationKind.EVENT, "a run log lists every event of its run (start, "
                    "preempt, resume, migrate, complete); this one lists none")
    if not static:
        _check_segments(instance, placed, out)
        _check_dependencies(instance, placed, out)
    if not (fast is not None and isinstance(schedule, ResultSchedule)
            and _columns_events_hold(instance, schedule.result, placed)):
        _check_events(instance, schedule, placed, out)
    _check_outages(instance, placed, out)
    peak = _check_capacity(instance, placed, out)
    _check_node_capacity(instance, placed, out)
    _check_partitions(instance, placed, out)
    _check_gpu_limits(instance, placed, out)
    value = _objective_value(instance, placed, peak)
    _check_certificate(instance, schedule, value, out)
    return out.result(value, _topology_facts(instance, placed) if instance.levels else None)


def _topology_facts(instance: Instance, placed: _Placed) -> TopologyFacts:
    """The domains each multi-node gang touches, and each level's wholly free domains."""
    spans: list[GangSpan] = []
    touched: dict[int, set[int]] = defaultdict(set)
    for j, nodes in zip(placed.job, placed.nodes, strict=True):
        touched[j].update(nodes)
    for j in sorted(touched, key=lambda j: instance.job_ids[j]):
        mine = np.array(sorted(touched[j]), dtype=np.int64)
        if mine.size < 2:
            continue
        for level, name in enumerate(instance.levels):
            domains = instance.node_domain[mine, level]
            spans.append(GangSpan(job=instance.job_ids[j], level=name, domains=sorted(
                {instance.domain_ids[level][d] if d >= 0 else "-" for d in domains.tolist()})))
    _, gpu, start, end = _gpu_entries(instance, placed)
    # The plan's span (outages may last for good); GPUs down or held count as busy in it.
    horizon = 1.0 if instance.objective.is_static else float(end.max(initial=0.0))
    held = [(o.gpus, o.start_s, o.end_s) for o in instance.outages]
    gpu = np.concatenate([gpu, *(g for g, _, _ in held)]).astype(np.int64)
    start = np.concatenate([start, *(np.full(g.size, s) for g, s, _ in held)])
    end = np.concatenate([end, *(np.full(g.size, e) for g, _, e in held)])
    free = [_free_domains(instance, level, gpu, start, end, horizon)
            for level in range(len(instance.levels))]
    return TopologyFacts(spans=spans, free=free)


def _free_domains(instance: Instance, level: int, gpu: IntArray, start: FloatArray,
                  end: FloatArray, horizon: float) -> FreeDomains:
    """How many domains of ``level`` no held GPU is in, least and on average over [0, horizon]."""
    total = len(instance.domain_ids[level])
    domain = instance.node_domain[instance.gpu_node[gpu], level]
    keep = (domain >= 0) & (end > start)
    domain, start, end = domain[keep], np.minimum(start[keep], horizon), np.minimum(
        end[keep], horizon)
    # Each domain's busy time as disjoint intervals: merge its GPUs' intervals.
    order = np.lexsort((start, domain))
    domain, start, end = domain[order], start[order], end[order]
    starts: list[float] = []
    ends: list[float] = []
    for k in range(domain.size):
        if k and domain[k] == domain[k - 1] and start[k] <= ends[-1]:
            ends[-1] = max(ends[-1], float(end[k]))
        else:
            starts.append(float(start[k]))
            ends.append(float(end[k]))
    times = np.array(starts + ends)
    steps = np.r_[np.ones(len(starts)), -np.ones(len(ends))]
    # Ends before starts at one instant: a domain freed and taken at once was not free.
    order = np.lexsort((steps, times))
    times, busy = times[order], np.cumsum(steps[order])
    if not times.size:
        return FreeDomains(level=instance.levels[level], domains=total, least=total,
                           mean=float(total))
    edges = np.r_[0.0, times, horizon]
    counts = np.r_[0.0, busy]
    lengths = np.diff(edges)
    inside = lengths > 0
    least = total - int(counts.max(initial=0.0)) if horizon > 0 else total
    mean = (total - float((counts[inside] * lengths[inside]).sum() / max(horizon, 1e-12))
            if horizon > 0 else float(total))
    return FreeDomains(level=instance.levels[level], domains=total, least=least, mean=mean)
