"""Plans side by side: what differs between two (:func:`diff`); when a job runs (:func:`eta`).

What *moved* means is defined here once, and ``gpuplan replan`` counts its moves with
:func:`diff` too, so that its summary and ``gpuplan diff`` of the same two plans agree.
A job's **slot** in a plan is its pieces (segments) in time order, each with its GPUs and
start. Plan ``b`` **keeps** the slot plan ``a`` gave a job when it runs the job in as many
pieces, each on the same GPUs as its counterpart and starting within ``same_start_s`` of
it; otherwise ``b`` **moves** the job. Only jobs placed in both plans are kept or moved;
*unchanged* counts the jobs kept. A job that ran before a re-plan's time keeps its slot (the
history is the same in both plans); a running job stopped by a failure is moved (it runs
in more pieces).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from gpuplan.core.instance import Instance
from gpuplan.core.keep import SAME_START_S
from gpuplan.core.schedule import Schedule, Segment
from gpuplan.hybrid.residual import Costs

#: How ``b`` moves a job, as :class:`Diff` lists them: a piece on other GPUs, the first
#: piece that starts elsewhere in time starting earlier or later, more or fewer pieces.
HOW = ("other_gpus", "earlier", "later", "preempted", "fewer_pieces")


@dataclass(frozen=True)
class _Piece:
    """One segment of a job, as a slot compares it: its GPUs and its start."""

    gpus: frozenset[str]
    start: float


def _slots(schedule: Schedule) -> dict[str, list[_Piece]]:
    """Each placed job's pieces, in time order."""
    mine: dict[str, list[Segment]] = defaultdict(list)
    for s in schedule.segments:
        mine[s.job].append(s)
    return {job: [_Piece(frozenset(s.gpu_ids), s.start_s)
                  for s in sorted(segments, key=lambda s: s.start_s)]
            for job, segments in mine.items()}


def _how(a: list[_Piece], b: list[_Piece], same_start_s: float) -> list[str]:
    """How ``b`` moves a job ``a`` had (the names of :data:`HOW`); empty: it keeps its slot."""
    how = []
    pairs = list(zip(a, b, strict=False))
    if any(x.gpus != y.gpus for x, y in pairs):
        how.append("other_gpus")
    shifted = next(((x, y) for x, y in pairs
                    if abs(y.start - x.start) > max(same_start_s, SAME_START_S)), None)
    if shifted is not None:
        how.append("earlier" if shifted[1].start < shifted[0].start else "later")
    if len(b) != len(a):
        how.append("preempted" if len(b) > len(a) else "fewer_pieces")
    return how


@dataclass(frozen=True)
class Diff:
    """What changes from plan ``a`` to plan ``b``, by job id.

    Attributes
    ----------
    moved
        Jobs placed in both whose slot ``b`` does not keep (the module's definition).
    other_gpus, earlier, later, preempted, fewer_pieces
        How they moved (a job may be in several): a piece on other GPUs; the first piece
        that starts more than ``same_start_s`` away starts earlier, or later; ``b`` runs
        it in more pieces, or in fewer.
    only_a, only_b
        Jobs placed in one plan only.
    unchanged
        How many jobs placed in both keep their slot.
    """

    moved: list[str] = field(default_factory=list)
    other_gpus: list[str] = field(default_factory=list)
    earlier: list[str] = field(default_factory=list)
    later: list[str] = field(default_factory=list)
    preempted: list[str] = field(default_factory=list)
    fewer_pieces: list[str] = field(default_factory=list)
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
        return {"moved": self.moved, **{name: getattr(self, name) for name in HOW},
                "only_a": self.only_a, "only_b": self.only_b, "unchanged": self.unchanged,
                "objective": {"a": self.objective[0], "b": self.objective[1],
                              "delta": delta(self.objective)},
                "bound": {"a": self.bound[0], "b": self.bound[1], "delta": delta(self.bound)}}


def diff(a: Schedule, b: Schedule, same_start_s: float = Costs.same_start_s) -> Diff:
    """The jobs ``b`` moves from their slots in ``a`` and how, and those it keeps.

    Parameters
    ----------
    a, b
        Two schedules of one instance (a previous plan and its re-plan, say).
    same_start_s
        A piece that starts at most this many seconds away from its counterpart keeps
        its time (the default is ``gpuplan replan``'s).
    """
    ra, rb = _slots(a), _slots(b)
    moved: list[str] = []
    how: dict[str, list[str]] = {name: [] for name in HOW}
    for job in sorted(ra.keys() & rb.keys()):
        changes = _how(ra[job], rb[job], same_start_s)
        if changes:
            moved.append(job)
        for name in changes:
            how[name].append(job)
    return Diff(moved, **how, only_a=sorted(ra.keys() - rb.keys()),
                only_b=sorted(rb.keys() - ra.keys()),
                unchanged=len(ra.keys() & rb.keys()) - len(moved),
                objective=(a.objective, b.objective), bound=(a.bound, b.bound))


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
