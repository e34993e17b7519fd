"""The one in-memory plan every method produces: segments by index, and their events.

A :class:`Result` is what a method returns before anything is named by id. Each entry of
its arrays is one *segment*: a job running on some GPUs of one type over an interval. A
job that is never interrupted has one segment; a preempted, migrated or space-shared job
has several, each stating the share of the job's work it does, the job it shares its GPUs
with, and the overheads it paid. :meth:`gpuplan.core.schedule.Schedule.from_result` turns a
result into the v2 schedule file, and the verifier checks every one of these facts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np

from gpuplan.core.instance import FloatArray, Instance, IntArray
from gpuplan.core.status import OPTIMAL_GAP, Status, relative_gap


class EventKind(StrEnum):
    """What happens to a job at an instant of a run."""

    START = "start"
    PREEMPT = "preempt"
    RESUME = "resume"
    MIGRATE = "migrate"
    COMPLETE = "complete"
    #: An elastic job goes on at once on other GPUs (another count): one piece ends and
    #: the next starts at this instant, on the GPUs the event names.
    RESCALE = "rescale"


@dataclass(frozen=True)
class Event:
    """One event of a run: at ``time_s``, ``kind`` happens to job ``job`` on ``gpus``."""

    time_s: float
    kind: EventKind
    job: int
    gpus: IntArray


def _floats(n: int, value: float) -> FloatArray:
    return np.full(n, value)


@dataclass(frozen=True)
class Result:
    """A plan by index, before it becomes a :class:`~gpuplan.core.schedule.Schedule`.

    Attributes
    ----------
    status
        The method's outcome, translated to gpuplan's statuses.
    objective
        The objective of the plan as the method computed it; None without a plan.
    bound
        A proven bound on the optimum (lower when minimising); None if the method has none.
    solver
        Name (and version) of what produced the plan.
    job, gpu_type, start, end
        One entry per segment: the job's index, the type index and its times.
    gpus
        For each segment, the indices of its GPUs.
    node
        For each segment, its node index; None: the node of its first GPU (needed where a
        CPU-only job, gang 0, has a segment on no GPU).
    work
        For each segment, the share of its job's work it does; None: each segment does
        what its run time at the type's speed gives (1 for a job run whole).
    partner
        For each segment, the segment it shares its GPUs with (space sharing), -1 for
        none; None: no segment shares.
    restore_s, migrate_s
        For each segment, the checkpoint/restore and migration overheads it paid at its
        start (part of its interval, doing no work); None: none paid.
    lost
        For each segment, the share of its job's work it lost at its end (a failure
        before its next checkpoint); None: none lost.
    events
        What happened to the jobs, in time order (filled by the simulator).
    unplaced
        Job index to the reason it is not placed.
    """

    status: Status
    objective: float | None
    bound: float | None
    solver: str
    job: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    gpu_type: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    start: FloatArray = field(default_factory=lambda: np.zeros(0))
    end: FloatArray = field(default_factory=lambda: np.zeros(0))
    gpus: tuple[IntArray, ...] = ()
    node: IntArray | None = None
    work: FloatArray | None = None
    partner: IntArray | None = None
    restore_s: FloatArray | None = None
    migrate_s: FloatArray | None = None
    lost: FloatArray | None = None
    events: tuple[Event, ...] = ()
    unplaced: dict[int, str] = field(default_factory=dict)

    @property
    def n_segments(self) -> int:
        """How many segments the plan has."""
        return int(self.job.size)

    def nodes(self, instance: Instance) -> IntArray:
        """``(S,)`` each segment's node index."""
        if self.node is not None:
            return self.node
        return np.array([instance.gpu_node[g[0]] for g in self.gpus], dtype=np.int64)

    def partners(self) -> IntArray:
        """``(S,)`` each segment's partner segment, -1 for none."""
        if self.partner is None:
            return np.full(self.n_segments, -1, dtype=np.int64)
        return self.partner

    def overheads(self) -> tuple[FloatArray, FloatArray]:
        """``(S,)`` restore and ``(S,)`` migration seconds each segment paid."""
        n = self.n_segments
        return (_floats(n, 0.0) if self.restore_s is None else self.restore_s,
                _floats(n, 0.0) if self.migrate_s is None else self.migrate_s)

    def lost_work(self) -> FloatArray:
        """``(S,)`` the share of its job's work each segment lost at its end."""
        return _floats(self.n_segments, 0.0) if self.lost is None else self.lost


def no_plan(instance: Instance, reason: str, solver: str,
            status: Status = Status.NO_SOLUTION, bound: float | None = None) -> Result:
    """A result without a plan, every job unplaced for ``reason``."""
    return Result(status=status, objective=None, bound=bound, solver=solver,
                  unplaced=dict.fromkeys(range(instance.n_jobs), reason))


def infeasible(instance: Instance, reasons: Mapping[int, str], solver: str) -> Result:
    """A proof of infeasibility: nothing placed, each job saying why (``reasons`` by job).

    Jobs without a reason of their own point to the jobs named.
    """
    return Result(status=Status.INFEASIBLE, objective=None, bound=None, solver=solver,
                  unplaced={j: reasons.get(j, "not planned: the instance is infeasible (see "
                            "the jobs named)") for j in range(instance.n_jobs)})


def plan_status(objective: float | None, bound: float | None) -> Status:
    """The status of a heuristic plan: none, feasible, or optimal when it meets the bound.

    A plan meets the bound when their gap is within :data:`~gpuplan.core.status.OPTIMAL_GAP`,
    the verifier's definition of optimal.
    """
    if objective is None:
        return Status.NO_SOLUTION
    gap = relative_gap(objective, bound)
    return Status.OPTIMAL if gap is not None and gap <= OPTIMAL_GAP else Status.FEASIBLE


def with_bound(instance: Instance, result: Result, bound: float, name: str, note: str) -> Result:
    """A start's result with the method's bound, its status from that bound, and why.

    ``note`` says why CP-SAT's plan is not the one returned; without a plan, each job the
    start left out gives its reason and the note.
    """
    solver = f"{name}; {note}"
    if result.status.has_plan:
        return dataclasses.replace(result, status=plan_status(result.objective, bound),
                                   bound=bound, solver=solver)
    unplaced = ({j: f"{reason}; {note}" for j, reason in result.unplaced.items()}
                or dict.fromkeys(range(instance.n_jobs), f"no plan found; {note}"))
    return dataclasses.replace(result, status=Status.NO_SOLUTION, objective=None, bound=bound,
                               solver=solver, unplaced=unplaced)


def better(instance: Instance, first: Result, second: Result) -> Result:
    """The better plan of two for the instance's objective; ``first`` on a tie.

    A result with a plan beats one without; the better bound of the two is kept.
    """
    if not second.status.has_plan:
        chosen = first
    elif not first.status.has_plan:
        chosen = second
    else:
        assert first.objective is not None and second.objective is not None
        sign = -1.0 if instance.objective.sense == "max" else 1.0
        chosen = second if sign * second.objective < sign * first.objective else first
    bounds = [b for b in (first.bound, second.bound) if b is not None]
    if not bounds or not chosen.status.has_plan:
        return chosen
    bound = max(bounds) if instance.objective.sense == "min" else min(bounds)
    assert chosen.objective is not None
    return dataclasses.replace(chosen, bound=bound,
                               status=plan_status(chosen.objective, bound))
