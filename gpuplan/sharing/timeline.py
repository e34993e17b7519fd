"""The time replay with departures: pods arrive at their creation time and leave after their run.

FGD's replay (:mod:`gpuplan.sharing.replay`) ignores time: pods only arrive. Here every pod
of an openb trace arrives at its ``release`` (the trace's ``creation_time``), is placed by a
registered sharing policy, holds its node's CPU and memory and its GPU milli for its
``duration`` (``deletion_time - creation_time``, at least 1 s) and then leaves. The rules:

- At one instant, departures come first, then the waiting pods, then the arrivals (pods of
  one instant in trace order).
- A pod that fits no node when it arrives waits in a FIFO queue. Whenever pods leave, the
  waiting pods are retried in queue order and each one that fits is placed; one that does
  not fit does not block those behind it (backfilling, as Kubernetes' scheduling queue
  moves unschedulable pods back to the active queue on a pod deletion and pops them
  oldest first). New arrivals are tried at once even when others wait. A waiting pod
  runs its full duration from the instant it is placed.
- A pod that fits no node of the empty cluster (CPU, memory, GPU model or GPU count) fails
  at once and is left out of the run.
- Nodes are filtered and scored as in FGD's replay (:class:`~gpuplan.sharing.SharePolicy`):
  highest score, ties to the smallest node name, a share pod's GPU chosen by the policy,
  whole-GPU pods on the lowest-index free GPUs.

Between two instants every waiting pod fits nowhere (it was refused, and placements only
take resources away), so after departures a waiting pod can only fit on a node that was
freed: each retry first tests the queue against the freed nodes only, in one vectorised
comparison per pod shape, and runs the policy just for the pods that may fit.

Every run is a time-based gpuplan schedule: one segment per pod ``[start, start +
duration)`` on its node and GPUs, with its start and complete events, on the replayed
instance under the weighted-completion objective. :func:`gpuplan.harness.replay.time_run`
verifies it (GPU milli per GPU and node CPU and memory at every instant) before anything
uses it; a violation is a bug of the replay or a policy, never repaired.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpuplan.core.errors import InputError, setting
from gpuplan.core.instance import BoolArray, FloatArray, Instance, IntArray
from gpuplan.core.objectives import time_objective
from gpuplan.core.result import EventKind, Result
from gpuplan.core.schedule import Schedule
from gpuplan.core.sim import EventQueue, Recorder
from gpuplan.sharing import ShareContext, SharePolicy
from gpuplan.sharing.cluster import GPU_MILLI, ClusterState
from gpuplan.sharing.frag import NodeFrag, typical_pods
from gpuplan.sharing.gorand import GoRand
from gpuplan.sharing.policies import build_policy
from gpuplan.sharing.policies import policy_class as policy_class_of

logger = logging.getLogger(__name__)

_DAY = 86400.0


def check_times(instance: Instance) -> None:
    """Refuse a pod list without times.

    The openb reader gives a pod without ``creation_time`` release 0 and duration 1 s, so
    a list with no time columns (``openb_pod_list_multigpu50.csv``) is one where every pod
    has exactly that.

    Raises
    ------
    InputError
        Naming the pod list, when no pod has a time of its own.
    """
    if instance.n_jobs and (instance.release == 0).all() and (
            instance.min_duration == 1.0).all():
        raise InputError(instance.source, "line 1",
                         "the pod list has no creation_time and deletion_time (every pod "
                         "would arrive at 0 s and last 1 s); the time replay needs them. "
                         "openb_pod_list_multigpu50.csv has none: replay it with FGD's "
                         "static protocol instead")


def pod_shapes(state: ClusterState) -> IntArray:
    """``(J,)`` a shape number per pod: pods of one shape pass the same filters anywhere.

    A shape is the CPU, memory, GPU count, per-GPU milli and allowed GPU models.
    """
    models = state.pod_eligible.astype(np.int64) @ (1 << np.arange(
        state.pod_eligible.shape[1], dtype=np.int64))
    key = np.column_stack((state.pod_cpu, state.pod_mem, state.pod_gang, state.pod_milli,
                           models))
    _, shape = np.unique(key, axis=0, return_inverse=True)
    numbers: IntArray = shape.reshape(-1).astype(np.int64)
    return numbers


def fit_somewhere(state: ClusterState, shapes: IntArray, pods: IntArray,
                  nodes: IntArray) -> BoolArray:
    """``(P,)`` whether each pod passes :meth:`ClusterState.fits` on some of ``nodes`` now.

    Pods of one shape are tested once, all shapes against all nodes in one comparison.

    Parameters
    ----------
    state
        The cluster.
    shapes
        ``(J,)`` every pod's shape (:func:`pod_shapes`).
    pods
        ``(P,)`` the pods to test.
    nodes
        ``(M,)`` the nodes to try.
    """
    _, first, inverse = np.unique(shapes[pods], return_index=True, return_inverse=True)
    shown = pods[first]
    gang = state.pod_gang[shown][:, None]
    ok = ((state.cpu_free[nodes][None, :] >= state.pod_cpu[shown][:, None])
          & (state.mem_free[nodes][None, :] >= state.pod_mem[shown][:, None]))
    roomy = (state.gpu_free[nodes][None, :, :]
             >= state.pod_milli[shown][:, None, None]).sum(axis=2) >= gang
    typed = state.pod_eligible[shown][:, state.node_type[nodes]]
    ok &= (gang == 0) | (roomy & typed)
    anywhere: BoolArray = np.any(ok, axis=1)
    fits: BoolArray = anywhere[inverse.reshape(-1)]
    return fits


@dataclass(frozen=True)
class TimelineResult:
    """One time replay: where and when every pod ran, verified, and what it measured.

    Attributes
    ----------
    policy, seed, speedup
        What was replayed (``speedup`` divided the arrival times).
    instance
        The replayed instance: the trace without its failed pods, arrival times divided by
        ``speedup``, objective weighted completion; :attr:`schedule` is checked against it.
    schedule
        The run as a v2 schedule (not yet verified): one segment per pod, start and
        complete events.
    failed
        Ids of the pods that fit no node of the empty cluster, left out of the run.
    start, node
        ``(J,)`` each pod's start (seconds) and node index, by :attr:`instance` job index.
    metrics
        ``pods``, ``placed``, ``failed``; ``pending_mean_s``, ``pending_p95_s``,
        ``pending_max_s`` (start minus arrival over the placed pods) and
        ``waited_share`` (share of them that waited); ``allocated_mean`` (time-weighted
        mean share of the cluster's GPU milli held, first arrival to last departure),
        ``allocated_mean_arrivals`` (the same from the first to the last arrival) and
        ``allocated_peak``; ``span_days`` (first arrival to last departure); ``replay_s``
        (the event loop) and ``wall_s`` (the whole call, verification included).
    series
        ``(times, share)``: the share of the cluster's GPU milli held from ``times[k]`` to
        ``times[k + 1]`` (the last value is 0: everything has left).
    """

    policy: str
    seed: int
    speedup: float
    instance: Instance
    schedule: Schedule
    failed: tuple[str, ...]
    start: FloatArray
    node: IntArray
    metrics: dict[str, float]
    series: tuple[FloatArray, FloatArray]


#: Event kinds of the replay, in the order they come at one instant.
_LEAVE, _ARRIVE = 0, 1


class _Replay:
    """The event loop of one time replay (see the module docstring); :meth:`run` once.

    Runs on the simulation core: arrivals and departures in one
    :class:`~gpuplan.core.sim.EventQueue` (departures first at an instant), and each pod's
    segment and events in a :class:`~gpuplan.core.sim.Recorder` as they happen.
    """

    def __init__(self, state: ClusterState, chooser: SharePolicy, duration: FloatArray) -> None:
        self.state = state
        self.chooser = chooser
        self.duration = duration
        self.shapes = pod_shapes(state)
        self.start = np.full(state.instance.n_jobs, np.nan)
        # The cluster forgets a pod's place when it leaves; the run log needs it.
        self.node = np.full(state.instance.n_jobs, -1, dtype=np.int64)
        self.gpus: list[IntArray] = [np.zeros(0, dtype=np.int64)] * state.instance.n_jobs
        self.clock = EventQueue()
        self.recorder = Recorder()

    def place(self, pod: int, now: float) -> bool:
        """Place ``pod`` now if some node passes the filters; whether it was placed."""
        state = self.state
        feasible = state.feasible(pod)
        if not len(feasible):
            return False
        node = (int(feasible[0]) if len(feasible) == 1
                else state.pick(feasible, self.chooser.score(state, pod, feasible)))
        if state.pod_share[pod]:
            gpus = np.array([self.chooser.share_gpu(state, pod, node)], dtype=np.int64)
        else:
            gpus = state.whole_gpus(node, int(state.pod_gang[pod]))
        state.place(pod, node, gpus)
        self.start[pod], self.node[pod] = now, node
        self.gpus[pod] = state.global_gpus(node, gpus)
        self.recorder.event(now, EventKind.START, pod, self.gpus[pod])
        self.clock.push(now + float(self.duration[pod]), _LEAVE, pod)
        return True

    def leave(self, pod: int, now: float) -> int:
        """``pod`` leaves at ``now``, its run recorded; the node it freed."""
        node, _ = self.state.remove(pod)
        gpus = self.gpus[pod]
        self.recorder.segment(pod, int(self.state.node_type[node]), float(self.start[pod]),
                              now, gpus, node=node)
        self.recorder.event(now, EventKind.COMPLETE, pod, gpus)
        return node

    def retry(self, queue: list[int], freed: IntArray, now: float) -> list[int]:
        """The queue after trying its pods in order, those that may fit on ``freed`` nodes."""
        if not queue:
            return queue
        hopeful = fit_somewhere(self.state, self.shapes, np.array(queue, dtype=np.int64),
                                freed)
        if not hopeful.any():
            return queue
        return [pod for pod, hope in zip(queue, hopeful.tolist(), strict=True)
                if not (hope and self.place(pod, now))]

    def run(self, release: FloatArray) -> None:
        """Replay every pod from its arrival to its departure.

        Raises
        ------
        RuntimeError
            If pods still wait once every pod has left (they fit the empty cluster, so
            this is a bug).
        """
        clock = self.clock
        # Pods of one instant arrive in trace order: the queue keeps the order pushed.
        for pod in range(release.size):
            clock.push(float(release[pod]), _ARRIVE, pod)
        queue: list[int] = []
        while clock:
            now = clock.next_time()
            freed = []
            while clock.due(now, inclusive=True) and clock.peek_kind() == _LEAVE:
                freed.append(self.leave(clock.pop()[3], now))
            if freed:
                queue = self.retry(queue, np.unique(np.array(freed, dtype=np.int64)), now)
            while clock.due(now, inclusive=True):
                pod = clock.pop()[3]
                if not self.place(pod, now):
                    queue.append(pod)
        if queue:
            raise RuntimeError(f"{len(queue)} pod(s) still wait on the empty cluster")

    def result(self, instance: Instance, solver: str) -> Result:
        """The run: a segment per pod, its start and complete events as they happened."""
        result = self.recorder.result(solver)
        return dataclasses.replace(result, objective=time_objective(
            instance, result.job, result.gpu_type, result.end))


def allocated_series(instance: Instance, result: Result) -> tuple[FloatArray, FloatArray]:
    """``(times, share)``: the share of the cluster's GPU milli the run's segments hold.

    ``share[k]`` holds from ``times[k]`` to ``times[k + 1]``; changes at one instant are
    netted, so a pod leaving as another comes draws no spike.
    """
    milli = instance.gang[result.job] * instance.demand[result.job, result.gpu_type, 0]
    instants, slot = np.unique(np.concatenate((result.start, result.end)),
                               return_inverse=True)
    net = np.bincount(slot.reshape(-1), weights=np.concatenate((milli, -milli)),
                      minlength=instants.size)
    share: FloatArray = np.cumsum(net) / (GPU_MILLI * instance.n_gpus)
    return instants, share


def _time_mean(times: FloatArray, values: FloatArray, begin: float, end: float) -> float:
    """Mean of a step series over ``[begin, end]`` (its value at ``begin`` if empty)."""
    if end <= begin:
        return float(values[max(int(np.searchsorted(times, begin, side="right")) - 1, 0)])
    edges = np.clip(np.append(times, np.inf), begin, end)
    return float((values * np.diff(edges)).sum() / (end - begin))


def _metrics(instance: Instance, start: FloatArray, series: tuple[FloatArray, FloatArray],
             failed: int) -> dict[str, float]:
    """The run's pending times and allocation (keys: see :class:`TimelineResult`)."""
    counts = {"pods": float(instance.n_jobs + failed), "placed": float(instance.n_jobs),
              "failed": float(failed)}
    if not instance.n_jobs:   # every pod failed: nothing waited, nothing was held
        return counts | dict.fromkeys(
            ("pending_mean_s", "pending_p95_s", "pending_max_s", "waited_share",
             "allocated_mean", "allocated_mean_arrivals", "allocated_peak", "span_days"), 0.0)
    wait = start - instance.release
    first, last = float(instance.release.min()), float(instance.release.max())
    end = float((start + instance.min_duration).max())
    times, share = series
    return counts | {
        "pending_mean_s": float(wait.mean()),
        "pending_p95_s": float(np.percentile(wait, 95)),
        "pending_max_s": float(wait.max()),
        "waited_share": float((wait > 0).mean()),
        "allocated_mean": _time_mean(times, share, first, end),
        "allocated_mean_arrivals": _time_mean(times, share, first, last),
        "allocated_peak": float(share.max()),
        "span_days": (end - first) / _DAY,
    }


def time_replay(instance: Instance, policy: str | type[SharePolicy], seed: int = 0,
                speedup: float = 1.0, specs: Sequence[str] | None = None,
                options: Mapping[str, Any] | None = None) -> TimelineResult:
    """Replay an openb trace over time, pods arriving and leaving, under a sharing policy.

    Parameters
    ----------
    instance
        The openb nodes and pods (:func:`gpuplan.readers.openb.read_openb`), with times.
    policy
        A name in :data:`gpuplan.sharing.policies.POLICIES` or a policy class.
    seed
        Seeds Go's random source the policies may draw from (only ``random`` does).
    speedup
        Divides every arrival time (durations are kept), to load the cluster more than
        the trace does; 1 replays the trace as it is.
    specs
        Each pod's ``gpu_spec`` string for FGD's typical pods (default: rebuilt from
        eligibility, see :func:`gpuplan.sharing.frag.pod_specs`).
    options
        The policy's own settings by name (:func:`~gpuplan.sharing.policies.build_policy`).

    Returns
    -------
    TimelineResult
        The verified run, its metrics and the allocated share over time.

    Raises
    ------
    InputError
        If the pod list has no times, or ``speedup`` is not a positive finite number.
    KeyError
        If ``policy`` is not registered.
    VerificationError
        If the verifier rejects the run (a bug of the replay or the policy).
    """
    began = time.perf_counter()
    check_times(instance)
    if not (np.isfinite(speedup) and speedup > 0):
        raise InputError(setting("speedup"), "", f"expected a positive number, got {speedup!r}")
    policy_class = policy_class_of(policy)
    typical = typical_pods(instance, specs)
    everyone = ClusterState(instance)
    runnable = fit_somewhere(everyone, pod_shapes(everyone), np.arange(instance.n_jobs),
                             np.arange(instance.n_nodes))
    kept = np.flatnonzero(runnable)
    failed = tuple(instance.job_ids[j] for j in np.flatnonzero(~runnable))
    replayed = dataclasses.replace(instance.take(kept),
                                   release=instance.release[kept] / speedup).online()
    state = ClusterState(replayed)
    chooser = build_policy(policy_class, ShareContext(rng=GoRand(seed),
                                                      frag=NodeFrag(typical, state)),
                           options or {})
    loop = _Replay(state, chooser, replayed.min_duration)
    looping = time.perf_counter()
    loop.run(replayed.release)
    replay_s = time.perf_counter() - looping
    result = loop.result(replayed, policy_class.name)
    schedule = Schedule.from_result(replayed, result, f"timeline:{policy_class.name}",
                                    time.perf_counter() - began, seed)
    series = allocated_series(replayed, result)
    metrics = _metrics(replayed, loop.start, series, len(failed))
    metrics["replay_s"] = replay_s
    metrics["wall_s"] = time.perf_counter() - began
    logger.info("time replay %s seed %d: %d pods, %d failed, %.1f%% waited (mean %.0f s), "
                "%.2f%% of GPU milli held on average, %.1f s", policy_class.name, seed,
                instance.n_jobs, len(failed), 100 * metrics["waited_share"],
                metrics["pending_mean_s"], 100 * metrics["allocated_mean"], metrics["wall_s"])
    return TimelineResult(
        policy=policy_class.name, seed=seed, speedup=speedup, instance=replayed,
        schedule=schedule, failed=failed,
        start=loop.start, node=loop.node, metrics=metrics, series=series)
