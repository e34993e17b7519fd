"""Plans side by side: what differs between two (:func:`diff`); when a job runs (:func:`eta`)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from gpuplan.core.instance import Instance
from gpuplan.core.keep import SAME_START_S
from gpuplan.core.schedule import Schedule, Segment


@dataclass(frozen=True)
class _Run:
    """A job's run in one plan: where, when and in how many pieces."""

    gpus: frozenset[str]
    start: float
    end: float
    pieces: int


def _runs(schedule: Schedule) -> dict[str, _Run]:
    mine: dict[str, list[Segment]] = defaultdict(list)
    for s in schedule.segments:
        mine[s.job].append(s)
    return {job: _Run(frozenset(g for s in segs for g in s.gpu_ids),
                      min(s.start_s for s in segs), max(s.end_s for s in segs), len(segs))
            for job, segs in mine.items()}


@dataclass(frozen=True)
class Diff:
    """What changes from plan ``a`` to plan ``b``, by job id."""

    moved: list[str] = field(default_factory=list)
    earlier: list[str] = field(default_factory=list)
    later: list[str] = field(default_factory=list)
    preempted: list[str] = field(default_factory=list)
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)
    unchanged: int = 0
    objective: tuple[float | None, float | None] = (None, None)
    bound: tuple[float | None, float | None] = (None, None)

    def as_dict(self) -> dict[str, Any]:
        """As JSON values, with the deltas."""
        def delta(pair: tuple[float | None, float | None]) -> float | None:
            a, b = pair
            return None if a is None or b is None else b - a
        return {"moved": self.moved, "earlier": self.earlier, "later": self.later,
                "preempted": self.preempted, "only_a": self.only_a, "only_b": self.only_b,
                "unchanged": self.unchanged,
                "objective": {"a": self.objective[0], "b": self.objective[1],
                              "delta": delta(self.objective)},
                "bound": {"a": self.bound[0], "b": self.bound[1], "delta": delta(self.bound)}}


def diff(a: Schedule, b: Schedule, same_start_s: float = SAME_START_S) -> Diff:
    """Jobs moved to other GPUs, started earlier or later, split into more pieces.

    A job is *moved* when the GPUs it uses differ, *earlier* or *later* when its first
    start differs by more than ``same_start_s``, and *preempted* when ``b`` runs it in
    more pieces than ``a``; a job may be in several of these.
    """
    ra, rb = _runs(a), _runs(b)
    moved, earlier, later, preempted = [], [], [], []
    unchanged = 0
    for job in sorted(ra.keys() & rb.keys()):
        x, y = ra[job], rb[job]
        same = True
        if x.gpus != y.gpus:
            moved.append(job)
            same = False
        if y.start < x.start - same_start_s:
            earlier.append(job)
            same = False
        elif y.start > x.start + same_start_s:
            later.append(job)
            same = False
        if y.pieces > x.pieces:
            preempted.append(job)
            same = False
        unchanged += same
    return Diff(moved, earlier, later, preempted, sorted(ra.keys() - rb.keys()),
                sorted(rb.keys() - ra.keys()), unchanged, (a.objective, b.objective),
                (a.bound, b.bound))


@dataclass(frozen=True)
class Eta:
    """When a job runs in a plan, and what holds it back.

    Attributes
    ----------
    job
        The job's id.
    start, end
        Its planned first start and completion, in seconds (None: not placed).
    gpus
        The GPUs of its first segment.
    held_by
        Why it does not start sooner: its release, predecessors that end as it starts,
        and jobs that hold its GPUs until then.
    """

    job: str
    start: float | None
    end: float | None
    gpus: list[str]
    held_by: list[str]

    def as_dict(self) -> dict[str, Any]:
        """As JSON values."""
        return {"job": self.job, "start_s": self.start, "end_s": self.end, "gpus": self.gpus,
                "held_by": self.held_by}


def eta(instance: Instance, schedule: Schedule, job: str) -> Eta:
    """The job's planned start and end, and what it waits for.

    Raises
    ------
    KeyError
        If the instance has no such job.
    """
    j = instance.job_index[job]
    mine = sorted((s for s in schedule.segments if s.job == job), key=lambda s: s.start_s)
    if not mine:
        reason = next((u.reason for u in schedule.unplaced if u.job == job), "not placed")
        return Eta(job, None, None, [], [f"not placed: {reason}"])
    first = mine[0]
    start = first.start_s
    near = SAME_START_S * max(1.0, abs(start)) + 1e-6
    held: list[str] = []
    if abs(instance.release[j] - start) <= near and start > 0:
        held.append(f"its release at {instance.release[j]:g} s")
    ends = {s.job: s.end_s for s in schedule.segments}
    for p in instance.predecessors[j]:
        name = instance.job_ids[p]
        if name in ends and abs(ends[name] - start) <= near:
            held.append(f"job {name} (a predecessor) ends at {ends[name]:g} s")
    mine_gpus = set(first.gpu_ids)
    blockers = sorted({s.job for s in schedule.segments if s.job != job
                       and abs(s.end_s - start) <= near and mine_gpus & set(s.gpu_ids)})
    held.extend(f"job {other} holds its GPUs until {start:g} s" for other in blockers)
    for outage in instance.outages:
        if abs(outage.end_s - start) <= near and mine_gpus & {instance.gpu_ids[g]
                                                              for g in outage.gpus}:
            held.append(f"its GPUs are down until {start:g} s ({outage.reason})")
    if not held:
        held.append("nothing: it starts when the plan begins" if start <= near
                    else "the plan's order (it could start sooner; the method placed it here)")
    return Eta(job, start, max(s.end_s for s in mine), list(first.gpu_ids), held)
