"""The event loop: jobs arrive, start, are preempted, resume, migrate and complete.

A plain priority queue of timed events over an index-based cluster state, as Gavel's and
Blox's simulators are a round or event loop. Two modes:

- **event** (:attr:`Mode.EVENT`): the scheduler decides at every instant something
  happens (an arrival, a completion, a wake-up it asked for, and, for a preemptive
  scheduler, the end of a job's overhead, from which on the job may be preempted);
- **round** (:attr:`Mode.ROUND`): it decides at every round boundary, Gavel's time
  slicing; arrivals wait for the next round, and GPUs a job frees mid-round stay idle
  until the round ends. As in Gavel's simulator, a round whose jobs all complete early
  ends at the last completion, and a round that runs nothing is followed by one at the
  next arrival.

Work is accounted exactly: a job running on type ``t`` does ``1 / duration[j, t]`` of
itself per second once its overheads are paid, and times are computed by multiplying
with ``duration`` (never with a rounded rate), so jobs of whole seconds end on whole
seconds and simultaneous completions stay simultaneous. Every resume pays the restore overhead,
and a resume on other GPUs than the job's previous segment (another node or another type)
is a migration and pays the migration overhead as well. A job still paying an overhead,
or not preemptible, is never stopped. The run is recorded as segments and events in a
:class:`~gpuplan.core.result.Result`, which :func:`gpuplan.simulate.run.simulate` verifies
before anything is written: the engine's own accounting (the work each segment declares)
is checked against the intervals by the independent verifier.
"""

from __future__ import annotations

import bisect
import heapq
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum
from functools import cached_property

import numpy as np

from gpuplan.core.errors import InputError, setting
from gpuplan.core.instance import FloatArray, Instance, IntArray, Outage
from gpuplan.core.result import EventKind, Result
from gpuplan.core.sim import DOWN, EventQueue, GpuCluster, Recorder
from gpuplan.simulate.policy import (
    Admission,
    Decision,
    Mode,
    Placement,
    Scheduler,
    View,
)

logger = logging.getLogger(__name__)

#: Called now and then with (simulated seconds, jobs finished, jobs in all).
Progress = Callable[[float, int, int], None]

#: Work share left below which a job being stopped counts as done (float noise).
_DONE = 1e-9

#: How often (wall seconds) the progress callback is called at most.
_PROGRESS_EVERY_S = 0.25


class SimulationError(RuntimeError):
    """A policy broke the engine's contract, or the run cannot go on (a bug, never input)."""


@dataclass(frozen=True)
class SimulationConfig:
    """How a run is simulated.

    Attributes
    ----------
    mode
        Decide at every event, or at every round boundary.
    round_s
        Round length in seconds (round mode; Gavel's default is 360 s).
    restart_overhead_s
        Checkpoint/restore seconds every resume pays before it does work.
    migration_overhead_s
        Further seconds a resume on other GPUs (a migration) pays.
    """

    mode: Mode = Mode.EVENT
    round_s: float = 360.0
    restart_overhead_s: float = 30.0
    migration_overhead_s: float = 60.0


@dataclass(frozen=True)
class Failures:
    """GPUs that fail during a run, listed or drawn, and what a failure costs a job.

    Attributes
    ----------
    listed
        Failures at given times: their GPUs go down at ``start_s`` until ``end_s``.
    per_day
        Whole nodes that fail per simulated day on average (a Poisson process from time
        0, each a node drawn uniformly, seeded by ``seed``); 0: none drawn.
    down_s
        How long a drawn failure keeps its node down.
    checkpoint_s
        A running job checkpoints every this many seconds of work; a failure loses the
        work since its last checkpoint (a job that is not preemptible loses all it did
        and starts again). None: no checkpoints but those a preemption takes.
    seed
        Seed of the drawn failures.
    """

    listed: tuple[Outage, ...] = ()
    per_day: float = 0.0
    down_s: float = 3600.0
    checkpoint_s: float | None = None
    seed: int = 0

    @property
    def any(self) -> bool:
        """Whether any failure can happen."""
        return bool(self.listed) or self.per_day > 0


#: Seconds in a day, for failure rates.
DAY_S = 86_400.0


class _Kind(IntEnum):
    """Timed events; at one instant completions are handled first, so their GPUs are free."""

    COMPLETE = 0
    #: GPUs fail (a running job on them stops), or come back.
    FAIL = 1
    REPAIR = 2
    ARRIVE = 3
    WAKE = 4
    #: A job's restore or migration overhead ends: it may be preempted from now on.
    UNLOCK = 5


class Engine:
    """One simulated run of a workload under a policy; :meth:`run` once.

    Parameters
    ----------
    instance
        The workload (``release`` are arrival times) and the cluster. Every job must be
        eligible on some type (the caller checks, naming the job).
    config
        Mode, round length and overheads.
    scheduler, placement, admission
        The policy's parts, built for this run.
    progress
        Called now and then with the simulated time and jobs finished.
    failures
        GPUs that fail during the run, and what a failure costs a job.
    seen
        What the policy sees of the jobs: their estimated durations, when the run's
        actual durations (``instance``'s) differ; None: the instance itself. Views then
        give the share of each job left by its estimate (at least
        :data:`ESTIMATE_FLOOR` while it runs past it).
    """

    def __init__(self, instance: Instance, config: SimulationConfig, scheduler: Scheduler,
                 placement: Placement, admission: Admission,
                 progress: Progress | None = None, failures: Failures | None = None,
                 seen: Instance | None = None) -> None:
        if config.mode not in scheduler.modes:
            raise SimulationError(f"scheduler {scheduler.name!r} does not work in "
                                  f"{config.mode.value} mode")
        self.instance = instance
        self.config = config
        self.scheduler = scheduler
        self.placement = placement
        self.admission = admission
        self.progress = progress
        n, kinds = instance.n_jobs, instance.n_types
        # Seconds of each job on each type (inf where it may not run): times are
        # computed by multiplying with them, never through a rate, so a job of whole
        # seconds that runs at once ends on a whole second.
        duration: FloatArray = np.where(instance.eligible, instance.duration, np.inf)
        self.duration = duration
        # Every eligible type, fastest first (the default preference of a decision).
        fastest = np.argsort(duration, axis=1, kind="stable").tolist()
        self.fastest_list: list[list[int]] = [
            row[:count] for row, count in zip(fastest, instance.eligible.sum(axis=1).tolist(),
                                              strict=True)]
        # Jobs by arrival (release, then index), the order views list them in; a job's
        # rank is its place there. Arrivals are handled in that order too (the queue
        # breaks ties of time and kind by the order of pushing, job index).
        self.by_arrival: IntArray = np.lexsort((np.arange(n), instance.release))
        self.rank: IntArray = np.empty(n, dtype=np.int64)
        self.rank[self.by_arrival] = np.arange(n)
        # The active, waiting and running jobs, kept as they change so that a decision
        # costs time in proportion to them, never to the whole workload: ranks in
        # increasing order for the first two, a set for the last.
        self.active_ranks: list[int] = []
        self.waiting_ranks: list[int] = []
        self.running_jobs: set[int] = set()
        self.n_arrived = 0
        # Whether each running job may not be stopped now; False for every other job.
        self.locked = np.zeros(n, dtype=bool)
        # Scratch: the jobs of the decision being carried out; cleared after each.
        self.listed = np.zeros(n, dtype=bool)
        self.remaining: FloatArray = np.ones(n)
        self.attained: FloatArray = np.zeros(n)
        self.received: FloatArray = np.zeros((n, kinds))
        self.running_type: IntArray = np.full(n, -1, dtype=np.int64)
        self.first_start: FloatArray = np.full(n, np.nan)
        self.finish: FloatArray = np.full(n, np.nan)
        self.active = np.zeros(n, dtype=bool)
        self.arrived = np.zeros(n, dtype=bool)
        self.preds_left: IntArray = np.array([len(p) for p in instance.predecessors],
                                             dtype=np.int64)
        # The open segment of each running job.
        self.seg_start: FloatArray = np.zeros(n)
        self.work_start: FloatArray = np.zeros(n)
        self.seg_restore: FloatArray = np.zeros(n)
        self.seg_migrate: FloatArray = np.zeros(n)
        self.seg_remaining: FloatArray = np.ones(n)
        self.mark: FloatArray = np.zeros(n)
        self.gpus: list[IntArray | None] = [None] * n
        self.version: IntArray = np.zeros(n, dtype=np.int64)
        self.total: IntArray = instance.node_gpus.sum(axis=0).astype(np.int64)
        # Each running job's spread slowdown (its gang spans domains of its preferred
        # level): it runs that many times its duration.
        self.slow: FloatArray = np.ones(n)
        self.cluster = GpuCluster(instance)
        self.recorder = Recorder()
        self.queue = EventQueue()
        self.wake_version = 0
        self.finished = 0
        self.decisions = 0
        self._last_progress = 0.0
        self.failures = failures or Failures()
        self.rng = np.random.default_rng(self.failures.seed)
        self.seen = seen or instance
        # Actual over estimated duration per job (the same on every type); None: equal.
        self.overrun: FloatArray | None = (
            None if seen is None else instance.min_duration / seen.min_duration)
        #: Per GPU, until when it is down (0: up).
        self.down_until: FloatArray = np.zeros(instance.n_gpus)
        #: The failures that happened, as outages of the instance.
        self.outages: list[Outage] = []
        #: Jobs run whole that a failure stopped: they start again from nothing.
        self.restart = np.zeros(n, dtype=bool)
        #: What a queued failure or repair acts on, by its sequence number: the GPUs
        #: (None for a drawn failure, which picks its node when it happens) and the end.
        self.pending: dict[int, tuple[IntArray | None, float]] = {}
        #: The engine's own decisions for a scheduler that offers GPUs in a fixed order
        #: and admits every job (:attr:`~gpuplan.simulate.policy.Scheduler.
        #: decides_in_fixed_order`); None: the scheduler decides.
        self.fixed: _FixedOrder | None = None
        if (getattr(scheduler, "decides_in_fixed_order", False) and not scheduler.preemptive
                and not admission.holds_back):
            order = scheduler.fixed_order(self.seen)
            if order is None:
                raise SimulationError(f"scheduler {scheduler.name!r} decides in a fixed order "
                                      "but has none")
            self.fixed = _FixedOrder(self, order)

    # -- the queue ---------------------------------------------------------------------

    def _push(self, at: float, kind: _Kind, job: int, version: int) -> int:
        return self.queue.push(at, int(kind), job, version)

    def _handle_until(self, until: float, inclusive: bool) -> bool:
        """Handle every queued event before ``until`` (or at it); whether any counted.

        Completions of segments that were stopped since, and wake-ups that a later one
        replaced, do not count.
        """
        queue, happened = self.queue, False
        while queue.due(until, inclusive):
            at, kind, sequence, job, version = queue.pop()
            if kind == _Kind.COMPLETE and version == self.version[job]:
                self._complete(job, at)
                happened = True
            elif kind == _Kind.FAIL:
                self._fail(*self.pending.pop(sequence), at)
                happened = True
            elif kind == _Kind.REPAIR:
                gpus, _ = self.pending.pop(sequence)
                assert gpus is not None
                self._repair(gpus, at)
                happened = True
            elif kind == _Kind.ARRIVE:
                self._arrive(job)
                happened = True
            elif ((kind == _Kind.WAKE and version == self.wake_version)
                  or (kind == _Kind.UNLOCK and version == self.version[job])):
                happened = True
        return happened

    # -- job life ----------------------------------------------------------------------

    def _arrive(self, job: int) -> None:
        self.arrived[job] = True
        self.n_arrived += 1
        if self.preds_left[job] == 0:
            self._ready(job)

    def _ready(self, job: int) -> None:
        """The job has arrived and its predecessors are done: it waits for admission."""
        if self.fixed is not None:
            self.fixed.add(job)
        else:
            bisect.insort(self.waiting_ranks, int(self.rank[job]))

    def _running(self) -> IntArray:
        """The running jobs, in no particular order."""
        return np.fromiter(self.running_jobs, dtype=np.int64, count=len(self.running_jobs))

    def _settle(self, now: float) -> None:
        """Bring every running job's remaining work, service and time received up to now."""
        if not self.running_jobs:
            return
        jobs = self._running()
        kinds = self.running_type[jobs]
        ran = np.maximum(0.0, now - np.maximum(self.mark[jobs], self.work_start[jobs]))
        self.remaining[jobs] = np.maximum(
            0.0, self.seg_remaining[jobs] - np.maximum(0.0, now - self.work_start[jobs])
            / (self.duration[jobs, kinds] * self.slow[jobs]))
        self.attained[jobs] += self.instance.gang[jobs] * ran
        self.received[jobs, kinds] += now - self.mark[jobs]
        self.mark[jobs] = now

    def _start(self, job: int, gpu_type: int, gpus: IntArray, now: float) -> None:
        instance = self.instance
        nodes = _gang_nodes(instance, job, gpus)
        if (nodes is None or gpus.size != instance.gang[job]
                or (instance.gpu_type[gpus] != gpu_type).any()
                or not self.cluster.fits(job, gpus)):
            raise SimulationError(f"placement {self.placement.name!r} gave job "
                                  f"{instance.job_ids[job]!r} GPUs {gpus.tolist()} that are "
                                  f"not {instance.gang[job]} free GPUs of one type, "
                                  f"{instance.gpus_per_node[job]} on each of "
                                  f"{instance.gang_nodes[job]} node(s) with room for it")
        self.slow[job] = instance.spread_factor(job, nodes)
        before = self.cluster.previous[job]
        first = before is None
        moved = before is not None and set(gpus.tolist()) != set(before.tolist())
        # A job run whole that a failure stopped starts again from nothing: no overheads.
        again = bool(self.restart[job])
        self.restart[job] = False
        restore = 0.0 if first or again else self.config.restart_overhead_s
        migrate = self.config.migration_overhead_s if moved and not again else 0.0
        if first:
            self.first_start[job] = now
        kind = EventKind.START if first else (EventKind.MIGRATE if moved else EventKind.RESUME)
        self.recorder.event(now, kind, job, gpus)
        self.gpus[job] = gpus
        self.cluster.hold(job, gpus)
        self.running_type[job] = gpu_type
        self.running_jobs.add(job)
        self.seg_start[job] = now
        self.seg_restore[job] = restore
        self.seg_migrate[job] = migrate
        self.work_start[job] = now + restore + migrate
        self.seg_remaining[job] = self.remaining[job]
        self.mark[job] = now
        self.version[job] += 1
        done_at = self.work_start[job] + self.remaining[job] * (
            self.duration[job, gpu_type] * self.slow[job])
        self._push(float(done_at), _Kind.COMPLETE, job, int(self.version[job]))
        if (restore + migrate > 0 and self.scheduler.preemptive
                and self.config.mode is Mode.EVENT):
            # Once paid, the job may be preempted: a decision then may run a job that
            # arrived while it was locked.
            self._push(float(self.work_start[job]), _Kind.UNLOCK, job, int(self.version[job]))

    def _close(self, job: int, now: float, work: float, kind: EventKind,
               lost: float = 0.0) -> None:
        gpus = self.gpus[job]
        assert gpus is not None
        start = float(self.seg_start[job])
        # A failure may stop a job while it pays its overheads: it paid them until then.
        restore = min(float(self.seg_restore[job]), now - start)
        migrate = min(float(self.seg_migrate[job]), now - start - restore)
        self.recorder.segment(job, int(self.running_type[job]), start, now, gpus, work,
                              restore, migrate, lost)
        self.recorder.event(now, kind, job, gpus)
        self.cluster.give_back(job, gpus)
        self.cluster.previous[job] = gpus
        if self.fixed is not None:
            self.fixed.freed()
        self.gpus[job] = None
        self.running_type[job] = -1
        self.running_jobs.discard(job)
        self.locked[job] = False
        self.version[job] += 1

    def _preempt(self, job: int, now: float) -> None:
        # Settled at ``now`` by the decision that stops the job.
        self._close(job, now, float(self.seg_remaining[job] - self.remaining[job]),
                    EventKind.PREEMPT)

    def _lose(self, job: int, now: float) -> None:
        """A failure stops a running job (settled at ``now``).

        It loses what it did since its last checkpoint, or all it did when it is not
        preemptible (it then starts again from nothing).
        """
        if self.remaining[job] <= _DONE:
            self._complete(job, now)
            return
        did = float(self.seg_remaining[job] - self.remaining[job])
        if self.instance.preemptible[job]:
            every = self.failures.checkpoint_s
            worked = max(0.0, now - float(self.work_start[job]))
            since = worked if every is None else math.fmod(worked, every)
            seconds = float(self.duration[job, self.running_type[job]] * self.slow[job])
            lost = min(did, since / seconds)
        else:
            lost = did
            self.restart[job] = True
        self.remaining[job] += lost
        self._close(job, now, did, EventKind.PREEMPT, lost)
        if self.fixed is not None:
            self.fixed.add(job)

    def _fail(self, gpus: IntArray | None, until: float, now: float) -> None:
        """GPUs fail: the jobs on them stop, and they stay down until ``until``.

        A drawn failure (``gpus`` None) takes a node drawn now, and draws the next one
        while jobs are left.
        """
        instance = self.instance
        if gpus is None:
            node = int(self.rng.integers(instance.n_nodes))
            gpus = np.flatnonzero(instance.gpu_node == node)
            until = now + self.failures.down_s
            if self.finished < instance.n_jobs:
                self._draw_failure(now)
        self._settle(now)
        for job in sorted({int(o) for o in self.cluster.owner[gpus].tolist() if o >= 0}):
            self._lose(job, now)
        self.cluster.down(gpus)
        self.down_until[gpus] = np.maximum(self.down_until[gpus], until)
        nodes = ", ".join(sorted({instance.node_ids[n] for n in instance.gpu_node[gpus].tolist()}))
        self.outages.append(Outage(gpus.copy(), now, until, f"{nodes} failed"))
        if np.isfinite(until):
            self.pending[self._push(until, _Kind.REPAIR, -1, 0)] = (gpus, until)
        else:
            # Down for good: no repair is queued (one at t=inf would bring the GPUs back
            # then, and a job left without a node would end at infinity).
            self._check_finishable(nodes, now)

    @cached_property
    def shape(self) -> IntArray:
        """``(J,)`` each job's shape: jobs of one shape fit on the same free GPUs and room.

        The shape is the gang, its GPUs per node, the eligible types, the node demand and
        the required topology level.
        """
        instance = self.instance
        required = (instance.required_level if instance.levels
                    else np.full(instance.n_jobs, -1, dtype=np.int64))
        demand = (instance.node_demand if instance.node_demand.size
                  else np.zeros((instance.n_jobs, 0)))
        key = np.column_stack([instance.gang, instance.gpus_per_node, instance.eligible,
                               demand, required]).astype(float)
        _, shape = np.unique(key, axis=0, return_inverse=True)
        found: IntArray = shape.reshape(-1)
        return found

    def _check_finishable(self, failed: str, now: float) -> None:
        """Refuse the run when GPUs down for good leave an unfinished job nowhere to run.

        Each job left must run on the GPUs that are up or will come back; one whose gang
        no node holds among them (on an empty cluster) can never finish, and the run never
        ends. One job of each shape is tried.

        Raises
        ------
        InputError
            Naming ``failures``, the failure, the first such job by arrival and how many
            there are.
        """
        instance = self.instance
        left = np.flatnonzero(np.isnan(self.finish))
        kept = np.isfinite(self.down_until)
        gpus = np.zeros((instance.n_nodes, instance.n_types), dtype=np.int64)
        np.add.at(gpus, (instance.gpu_node[kept], instance.gpu_type[kept]), 1)
        room = None if self.cluster.room is None else instance.node_capacity.astype(float)
        rank = np.zeros(instance.n_nodes)
        shapes, first = np.unique(self.shape[left], return_index=True)
        lost = [shape for shape, job in zip(shapes.tolist(), left[first].tolist(), strict=True)
                if all(instance.pick_nodes(job, instance.gang_hosts(job, t, gpus[:, t], room),
                                           rank) is None for t in self.fastest_list[job])]
        if not lost:
            return
        stranded = left[np.isin(self.shape[left], lost)]
        job = int(stranded[np.argmin(self.rank[stranded])])
        others = f" (and {stranded.size - 1} other job(s))" if stranded.size > 1 else ""
        raise InputError(setting("failures"), "", f"{failed} failed for good at t={now:g} s, "
                         f"after which no node left holds job {instance.job_ids[job]!r}"
                         f"{others}, which needs {_gang_text(instance, job)}: the run could "
                         "never finish; give that failure an end (for_s) or leave the job out")

    def _repair(self, gpus: IntArray, now: float) -> None:
        """GPUs whose last failure is over come back."""
        self.cluster.up(gpus[(self.cluster.owner[gpus] == DOWN)
                             & (self.down_until[gpus] <= now)])
        if self.fixed is not None:
            self.fixed.freed()

    def _draw_failure(self, now: float) -> None:
        """Queue the next drawn node failure, an exponential wait after ``now``."""
        wait = float(self.rng.exponential(DAY_S / self.failures.per_day))
        self.pending[self._push(now + wait, _Kind.FAIL, -1, 0)] = (None, math.inf)

    def _complete(self, job: int, now: float) -> None:
        if not self.active[job] or self.running_type[job] < 0:
            raise SimulationError(f"job {self.instance.job_ids[job]!r} completes at t={now:g} s "
                                  "but is not running")
        kind = int(self.running_type[job])
        self.received[job, kind] += now - self.mark[job]
        self.attained[job] += self.instance.gang[job] * max(
            0.0, now - max(float(self.mark[job]), float(self.work_start[job])))
        self._close(job, now, float(self.seg_remaining[job]), EventKind.COMPLETE)
        self.remaining[job] = 0.0
        self.finish[job] = now
        self.active[job] = False
        if self.fixed is None:
            ranks = self.active_ranks
            del ranks[bisect.bisect_left(ranks, int(self.rank[job]))]
        self.finished += 1
        for successor in self.instance.successors[job]:
            self.preds_left[successor] -= 1
            if self.preds_left[successor] == 0 and self.arrived[successor]:
                self._ready(successor)

    # -- decisions ---------------------------------------------------------------------

    def _view(self, now: float) -> View:
        order = self.by_arrival
        running = self._running()
        self.locked[running] = ~self.instance.preemptible[running] | (
            self.work_start[running] > now)
        remaining = self.remaining
        if self.overrun is not None:
            # By the estimate: done seconds over estimated seconds, as the policy sees it.
            remaining = np.clip(1.0 - (1.0 - remaining) * self.overrun, ESTIMATE_FLOOR, 1.0)
            remaining[self.finish == self.finish] = 0.0
        return View(
            now=now, instance=self.seen,
            jobs=order[np.array(self.active_ranks, dtype=np.int64)],
            waiting=order[np.array(self.waiting_ranks, dtype=np.int64)],
            remaining=_readonly(remaining), attained=_readonly(self.attained),
            received=_readonly(self.received), running_type=_readonly(self.running_type),
            locked=_readonly(self.locked), first_start=_readonly(self.first_start),
            work_start=_readonly(self.work_start), down_until=_readonly(self.down_until),
            gpus=self.gpus,
            free=_readonly(self.cluster.free.sum(axis=0)),
            largest=_readonly(self.cluster.free.max(axis=0)),
            total=_readonly(self.total),
            round_s=self.config.round_s if self.config.mode is Mode.ROUND else None)

    def _decide(self, now: float) -> View | None:
        """Settle the running jobs, admit, ask the scheduler and carry out its decision.

        The view the scheduler decided on; None when the engine decided itself
        (:class:`_FixedOrder`).
        """
        self.decisions += 1
        if self.fixed is not None:
            self.fixed.decide(now)
            return None
        self._settle(now)
        if self.waiting_ranks:
            waiting = self.by_arrival[np.array(self.waiting_ranks, dtype=np.int64)].tolist()
            if self.admission.holds_back:
                view = self._view(now)
                waiting = [job for job in waiting if self.admission.admit(view, job)]
            for job in waiting:
                rank = int(self.rank[job])
                del self.waiting_ranks[bisect.bisect_left(self.waiting_ranks, rank)]
                bisect.insort(self.active_ranks, rank)
                self.active[job] = True
        view = self._view(now)
        if view.jobs.size:
            self._apply(self.scheduler.decide(view), view)
        return view

    def _types(self, job: int, decision: Decision, k: int) -> list[int]:
        """The types job ``order[k]`` may use, most preferred first."""
        if decision.prefer is None:
            return self.fastest_list[job]
        eligible = self.instance.eligible[job]
        return [t for t in decision.prefer[k].tolist() if t >= 0 and eligible[t]]

    def _stop(self, job: int, now: float) -> None:
        """Stop a running job (settled at ``now``): preempt it, or complete it if done."""
        if self.remaining[job] <= _DONE:
            # Float noise: the job is done now, and a resume would pay a restore for
            # nothing.
            self._complete(job, now)
        else:
            self._preempt(job, now)

    def _apply(self, decision: Decision, view: View) -> None:
        """Carry out a decision on the nodes themselves, in its order.

        Running jobs the decision leaves out stop first (when they may be stopped). Then
        the order is walked once: a running job keeps its GPUs while its type is one it
        may use; any other job asks the placement for free GPUs of the first type of its
        preference where a node holds its gang, and, under a preemptive scheduler when no
        node has them free, for the GPUs of running jobs further down the order, lowest
        priority first (:meth:`_displace`). Types are granted and GPUs placed in one step,
        so a job never passes an earlier one that fits on some node, and a job is stopped
        to make room only when the GPUs it frees start another job at once.
        """
        instance, now = self.instance, view.now
        order = np.asarray(decision.order, dtype=np.int64)
        inactive = order[~self.active[order]]
        if inactive.size:
            raise SimulationError(f"scheduler {self.scheduler.name!r} chose job "
                                  f"{instance.job_ids[inactive[0]]!r}, which is not active")
        # Jobs the decision may stop: none under a non-preemptive scheduler.
        # In index order, so that a run's log does not depend on the order of a set.
        running = np.sort(self._running())
        movable = (running[~self.locked[running]] if self.scheduler.preemptive
                   else running[:0])
        # Membership by a mask, not np.isin: the order is long and sorting it is most of
        # a decision's cost.
        self.listed[order] = True
        listed = self.listed[movable]
        self.listed[order] = False
        for job in movable[~listed].tolist():
            self._stop(job, now)
        # The running jobs a job ahead of them may displace, by their place in the order.
        self.listed[movable[listed]] = True
        soft = np.flatnonzero(self.listed[order])
        self.listed[order] = False
        self._walk(decision, order, _Walk(self, order, soft), now)

    def _walk(self, decision: Decision, order: IntArray, walk: _Walk, now: float) -> None:
        """Walk the decision's order once (:meth:`_apply`).

        Only the places where something can happen are visited: jobs that do not run,
        running jobs the decision moves to another type, and jobs displaced on the way.
        A running job that keeps its GPUs needs no visit: once the walk is past it, no
        later job may displace it (:meth:`_Walk.candidates` looks only further down).
        """
        running = self.running_type[order]
        visit = np.flatnonzero(running < 0)
        if decision.prefer is not None and walk.soft.size:
            # A soft job whose current type is not among its preferences moves.
            stays = (decision.prefer[walk.soft] == running[walk.soft, None]).any(axis=1)
            visit = np.union1d(visit, walk.soft[~stays])
        places = visit.tolist()
        # A job moving to another type may be displaced before the walk reaches it: its
        # place is then listed twice, and visited once.
        seen: set[int] = set()
        i = 0
        while i < len(places) or walk.later:
            if walk.later and (i == len(places) or walk.later[0] < places[i]):
                k = heapq.heappop(walk.later)
            else:
                k = places[i]
                i += 1
            if k in seen:
                continue
            seen.add(k)
            if walk.done(k):
                break
            walk.at = k
            job = int(order[k])
            types = self._types(job, decision, k)
            current = int(self.running_type[job])
            if current >= 0:
                # The decision moves it to another type: it starts again there if it can.
                walk.release(k)
                self._stop(job, now)
                walk.freed(current)
            elif job in walk.displaced:
                # Stopped by a job ahead of it: its type first, if it may stay there.
                before = walk.displaced[job]
                types = [before, *(t for t in types if t != before)] if before in types else types
            if not self.active[job]:
                # Stopping it completed it (its work was done but for float noise): there
                # is nothing left to start.
                continue
            walk.start(job, types, now)

    def _displace(self, job: int, gpu_type: int, walk: _Walk, now: float) -> IntArray | None:
        """GPUs of ``gpu_type`` for ``job`` from running jobs further down the order.

        Those jobs' GPUs are offered to the placement one job at a time, lowest priority
        first, until some node holds the gang; the jobs whose GPUs the placement then takes
        are stopped, the others keep theirs. None (and nobody stopped) when even all of
        them would not make room.
        """
        offered: list[tuple[int, IntArray]] = []
        reached = False
        for other in walk.candidates(gpu_type):
            gpus = self.gpus[other]
            assert gpus is not None
            self.cluster.give_back(other, gpus)
            offered.append((other, gpus))
            if self._room_for(job, gpu_type, gpus):
                reached = True
                break
        chosen = self.placement.place(self.cluster, job, gpu_type) if reached else None
        for other, gpus in offered:
            self.cluster.hold(other, gpus)
        if chosen is None:
            return None
        chosen = np.asarray(chosen, dtype=np.int64)
        taken = set(chosen.tolist())
        for other, gpus in offered:
            if taken.isdisjoint(gpus.tolist()):
                continue
            walk.displace(other, gpu_type)
            self._stop(other, now)
        walk.freed(gpu_type)
        return chosen

    def _room_for(self, job: int, gpu_type: int, freed: IntArray) -> bool:
        """Whether the job's gang fits now, the GPUs ``freed`` just freed among the free.

        Before they were freed it did not fit, so for a one-node gang that draws nothing on
        its node only their node can hold it now.
        """
        instance = self.instance
        if instance.gang_nodes[job] == 1 and self.cluster.room is None and not instance.levels:
            node = int(instance.gpu_node[freed[0]])
            return bool(self.cluster.free[node, gpu_type] >= instance.gang[job])
        hosts = self.cluster.hosts(job, gpu_type)
        return instance.pick_nodes(job, hosts, np.zeros(instance.n_nodes)) is not None

    # -- the loop ----------------------------------------------------------------------

    def _report(self, now: float, force: bool = False) -> None:
        if self.progress is None:
            return
        clock = time.perf_counter()
        if force or clock - self._last_progress >= _PROGRESS_EVERY_S:
            self._last_progress = clock
            self.progress(now, self.finished, self.instance.n_jobs)

    def _stalled(self, now: float) -> SimulationError:
        left = np.flatnonzero(np.isnan(self.finish))
        names = ", ".join(self.instance.job_ids[j] for j in left[:5])
        # Failures for good that leave a job nowhere to run are refused when they happen
        # (_check_finishable): every job left fits somewhere.
        return SimulationError(
            f"the run is stuck at t={now:g} s: {left.size} job(s) ({names}) wait but nothing "
            f"runs and nothing will arrive; scheduler {self.scheduler.name!r} and admission "
            f"{self.admission.name!r} start none of them")

    def run(self) -> Result:
        """Simulate until every job has completed; the run as segments and events.

        Raises
        ------
        InputError
            When GPUs that fail for good leave a job no node to run on
            (``failures``): the run could never finish.
        SimulationError
            When the policy breaks the engine's contract or starts no job while jobs wait.
        """
        for job in range(self.instance.n_jobs):
            self._push(float(self.instance.release[job]), _Kind.ARRIVE, job, 0)
        for outage in self.failures.listed:
            self.pending[self._push(outage.start_s, _Kind.FAIL, -1, 0)] = (
                outage.gpus, outage.end_s)
        if self.failures.per_day > 0:
            self._draw_failure(0.0)
        if self.config.mode is Mode.ROUND:
            self._rounds()
        else:
            self._events()
        self._report(float(np.nanmax(self.finish, initial=0.0)), force=True)
        return self.recorder.result(f"gpuplan simulate {self.scheduler.name}")

    def _events(self) -> None:
        idle = 0
        while self.queue:
            now = self.queue.next_time()
            if not self._handle_until(now, inclusive=True):
                continue
            view = self._decide(now)
            if self.running_jobs or self.n_arrived < self.instance.n_jobs:
                idle = 0
            else:
                # Only wake-ups are left: a scheduler that keeps waking without ever
                # starting a job on the empty cluster would loop forever.
                idle += 1
                if idle > _IDLE_ROUNDS:
                    raise self._stalled(now)
            wake = (self.scheduler.wakeup(view) if view is not None and view.jobs.size
                    else None)
            # Only the latest wake-up counts: a decision replaces the plan it came from.
            self.wake_version += 1
            if wake is not None and wake > now:
                self._push(wake, _Kind.WAKE, -1, self.wake_version)
            self._report(now)
        if self.finished < self.instance.n_jobs:
            raise self._stalled(float(np.nanmax(self.finish, initial=0.0)))

    def _rounds(self) -> None:
        """Gavel's rounds: decide, run until the round ends, repeat.

        A round lasts ``round_s``, or less when every job dispatched in it completes
        sooner: it ends at the last of those completions. A round that dispatches nothing
        is followed by one at the next arrival (Gavel's idle clock jump, taken even while
        jobs wait that the scheduler does not run yet).
        """
        round_s = self.config.round_s
        now = self.queue.next_time()
        idle = 0
        while True:
            # The last job may complete right at a boundary: then there is nothing to decide.
            self._handle_until(now, inclusive=True)
            if self.finished == self.instance.n_jobs:
                return
            self._decide(now)
            self._report(now)
            running = self._running()
            if running.size:
                idle = 0
                kinds = self.running_type[running]
                done_at = (self.work_start[running] + self.seg_remaining[running]
                           * self.duration[running, kinds] * self.slow[running])
                end = min(now + round_s, float(done_at.max()))
                self._handle_until(end, inclusive=False)
            elif self.n_arrived < self.instance.n_jobs:
                # Arrivals come in arrival order: the next is the first not arrived.
                end = max(now, float(self.instance.release[self.by_arrival[self.n_arrived]]))
            else:
                # Jobs wait, nothing runs and nothing will arrive: a scheduler may still
                # start them later (Gavel's allocation waits for its reset interval).
                idle += 1
                if idle > _IDLE_ROUNDS:
                    raise self._stalled(now)
                end = now + round_s
            now = end


class _FixedOrder:
    """The decisions of a scheduler that offers GPUs in a fixed order and never preempts.

    What the scheduler's decision would be (the waiting jobs in its order, each on its
    types fastest first) carried out as the engine's walk carries it out, in time that does
    not grow with the queue: the waiting jobs are kept by *shape* (gang, GPUs per node,
    eligible types, node demand and required level), each shape's jobs in a heap by their
    place in the order. A decision offers GPUs to the shapes' first jobs, earliest first;
    a job that starts makes way for the next of its shape, and a job that does not fit
    anywhere closes its shape: GPUs and node room only shrink while jobs start, so every
    other job of that shape would not fit either, in this decision and in the next ones,
    until GPUs are freed (a job ends or fails, GPUs come back). The jobs that start, and
    their order, are those of the walk over the whole order.

    Parameters
    ----------
    engine
        The engine.
    order
        Every job in the scheduler's order (:meth:`~gpuplan.simulate.policy.Scheduler.
        fixed_order`).
    """

    def __init__(self, engine: Engine, order: IntArray) -> None:
        self.engine = engine
        instance = engine.instance
        position = np.empty(instance.n_jobs, dtype=np.int64)
        position[order] = np.arange(instance.n_jobs)
        self.position: list[int] = position.tolist()
        self.shape: list[int] = engine.shape.tolist()
        #: Per shape with jobs waiting: (place in the order, job), a heap.
        self.waiting: dict[int, list[tuple[int, int]]] = {}
        #: Shapes whose first job fitted nowhere, with no GPU freed since.
        self.closed: set[int] = set()
        # Per job, a gang share that only a node with that many free GPUs of a type holds.
        self.per_node: list[int] = np.maximum(instance.gpus_per_node, 1).tolist()

    def add(self, job: int) -> None:
        """The job waits (arrived, predecessors done, or stopped by a failure)."""
        self.engine.active[job] = True
        heapq.heappush(self.waiting.setdefault(self.shape[job], []),
                       (self.position[job], job))

    def freed(self) -> None:
        """GPUs or node room were freed: every shape may fit again."""
        self.closed.clear()

    def decide(self, now: float) -> None:
        """Start the waiting jobs that fit, in the order, as the engine's walk would."""
        waiting, closed = self.waiting, self.closed
        heads = [(queue[0][0], shape) for shape, queue in waiting.items()
                 if shape not in closed]
        if not heads:
            return
        heapq.heapify(heads)
        engine = self.engine
        free = engine.cluster.free
        # The most free GPUs of each type on one node: a share larger fits nowhere.
        largest: list[int] = free.max(axis=0).tolist()
        while heads:
            _, shape = heapq.heappop(heads)
            queue = waiting[shape]
            job = queue[0][1]
            need = self.per_node[job]
            for gpu_type in engine.fastest_list[job]:
                if need > largest[gpu_type]:
                    continue
                gpus = engine.placement.place(engine.cluster, job, gpu_type)
                if gpus is None:
                    continue
                engine._start(job, gpu_type, np.asarray(gpus, dtype=np.int64), now)
                largest[gpu_type] = int(free[:, gpu_type].max())
                heapq.heappop(queue)
                if queue:
                    heapq.heappush(heads, (queue[0][0], shape))
                else:
                    del waiting[shape]
                break
            else:
                closed.add(shape)


class _Walk:
    """One walk over a decision's order (:meth:`Engine._apply`): who may still be moved.

    Parameters
    ----------
    engine
        The engine carrying the decision out.
    order
        The decision's order.
    soft
        The places in the order, increasing, of the running jobs that a job ahead of them
        may displace (preemptive scheduler, not locked).
    """

    def __init__(self, engine: Engine, order: IntArray, soft: IntArray) -> None:
        self.engine = engine
        self.order = order
        self.soft = soft
        #: The place the walk is at.
        self.at = -1
        #: Places of soft jobs not yet displaced or moved, increasing.
        self.open: list[int] = soft.tolist()
        #: Places of displaced jobs the walk has still to visit (a heap).
        self.later: list[int] = []
        self.place = dict(zip(order[soft].tolist(), self.open, strict=True))
        self.by_type: dict[int, list[int]] = {}
        #: Jobs a job ahead of them stopped, with the type they ran on.
        self.displaced: dict[int, int] = {}
        kinds = engine.instance.n_types
        # The smallest gang no node held free of each type, since GPUs of it were last
        # freed: placements find a gang wherever one fits, so a larger one fails as well.
        self.no_free = [math.inf] * kinds
        # The smallest gang that even displacing every soft job could not place; free
        # plus soft GPUs on a node only shrink during a walk, so it never resets.
        self.no_room = [math.inf] * kinds
        gang = engine.instance.gang[order]
        self.smallest = int(gang.min()) if order.size else 0
        # The pruning by gang size holds while a larger gang never fits where a smaller
        # one does not: not so with multi-node gangs, node resources or topology.
        self.prune = not engine.instance.features

    def n_soft(self, k: int) -> int:
        """How many soft jobs at place ``k`` or further down may still be displaced."""
        return len(self.open) - bisect.bisect_left(self.open, k)

    def done(self, k: int) -> bool:
        """Whether no job from place ``k`` down can start or be moved any more."""
        return self.n_soft(k) == 0 and max(self.no_free) <= self.smallest

    def release(self, k: int) -> None:
        """The soft job at place ``k`` may no longer be displaced."""
        del self.open[bisect.bisect_left(self.open, k)]

    def displace(self, job: int, gpu_type: int) -> None:
        """A soft job further down is stopped for a job ahead: visit it when reached."""
        k = self.place[job]
        self.release(k)
        self.displaced[job] = gpu_type
        heapq.heappush(self.later, k)

    def freed(self, gpu_type: int) -> None:
        """GPUs of ``gpu_type`` were freed: any gang may fit there again."""
        self.no_free[gpu_type] = math.inf

    def candidates(self, gpu_type: int) -> list[int]:
        """The soft jobs below the walk running on ``gpu_type``, lowest priority first."""
        running = self.engine.running_type
        if gpu_type not in self.by_type:
            self.by_type[gpu_type] = [int(self.order[k]) for k in reversed(self.open)
                                      if running[self.order[k]] == gpu_type]
        found = []
        for job in self.by_type[gpu_type]:
            if self.place[job] <= self.at:
                break
            if running[job] == gpu_type and job not in self.displaced:
                found.append(job)
        return found

    def start(self, job: int, types: list[int], now: float) -> bool:
        """Start ``job`` on the first of ``types`` with free GPUs, else by displacing."""
        engine = self.engine
        need = int(engine.instance.gang[job])
        prune = self.prune
        for gpu_type in types:
            if prune and need >= self.no_free[gpu_type]:
                continue
            gpus = engine.placement.place(engine.cluster, job, gpu_type)
            if gpus is not None:
                engine._start(job, gpu_type, np.asarray(gpus, dtype=np.int64), now)
                return True
            if prune:
                self.no_free[gpu_type] = need
        if self.n_soft(self.at + 1) == 0:
            return False
        for gpu_type in types:
            if prune and need >= self.no_room[gpu_type]:
                continue
            chosen = engine._displace(job, gpu_type, self, now)
            if chosen is not None:
                engine._start(job, gpu_type, chosen, now)
                return True
            if prune:
                self.no_room[gpu_type] = need
        return False


#: The least share of its work a running job is taken to have left by its estimate
#: (when it runs past its estimate, the policy expects it to end soon).
ESTIMATE_FLOOR = 0.01

#: Decisions in a row that may run nothing, with nothing left to arrive, before a run is
#: declared stuck.
_IDLE_ROUNDS = 100


def _gang_nodes(instance: Instance, job: int, gpus: IntArray) -> IntArray | None:
    """The nodes of the job's gang, if the GPUs are its shape, in one domain; else None.

    Its GPUs per node on each of its nodes; a one-node gang's node is its first GPU's.
    """
    hosts = instance.gpu_node[gpus]
    if instance.gang_nodes[job] == 1:
        nodes: IntArray = hosts[:1]
        if not (hosts == hosts[0]).all():
            return None
    else:
        nodes, counts = np.unique(hosts, return_counts=True)
        if nodes.size != instance.gang_nodes[job] or (
                counts != instance.gpus_per_node[job]).any():
            return None
    if not instance.levels or instance.required_level[job] < 0:
        return nodes
    domains = instance.node_domain[nodes, instance.required_level[job]]
    return nodes if bool(domains[0] >= 0 and (domains == domains[0]).all()) else None


def _gang_text(instance: Instance, job: int) -> str:
    """What a job's gang needs of the nodes, in words: ``4 GPU(s) of A100 on one node``."""
    types = " or ".join(instance.type_ids[t] for t in np.flatnonzero(instance.eligible[job]))
    nodes = int(instance.gang_nodes[job])
    where = ("on one node" if nodes == 1
             else f"{instance.gpus_per_node[job]} on each of {nodes} nodes")
    level = int(instance.required_level[job]) if instance.levels else -1
    extra = [*(["room for its node demand"] if instance.node_demand.size
               and instance.node_demand[job].any() else []),
             *([f"within one {instance.levels[level]}"] if level >= 0 else [])]
    return (f"{instance.gang[job]} GPU(s) of {types} {where}"
            + (f", {' and '.join(extra)}" if extra else ""))


def _readonly(array: np.ndarray) -> np.ndarray:
    view = array.view()
    view.flags.writeable = False
    return view
