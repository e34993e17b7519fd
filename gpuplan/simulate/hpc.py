"""HPC batch scheduling on SWF traces under RLScheduler's protocol.

RLScheduler (Zhang et al., SC'20) measures a queue-ordering policy on a parallel machine
of whole nodes: each time the scheduler decides, the policy picks one waiting job; if it
does not fit, the machine waits for running jobs to end (taking in arrivals meanwhile)
until it does, and with backfilling starts meanwhile the waiting jobs, first come first
served, that fit now and end, by their requested time, before the picked job's
reservation. Jobs are never preempted. :class:`HpcSimulator` is that machine, step by step
(one decision per :meth:`~HpcSimulator.schedule`), so that heuristics
(:data:`QUEUE_POLICIES`) and learned policies (:mod:`gpuplan.rl`) drive the same code.

The protocol (:class:`Protocol`, :func:`run_protocol`) is RLScheduler's evaluation, as its
``compare-make-table.py`` and ``HPCSimPickJobs.py`` (DIR-LAB/deep-batch-scheduler @
``cd433e3``) run it:

- the trace becomes jobs as its ``job.py`` reads them (:meth:`HpcWorkload.from_trace`):
  processors = max(allocated, requested); requested time = the field, or the run time
  where it is -1; a negative run time becomes 10 s; jobs that ran 0 s are dropped; the
  machine is ``MaxNodes`` nodes of ``MaxProcs / MaxNodes`` processors (``MaxProcs`` =
  ``MaxNodes`` where the header has none), a job taking ``ceil(processors / per node)``;
- 10 sequences of 1024 consecutive jobs, each on an empty machine, starting at indices
  drawn ``randint(1024, N - 1024 - 1)`` from the generator gym's legacy seeding makes of
  seed 1 (:func:`legacy_gym_rng`), N the jobs kept or the first ``first_jobs`` of them;
- per sequence, the mean bounded slowdown ``max(1, (wait + run) / max(run, 10))`` and the
  utilization ``sum(run * processors) / ((t_last - submit_first) * MaxProcs)``, where
  ``t_last`` is when the last job starts.

Each sequence's schedule is turned into a gpuplan instance (one node holding the
machine's nodes as its devices, a job's gang its node count) and a schedule that the
verifier checks before any number is reported (:func:`verified_sequence`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar
from typing import Protocol as TypingProtocol

import numpy as np

from gpuplan.core.errors import InputError, VerificationError
from gpuplan.core.instance import FloatArray, Instance, IntArray, Outage
from gpuplan.core.result import Result
from gpuplan.core.schedule import ResultSchedule
from gpuplan.core.settings import RunSettings, WarmStart
from gpuplan.core.sim import Registry
from gpuplan.core.status import Status
from gpuplan.methods import METHODS
from gpuplan.readers import swf
from gpuplan.readers.instance_file import instance_from_data
from gpuplan.verify import verify_schedule

#: Bounded slowdown counts a job's run time as at least this many seconds.
BSLD_THRESHOLD_S = 10.0


def legacy_gym_rng(seed: int) -> np.random.RandomState:
    """The generator ``gym.utils.seeding.np_random(seed)`` made before gym 0.22.

    RLScheduler draws its evaluation sequences from it. Gym hashed the seed with SHA-512,
    took 8 bytes as little-endian 32-bit words (padded with a zero word) and seeded a
    ``RandomState`` with the words of that integer.
    """
    digest = hashlib.sha512(str(seed).encode("utf8")).digest()[:8] + b"\0" * 4
    words = struct.unpack("3I", digest)
    value = sum(word << (32 * k) for k, word in enumerate(words))
    key = []
    while value > 0:
        value, low = divmod(value, 2**32)
        key.append(low)
    return np.random.RandomState(key or [0])


@dataclass(frozen=True)
class HpcWorkload:
    """The jobs of an SWF trace as RLScheduler's simulator reads them, and the machine.

    Attributes
    ----------
    name, source
        The trace's name and file.
    max_nodes, max_procs
        The machine: ``max_nodes`` nodes of ``max_procs / max_nodes`` processors.
    job_number, line
        ``(J,)`` each job's SWF job number and line, for reports and messages.
    submit, run, request, procs
        ``(J,)`` submit time, run time, requested time and processors (int64).
    nodes
        ``(J,)`` whole nodes each job takes.
    """

    name: str
    source: str
    max_nodes: int
    max_procs: int
    job_number: IntArray
    line: IntArray
    submit: IntArray
    run: IntArray
    request: IntArray
    procs: IntArray
    nodes: IntArray

    @property
    def n_jobs(self) -> int:
        """Number of jobs kept."""
        return int(self.submit.shape[0])

    @property
    def procs_per_node(self) -> float:
        """Processors per node (RLScheduler divides as floats)."""
        return self.max_procs / self.max_nodes

    @classmethod
    def from_trace(cls, trace: swf.SwfTrace) -> HpcWorkload:
        """Read a trace's jobs as RLScheduler's ``job.py`` does (see the module).

        Raises
        ------
        InputError
            Naming the file: no ``MaxNodes`` header, no job that ran, or a job wanting
            more processors than the machine has (naming its line), which no schedule
            could start.
        """
        if trace.max_nodes is None:
            raise InputError(trace.source, "", "the header gives no '; MaxNodes: N' line: "
                             "the machine's size is needed to simulate the trace")
        max_procs = trace.max_procs or trace.max_nodes
        f = trace.fields
        as_int = f.astype(np.int64)
        run = as_int[:, swf.RUN].copy()
        request = as_int[:, swf.REQUEST_TIME].copy()
        request[request == -1] = run[request == -1]
        run[run < 0] = 10
        procs = np.maximum(as_int[:, swf.ALLOCATED], as_int[:, swf.REQUESTED])
        keep = run > 0
        order = np.argsort(as_int[keep, swf.JOB], kind="stable")
        take = np.flatnonzero(keep)[order]
        if take.size == 0:
            raise InputError(trace.source, "", "no job ran for a positive time")
        per_node = max_procs / trace.max_nodes
        nodes = np.array([math.ceil(float(p) / per_node) for p in procs[take]], dtype=np.int64)
        too_big = np.flatnonzero(nodes > trace.max_nodes)
        if too_big.size:
            j = int(take[too_big[0]])
            raise InputError(trace.source, f"line {int(trace.lines[j])}", f"the job wants "
                             f"{int(procs[j])} processors; the machine has {max_procs} "
                             f"({trace.max_nodes} nodes)")
        return cls(name=trace.name, source=trace.source, max_nodes=trace.max_nodes,
                   max_procs=max_procs, job_number=as_int[take, swf.JOB],
                   line=trace.lines[take], submit=as_int[take, swf.SUBMIT], run=run[take],
                   request=request[take], procs=procs[take], nodes=nodes)


class HpcSimulator:
    """RLScheduler's machine over one sequence of jobs, one decision at a time.

    Jobs are indices into the workload. After construction and after each
    :meth:`schedule`, :attr:`queue` holds the jobs waiting at :attr:`now` for a decision
    (never empty until :attr:`done`).

    Parameters
    ----------
    workload
        The jobs and the machine.
    first, length
        The sequence: jobs ``first`` to ``first + length - 1``.
    backfill
        Whether waiting jobs may start ahead of a picked job that does not fit.
    """

    def __init__(self, workload: HpcWorkload, first: int, length: int,
                 backfill: bool = False) -> None:
        self.workload = workload
        self.first = first
        self.end = first + length
        self.backfill = backfill
        self._submit = workload.submit.tolist()
        self._run = workload.run.tolist()
        self._request = workload.request.tolist()
        self._procs = workload.procs.tolist()
        self._nodes = workload.nodes.tolist()
        self.now = self._submit[first]
        self.queue: list[int] = [first]
        self.next = first + 1
        self.free = workload.max_nodes
        self._free_ids = list(range(workload.max_nodes - 1, -1, -1))
        # Running jobs in RLScheduler's list order: it sorts the list in place (stably) by
        # end before each release and by requested end for a reservation, so jobs that end
        # together are released in the order that leaves.
        self._running: list[int] = []
        self._end: dict[int, int] = {}
        self.started: dict[int, int] = {}
        #: The jobs started so far, in the order they started.
        self.start_order: list[int] = []
        self.allocated: dict[int, list[int]] = {}
        self.decisions = 0
        self.done = False
        #: Scores of every job that policies keep for the run (by policy name).
        self.scores: dict[str, list[Any]] = {}

    def fits(self, job: int) -> bool:
        """Whether the job's nodes are free now."""
        return bool(self._nodes[job] <= self.free)

    @property
    def running(self) -> list[int]:
        """The jobs running now."""
        return list(self._running)

    def next_release(self) -> float:
        """When the next running job ends; inf when none runs (orders the running list)."""
        if not self._running:
            return math.inf
        self._running.sort(key=self._end.__getitem__)
        return self._end[self._running[0]]

    def release_profile(self) -> tuple[FloatArray, IntArray]:
        """When nodes free up by the running jobs' requested times: (times, free nodes then).

        Sorted by time; the free count includes the nodes free now, so a job of ``k``
        nodes could start by the first time whose count reaches ``k``.
        """
        if not self._running:
            return np.zeros(0), np.zeros(0, dtype=np.int64)
        jobs = np.array(self._running, dtype=np.int64)
        ends = np.array([self.started[j] for j in jobs.tolist()], dtype=np.float64)
        ends += self.workload.request[jobs]
        order = np.argsort(ends, kind="stable")
        return ends[order], self.free + np.cumsum(self.workload.nodes[jobs[order]])

    def _arrive(self) -> None:
        self.now = max(self.now, self._submit[self.next])
        self.queue.append(self.next)
        self.next += 1

    def _release(self) -> None:
        # Called right after next_release() ordered the list.
        job = self._running.pop(0)
        self.now = max(self.now, self._end[job])
        self.free += self._nodes[job]
        self._free_ids.extend(self.allocated[job])

    def _advance(self) -> None:
        """One event: the next arrival if it comes no later than the next release."""
        release = self.next_release()
        if self.next < self.end and self._submit[self.next] <= release:
            self._arrive()
        else:
            self._release()

    def _start(self, job: int) -> None:
        k = self._nodes[job]
        self.started[job] = self.now
        self.start_order.append(job)
        self.allocated[job] = [self._free_ids.pop() for _ in range(k)]
        self.free -= k
        self._end[job] = self.now + self._run[job]
        self._running.append(job)
        self.queue.remove(job)

    def _reservation(self, job: int) -> float:
        """When the picked job could start by the running jobs' requested times."""
        per_node = self.workload.procs_per_node
        free = self.free * per_node
        earliest: float = self.now
        self._running.sort(key=lambda other: self.started[other] + self._request[other])
        for other in self._running:
            free += self._nodes[other] * per_node
            earliest = self.started[other] + self._request[other]
            if free >= self._procs[job]:
                break
        return earliest

    def _wait_for(self, job: int) -> None:
        if not self.backfill:
            while not self.fits(job):
                self._advance()
            return
        earliest = self._reservation(job)
        submit = self._submit
        while not self.fits(job):
            self.queue.sort(key=submit.__getitem__)
            for other in list(self.queue):
                if self.now + self._request[other] < earliest and self.fits(other):
                    self._start(other)
            self._advance()

    def _to_decision(self) -> None:
        """Move time on until a job waits (or the sequence is over)."""
        if self.queue:
            return
        if self.next >= self.end:
            self.done = True
            return
        while not self.queue:
            if self._running and self._submit[self.next] > self.next_release():
                self._release()
            else:
                self._arrive()

    def schedule(self, job: int) -> None:
        """Start a waiting job now, or as soon as it fits; then move to the next decision.

        Raises
        ------
        ValueError
            If the job is not waiting: a policy bug.
        """
        if job not in self.queue:
            raise ValueError(f"job {job} is not waiting (queue: {self.queue[:8]}...)")
        self.decisions += 1
        if not self.fits(job):
            self._wait_for(job)
        self._start(job)
        self._to_decision()



class QueuePolicy(TypingProtocol):
    """Picks the next job to schedule from the waiting queue."""

    @property
    def name(self) -> str:
        """The policy's name in reports."""
        ...

    def choose(self, sim: HpcSimulator) -> int:
        """The waiting job to schedule next (one of ``sim.queue``)."""
        ...


#: A score of waiting jobs: (workload, jobs, their waits so far) -> one score per job.
Score = Callable[[HpcWorkload, IntArray, FloatArray], list[Any]]


@dataclass(frozen=True)
class ScoreOrder:
    """A heuristic that schedules the waiting job of the lowest score (RLScheduler's).

    The queue is sorted in place by the score each decision, as RLScheduler sorts it, so
    that ties fall as they fall there. A score that does not read the wait is computed
    once per workload.
    """

    name: str
    description: str
    score: Score
    #: Whether the score reads how long a job has waited (then it is computed per decision).
    reads_wait: bool = False

    def choose(self, sim: HpcSimulator) -> int:
        """Sort the queue by score and take its head."""
        w = sim.workload
        if self.reads_wait:
            jobs = np.array(sim.queue, dtype=np.int64)
            scores = self.score(w, jobs, sim.now - w.submit[jobs].astype(np.float64))
            key: Callable[[int], Any] = dict(zip(sim.queue, scores, strict=True)).__getitem__
        else:
            every = sim.scores.get(self.name)
            if every is None:
                every = sim.scores[self.name] = self.score(w, np.arange(w.n_jobs),
                                                           _queued_wait(w))
            key = every.__getitem__
        sim.queue.sort(key=key)
        return sim.queue[0]


def _queued_wait(w: HpcWorkload) -> FloatArray:
    # RLScheduler computes a queued job's wait as scheduled_time - submit_time while its
    # scheduled_time is still -1: the published WFP3 and UNICEP rank by -(submit + 1).
    return -1.0 - w.submit.astype(np.float64)


def _fcfs(w: HpcWorkload, jobs: IntArray, wait: FloatArray) -> list[Any]:
    return w.submit[jobs].tolist()  # type: ignore[no-any-return]


def _sjf(w: HpcWorkload, jobs: IntArray, wait: FloatArray) -> list[Any]:
    return list(zip(w.request[jobs].tolist(), w.submit[jobs].tolist(), strict=True))


def _f1(w: HpcWorkload, jobs: IntArray, wait: FloatArray) -> list[Any]:
    request = np.where(w.request[jobs] > 0, w.request[jobs], 0.1).astype(np.float64)
    submit = np.where(w.submit[jobs] > 0, w.submit[jobs], 0.1).astype(np.float64)
    f1 = np.log10(request) * w.procs[jobs] + 870 * np.log10(submit)
    return f1.tolist()  # type: ignore[no-any-return]


def _wfp3(w: HpcWorkload, jobs: IntArray, wait: FloatArray) -> list[Any]:
    with np.errstate(divide="ignore", invalid="ignore"):
        wfp = -np.power(wait / w.request[jobs], 3) * w.procs[jobs]
    return wfp.tolist()  # type: ignore[no-any-return]


def _unicep(w: HpcWorkload, jobs: IntArray, wait: FloatArray) -> list[Any]:
    with np.errstate(divide="ignore", invalid="ignore"):
        uni = -(wait + 1e-15) / (np.log2(w.procs[jobs] + 1e-15) * w.request[jobs])
    return uni.tolist()  # type: ignore[no-any-return]


def _heuristics() -> Registry[ScoreOrder]:
    return Registry("queue policy", "policy", (
        ScoreOrder("fifo", "first come first served (FCFS): earliest submit first", _fcfs),
        ScoreOrder("sjf", "shortest requested time first, then earliest submit", _sjf),
        ScoreOrder("wfp3", "WFP3 as RLScheduler computes it: -(wait/request)^3 * procs with "
                   "a queued job's wait read as -(submit+1)", _wfp3),
        ScoreOrder("unicep", "UNICEP as RLScheduler computes it: -wait / (log2(procs) * "
                   "request), a queued job's wait read as -(submit+1)", _unicep),
        ScoreOrder("f1", "F1 (Carastan-Santos & de Camargo): log10(request) * procs + 870 * "
                   "log10(submit)", _f1),
        ScoreOrder("wfp3-wait", "WFP3 on the real wait (now - submit)", _wfp3,
                   reads_wait=True),
        ScoreOrder("unicep-wait", "UNICEP on the real wait (now - submit)", _unicep,
                   reads_wait=True),
    ))


#: The queue-ordering heuristics of the HPC protocol, by name.
QUEUE_POLICIES: Registry[ScoreOrder] = _heuristics()


@dataclass(frozen=True)
class Protocol:
    """RLScheduler's evaluation protocol (see the module).

    Attributes
    ----------
    sequences, length
        How many sequences of how many consecutive jobs.
    seed
        The seed of the sequences' start indices (RLScheduler's: 1).
    first_jobs
        Draw from the first this many jobs only; 0: all (RLScheduler: 10000 for SDSC-SP2
        and HPC2N, all for the Lublin traces).
    backfill
        Whether waiting jobs may backfill.
    """

    NAME: ClassVar[str] = "rlscheduler"

    sequences: int = 10
    length: int = 1024
    seed: int = 1
    first_jobs: int = 0
    backfill: bool = False

    def starts(self, workload: HpcWorkload, source: str = "--length") -> list[int]:
        """The sequences' first jobs, drawn as RLScheduler draws them.

        Raises
        ------
        InputError
            If the trace has too few jobs for sequences of this length.
        """
        pool = workload.n_jobs if self.first_jobs == 0 else min(self.first_jobs,
                                                                workload.n_jobs)
        high = pool - self.length - 1
        if high <= self.length:
            raise InputError(source, "", f"{workload.name} has {pool} jobs to draw from; "
                             f"sequences of {self.length} need more than "
                             f"{2 * self.length + 1}")
        rng = legacy_gym_rng(self.seed)
        return [int(rng.randint(self.length, high)) for _ in range(self.sequences)]


@dataclass(frozen=True)
class SequenceRun:
    """One sequence, scheduled and verified.

    Attributes
    ----------
    first
        Index of its first job in the workload.
    start
        ``(L,)`` when each job started (trace seconds).
    bounded_slowdown, utilization
        The sequence's mean bounded slowdown and utilization (see the module).
    decisions
        How many times the policy was asked.
    """

    first: int
    start: IntArray
    bounded_slowdown: float
    utilization: float
    decisions: int


def play(workload: HpcWorkload, first: int, length: int, policy: QueuePolicy,
         backfill: bool) -> HpcSimulator:
    """Run a policy over one sequence; the finished simulator.

    Raises
    ------
    ValueError
        If the policy picks a job that is not waiting.
    """
    sim = HpcSimulator(workload, first, length, backfill)
    while not sim.done:
        sim.schedule(policy.choose(sim))
    return sim


def sequence_metrics(workload: HpcWorkload, sim: HpcSimulator) -> tuple[float, float]:
    """Mean bounded slowdown and utilization of a finished sequence."""
    jobs = np.arange(sim.first, sim.end)
    start = np.array([sim.started[j] for j in jobs.tolist()], dtype=np.float64)
    run = workload.run[jobs].astype(np.float64)
    wait = start - workload.submit[jobs]
    bsld = np.maximum(1.0, (wait + run) / np.maximum(run, BSLD_THRESHOLD_S))
    span = (sim.now - workload.submit[sim.first]) * workload.max_procs
    used = float(np.sum(run * workload.procs[jobs]))
    return float(bsld.mean()), used / span if span > 0 else 0.0


def sequence_instance(workload: HpcWorkload, first: int, length: int) -> Instance:
    """A sequence as a gpuplan instance: the machine's nodes as one node's devices.

    A job's gang is its node count (each node's processors all its own), its run time its
    duration and its submit time (from the sequence's earliest) its release; its id is its
    SWF job number.
    """
    jobs = range(first, first + length)
    t0 = int(workload.submit[first:first + length].min())
    document = {
        "name": f"{workload.name}@{first}",
        "gpu_types": [{"id": "node", "capacity": {"processors": workload.procs_per_node}}],
        "nodes": [{"id": "machine", "gpus": {"node": workload.max_nodes}}],
        "objective": "weighted-completion",
        # A job holds its nodes whole (all their processors): no two jobs share a node.
        "jobs": [{"id": str(int(workload.job_number[j])), "gpus": int(workload.nodes[j]),
                  "demand": {"processors": workload.procs_per_node},
                  "duration_s": {"node": int(workload.run[j])},
                  "release_s": int(workload.submit[j]) - t0, "preemptible": False}
                 for j in jobs],
    }
    return instance_from_data(document, workload.source)


def verified_sequence(workload: HpcWorkload, sim: HpcSimulator, label: str) -> SequenceRun:
    """Check a finished sequence with the verifier; its metrics.

    Raises
    ------
    VerificationError
        If the schedule breaks the machine (a simulator bug, never repaired).
    """
    length = sim.end - sim.first
    instance = sequence_instance(workload, sim.first, length)
    t0 = int(workload.submit[sim.first:sim.end].min())
    jobs = list(range(sim.first, sim.end))
    start = np.array([sim.started[j] for j in jobs], dtype=np.int64)
    run = workload.run[sim.first:sim.end]
    result = Result(status=Status.FEASIBLE, objective=None, bound=None, solver=label,
                    job=np.arange(length, dtype=np.int64),
                    gpu_type=np.zeros(length, dtype=np.int64),
                    start=(start - t0).astype(np.float64),
                    end=(start - t0 + run).astype(np.float64),
                    gpus=tuple(np.array(sim.allocated[j], dtype=np.int64) for j in jobs),
                    node=np.zeros(length, dtype=np.int64))
    schedule = ResultSchedule.make(instance, result, label, 0.0, 0)
    verification = verify_schedule(instance, schedule)
    if not verification.ok:
        raise VerificationError(label, [str(v) for v in verification.violations])
    bsld, util = sequence_metrics(workload, sim)
    return SequenceRun(first=sim.first, start=start, bounded_slowdown=bsld,
                       utilization=util, decisions=sim.decisions)


@dataclass(frozen=True)
class ProtocolReport:
    """A policy's runs over the protocol's sequences.

    Attributes
    ----------
    workload, protocol, policy
        What was run.
    runs
        One per sequence.
    wall_time_s
        Seconds the runs and their verification took.
    planning
        For ``replan``: the plans made, the seconds they took and the limit per plan.
    """

    workload: HpcWorkload
    protocol: Protocol
    policy: str
    runs: list[SequenceRun]
    wall_time_s: float
    planning: dict[str, float] | None = None

    @property
    def bounded_slowdown(self) -> float:
        """Mean over the sequences."""
        return float(np.mean([r.bounded_slowdown for r in self.runs]))

    @property
    def utilization(self) -> float:
        """Mean over the sequences."""
        return float(np.mean([r.utilization for r in self.runs]))

    def document(self) -> dict[str, Any]:
        """The report as JSON data."""
        w, p = self.workload, self.protocol
        return {
            "protocol": Protocol.NAME, "trace": w.name, "source": w.source,
            "policy": self.policy, "backfill": p.backfill, "sequences": p.sequences,
            "length": p.length, "seed": p.seed, "first_jobs": p.first_jobs,
            "machine": {"nodes": w.max_nodes, "processors": w.max_procs,
                        "processors_per_node": w.procs_per_node},
            "bounded_slowdown": self.bounded_slowdown, "utilization": self.utilization,
            "runs": [{"start_index": r.first, "first_job": int(w.job_number[r.first]),
                      "bounded_slowdown": r.bounded_slowdown, "utilization": r.utilization,
                      "decisions": r.decisions, "verified": True} for r in self.runs],
            "wall_time_s": round(self.wall_time_s, 3),
            **({} if self.planning is None else {"planning": self.planning}),
        }


def run_protocol(workload: HpcWorkload, protocol: Protocol, policy: QueuePolicy,
                 progress: Callable[[int, int], None] | None = None) -> ProtocolReport:
    """Run a policy over the protocol's sequences, each verified.

    Raises
    ------
    InputError
        If the trace is too short for the protocol.
    VerificationError
        If a sequence's schedule breaks the machine (a bug).
    """
    began = time.perf_counter()
    runs = []
    starts = protocol.starts(workload)
    for k, first in enumerate(starts):
        sim = play(workload, first, protocol.length, policy, protocol.backfill)
        runs.append(verified_sequence(workload, sim, f"{Protocol.NAME}-{policy.name}"))
        if progress is not None:
            progress(k + 1, len(starts))
    planning = None
    if isinstance(policy, ReplanOrder):
        planning = {"plans": policy.plans, "solver_s": round(policy.solver_s, 3),
                    "time_limit_s": policy.settings.time_limit_s or 0.0}
    return ProtocolReport(workload, protocol, policy.name, runs,
                          time.perf_counter() - began, planning)


class ReplanOrder:
    """``replan`` on the HPC machine: plan the waiting jobs with a method, start the first.

    At each decision with more than one waiting job, the waiting jobs (at most ``window``:
    half earliest submitted, the rest shortest requested, as the learned policies see
    them) become a batch from now on, each job's duration its requested time (the only
    estimate a scheduler has), its weight ``1 / max(request, 10)`` so that weighted
    completion time follows bounded slowdown, and the running jobs' nodes held until their
    requested ends. The method plans it (:func:`gpuplan.planning.plan`, verified; a
    method that improves a plan starts from list scheduling's) and the job planned to
    start first is picked (ties to the earliest submitted).

    Parameters
    ----------
    method
        A registered planning method that plans around held GPUs (``cp``, ``greedy``...).
    settings
        Time limit per plan, threads and seed.
    window
        The most waiting jobs planned at once.
    """

    def __init__(self, method: str, settings: RunSettings, window: int = 128) -> None:
        self.method, self.settings, self.window = method, settings, window
        self.name = f"replan:{method}"
        # A method that improves a plan (cp) starts from list scheduling's (greedy).
        self._warm = "greedy" if WarmStart.PLAN in METHODS[method].warm_starts else None
        self.solver_s = 0.0
        self.plans = 0
        self._base: tuple[int, int, Instance] | None = None

    def _batch(self, sim: HpcSimulator) -> Instance:
        """The sequence's jobs on the machine, durations by request (made once per sequence)."""
        key = (id(sim.workload), sim.first)
        if self._base is None or self._base[:2] != key:
            w, length = sim.workload, sim.end - sim.first
            estimate = HpcWorkload(
                name=w.name, source=w.source, max_nodes=w.max_nodes, max_procs=w.max_procs,
                job_number=w.job_number, line=w.line, submit=w.submit,
                run=np.maximum(w.request, 1), request=w.request, procs=w.procs,
                nodes=w.nodes)
            self._base = (*key, sequence_instance(estimate, sim.first, length))
        return self._base[2]

    def choose(self, sim: HpcSimulator) -> int:
        """The waiting job the plan starts first."""
        from gpuplan.planning import plan

        if len(sim.queue) == 1:
            return sim.queue[0]
        w = sim.workload
        submit = w.submit
        queue = np.array(sim.queue, dtype=np.int64)
        if queue.size > self.window:
            half = self.window // 2
            early = queue[np.argsort(submit[queue], kind="stable")[:half]]
            rest = np.setdiff1d(queue, early)
            short = rest[np.argsort(w.request[rest], kind="stable")[:self.window - half]]
            queue = np.concatenate([early, short])
        batch = self._batch(sim).take(queue - sim.first)
        held = tuple(Outage(np.array(sim.allocated[j], dtype=np.int64), 0.0,
                            float(max(1, sim.started[j] + w.request[j] - sim.now)),
                            f"job {int(w.job_number[j])} runs on")
                     for j in sim.running if sim.allocated[j])
        batch = dataclasses.replace(
            batch, release=np.zeros(queue.size),
            weight=1.0 / np.maximum(w.request[queue], BSLD_THRESHOLD_S).astype(np.float64),
            outages=held)
        began = time.perf_counter()
        schedule = plan(batch, self.method, settings=self.settings, warm=self._warm)
        self.solver_s += time.perf_counter() - began
        self.plans += 1
        if not schedule.status.has_plan:
            return int(queue[np.argmin(submit[queue])])
        starts = {segment.job: segment.start_s for segment in schedule.segments}
        index = batch.job_index
        planned = np.full(queue.size, np.inf)
        for job, start in starts.items():
            planned[index[job]] = start
        return int(queue[np.lexsort((submit[queue], planned))[0]])
