"""FGD's replay protocol (Weng et al., ATC'23), exactly as its simulator runs it.

The pod list is sorted by name and shuffled with Go's ``math/rand`` seeded with ``seed``, then
inflated by appending pods drawn with replacement from the name-sorted list until the next
one would take the GPU request past ``ratio`` times the capacity; the nodes get a random name
order from the same source (ties between equal scores go to the smallest name). Pods arrive
once each, in order, are placed by the policy or fail for good, and never leave. After every
pod the allocated and fragmented GPU milli are recorded; :meth:`ReplayResult.curves` turns
them into FGD's published curves over arrived GPU demand 0..130% of capacity. The Go code
followed is FGD's artifact, hkust-adsl/kubernetes-scheduler-simulator: ``pkg/simulator``
(``core.go`` Simulate, ``simulator.go``), the vendored scheduler's ``selectHost`` and
``scheduleOne``, and ``experiments/analysis/merge_*_discrete.py``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpuplan.core.errors import InputError, setting
from gpuplan.core.instance import FloatArray, Instance, IntArray
from gpuplan.sharing import ShareContext, SharePolicy
from gpuplan.sharing.cluster import GPU_MILLI, ClusterState
from gpuplan.sharing.frag import NodeFrag, TypicalPods, typical_pods
from gpuplan.sharing.gorand import GoRand
from gpuplan.sharing.migrate import Move, Rescue, choose
from gpuplan.sharing.policies import build_policy
from gpuplan.sharing.policies import policy_class as policy_class_of

logger = logging.getLogger(__name__)

#: The paper's seeds (``experiments/run_scripts/generate_run_scripts.py``).
PAPER_SEEDS = tuple(range(42, 52))
#: The paper's workload tuning ratio: arrived GPU demand up to 130% of capacity.
PAPER_RATIO = 1.3
#: Go random draws between the inflation and the node-name permutation that FGD's
#: simulator makes off the main thread: one ``rand.Float64`` per client-go reflector the
#: scheduler starts (each draws a watch timeout before its first watch). 10 is the one count
#: in 0..14 with which best-fit reproduces the published curves exactly, every point of all
#: ten seeds.
INFORMER_DRAWS = 10
#: The arrived-demand percentages of FGD's curves.
ARRIVED_PERCENT = np.arange(131)

@dataclass(frozen=True)
class Arrivals:
    """The inflated pod list of one seed and the node tie ranks, as FGD draws them.

    Attributes
    ----------
    jobs
        ``(P,)`` original job index of each arriving pod, in arrival order.
    clone
        ``(P,)`` FGD's clone number of each inflated copy (``<name>-tuned-<k>``), -1 for an
        original pod.
    rank
        ``(N,)`` tie rank of each node: FGD renames node ``i`` (in name order) to
        ``%04d-<name>`` with ``rand.Perm(N)[i]``.
    rng
        The Go source after these draws; the Random policy keeps drawing from it.
    """

    jobs: IntArray
    clone: IntArray
    rank: IntArray
    rng: GoRand


def check_pods(instance: Instance, ratio: float | None = None) -> None:
    """Refuse, before any replay, a pod list the replay could not measure.

    Parameters
    ----------
    instance
        The pods and nodes, as read (``instance.source`` is the pod list).
    ratio
        FGD's inflation ratio (``replay fgd``); None for a time replay.

    Raises
    ------
    InputError
        Naming the pod list when no pod asks for a GPU (the replay measures GPU
        allocation, and FGD's inflation would never reach its target), and ``--ratio``
        when the ratio times the cluster's GPU capacity is below the largest pod's
        request (FGD's tuning would then drop every pod).
    """
    state = ClusterState(instance)
    asked = state.pod_gang * state.pod_milli
    if not (asked > 0).any():
        raise InputError(instance.source, "", f"none of its {instance.n_jobs} pods asks for "
                         "a GPU (num_gpu 0 on every row): a replay measures GPU allocation")
    if ratio is None:
        return
    capacity = float(GPU_MILLI * int(state.n_gpus.sum()))
    if ratio * capacity < float(asked.max()):
        raise InputError(setting("ratio"), "", f"{ratio:g} x the cluster's {capacity:g} "
                         f"milli-GPUs is less than one pod's request ({int(asked.max())}); "
                         "FGD's tuning would drop every pod: use a ratio of at least "
                         f"{asked.max() / capacity:.3g}")


def fgd_arrivals(instance: Instance, seed: int, ratio: float = PAPER_RATIO,
                 informer_draws: int = INFORMER_DRAWS) -> Arrivals:
    """Shuffle, inflate and rank nodes with Go's global source as FGD's ``Simulate`` does.

    Raises
    ------
    ValueError
        If the pods ask for no GPU at all (FGD would inflate forever).
    """
    state = ClusterState(instance)
    milli, total_milli = state.pod_milli, state.pod_gang * state.pod_milli
    by_name = np.array(sorted(range(instance.n_jobs), key=instance.job_ids.__getitem__),
                       dtype=np.int64)
    rng = GoRand(seed)
    rng.int_()  # core.go: rand.Int() in a Debugf argument, evaluated even when not logged
    pods = rng.shuffled(by_name.tolist())
    clones: list[int] = []
    total = int(total_milli.sum())
    target = ratio * float(GPU_MILLI * int(state.n_gpus.sum()))
    if ratio > 0 and float(total) > target:
        while float(total) > target:   # tuneDownPods: drop random pods of the shuffled list
            total -= int(total_milli[pods.pop(rng.intn(len(pods)))])
    elif ratio > 0 and float(total) < target:
        if not (milli > 0).any():
            raise ValueError("no pod asks for a GPU; the trace cannot be inflated")
        while True:   # tuneUpPods; the stop test adds the per-GPU milli, as FGD's does
            job = int(by_name[rng.intn(len(by_name))])
            if float(total + int(milli[job])) > target:
                break
            total += int(total_milli[job])
            clones.append(job)
    for _ in range(informer_draws):
        rng.float64()
    node_order = sorted(range(instance.n_nodes), key=instance.node_ids.__getitem__)
    rank = np.empty(instance.n_nodes, dtype=np.int64)
    rank[node_order] = rng.perm(instance.n_nodes)
    return Arrivals(
        jobs=np.array(pods + clones, dtype=np.int64),
        clone=np.concatenate((np.full(len(pods), -1), np.arange(len(clones)))).astype(np.int64),
        rank=rank, rng=rng)


@dataclass(frozen=True)
class ReplayResult:
    """One replay: where every arriving pod went and the cluster after each arrival.

    Attributes
    ----------
    policy, seed, ratio
        What was replayed.
    instance
        The inflated instance: one job per arriving pod, in arrival order; copies are named
        ``<pod>#<k>`` (FGD's clone ``k``), so it converts to a static max-weight schedule.
    source_job
        ``(P,)`` job index in the original instance of each arriving pod.
    node
        ``(P,)`` node of each pod at the end (after any moves), -1 where it failed.
    gpus
        ``(P, gang_max)`` GPU slots on its node of each pod at the end, -1 padded
        (:meth:`global_gpus` gives instance GPU indices).
    arrived_milli, used_milli
        ``(P,)`` GPU milli arrived so far and allocated, after each pod.
    frag_milli, idle_milli
        ``(P,)`` FGD's fragmented and idle GPU milli after each pod.
    typical
        The typical pods the fragmentation measure used.
    seconds
        Wall time of the replay loop.
    moves
        Running pods the ``rescue`` moved, in order, each naming the failing pod it made
        room for (empty without a rescue).
    """

    policy: str
    seed: int
    ratio: float
    instance: Instance
    source_job: IntArray
    node: IntArray
    gpus: IntArray
    arrived_milli: IntArray
    used_milli: IntArray
    frag_milli: FloatArray
    idle_milli: FloatArray
    typical: TypicalPods
    seconds: float
    moves: tuple[Move, ...] = ()

    @property
    def total_gpus(self) -> int:
        """GPUs in the cluster."""
        return self.instance.n_gpus

    def inflated_instance(self) -> Instance:
        """The inflated instance (see :attr:`instance`)."""
        return self.instance

    def global_gpus(self, pod: int) -> IntArray:
        """Instance GPU indices of a placed pod's GPUs (empty if CPU-only or failed)."""
        node = int(self.node[pod])
        if node < 0:
            return np.zeros(0, dtype=np.int64)
        slots = self.gpus[pod][self.gpus[pod] >= 0]
        offset = int(self.instance.node_gpus[:node].sum())
        index: IntArray = offset + slots
        return index

    def curves(self) -> dict[str, FloatArray]:
        """FGD's discrete curves over arrived GPU demand 0..130% (``merge_*_discrete.py``).

        Each pod's arrived and allocated milli become percentages of capacity, the arrived one
        rounded to a whole percent and the allocated one to 2 decimals (Python's ``round``, as
        pandas' ``apply`` does); the value at ``a`` percent is the mean over the pods at ``a``
        (or, if none, at ``a - 1`` to ``a + 1``), rounded to 2 decimals (numpy's ``round``, as
        on pandas' mean); NaN where there is none.

        Returns
        -------
        dict
            ``"allocated"``, ``"fragmented"`` (percent of capacity) and ``"frag_ratio"``
            (percent of idle GPU milli), each ``(131,)`` over :data:`ARRIVED_PERCENT`.
        """
        gpus = self.total_gpus
        arrived = np.array([round(a / gpus / 10, 0) for a in self.arrived_milli.tolist()])
        alloc = np.array([round(u / gpus / 10, 2) for u in self.used_milli.tolist()])
        # FGD logs the fragment milli and ratio with %.2f and reads those back.
        frag = np.array([float(f"{f:.2f}") for f in self.frag_milli.tolist()])
        # With no idle GPU left the ratio is 0/0: NaN, as Go's float division gives it.
        ratio = np.array([float(f"{100 * f / i:.2f}") if i else np.nan for f, i in
                          zip(self.frag_milli.tolist(), self.idle_milli.tolist(), strict=True)])
        out = {key: np.full(len(ARRIVED_PERCENT), np.nan)
               for key in ("allocated", "fragmented", "frag_ratio")}
        for a in ARRIVED_PERCENT.tolist():
            rows = arrived == a
            if not rows.any():
                rows = (arrived >= a - 1) & (arrived <= a + 1)
                if not rows.any():
                    continue
            # pandas' mean is a numpy float, so these are numpy's (not Python's) rounding.
            out["allocated"][a] = np.round(alloc[rows].mean(), 2)
            out["fragmented"][a] = np.round(100 * frag[rows].mean() / 1000 / gpus, 2)
            known = ratio[rows][~np.isnan(ratio[rows])]   # pandas' mean skips NaN
            out["frag_ratio"][a] = known.mean() if len(known) else np.nan
        return out


def replay(instance: Instance, policy: str | type[SharePolicy], seed: int,
           ratio: float = PAPER_RATIO, specs: Sequence[str] | None = None,
           informer_draws: int = INFORMER_DRAWS, rescue: Rescue | None = None,
           options: Mapping[str, Any] | None = None) -> ReplayResult:
    """Replay an openb trace under a placement policy with FGD's protocol.

    Parameters
    ----------
    instance
        The openb nodes and the original pod list (:func:`gpuplan.readers.openb.read_openb`).
    policy
        A name in :data:`gpuplan.sharing.policies.POLICIES` or a policy class.
    seed
        FGD's ``-tuneseed`` (the paper uses 42..51).
    ratio
        FGD's ``-tune``: inflate (or shrink) the GPU request to this multiple of capacity.
    specs
        Each pod's ``gpu_spec`` string for the typical pods (default: rebuilt from
        eligibility, see :func:`gpuplan.sharing.frag.pod_specs`).
    informer_draws
        Go random draws between the inflation and the node permutation (see
        :data:`INFORMER_DRAWS`).
    rescue
        Called for a pod no node can take, after FGD's draws for it; the running pods it
        moves (:mod:`gpuplan.sharing.migrate`) let the pod be placed as any other. None:
        FGD's protocol, the pod fails.
    options
        The policy's own settings by name (:func:`~gpuplan.sharing.policies.build_policy`).

    Returns
    -------
    ReplayResult
        Every pod's node and GPUs and the cluster after each arrival.
    """
    policy_class = policy_class_of(policy)
    typical = typical_pods(instance, specs)
    arrivals = fgd_arrivals(instance, seed, ratio, informer_draws)
    ids = [instance.job_ids[j] if k < 0 else f"{instance.job_ids[j]}#{k}"
           for j, k in zip(arrivals.jobs.tolist(), arrivals.clone.tolist(), strict=True)]
    inflated = instance.take(arrivals.jobs, ids)
    state = ClusterState(inflated)
    state.rank = arrivals.rank
    frag = NodeFrag(typical, state)
    rng = arrivals.rng
    chooser = build_policy(policy_class, ShareContext(rng=rng, frag=frag), options or {})
    n_pods = inflated.n_jobs
    arrived = np.cumsum(state.pod_gang * state.pod_milli)
    used = np.zeros(n_pods, dtype=np.int64)
    frag_milli, idle_milli = np.zeros(n_pods), np.zeros(n_pods)
    moves: list[Move] = []
    start = time.perf_counter()
    for pod in range(n_pods):
        rng.intn(100)  # scheduleOne samples plugin metrics with the global source
        feasible = state.feasible(pod)
        if len(feasible) == 0:
            rng.int31n(state.n_nodes)  # DefaultPreemption draws an offset over all nodes
            if rescue is not None and (made := rescue(state, pod, chooser)):
                moves.extend(made)
                feasible = state.feasible(pod)
        chosen = choose(state, pod, chooser, feasible)
        if chosen is not None:
            state.place(pod, *chosen)
        used[pod] = state.used_gpu_milli
        frag_milli[pod], idle_milli[pod] = frag.cluster()
    seconds = time.perf_counter() - start
    failed = int((state.pod_node < 0).sum())
    logger.info("replay %s seed %d: %d pods, %d failed, %.1f%% of GPUs allocated, %.2f s",
                policy_class.name, seed, n_pods, failed,
                100 * used[-1] / (GPU_MILLI * inflated.n_gpus), seconds)
    return ReplayResult(
        policy=policy_class.name, seed=seed, ratio=ratio, instance=inflated,
        source_job=arrivals.jobs, node=state.pod_node.copy(), gpus=state.pod_gpus.copy(),
        arrived_milli=arrived, used_milli=used, frag_milli=frag_milli, idle_milli=idle_milli,
        typical=typical, seconds=seconds, moves=tuple(moves))
