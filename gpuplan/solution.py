"""The one in-memory plan every method produces: segments by index, and their events.

A :class:`Result` is what a method returns before anything is named by id. Each entry of
its arrays is one *segment*: a job running on some GPUs of one type over an interval. A
job that is never interrupted has one segment; a preempted, migrated or space-shared job
has several, each stating the share of the job's work it does, the job it shares its GPUs
with, and the overheads it paid. :meth:`gpuplan.schedule.Schedule.from_result` turns a
result into the v2 schedule file, and the verifier checks every one of these facts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np

from gpuplan.instance import FloatArray, Instance, IntArray
from gpuplan.status import Status


class EventKind(StrEnum):
    """What happens to a job at an instant of a run."""

    START = "start"
    PREEMPT = "preempt"
    RESUME = "resume"
    MIGRATE = "migrate"
    COMPLETE = "complete"


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
    """A plan by index, before it becomes a :class:`~gpuplan.schedule.Schedule`.

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
