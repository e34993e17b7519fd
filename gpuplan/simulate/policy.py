"""The plug-in points of the simulator: admission, scheduling and placement.

As in Blox, a cluster policy is three parts, each a small protocol:

- :class:`Admission` decides when an arrived job enters the scheduler's view (a job held
  back waits and is asked about again at the next decision);
- :class:`Scheduler` decides, at each decision point, which jobs should run and on which
  GPU types: a :class:`Decision`, the jobs in priority order with the types each may use
  in order of preference;
- :class:`Placement` picks the GPUs of one job on one type.

The engine (:mod:`gpuplan.simulate.engine`) turns a decision into starts, preemptions and
migrations on the nodes themselves: it stops the running jobs the decision leaves out
(when the scheduler is preemptive and the job may be preempted), then walks the decision
in order. A running job keeps its GPUs while its type is one it may use; any other job
asks the placement for free GPUs on the first type of its preference where a node holds
its whole gang, and, under a preemptive scheduler when no node has them free, for the GPUs
of running jobs further down the order, lowest priority first; the jobs whose GPUs it then
takes are stopped. So a job never passes an earlier one that fits on some node, and a
preemption always frees GPUs that another job starts on at that instant. A scheduler
therefore never has to know about nodes, and a placement never has to know about
priorities.

Each part has a name, a line of help and its own typed options (a frozen dataclass of
:func:`~gpuplan.core.options.option` fields, as planning methods declare theirs), and is
listed in a registry (``SCHEDULERS``, ``PLACEMENTS``, ``ADMISSIONS`` of
:mod:`gpuplan.simulate.policies`) that the CLI reads, flags included; registering a part
is one module and one line there. Parts are built fresh for every run (a scheduler may
keep state across decisions, such as LAS queues or Gavel's allocation), from a factory
taking the run's :class:`PolicyContext` with the part's options.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from gpuplan.core.instance import FloatArray, Instance, IntArray
from gpuplan.core.options import NoOptions
from gpuplan.core.settings import RunSettings
from gpuplan.core.sim import GpuCluster

#: The GPUs as a placement sees them (:class:`~gpuplan.core.sim.GpuCluster`): who holds
#: each, free counts per node, node room, each job's previous GPUs. Read it, never change
#: it: the engine does.
ClusterView = GpuCluster


class Mode(StrEnum):
    """When the scheduler decides."""

    #: At every round boundary (Gavel's time slicing); jobs run a whole round.
    ROUND = "round"
    #: At every arrival, completion and wake-up the scheduler asks for.
    EVENT = "event"


@dataclass(frozen=True)
class View:
    """What a scheduler or admission sees at a decision point.

    Arrays of length ``J`` (all jobs of the instance) are read-only views of the engine's
    state, valid only during the call; index them with :attr:`jobs`.

    Attributes
    ----------
    now
        Simulated time in seconds.
    instance
        The workload and the cluster.
    jobs
        Indices of the active jobs (arrived, admitted, predecessors done, not finished),
        in arrival order (release time, then index).
    waiting
        Indices of the jobs that arrived (predecessors done) but are not admitted yet, in
        arrival order; only admissions read this.
    remaining
        ``(J,)`` share of each job's work still to do, in ``[0, 1]``.
    attained
        ``(J,)`` service received so far in GPU-seconds (gang times run time, overheads
        excluded): Tiresias' attained service.
    received
        ``(J, T)`` seconds each job has held a gang of each type (overheads included):
        the time share Gavel's round mechanism compares with its allocation.
    running_type
        ``(J,)`` the type each job runs on now, -1 when it does not run.
    locked
        ``(J,)`` whether a running job may not be stopped now: it is not preemptible, or
        it is still paying its restore or migration overhead.
    first_start
        ``(J,)`` when each job first started; NaN before then.
    work_start
        ``(J,)`` for a running job, when its restore and migration overheads end and it
        works (its attained service grows from then); meaningless for the others.
    down_until
        ``(G,)`` until when each GPU is down (failed); 0 for a GPU that is up.
    gpus
        Per job, the GPUs it runs on now (None when it does not run); do not change.
    free
        ``(T,)`` GPUs of each type that nobody holds.
    largest
        ``(T,)`` the most GPUs of each type that nobody holds on one node: the largest
        share of a gang on one node that could start now without stopping a job.
    total
        ``(T,)`` GPUs of each type in the cluster.
    round_s
        Length of a round in round mode; None in event mode.
    """

    now: float
    instance: Instance
    jobs: IntArray
    waiting: IntArray
    remaining: FloatArray
    attained: FloatArray
    received: FloatArray
    running_type: IntArray
    locked: np.ndarray
    first_start: FloatArray
    work_start: FloatArray
    down_until: FloatArray
    gpus: Sequence[IntArray | None]
    free: IntArray
    largest: IntArray
    total: IntArray
    round_s: float | None

    def running(self) -> IntArray:
        """The active jobs that run now, in arrival order."""
        jobs: IntArray = self.jobs[self.running_type[self.jobs] >= 0]
        return jobs

    def remaining_s(self, jobs: IntArray) -> FloatArray:
        """``(len(jobs),)`` seconds each job still needs on its fastest eligible type."""
        seconds: FloatArray = self.remaining[jobs] * self.instance.min_duration[jobs]
        return seconds


@dataclass(frozen=True)
class Decision:
    """Which jobs should run, in priority order, and on which GPU types.

    Attributes
    ----------
    order
        Job indices, highest priority first. Active jobs left out are not run (a running
        one is preempted when the scheduler is preemptive and the job is not locked).
    prefer
        ``(len(order), K)`` for each job the GPU types it may use, most preferred first,
        padded with -1; None: every eligible type, fastest first.
    """

    order: IntArray
    prefer: IntArray | None = None


@dataclass(frozen=True)
class PolicyContext:
    """What a policy part is built with, once per run.

    Attributes
    ----------
    instance
        The workload and the cluster.
    mode
        Round or event mode.
    round_s
        The round length (round mode).
    seed
        Seed for any random choice the part makes.
    settings
        Time limit, threads and gap for parts that call a solver (the ``replan`` hook and
        the allocation policies); the limit applies to each call.
    options
        The part's own typed options (an instance of its ``options_type``), built and
        checked from the settings given (:func:`~gpuplan.simulate.policies.build_parts`).
    restart_overhead_s
        Seconds a paused job pays when it resumes (for parts that plan ahead).
    """

    instance: Instance
    mode: Mode
    round_s: float
    seed: int
    settings: RunSettings = field(default_factory=RunSettings)
    options: Any = field(default_factory=NoOptions)
    restart_overhead_s: float = 0.0


class Admission(Protocol):
    """Decides when an arrived job enters the scheduler's view."""

    name: ClassVar[str]
    description: ClassVar[str]
    #: Its own options (:attr:`PolicyContext.options`): a frozen dataclass of
    #: :func:`~gpuplan.core.options.option` fields.
    options_type: ClassVar[type[Any]]

    #: Whether it may hold an arrived job back (the run log's checker then cannot hold
    #: the scheduler to an order among all arrived jobs).
    holds_back: ClassVar[bool]

    def admit(self, view: View, job: int) -> bool:
        """Whether ``job`` (in ``view.waiting``) is admitted now.

        A job not admitted is asked about again at the next decision.
        """


class Scheduler(Protocol):
    """Decides which jobs run, and where by type, at each decision point."""

    name: ClassVar[str]
    description: ClassVar[str]
    #: Its own options (:attr:`PolicyContext.options`): a frozen dataclass of
    #: :func:`~gpuplan.core.options.option` fields.
    options_type: ClassVar[type[Any]]
    #: The modes the scheduler works in.
    modes: ClassVar[frozenset[Mode]]
    #: Whether it may stop a running job to run another (non-preemptive schedulers only
    #: order the jobs that wait; running jobs always keep their GPUs).
    preemptive: ClassVar[bool]
    #: Whether it calls a solver, and so reads the run's --time-limit and --threads.
    calls_solver: ClassVar[bool]
    #: Whether it stops a running job only to start another on GPUs it frees, at that
    #: instant (it lists every active job in its order and never moves one to another
    #: type); the run log's checker holds its runs to it.
    preempts_to_start: ClassVar[bool]
    #: Whether its decision is always the waiting jobs in :meth:`fixed_order`, each on
    #: its eligible types fastest first, never a wake-up (fifo, sjf): the engine then
    #: makes the decision itself, in time that does not grow with the queue, and never
    #: calls :meth:`decide`. Only a non-preemptive scheduler with a fixed order may say so.
    decides_in_fixed_order: ClassVar[bool] = False

    @classmethod
    def fixed_order(cls, instance: Instance) -> IntArray | None:
        """Every job in the order the scheduler offers GPUs in, when fixed in advance.

        A scheduler with one promises that a job never starts while a job ahead of it
        that has arrived, and fits on some node of a type it may use, waits; the run
        log's checker holds its runs to that. None when the order changes as jobs run.
        """

    def decide(self, view: View) -> Decision:
        """The jobs to run now, in priority order, and their types."""

    def wakeup(self, view: View) -> float | None:
        """The next time (> ``view.now``) to decide again, arrivals and completions aside.

        Event mode only: for example when a running job crosses a LAS threshold. None for
        none.
        """


@runtime_checkable
class SolverTimed(Protocol):
    """A scheduler that calls a solver and keeps the wall seconds its calls took.

    The run record states them (``solver_s``); the simulated clock does not pay them.
    """

    solver_s: float


class Placement(Protocol):
    """Picks the GPUs of one job on one type."""

    name: ClassVar[str]
    description: ClassVar[str]
    #: Its own options (:attr:`PolicyContext.options`): a frozen dataclass of
    #: :func:`~gpuplan.core.options.option` fields.
    options_type: ClassVar[type[Any]]

    def place(self, cluster: ClusterView, job: int, gpu_type: int) -> IntArray | None:
        """The free GPUs of ``gpu_type`` for ``job``'s gang.

        ``gpus_per_node`` of them on each of its ``gang_nodes`` nodes, with room for its
        node demand there, in one domain of its required topology level
        (:meth:`ClusterView.gang` finds such a set by a rank of the nodes). None when no
        set of nodes has them.
        """
