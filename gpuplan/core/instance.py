"""The immutable, index-based problem every formulation and solver reads.

An :class:`Instance` is built once from an instance file by :mod:`gpuplan.readers`, which has
already validated it. Jobs, GPU types, nodes and named resources are addressed by integer
index; the string ids are kept only to translate results back for people. All arrays are
read-only, so no solver can change the problem another solver or the verifier sees.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from gpuplan.core.errors import InputError, setting
from gpuplan.core.objectives import ObjectiveKind

# Documented ranges of the format (README, "Limits"). Times stay where float seconds
# resolve a millisecond over any plan's horizon, and every count where arrays stay small.
#: Longest duration, latest release, deadline or due date, in seconds (about 31.7 years).
MAX_TIME_S = 1e9
#: Shortest duration, in seconds.
MIN_DURATION_S = 1e-3
#: Largest weight of a job.
MAX_WEIGHT = 1e9
#: Largest cost, profit or price per GPU-hour.
MAX_MONEY = 1e12
#: Largest capacity or demand of one resource on one GPU.
MAX_AMOUNT = 1e12
#: Most GPUs in an instance (and so in one gang or one node).
MAX_GPUS = 100_000
#: Most jobs in an instance.
MAX_JOBS = 1_000_000
#: Most GPU types, and most named resources.
MAX_TYPES = 1_000

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]


#: Instance fields indexed by job on their first axis (``job_class``, ``node_demand``,
#: ``command``, ``speed``, ``work`` and ``rescale_s`` are empty in instances without classes,
#: node resources, commands or elastic jobs).
_PER_JOB = ("gang", "demand", "duration", "eligible", "cost", "profit", "weight", "release",
            "deadline", "due", "preemptible", "gpus_per_node", "job_class", "node_demand",
            "command", "required_level", "preferred_level", "spread_slowdown",
            "job_partition", "job_account", "job_qos", "speed", "work", "rescale_s")

#: The name of the column :attr:`Instance.packing_demand` adds for GPUs held whole.
WHOLE_GPU = "whole GPU"

_Array = TypeVar("_Array", bound=NDArray[Any])


def _readonly(array: _Array) -> _Array:
    array.flags.writeable = False
    return array


class Feature(StrEnum):
    """A part of the cluster model that a planning method must declare it plans.

    :attr:`Instance.features` lists those an instance uses; a method that does not declare
    one refuses the instance, naming it (:func:`gpuplan.planning.check_method`).
    """

    #: Node-level capacities (CPU, host memory, ...) that jobs draw on.
    NODE_RESOURCES = "node resources"
    #: Jobs that hold no GPU (gang 0) but draw on a node.
    CPU_ONLY = "CPU-only jobs"
    #: Gangs spread over several nodes (``gpus_per_node`` below ``gpus``).
    MULTI_NODE = "multi-node gangs"
    #: Gangs that must, or would rather, stay within one topology domain.
    TOPOLOGY = "topology constraints"
    #: Jobs that may run only on the nodes of their partition.
    PARTITIONS = "partitions"
    #: Accounts or QOS whose running jobs hold at most so many GPUs at once.
    GPU_LIMITS = "account/QOS GPU limits"
    #: Jobs whose GPU count is chosen from a set, at a speed per count and type.
    ELASTIC = "elastic jobs"


@dataclass(frozen=True, eq=False)
class GpuLimit:
    """A cap on the GPUs some jobs hold at once: an account's or a QOS's.

    Attributes
    ----------
    kind
        ``"account"`` or ``"QOS"``, for messages.
    id
        The account's or QOS's id.
    gpus
        The most GPUs its running jobs hold at any instant (Slurm's ``GrpTRES=gres/gpu=N``).
    jobs
        The jobs under it that hold GPUs, by index.
    """

    kind: str
    id: str
    gpus: int
    jobs: IntArray

    def __post_init__(self) -> None:
        _readonly(self.jobs)

    def __str__(self) -> str:
        return f"{self.kind} {self.id!r}"


@dataclass(frozen=True, eq=False)
class Outage:
    """Some GPUs nobody may use over an interval: a failure, maintenance, or work held.

    Attributes
    ----------
    gpus
        GPU indices.
    start_s, end_s
        The interval ``[start_s, end_s)`` in seconds; ``end_s`` may be ``inf`` (for good).
    reason
        What holds the GPUs, for messages (``"node v100-0 fails"``, ``"job j7 runs on"``).
    nodes, draw
        Nodes whose node resources it holds too, ``draw`` (``(Q,)``) on each: a job that
        runs on holds its node demand (empty: none).
    account, qos
        The account and QOS (indices) whose GPU limits its GPUs count against, -1 for
        none: a job that runs on counts against its own, a failed node against none.
    """

    gpus: IntArray
    start_s: float
    end_s: float
    reason: str
    nodes: IntArray = dataclasses.field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    draw: FloatArray = dataclasses.field(default_factory=lambda: np.zeros(0))
    account: int = -1
    qos: int = -1

    def __post_init__(self) -> None:
        _readonly(self.gpus)
        _readonly(self.nodes)
        _readonly(self.draw)

    @classmethod
    def of_job(cls, instance: Instance, job: int, gpus: IntArray, nodes: IntArray,
               end_s: float) -> Outage:
        """What job ``job`` holds from 0 to ``end_s`` as it runs on (a re-plan's held work).

        Its GPUs, its node demand on ``nodes``, and its account's and QOS's GPU limits.
        """
        return cls(gpus, 0.0, end_s, f"job {instance.job_ids[job]} runs on", nodes,
                   instance.node_demand[job],
                   int(instance.job_account[job]) if instance.account_ids else -1,
                   int(instance.job_qos[job]) if instance.qos_ids else -1)

    def limits(self, instance: Instance) -> tuple[int, ...]:
        """The indices in ``instance.gpu_limits`` of the limits its GPUs count against."""
        under = {("account", instance.account_ids[self.account]) if self.account >= 0
                 else None, ("QOS", instance.qos_ids[self.qos]) if self.qos >= 0 else None}
        return tuple(k for k, limit in enumerate(instance.gpu_limits)
                     if (limit.kind, limit.id) in under)


@dataclass(frozen=True, eq=False)
class Instance:
    """A GPU fleet, a batch of jobs and an objective, by index.

    Shapes use ``T`` GPU types, ``R`` named resources, ``N`` nodes and ``J`` jobs.

    Attributes
    ----------
    name
        A short name for reports (the file stem unless the file gives one).
    source
        Where the instance came from, used in messages.
    resources
        Names of the per-GPU resources, e.g. ``("memory_gib", "compute")``.
    type_ids
        GPU type ids, length ``T``.
    capacity
        ``(T, R)`` capacity of one GPU of each type.
    price_per_hour
        ``(T,)`` price of one GPU-hour per type; NaN where the file gives none.
    node_ids
        Node ids, length ``N``.
    node_gpus
        ``(N, T)`` number of GPUs of each type on each node.
    job_ids
        Job ids, length ``J``.
    shared
        ``(T,)`` whether GPUs of each type may hold several jobs at once (the file's
        ``sharing``: MPS, shards, time-slicing), which then pack by their per-GPU demand
        within the capacity. Elsewhere a job holds each of its GPUs whole: no other job
        runs on it meanwhile, whatever the demands (a declared colocation pair still
        shares, as one occupant).
    gang
        ``(J,)`` GPUs each job needs at once, all of one type.
    gpus_per_node
        ``(J,)`` GPUs of its gang on each node a job uses: the gang spans ``gang /
        gpus_per_node`` nodes of one type (:attr:`gang_nodes`), all starting and ending
        together; equal to ``gang`` for a job on one node, 0 for a CPU-only job.
    demand
        ``(J, T, R)`` per-GPU demand of each job on each type.
    duration
        ``(J, T)`` run time in seconds; NaN where the job has no duration for the type.
    eligible
        ``(J, T)`` whether the job may run on the type: allowed, has a duration, fits one GPU
        and enough nodes (within one domain of its required topology level) hold
        ``gpus_per_node`` GPUs of the type and its node demand.
    cost
        ``(J, T)`` cost of running the job on the type; NaN where unknown.
    profit
        ``(J, T)`` profit of running the job on the type; NaN where unknown.
    weight
        ``(J,)`` job weight (priority).
    release
        ``(J,)`` earliest start in seconds.
    deadline
        ``(J,)`` latest end in seconds (hard); ``inf`` where none.
    due
        ``(J,)`` due date in seconds (soft, for tardiness); ``inf`` where none.
    predecessors
        For each job, the indices of the jobs that must end before it starts.
    preemptible
        ``(J,)`` whether the job may run in several segments (paused and resumed, possibly
        elsewhere); the segments' work adds up to the whole job.
    objective
        What plans for this instance optimise.
    class_ids
        Space-sharing class ids, length ``C`` (empty: no job shares a GPU by pairing).
    job_class
        ``(J,)`` each job's space-sharing class; -1 where none.
    colocation_speed
        ``(C, C, T)``: a job of class ``a`` holding the same GPUs of type ``t`` over the
        same interval as a job of class ``b`` runs at ``colocation_speed[a, b, t]`` times
        its speed alone; 0 where the pair may not share.
    node_resources
        Names of the node-level resources, length ``Q`` (e.g. ``("cpu_milli", "memory_mib")``;
        empty: nodes are only their GPUs).
    node_capacity
        ``(N, Q)`` capacity of each node.
    node_demand
        ``(J, Q)`` what each job draws on each node it uses (for its GPUs on that node at
        once, as Slurm's ``--mem`` is per node). A job with a gang of 0 (a CPU-only job)
        uses no GPU but still draws on one node of a type it is eligible for.
    command
        ``(J,)`` each job's shell command (``str``), None where the file gives none; empty
        when no job has one. Planning never reads it: exporters run it.
    outages
        Intervals over which some GPUs may not be used (failed, or held by work planned
        before, as a re-plan's residual instance holds them). Planners take only those
        that start at time 0 (:attr:`ready_at`); the verifier checks all of them.
    levels
        Topology level names, widest first (e.g. ``("block", "rack")``), length ``L``;
        empty: no topology.
    domain_ids
        Per level, the ids of its domains.
    node_domain
        ``(N, L)`` each node's domain index at each level; -1 where the node has no label
        for the level.
    required_level
        ``(J,)`` the level within one domain of which each job's gang must stay, -1 for
        none; empty without topology.
    preferred_level
        ``(J,)`` the level within one domain of which each job's gang would rather stay,
        -1 for none; empty without topology.
    spread_slowdown
        ``(J,)`` how many times longer a job runs when its gang spans several domains of
        its preferred level (1 where it has none); empty without topology.
    partition_ids
        Partition ids, length ``P`` (empty: no partitions).
    partition_nodes
        ``(P, N)`` whether each partition holds each node.
    job_partition
        ``(J,)`` each job's partition, -1 where none (it may use any node); empty without
        partitions. A job in a partition runs only on its nodes.
    account_ids, qos_ids
        Account and QOS ids, lengths ``A`` and ``S`` (empty: none).
    account_gpus, qos_gpus
        ``(A,)`` and ``(S,)`` the most GPUs the running jobs of each account (QOS) hold at
        any instant; -1 where it has no limit.
    job_account, job_qos
        ``(J,)`` each job's account and QOS, -1 where none; empty without accounts (QOS).
    counts
        ``(K,)`` the GPU counts, ascending, that some elastic job may run on (empty: every
        job is rigid).
    speed
        ``(J, T, K)`` iterations per second of the whole job on ``counts[k]`` GPUs of type
        ``t``; 0 where the job may not run on that count of that type. Empty ``(0, 0, 0)``
        without elastic jobs; a rigid job's row is all 0.
    work
        ``(J,)`` iterations of each elastic job, 0 for a rigid one; empty without elastic
        jobs. An elastic job's :attr:`gang` is its reference count (the one it asked for,
        which rigid policies give it) and its :attr:`duration` is ``rescale_s + work /
        speed`` there: run whole, it pays its overhead once, at its start.
    rescale_s
        ``(J,)`` seconds an elastic job makes no progress at the start of each segment that
        starts it, resumes it or changes its GPUs (checkpoint, restart at the new count);
        empty without elastic jobs. A segment of an elastic job is a *piece*: the job on
        ``c`` GPUs of one type over one interval, laid out as :meth:`piece_nodes` says.
    """

    name: str
    source: str
    resources: tuple[str, ...]
    type_ids: tuple[str, ...]
    capacity: FloatArray
    price_per_hour: FloatArray
    node_ids: tuple[str, ...]
    node_gpus: IntArray
    job_ids: tuple[str, ...]
    gang: IntArray
    demand: FloatArray
    duration: FloatArray
    eligible: BoolArray
    cost: FloatArray
    profit: FloatArray
    weight: FloatArray
    release: FloatArray
    deadline: FloatArray
    due: FloatArray
    predecessors: tuple[tuple[int, ...], ...]
    preemptible: BoolArray
    objective: ObjectiveKind
    shared: BoolArray
    gpus_per_node: IntArray
    class_ids: tuple[str, ...] = ()
    job_class: IntArray = dataclasses.field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    colocation_speed: FloatArray = dataclasses.field(
        default_factory=lambda: np.zeros((0, 0, 0)))
    node_resources: tuple[str, ...] = ()
    node_capacity: FloatArray = dataclasses.field(default_factory=lambda: np.zeros((0, 0)))
    node_demand: FloatArray = dataclasses.field(default_factory=lambda: np.zeros((0, 0)))
    command: NDArray[Any] = dataclasses.field(
        default_factory=lambda: np.zeros(0, dtype=object))
    outages: tuple[Outage, ...] = ()
    levels: tuple[str, ...] = ()
    domain_ids: tuple[tuple[str, ...], ...] = ()
    node_domain: IntArray = dataclasses.field(
        default_factory=lambda: np.zeros((0, 0), dtype=np.int64))
    required_level: IntArray = dataclasses.field(
        default_factory=lambda: np.zeros(0, dtype=np.int64))
    preferred_level: IntArray = dataclasses.field(
        default_factory=lambda: np.zeros(0, dtype=np.int64))
    spread_slowdown: FloatArray = dataclasses.field(default_factory=lambda: np.zeros(0))
    partition_ids: tuple[str, ...] = ()
    partition_nodes: BoolArray = dataclasses.field(
        default_factory=lambda: np.zeros((0, 0), dtype=bool))
    job_partition: IntArray = dataclasses.field(
        default_factory=lambda: np.zeros(0, dtype=np.int64))
    account_ids: tuple[str, ...] = ()
    account_gpus: IntArray = dataclasses.field(
        default_factory=lambda: np.zeros(0, dtype=np.int64))
    job_account: IntArray = dataclasses.field(
        default_factory=lambda: np.zeros(0, dtype=np.int64))
    qos_ids: tuple[str, ...] = ()
    qos_gpus: IntArray = dataclasses.field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    job_qos: IntArray = dataclasses.field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    counts: IntArray = dataclasses.field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    speed: FloatArray = dataclasses.field(default_factory=lambda: np.zeros((0, 0, 0)))
    work: FloatArray = dataclasses.field(default_factory=lambda: np.zeros(0))
    rescale_s: FloatArray = dataclasses.field(default_factory=lambda: np.zeros(0))

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, np.ndarray):
                _readonly(value)
        # With levels, every job has its (perhaps absent) topology request: consumers index
        # these by job whenever levels exist.
        if self.levels and any(len(getattr(self, name)) != self.n_jobs for name in
                               ("required_level", "preferred_level", "spread_slowdown")):
            raise ValueError("required_level, preferred_level and spread_slowdown must hold "
                             "a value per job when the instance has topology levels")
        for ids, per_job in ((self.partition_ids, "job_partition"),
                             (self.account_ids, "job_account"), (self.qos_ids, "job_qos")):
            if ids and len(getattr(self, per_job)) != self.n_jobs:
                raise ValueError(f"{per_job} must hold a value per job when the instance "
                                 "declares any")
        if self.counts.size and (self.speed.shape != (self.n_jobs, self.n_types,
                                                      self.counts.size)
                                 or self.work.shape != (self.n_jobs,)
                                 or self.rescale_s.shape != (self.n_jobs,)):
            raise ValueError("speed must be (J, T, K), work and rescale_s (J,), when the "
                             "instance has elastic jobs")

    @property
    def pair_gain(self) -> float:
        """Most work, in GPU-seconds of jobs alone, a space-shared GPU-second can do (>= 1).

        The largest sum of two declared colocation speeds; volume bounds divide by it.
        """
        speed = self.colocation_speed
        if speed.size == 0:
            return 1.0
        return max(1.0, float((speed + speed.transpose(1, 0, 2)).max()))

    @cached_property
    def features(self) -> frozenset[Feature]:
        """The parts of the cluster model this instance uses beyond whole single-node gangs.

        A planning method plans the instance only if it declares every one of them.
        """
        used = set()
        if self.node_resources and bool(self.node_demand.any()):
            used.add(Feature.NODE_RESOURCES)
        if bool((self.gang == 0).any()):
            used.add(Feature.CPU_ONLY)
        if bool((self.gang_nodes > 1).any()):
            used.add(Feature.MULTI_NODE)
        if self.levels and bool(((self.required_level >= 0) | (self.preferred_level >= 0)).any()):
            used.add(Feature.TOPOLOGY)
        if self.partition_ids and bool((self.job_partition >= 0).any()):
            used.add(Feature.PARTITIONS)
        if self.gpu_limits:
            used.add(Feature.GPU_LIMITS)
        if bool(self.elastic.any()):
            used.add(Feature.ELASTIC)
        return frozenset(used)

    @cached_property
    def elastic(self) -> BoolArray:
        """``(J,)`` whether each job is elastic (chooses its GPU count from :attr:`counts`)."""
        if not self.counts.size:
            return _readonly(np.zeros(self.n_jobs, dtype=bool))
        return _readonly(self.work > 0)

    @cached_property
    def node_size(self) -> IntArray:
        """``(T,)`` the most GPUs of each type on one node."""
        return _readonly(self.node_gpus.max(axis=0, initial=0).astype(np.int64))

    def piece_nodes(self, gpu_type: int, count: int) -> int:
        """How many nodes a piece of ``count`` GPUs of type ``gpu_type`` spans; 0: none can.

        Up to a node's worth (the most GPUs of the type on one node, ``S``) it takes one
        node; more must be a multiple of ``S`` and takes that many whole nodes of ``S``
        GPUs (ElasticFlow's buddy rule on 8-GPU nodes), of which the fleet must hold enough.
        """
        size = int(self.node_size[gpu_type])
        if count <= 0 or size == 0:
            return 0
        if count <= size:
            return 1
        if count % size:
            return 0
        nodes = count // size
        return nodes if int((self.node_gpus[:, gpu_type] == size).sum()) >= nodes else 0

    def count_index(self, count: int) -> int:
        """The index of ``count`` in :attr:`counts`; -1 where no elastic job may use it."""
        k = int(np.searchsorted(self.counts, count))
        return k if k < self.counts.size and int(self.counts[k]) == count else -1

    def piece_speed(self, job: int, gpu_type: int, count: int) -> float:
        """Iterations per second of job ``job`` on ``count`` GPUs of the type.

        0 where it may not run so, and for a rigid job.
        """
        k = self.count_index(count)
        return float(self.speed[job, gpu_type, k]) if k >= 0 and self.elastic[job] else 0.0

    def run_seconds(self, jobs: IntArray, gpu_types: IntArray, counts: IntArray) -> FloatArray:
        """Seconds of run time, overheads aside, in which each job does all its work there.

        Per entry: job ``jobs[i]`` on ``counts[i]`` GPUs of type ``gpu_types[i]``. A rigid
        job's :attr:`duration` on the type (its count is its gang); an elastic job's
        ``work / speed`` at that count, ``inf`` where it has no speed there.
        """
        seconds = self.duration[jobs, gpu_types].astype(float)
        if not self.counts.size:
            return seconds
        elastic = self.elastic[jobs]
        if elastic.any():
            k = np.searchsorted(self.counts, counts[elastic])
            known = k < self.counts.size
            k = np.minimum(k, self.counts.size - 1)
            known &= self.counts[k] == counts[elastic]
            speed = np.where(known, self.speed[jobs[elastic], gpu_types[elastic], k], 0.0)
            with np.errstate(divide="ignore"):
                seconds[elastic] = np.where(speed > 0, self.work[jobs[elastic]]
                                            / np.where(speed > 0, speed, 1.0), np.inf)
        return seconds

    def whole_seconds(self, job: int, gpu_type: int, count: int) -> float:
        """Seconds job ``job`` takes run whole on ``count`` GPUs of the type, start included.

        A rigid job's :attr:`duration`; an elastic job's ``rescale_s + work / speed`` at
        that count (``inf`` where it has no speed there).
        """
        run = self.run_seconds(np.array([job]), np.array([gpu_type]), np.array([count]))
        return float(run[0]) + (float(self.rescale_s[job]) if self.elastic[job] else 0.0)

    def work_left(self, left: FloatArray, extra_s: FloatArray | None = None,
                  slower: FloatArray | None = None) -> Instance:
        """The same jobs with only a share of their work left, as a residual batch has.

        Parameters
        ----------
        left
            ``(J,)`` the share of each job's work left, in ``(0, 1]``.
        extra_s
            ``(J,)`` seconds each job pays before it works again (a paused job's restore);
            None: none.
        slower
            How many times longer jobs run than the instance says (as observed, or as a
            run met them): ``(T,)`` per type, or ``(J, 1)`` per job; None: as it says.

        Returns
        -------
        Instance
            A rigid job's duration becomes ``left * duration * slower + extra_s``. An
            elastic job's work becomes ``left * work`` and its speeds ``speed / slower``;
            its next piece pays the larger of ``extra_s`` and its ``rescale_s``, which its
            duration at its reference count then includes.
        """
        factor = np.broadcast_to(1.0 if slower is None else slower, self.duration.shape)
        extra = np.zeros(self.n_jobs) if extra_s is None else extra_s
        with np.errstate(invalid="ignore"):
            duration = self.duration * factor * left[:, None] + extra[:, None]
        if not self.elastic.any():
            return dataclasses.replace(self, duration=duration)
        elastic = self.elastic
        rescale = self.rescale_s[elastic]
        run = (self.duration[elastic] - rescale[:, None]) * factor[elastic]
        duration[elastic] = (np.maximum(rescale, extra[elastic])[:, None]
                             + left[elastic, None] * run)
        return dataclasses.replace(self, duration=duration, speed=self.speed / factor[:, :, None],
                                   work=np.where(elastic, self.work * left, 0.0))

    @cached_property
    def gpu_limits(self) -> tuple[GpuLimit, ...]:
        """The accounts', then the QOS', GPU limits that some job holding GPUs is under."""
        limits = []
        for kind, ids, caps, member in (("account", self.account_ids, self.account_gpus,
                                         self.job_account),
                                        ("QOS", self.qos_ids, self.qos_gpus, self.job_qos)):
            for k in np.flatnonzero(caps >= 0).tolist() if ids else ():
                jobs = np.flatnonzero((member == k) & (self.gang > 0))
                if jobs.size:
                    limits.append(GpuLimit(kind, ids[k], int(caps[k]), jobs))
        return tuple(limits)

    @cached_property
    def job_limits(self) -> tuple[tuple[int, ...], ...]:
        """For each job, the indices in :attr:`gpu_limits` of the limits it is under."""
        if not self.gpu_limits:
            # One shared empty tuple: a million jobs under no limit cost nothing here.
            return ((),) * self.n_jobs
        limits: list[list[int]] = [[] for _ in range(self.n_jobs)]
        for k, limit in enumerate(self.gpu_limits):
            for j in limit.jobs.tolist():
                limits[j].append(k)
        return tuple(tuple(mine) for mine in limits)

    def allowed_nodes(self, job: int) -> BoolArray | None:
        """``(N,)`` the nodes job ``job`` may run on (its partition's); None: any node."""
        if not self.partition_ids or self.job_partition[job] < 0:
            return None
        nodes: BoolArray = self.partition_nodes[self.job_partition[job]]
        return nodes

    @cached_property
    def gang_nodes(self) -> IntArray:
        """``(J,)`` how many nodes each job's gang spans (1 for a CPU-only job)."""
        nodes = np.where(self.gang > 0, self.gang // np.maximum(self.gpus_per_node, 1), 1)
        return _readonly(nodes.astype(np.int64))

    @cached_property
    def packing_resources(self) -> tuple[str, ...]:
        """The per-GPU resources a plan packs: the declared ones, then :data:`WHOLE_GPU`.

        The last is there only when some GPU type is held whole (not :attr:`shared`).
        """
        return self.resources + ((WHOLE_GPU,) if not self.shared.all() else ())

    @cached_property
    def packing_capacity(self) -> FloatArray:
        """``(T, R')`` :attr:`capacity` with a column of 1 per GPU held whole, if any.

        With :attr:`packing_demand`, a GPU of a type held whole takes one job (or one
        colocation pair) at a time: every method that keeps per-GPU loads within these
        capacities keeps such GPUs exclusive.
        """
        if self.shared.all():
            return self.capacity
        return _readonly(np.hstack([self.capacity, np.ones((self.n_types, 1))]))

    @cached_property
    def packing_demand(self) -> FloatArray:
        """``(J, T, R')`` :attr:`demand` with a column: 1 on the types held whole, else 0."""
        if self.shared.all():
            return self.demand
        whole = np.broadcast_to((~self.shared).astype(float)[None, :, None],
                                (self.n_jobs, self.n_types, 1))
        return _readonly(np.concatenate([self.demand, whole], axis=2))

    def spread_factor(self, job: int, nodes: IntArray) -> float:
        """How many times its duration job ``job`` runs on these nodes.

        Its :attr:`spread_slowdown` when the nodes span several domains of its preferred
        level (a node without a label for it counts as a domain of its own); else 1.
        """
        if not self.levels or self.preferred_level[job] < 0 or nodes.size < 2:
            return 1.0
        domains = self.node_domain[nodes, self.preferred_level[job]]
        spread = (domains < 0).any() or (domains != domains[0]).any()
        return float(self.spread_slowdown[job]) if spread else 1.0

    def gang_hosts(self, job: int, gpu_type: int, free: IntArray,
                   room: FloatArray | None = None) -> BoolArray:
        """``(N,)`` the nodes that can take job ``job``'s share of its gang now.

        Those with ``gpus_per_node`` free GPUs of the type (``free``: free GPUs of that
        type per node), room for its node demand (``room``: ``(N, Q)`` what each node has
        left; None: not counted) and a label at its required topology level.
        """
        hosts: BoolArray = free >= max(int(self.gpus_per_node[job]), 1)
        if room is not None and self.node_resources:
            hosts &= (room - self.node_demand[job] >= -1e-9 * np.maximum(
                self.node_capacity, 1.0)).all(axis=1)
        if self.levels and self.required_level[job] >= 0:
            hosts &= self.node_domain[:, self.required_level[job]] >= 0
        return hosts

    def pick_nodes(self, job: int, hosts: BoolArray, rank: FloatArray) -> IntArray | None:
        """The nodes among ``hosts`` for job ``job``'s gang, or None if too few.

        ``gang_nodes`` of them, all in one domain of its required topology level, lowest
        ``rank`` first (ties: lowest index); with a required level, the domain whose
        ``gang_nodes``-th best node ranks best.
        """
        m = int(self.gang_nodes[job])
        candidates = np.flatnonzero(hosts)
        if candidates.size < m:
            return None
        order = candidates[np.lexsort((candidates, rank[candidates]))]
        if not self.levels or self.required_level[job] < 0:
            return order[:m]
        domain = self.node_domain[order, self.required_level[job]]
        best: IntArray | None = None
        for d in np.unique(domain).tolist():
            mine = order[domain == d]
            if mine.size >= m and (best is None or (rank[mine[m - 1]], mine[m - 1])
                                   < (rank[best[-1]], best[-1])):
                best = mine[:m]
        return best

    def spread_factors(self, jobs: IntArray, gpus: Sequence[IntArray]) -> FloatArray:
        """``(S,)`` :meth:`spread_factor` of each job on the nodes of its GPUs."""
        factors = np.ones(jobs.size)
        if self.levels and bool((self.preferred_level >= 0).any()):
            for k in np.flatnonzero(self.preferred_level[jobs] >= 0).tolist():
                factors[k] = self.spread_factor(int(jobs[k]),
                                                np.unique(self.gpu_node[gpus[k]]))
        return factors

    @cached_property
    def ready_at(self) -> FloatArray:
        """``(G,)`` when each GPU is first free: the end of the outages that start at 0.

        ``inf`` for a GPU down for good. Planners that declare they plan outages start no
        job on a GPU before then.
        """
        ready = np.zeros(self.n_gpus)
        for outage in self.outages:
            if outage.start_s <= 0:
                ready[outage.gpus] = np.maximum(ready[outage.gpus], outage.end_s)
        return _readonly(ready)

    @property
    def has_later_outages(self) -> bool:
        """Whether some outage starts after time 0 (no planner takes those)."""
        return any(outage.start_s > 0 for outage in self.outages)

    @property
    def n_jobs(self) -> int:
        """Number of jobs ``J``."""
        return len(self.job_ids)

    @property
    def n_types(self) -> int:
        """Number of GPU types ``T``."""
        return len(self.type_ids)

    @property
    def n_nodes(self) -> int:
        """Number of nodes ``N``."""
        return len(self.node_ids)

    @property
    def n_gpus(self) -> int:
        """Total number of GPUs ``G`` in the fleet."""
        return int(self.node_gpus.sum())

    @cached_property
    def job_index(self) -> dict[str, int]:
        """Map from job id to job index."""
        return {job: j for j, job in enumerate(self.job_ids)}

    @cached_property
    def type_index(self) -> dict[str, int]:
        """Map from GPU type id to type index."""
        return {gpu_type: t for t, gpu_type in enumerate(self.type_ids)}

    @cached_property
    def node_index(self) -> dict[str, int]:
        """Map from node id to node index."""
        return {node: n for n, node in enumerate(self.node_ids)}

    @cached_property
    def gpu_node(self) -> IntArray:
        """``(G,)`` node index of every GPU.

        GPUs are numbered node by node and, within a node, type by type; GPU ``g`` is called
        ``"<node id>/<k>"`` where ``k`` is its position on its node.
        """
        return _readonly(np.repeat(np.arange(self.n_nodes), self.node_gpus.sum(axis=1)))

    @cached_property
    def gpu_type(self) -> IntArray:
        """``(G,)`` type index of every GPU."""
        types = np.tile(np.arange(self.n_types), self.n_nodes)
        return _readonly(np.repeat(types, self.node_gpus.ravel()))

    @cached_property
    def gpu_ids(self) -> tuple[str, ...]:
        """Ids of all GPUs, ``"<node id>/<k>"`` with ``k`` counted from 0 on each node."""
        return tuple(
            f"{node}/{k}"
            for node, count in zip(self.node_ids, self.node_gpus.sum(axis=1), strict=True)
            for k in range(int(count))
        )

    @cached_property
    def gpu_index(self) -> dict[str, int]:
        """Map from GPU id to GPU index."""
        return {gpu: g for g, gpu in enumerate(self.gpu_ids)}

    @cached_property
    def min_duration(self) -> FloatArray:
        """``(J,)`` shortest duration of each job over its eligible types."""
        return _readonly(np.where(self.eligible, self.duration, np.inf).min(axis=1))

    @cached_property
    def successors(self) -> tuple[tuple[int, ...], ...]:
        """For each job, the indices of the jobs that wait for it."""
        successors: list[list[int]] = [[] for _ in range(self.n_jobs)]
        for j, preds in enumerate(self.predecessors):
            for p in preds:
                successors[p].append(j)
        return tuple(tuple(s) for s in successors)

    @cached_property
    def topological_order(self) -> IntArray:
        """Job indices ordered so that every job comes after its predecessors.

        The reader rejects cycles, so this always exists. Among ready jobs the lowest index
        comes first, which keeps every consumer deterministic.
        """
        indegree = np.array([len(p) for p in self.predecessors], dtype=np.int64)
        ready = [j for j in range(self.n_jobs) if indegree[j] == 0]
        heapq.heapify(ready)
        order: list[int] = []
        while ready:
            j = heapq.heappop(ready)
            order.append(j)
            for s in self.successors[j]:
                indegree[s] -= 1
                if indegree[s] == 0:
                    heapq.heappush(ready, s)
        return _readonly(np.array(order, dtype=np.int64))

    @property
    def assignment_value(self) -> FloatArray:
        """``(J, T)`` the per-assignment objective term: profit for ``assign-profit``, else cost."""
        return self.profit if self.objective is ObjectiveKind.ASSIGN_PROFIT else self.cost

    def with_objective(self, objective: ObjectiveKind,
                       source: str = setting("objective")) -> Instance:
        """Return the same instance with another objective.

        Parameters
        ----------
        objective
            The objective to plan for.
        source
            Where the override came from, named in the error if the data cannot support it.

        Raises
        ------
        InputError
            If the objective needs costs or prices the instance does not give.
        """
        instance = dataclasses.replace(self, objective=objective)
        check_objective_data(instance, source)
        return instance

    def take(self, jobs: IntArray, job_ids: Sequence[str] | None = None) -> Instance:
        """These jobs, in this order, on the same fleet: a part of the batch.

        Job ``k`` of the result is ``jobs[k]``. A dependency on a job not taken is
        dropped (callers take what is left of a batch, whose other jobs are done), and
        those among the jobs taken are renumbered.

        Parameters
        ----------
        jobs
            Job indices; a job may be taken more than once (as the sharing replays inflate
            a trace) when no job taken has a predecessor.
        job_ids
            The ids of the jobs taken; their own ids by default.

        Raises
        ------
        ValueError
            If a job is taken twice while some job taken has a predecessor (whose copy it
            would wait for is ambiguous), or ``job_ids`` has the wrong length.
        """
        jobs = np.asarray(jobs, dtype=np.int64)
        ids = tuple(self.job_ids[j] for j in jobs) if job_ids is None else tuple(job_ids)
        if len(ids) != jobs.size:
            raise ValueError(f"{len(ids)} job ids for {jobs.size} jobs")
        position = {int(j): k for k, j in enumerate(jobs.tolist())}
        if len(position) < jobs.size and any(self.predecessors[j] for j in position):
            raise ValueError("jobs with predecessors cannot be taken more than once")
        predecessors = tuple(tuple(position[p] for p in self.predecessors[j] if p in position)
                             for j in jobs.tolist())
        per_job = {name: getattr(self, name)[jobs] for name in _PER_JOB
                   if len(getattr(self, name)) == self.n_jobs}
        return dataclasses.replace(self, job_ids=ids, predecessors=predecessors, **per_job)

    def online(self) -> Instance:
        """The instance as a run plays it out over time.

        Online, nothing can promise a hard deadline: deadlines become due dates (a miss is
        tardiness, reported, not a broken plan), and a static objective, which has no
        time, becomes weighted completion time. Every job must be able to run somewhere.

        Raises
        ------
        InputError
            Naming the first job that fits no GPU type of the cluster, or the partitions
            or GPU limits the instance's jobs are under (the simulator plays neither).
        """
        held = sorted(self.features & {Feature.PARTITIONS, Feature.GPU_LIMITS})
        if held:
            raise InputError(self.source, "partitions" if Feature.PARTITIONS in held
                             else "accounts", f"its jobs are under {' and '.join(held)}, "
                             "which the simulator does not play out: plan the batch with "
                             "gpuplan solve instead (greedy and cp honour them)")
        stuck = np.flatnonzero(~self.eligible.any(axis=1))
        if stuck.size:
            j = int(stuck[0])
            raise InputError(self.source, f"jobs[{j}]", f"job {self.job_ids[j]!r} can run on "
                             "no GPU type of the cluster (no duration, too little memory, or "
                             f"no node with {self.gang[j]} GPUs of one type); {stuck.size} "
                             "job(s) in all cannot run")
        objective = (ObjectiveKind.WEIGHTED_COMPLETION if self.objective.is_static
                     else self.objective)
        return dataclasses.replace(self, objective=objective,
                                   deadline=np.full(self.n_jobs, np.inf),
                                   due=np.minimum(self.due, self.deadline))


def check_objective_data(instance: Instance, source: str) -> None:
    """Check that the instance carries the data its objective needs.

    Parameters
    ----------
    instance
        The instance to check.
    source
        Named in the error message.

    Raises
    ------
    InputError
        Naming the first job or GPU type that lacks a cost or price, or, under
        ``min-max-load``, a GPU type held whole.
    """
    objective = instance.objective
    if objective is ObjectiveKind.MIN_MAX_LOAD and not instance.shared.all():
        t = int(np.argmin(instance.shared))
        raise InputError(
            source, f"gpu_types[{t}].sharing",
            f"objective 'min-max-load' balances what jobs draw from GPUs they share, but "
            f"GPU type {instance.type_ids[t]!r} is held whole (a GPU a job holds is wholly "
            "in use): declare its sharing: true, or plan another objective")
    for needed, field, values in (
        (objective.needs_job_cost, "cost", instance.cost),
        (objective.needs_job_profit, "profit", instance.profit),
    ):
        missing = instance.eligible & np.isnan(values)
        if needed and missing.any():
            j, t = (int(i) for i in np.argwhere(missing)[0])
            gpu_type = instance.type_ids[t]
            price = f", or cost_per_hour for GPU type {gpu_type!r}" if field == "cost" else ""
            raise InputError(
                source,
                f"jobs[{j}].{field}",
                f"objective {objective.value!r} needs the {field} of job "
                f"{instance.job_ids[j]!r} on GPU type {gpu_type!r}: give jobs[{j}].{field}"
                + price,
            )
    if objective.needs_gpu_price:
        missing_price = np.isnan(instance.price_per_hour)
        if missing_price.any():
            t = int(np.argmax(missing_price))
            raise InputError(
                source,
                f"gpu_types[{t}].cost_per_hour",
                f"objective {objective.value!r} needs a price for GPU type "
                f"{instance.type_ids[t]!r}",
            )
