"""What a simulator records as it runs: segments and events, then one :class:`Result`.

A segment is a job on some GPUs of one type over an interval, with the share of the job's
work it did, the overheads it paid at its start and the work it lost at its end; an event
is a start, preemption, resume, migration or completion. The recorder keeps them in
columns as they close and builds the run's :class:`~gpuplan.core.result.Result`, which the
verifier checks before anything uses it.
"""

from __future__ import annotations

import numpy as np

from gpuplan.core.instance import IntArray
from gpuplan.core.result import Event, EventKind, Result
from gpuplan.core.status import Status


class Recorder:
    """The segments and events of a run, as they close."""

    def __init__(self) -> None:
        self.job: list[int] = []
        self.gpu_type: list[int] = []
        self.start: list[float] = []
        self.end: list[float] = []
        self.gpus: list[IntArray] = []
        self.node: list[int] = []
        self.work: list[float] = []
        self.restore: list[float] = []
        self.migrate: list[float] = []
        self.lost: list[float] = []
        self.events: list[Event] = []

    def __len__(self) -> int:
        return len(self.job)

    def segment(self, job: int, gpu_type: int, start: float, end: float, gpus: IntArray,
                work: float = 1.0, restore: float = 0.0, migrate: float = 0.0,
                lost: float = 0.0, node: int = -1) -> None:
        """A segment closes. ``node`` -1: the node of its first GPU."""
        self.job.append(job)
        self.gpu_type.append(gpu_type)
        self.start.append(start)
        self.end.append(end)
        self.gpus.append(gpus)
        self.node.append(node)
        self.work.append(work)
        self.restore.append(restore)
        self.migrate.append(migrate)
        self.lost.append(lost)

    def event(self, now: float, kind: EventKind, job: int, gpus: IntArray) -> None:
        """Something happens to ``job`` on ``gpus`` at ``now``."""
        self.events.append(Event(now, kind, job, gpus))

    def result(self, solver: str, status: Status = Status.FEASIBLE,
               objective: float | None = None) -> Result:
        """The run as a :class:`Result`: its columns, events in the order they happened.

        Columns that hold only their default (every node the first GPU's, no overhead,
        no work lost) are left out, as a plan without them states.
        """
        nodes = (None if all(n < 0 for n in self.node)
                 else np.array(self.node, dtype=np.int64))
        return Result(
            status=status, objective=objective, bound=None, solver=solver,
            job=np.array(self.job, dtype=np.int64),
            gpu_type=np.array(self.gpu_type, dtype=np.int64),
            start=np.array(self.start), end=np.array(self.end), gpus=tuple(self.gpus),
            node=nodes, work=np.array(self.work), restore_s=np.array(self.restore),
            migrate_s=np.array(self.migrate),
            lost=np.array(self.lost) if any(self.lost) else None, events=tuple(self.events))
