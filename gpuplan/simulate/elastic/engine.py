"""The elastic simulator: jobs whose GPU count changes over time, on the simulation core.

At every decision (arrivals, completions, and the instants a policy asks to be woken at)
an :class:`ElasticPolicy` sees the jobs that arrived and the admitted ones with the
iterations each has left, and answers with an :class:`ElasticDecision`: which of the
arrivals it declines (a declined job never runs: ElasticFlow's admission control) and how
many GPUs each admitted job holds from now on (0: paused). The engine carries it out:

- a job whose count does not change keeps its GPUs and its progress;
- the others give theirs back and are placed again, largest count first: a count of at
  most a node's GPUs on the node with the fewest free GPUs that hold it (best fit), a
  larger one on whole free nodes (:meth:`~gpuplan.core.instance.Instance.piece_nodes`).
  When the GPUs kept by unchanged jobs leave no room so, every running job is placed
  again from an empty cluster, largest first (for power-of-two counts on power-of-two
  nodes, buddy allocation: it always fits when the counts add up to at most the GPUs),
  each on the GPUs it held when they are still free;
- a job that starts, resumes or holds other GPUs than before makes no progress for its
  ``rescale_s`` (checkpoint, restart at its new count), then runs at ``speed[count]``
  iterations per second until its count or GPUs change again.

Every piece (a job on fixed GPUs over an interval) is one segment of the run log, with the
share of the job's iterations it did and the overhead it paid; the log is verified like
any plan before anything reads it (:func:`gpuplan.simulate.elastic.run.simulate_elastic`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import numpy as np

from gpuplan.core.instance import FloatArray, Instance, IntArray
from gpuplan.core.result import EventKind, Result
from gpuplan.core.sim import EventQueue, Recorder
from gpuplan.simulate.engine import SimulationError

#: Event kinds, in the order they are handled at one instant: completions free GPUs
#: before arrivals and wake-ups are decided on.
_COMPLETE, _ARRIVE, _WAKE = 0, 1, 2
#: Iterations within which a job counts as done (the clock's rounding at its end).
_DONE_EPS = 1e-9


class ElasticSimulationError(SimulationError):
    """A policy asked for what the cluster cannot do (a bug, never bad input)."""


@dataclass(frozen=True)
class ElasticView:
    """What a policy sees at a decision; arrays are read-only and valid during the call.

    Attributes
    ----------
    now
        Simulated seconds.
    instance
        The jobs and the cluster.
    arrived
        Jobs that arrived since the last decision, in arrival order: the policy admits or
        declines them now.
    active
        Admitted jobs not finished, in arrival order (the arrivals not among them).
    remaining
        ``(J,)`` iterations each job has left.
    count
        ``(J,)`` GPUs each job holds now (0: none).
    overhead_left
        ``(J,)`` seconds of its restart overhead a running job still has to pay.
    attained
        ``(J,)`` GPU-seconds each job has held (Tiresias' two-dimensional service).
    gpus
        GPUs in the cluster.
    node_size
        GPUs of the largest node.
    room
        ``(N,)`` GPUs of each node not held by a job that may not be preempted (those
        keep theirs); every other GPU is the policy's to give.
    """

    now: float
    instance: Instance
    arrived: IntArray
    active: IntArray
    remaining: FloatArray
    count: IntArray
    overhead_left: FloatArray
    attained: FloatArray
    gpus: int
    node_size: int
    room: IntArray

    def packs(self, counts: list[int]) -> bool:
        """Whether pieces of these counts fit on :attr:`room`, largest first, best fit.

        Always true when no running job is pinned and the counts add up to at most the
        GPUs (buddy allocation); a policy asks only when some job is pinned.
        """
        free = self.room.copy()
        for c in sorted(counts, reverse=True):
            if c > self.node_size:
                whole = np.flatnonzero(free == self.node_size)
                if whole.size < c // self.node_size:
                    return False
                free[whole[:c // self.node_size]] = 0
                continue
            fits = np.flatnonzero(free >= c)
            if not fits.size:
                return False
            free[fits[np.argmin(free[fits])]] -= c
        return True


@dataclass(frozen=True)
class ElasticDecision:
    """A policy's answer.

    Attributes
    ----------
    count
        GPUs per job from now on; an admitted job left out holds none.
    declined
        Arrivals (or admitted jobs) that will never run.
    wake_s
        When to decide again even if nothing arrives or ends; None: at the next event.
    """

    count: Mapping[int, int]
    declined: Collection[int] = ()
    wake_s: float | None = None


class ElasticPolicy(Protocol):
    """A policy part: a name, a line of help, typed options, and :meth:`decide`."""

    name: ClassVar[str]
    description: ClassVar[str]
    options_type: ClassVar[type[Any]]
    #: Whether the policy calls a solver (so it takes a time limit).
    calls_solver: ClassVar[bool]

    def decide(self, view: ElasticView) -> ElasticDecision:
        """The counts and declines at this decision."""


#: Called now and then with (simulated seconds, jobs finished or declined, jobs in all).
Progress = Callable[[float, int, int], None]


@dataclass
class ElasticOutcome:
    """A finished run: its result, the declined jobs and the decisions' wall seconds."""

    result: Result
    declined: dict[int, float]
    decision_s: list[float] = field(default_factory=list)


class ElasticEngine:
    """One run of an elastic policy over an instance of one GPU type."""

    def __init__(self, instance: Instance, policy: ElasticPolicy,
                 progress: Progress | None = None) -> None:
        self.instance = instance
        self.policy = policy
        self.progress = progress
        n = instance.n_jobs
        self.type = int(np.flatnonzero(instance.node_gpus.sum(axis=0) > 0)[0])
        node_gpus = instance.node_gpus[:, self.type].astype(np.int64)
        self.node_size = int(node_gpus.max())
        self.node_gpus = node_gpus
        self.free = node_gpus.copy()
        self.first = np.concatenate(([0], np.cumsum(instance.node_gpus.ravel())[:-1])
                                    ).reshape(instance.node_gpus.shape)[:, self.type]
        self.owner = np.full(instance.n_gpus, -1, dtype=np.int64)
        self.remaining = np.where(instance.elastic, instance.work, 0.0).astype(float)
        # A rigid job runs its reference count at the speed its duration gives.
        self.rate_table = self._rates()
        self.count = np.zeros(n, dtype=np.int64)
        self.gpus: list[IntArray | None] = [None] * n
        self.previous: list[IntArray | None] = [None] * n
        self.piece_start = np.zeros(n)
        self.piece_overhead = np.zeros(n)
        self.piece_remaining = self.remaining.copy()
        self.rate = np.zeros(n)
        self.attained = np.zeros(n)
        self.held_since = np.zeros(n)
        self.stopped_at = np.full(n, -np.inf)
        self.version = np.zeros(n, dtype=np.int64)
        self.state = np.zeros(n, dtype=np.int8)  # 0 future, 1 arrived, 2 active, 3 done, 4 out
        self.arrived: list[int] = []
        self.events = EventQueue()
        self.recorder = Recorder()
        self.declined: dict[int, float] = {}
        self.decision_s: list[float] = []
        self.finished = 0

    def _rates(self) -> dict[int, FloatArray]:
        """Per job, iterations per second at each count 0..max (0 where not allowed)."""
        instance = self.instance
        top = max(int(instance.counts.max(initial=0)), int(instance.gang.max(initial=0)))
        table = np.zeros((instance.n_jobs, top + 1))
        if instance.counts.size:
            table[:, instance.counts] = instance.speed[:, self.type, :]
        rigid = np.flatnonzero(~instance.elastic)
        # A rigid job's work is its duration: one "iteration" per second at its gang.
        table[rigid, instance.gang[rigid]] = 1.0
        self.remaining[rigid] = instance.duration[rigid, self.type]
        return {0: table}

    def rate_of(self, job: int, count: int) -> float:
        """Iterations per second of ``job`` on ``count`` GPUs (0: not allowed)."""
        table = self.rate_table[0]
        return float(table[job, count]) if count < table.shape[1] else 0.0

    # -- the run ----------------------------------------------------------------------

    def run(self) -> ElasticOutcome:
        """Play the workload out; the run's result, declines and decision times."""
        instance = self.instance
        order = np.lexsort((np.arange(instance.n_jobs), instance.release))
        for j in order.tolist():
            self.events.push(float(instance.release[j]), _ARRIVE, j)
        gap = float(getattr(self.policy, "decision_gap_s", 0.0))
        next_decision = woken = -np.inf
        while self.events:
            now = self.events.next_time()
            while self.events.due(now, inclusive=True):
                at, kind, _, job, version = self.events.pop()
                if kind == _COMPLETE and version == self.version[job] and self.state[job] == 2:
                    self._complete(job, at)
                elif kind == _ARRIVE:
                    self.state[job] = 1
                    self.arrived.append(job)
            if not self.arrived and not (self.state == 2).any():
                continue
            if now < next_decision:
                # Within a slot of the last decision: decided together at the slot's end.
                if woken != next_decision:
                    self.events.push(next_decision, _WAKE)
                    woken = next_decision
                continue
            next_decision = now + gap
            began = time.perf_counter()
            decision = self.policy.decide(self._view(now))
            self.decision_s.append(time.perf_counter() - began)
            self._apply(now, decision)
            if decision.wake_s is not None and decision.wake_s > now:
                self.events.push(decision.wake_s, _WAKE)
            if self.progress is not None:
                self.progress(now, self.finished + len(self.declined), instance.n_jobs)
        left = np.flatnonzero(self.state < 3)
        if left.size:
            raise ElasticSimulationError(
                f"{self.policy.name} left {left.size} job(s) unfinished with nothing more to "
                f"happen, e.g. {instance.job_ids[int(left[0])]!r}")
        result = self.recorder.result(f"simulate:{self.policy.name}")
        return ElasticOutcome(result, self.declined, self.decision_s)

    def _view(self, now: float) -> ElasticView:
        active = np.flatnonzero(self.state == 2)
        active = active[np.lexsort((active, self.instance.release[active]))]
        running = np.flatnonzero(self.count > 0)
        remaining = self.remaining.copy()
        overhead = np.zeros(self.instance.n_jobs)
        attained = self.attained.copy()
        if running.size:
            ran = now - self.piece_start[running]
            useful = np.maximum(ran - self.piece_overhead[running], 0.0)
            remaining[running] = np.maximum(
                self.piece_remaining[running] - self.rate[running] * useful, 0.0)
            overhead[running] = np.maximum(self.piece_overhead[running] - ran, 0.0)
            attained[running] += self.count[running] * (now - self.held_since[running])
        for array in (remaining, overhead, attained):
            array.flags.writeable = False
        arrived = np.array(self.arrived, dtype=np.int64)
        room = self.node_gpus.copy()
        pinned = np.flatnonzero((self.count > 0) & ~self.instance.preemptible)
        for j in pinned.tolist():
            np.subtract.at(room, self.instance.gpu_node[self._held(j)], 1)
        return ElasticView(now, self.instance, arrived, active, remaining,
                           self._frozen(self.count), overhead, attained,
                           int(self.node_gpus.sum()), self.node_size, room)

    @staticmethod
    def _frozen(array: IntArray) -> IntArray:
        view = array.view()
        view.flags.writeable = False
        return view

    # -- carrying a decision out ------------------------------------------------------

    def _apply(self, now: float, decision: ElasticDecision) -> None:
        instance = self.instance
        for j in decision.declined:
            if self.state[j] not in (1, 2):
                raise ElasticSimulationError(f"{self.policy.name} declined job "
                                             f"{instance.job_ids[j]!r}, which is not waiting")
            if self.count[j]:
                self._stop(j, now, EventKind.PREEMPT)
            self.state[j] = 4
            self.declined[j] = now
        for j in self.arrived:
            if self.state[j] == 1:
                self.state[j] = 2
        self.arrived = []
        target = np.zeros(instance.n_jobs, dtype=np.int64)
        given = np.fromiter(decision.count.keys(), dtype=np.int64, count=len(decision.count))
        target[given] = np.fromiter(decision.count.values(), dtype=np.int64,
                                    count=len(decision.count))
        for j in np.flatnonzero(target != self.count).tolist():
            c = int(target[j])
            if c and self.state[j] != 2:
                raise ElasticSimulationError(
                    f"{self.policy.name} gave GPUs to job {instance.job_ids[j]!r}, which "
                    "is not admitted and unfinished")
            if c and (self.rate_of(j, c) <= 0 or not instance.piece_nodes(self.type, c)):
                raise ElasticSimulationError(
                    f"{self.policy.name} gave job {instance.job_ids[j]!r} {c} GPUs, a "
                    "count it cannot run on")
        if int(target.sum()) > int(self.node_gpus.sum()):
            raise ElasticSimulationError(f"{self.policy.name} gave out {int(target.sum())} "
                                         f"GPUs of {int(self.node_gpus.sum())}")
        changed = np.flatnonzero(target != self.count)
        fixed = changed[(self.count[changed] > 0) & ~instance.preemptible[changed]]
        if fixed.size:
            raise ElasticSimulationError(
                f"{self.policy.name} changed the GPUs of job "
                f"{instance.job_ids[int(fixed[0])]!r}, which may not be preempted")
        if not changed.size:
            return
        for j in changed[self.count[changed] > 0].tolist():
            self._stop(j, now, EventKind.PREEMPT if target[j] == 0 else None)
        starting = changed[target[changed] > 0]
        placed = self._place(starting, target)
        if placed is None:
            # The GPUs kept by unchanged jobs fragment the nodes: place every running job
            # again, each where it was when it can be.
            # A job that may not be paused keeps its GPUs: only the others move.
            kept = np.flatnonzero((target > 0) & (self.count > 0)
                                  & self.instance.preemptible)
            where = {j: self._held(j) for j in kept.tolist()}
            for j, gpus in where.items():
                self._release(j, gpus)
            starting = np.flatnonzero((target > 0) & ((self.count == 0)
                                                      | self.instance.preemptible))
            placed = self._place(starting, target, where)
            if placed is None:
                placed = self._place(starting, target, {})
            if placed is None:
                raise ElasticSimulationError(
                    f"{self.policy.name}'s counts {sorted(target[target > 0].tolist())} do "
                    "not fit on the nodes")
            for j in kept.tolist():
                if np.array_equal(placed[j], self._held(j)):
                    del placed[j]
                else:
                    self._close(j, now, None)
        for j, gpus in placed.items():
            self._start(j, now, int(target[j]), gpus)

    def _held(self, job: int) -> IntArray:
        gpus = self.gpus[job]
        assert gpus is not None, "only a running job holds GPUs"
        return gpus

    def _place(self, jobs: IntArray, target: IntArray,
               where: Mapping[int, IntArray] | None = None) -> dict[int, IntArray] | None:
        """GPUs for each job's target count, largest first, held; None if some does not fit.

        Nothing is held then. ``where``: GPUs each job keeps if they are still free.
        """
        order = jobs[np.lexsort((jobs, -target[jobs]))]
        placed: dict[int, IntArray] = {}
        for j in order.tolist():
            gpus = self._fit(int(target[j]), (where or {}).get(j))
            if gpus is None:
                for k, held in placed.items():
                    self._release(k, held)
                return None
            self._hold(j, gpus)
            placed[j] = gpus
        return placed

    def _fit(self, count: int, previous: IntArray | None) -> IntArray | None:
        if (previous is not None and previous.size == count
                and (self.owner[previous] == -1).all()):
            return previous
        if count <= self.node_size:
            fits = np.flatnonzero(self.free >= count)
            if not fits.size:
                return None
            node = int(fits[np.argmin(self.free[fits])])
            return self._free_on(node)[:count]
        whole = np.flatnonzero((self.free == self.node_size)
                               & (self.node_gpus == self.node_size))
        need = count // self.node_size
        if whole.size < need:
            return None
        return np.concatenate([self._free_on(int(n)) for n in whole[:need].tolist()])

    def _free_on(self, node: int) -> IntArray:
        start = int(self.first[node])
        mine: IntArray = start + np.flatnonzero(
            self.owner[start:start + int(self.node_gpus[node])] == -1)
        return mine

    def _hold(self, job: int, gpus: IntArray) -> None:
        self.owner[gpus] = job
        np.subtract.at(self.free, self.instance.gpu_node[gpus], 1)

    def _release(self, job: int, gpus: IntArray) -> None:
        self.owner[gpus] = -1
        np.add.at(self.free, self.instance.gpu_node[gpus], 1)

    def _start(self, job: int, now: float, count: int, gpus: IntArray) -> None:
        """A new piece of ``job`` on ``gpus`` (already held) from ``now``."""
        instance = self.instance
        previous = self.previous[job]
        if previous is None:
            kind = EventKind.START
        elif self.stopped_at[job] == now:
            kind = EventKind.RESCALE
        else:
            kind = EventKind.RESUME
        overhead = float(instance.rescale_s[job]) if instance.elastic[job] else 0.0
        self.count[job] = count
        self.gpus[job] = gpus
        self.piece_start[job] = now
        self.piece_overhead[job] = overhead
        self.piece_remaining[job] = self.remaining[job]
        self.rate[job] = self.rate_of(job, count)
        self.held_since[job] = now
        self.version[job] += 1
        self.events.push(now + overhead + self.remaining[job] / self.rate[job], _COMPLETE,
                         job, int(self.version[job]))
        self.recorder.event(now, kind, job, gpus)

    def _stop(self, job: int, now: float, kind: EventKind | None) -> None:
        """Close the job's piece at ``now`` and free its GPUs.

        ``kind`` is the event; None: the job goes on elsewhere at once.
        """
        self._release(job, self._held(job))
        self._close(job, now, kind)

    def _close(self, job: int, now: float, kind: EventKind | None) -> None:
        """Close the job's piece at ``now`` (its GPUs already given back)."""
        gpus = self._held(job)
        ran = now - self.piece_start[job]
        useful = max(ran - self.piece_overhead[job], 0.0)
        done = min(self.rate[job] * useful, self.piece_remaining[job])
        self.remaining[job] = self.piece_remaining[job] - done
        self.attained[job] += self.count[job] * (now - self.held_since[job])
        self._record(job, now, done, min(self.piece_overhead[job], ran))
        self.previous[job] = gpus
        self.stopped_at[job] = now
        self.count[job] = 0
        self.gpus[job] = None
        self.version[job] += 1
        if kind is not None:
            self.recorder.event(now, kind, job, gpus)

    def _record(self, job: int, now: float, done: float, overhead: float) -> None:
        gpus = self.gpus[job]
        assert gpus is not None
        total = self.instance.work[job] if self.instance.elastic[job] else \
            self.instance.duration[job, self.type]
        if now > self.piece_start[job]:
            self.recorder.segment(job, self.type, float(self.piece_start[job]), now, gpus,
                                  work=float(done / total), restore=overhead)

    def _complete(self, job: int, now: float) -> None:
        gpus = self.gpus[job]
        assert gpus is not None
        self._record(job, now, float(self.piece_remaining[job]),
                     float(self.piece_overhead[job]))
        self.attained[job] += self.count[job] * (now - self.held_since[job])
        self._release(job, gpus)
        self.remaining[job] = 0.0
        self.count[job] = 0
        self.gpus[job] = None
        self.state[job] = 3
        self.finished += 1
        self.recorder.event(now, EventKind.COMPLETE, job, gpus)
