"""The time replay: pods wait for departures, fail when they fit nowhere, and every run verifies."""

from __future__ import annotations

import heapq
from pathlib import Path

import numpy as np
import pytest

from gpuplan.core.errors import InputError
from gpuplan.core.instance import Instance
from gpuplan.harness.replay import time_run
from gpuplan.readers.openb import read_openb
from gpuplan.sharing import ShareContext
from gpuplan.sharing.cluster import ClusterState
from gpuplan.sharing.frag import NodeFrag, typical_pods
from gpuplan.sharing.gorand import GoRand
from gpuplan.sharing.policies import POLICIES
from gpuplan.verify import verify_schedule
from sharing import Node, openb_instance

#: A timed pod row: ``name, cpu_milli, memory_mib, num_gpu, gpu_milli, creation, deletion``.
TimedPod = tuple[str, int, int, int, int, int, int]

#: Two nodes of one V100 each: 2000 GPU milli in all.
TWO_NODES: list[Node] = [("n0", 8000, 16384, 1, "V100"), ("n1", 8000, 16384, 1, "V100")]


def timed_instance(directory: Path, nodes: list[Node], pods: list[TimedPod]) -> Instance:
    """Write an openb node list and a pod list with creation and deletion times; read them."""
    node_csv, pod_csv = directory / "nodes.csv", directory / "pods.csv"
    node_csv.write_text("sn,cpu_milli,memory_mib,gpu,model\n"
                        + "".join(",".join(map(str, row)) + "\n" for row in nodes))
    pod_csv.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,"
                       "deletion_time\n"
                       + "".join(",".join(map(str, row)) + "\n" for row in pods))
    return read_openb(node_csv, pod_csv)


def starts(result_instance: Instance, start: np.ndarray) -> dict[str, float]:
    """Each pod's start by id."""
    return dict(zip(result_instance.job_ids, start.tolist(), strict=True))


def test_a_pod_waits_for_a_departure_and_an_oversized_one_fails(tmp_path: Path) -> None:
    """p2 waits from 20 s until p1 leaves at 50 s; p3 asks more CPU than any node and fails.

    p0 (whole GPU, 0-100 s) and p1 (whole GPU, 10-50 s) fill both GPUs; p2 (600 milli,
    arrives at 20 s, runs 60 s) waits 30 s and runs 50-110 s on p1's node; p4 (300 milli,
    60-70 s) fits beside it at once. Allocated share of the 2000 milli: 0.5 on [0, 10),
    1 on [10, 50), 0.8 on [50, 60), 0.95 on [60, 70), 0.8 on [70, 100), 0.3 on [100, 110):
    a mean of 89.5 / 110 over the run.
    """
    instance = timed_instance(tmp_path, TWO_NODES, [
        ("p0", 1000, 1024, 1, 1000, 0, 100), ("p1", 1000, 1024, 1, 1000, 10, 50),
        ("p2", 1000, 1024, 1, 600, 20, 80), ("p3", 16000, 1024, 0, 0, 30, 40),
        ("p4", 1000, 1024, 1, 300, 60, 70)])
    result = time_run(instance, "best-fit")
    assert result.failed == ("p3",)
    assert starts(result.instance, result.start) == {"p0": 0, "p1": 10, "p2": 50, "p4": 60}
    segment = next(s for s in result.schedule.segments if s.job == "p2")
    assert (segment.node, segment.start_s, segment.end_s) == ("n1", 50, 110)
    metrics = result.metrics
    assert metrics["failed"] == 1 and metrics["placed"] == 4 and metrics["pods"] == 5
    assert metrics["pending_mean_s"] == pytest.approx(30 / 4)
    assert metrics["pending_max_s"] == 30 and metrics["waited_share"] == 0.25
    assert metrics["allocated_mean"] == pytest.approx(89.5 / 110)
    assert metrics["allocated_peak"] == 1.0
    times, share = result.series
    assert times.tolist() == [0, 10, 50, 60, 70, 100, 110]
    assert share.tolist() == pytest.approx([0.5, 1.0, 0.8, 0.95, 0.8, 0.3, 0.0])


def test_the_schedule_verifies_and_the_verifier_sees_every_instant(tmp_path: Path) -> None:
    """The run is a verified weighted-completion schedule with start and complete events.

    Moving the waiting pod to its arrival overloads the GPU, which the verifier reports.
    """
    instance = timed_instance(tmp_path, TWO_NODES, [
        ("p0", 1000, 1024, 1, 1000, 0, 100), ("p1", 1000, 1024, 1, 1000, 10, 50),
        ("p2", 1000, 1024, 1, 600, 20, 80)])
    result = time_run(instance, "fgd")
    schedule = result.schedule
    assert schedule.verification is not None and schedule.verification.ok
    assert schedule.objective_kind == "weighted-completion"
    assert [(e.time_s, e.kind.value, e.job) for e in schedule.events] == [
        (0, "start", "p0"), (10, "start", "p1"), (50, "complete", "p1"), (50, "start", "p2"),
        (100, "complete", "p0"), (110, "complete", "p2")]
    early = [s.model_copy(update={"start_s": 20.0, "end_s": 80.0}) if s.job == "p2" else s
             for s in schedule.segments]
    broken = verify_schedule(result.instance, schedule.model_copy(
        update={"segments": early, "events": [], "objective": None}))
    assert any(v.kind.value == "capacity" for v in broken.violations)


def test_waiting_pods_do_not_block_smaller_ones_behind_them(tmp_path: Path) -> None:
    """A waiting 2-GPU pod does not hold back a 1-GPU pod queued after it (backfilling).

    Three whole-GPU pods fill n0 (2 GPUs) and n1 (1 GPU); "big" (2 GPUs, 10 s) and "small"
    (1 GPU, 20 s) wait. When p1 leaves at 40 s one GPU frees: big still does not fit,
    small starts at 40 s; big starts only once a node has both GPUs free.
    """
    nodes: list[Node] = [("n0", 8000, 16384, 2, "V100"), ("n1", 8000, 16384, 1, "V100")]
    instance = timed_instance(tmp_path, nodes, [
        ("p0", 1000, 1024, 1, 1000, 0, 100), ("p1", 1000, 1024, 1, 1000, 0, 40),
        ("p2", 1000, 1024, 1, 1000, 0, 100), ("big", 1000, 1024, 2, 1000, 10, 60),
        ("small", 1000, 1024, 1, 1000, 20, 50)])
    result = time_run(instance, "best-fit")
    start = starts(result.instance, result.start)
    assert start["small"] == 40
    assert start["big"] >= 70


def test_a_pod_list_without_times_is_refused(tmp_path: Path) -> None:
    """multigpu50's columns (no creation or deletion time) give an InputError saying so."""
    instance = openb_instance(tmp_path, TWO_NODES, [("p0", 1000, 1024, 1, 500, ""),
                                                    ("p1", 1000, 1024, 1, 500, "")])
    with pytest.raises(InputError, match="no creation_time and deletion_time") as error:
        time_run(instance, "fgd")
    assert error.value.source.endswith("pods.csv")


def test_a_speedup_that_is_not_positive_is_refused(tmp_path: Path) -> None:
    """A speedup of 0 cannot divide the arrival times: an InputError, not a crash."""
    instance = timed_instance(tmp_path, TWO_NODES, [("p0", 1000, 1024, 1, 500, 0, 10)])
    with pytest.raises(InputError, match="positive"):
        time_run(instance, "best-fit", speedup=0.0)


def naive_starts(instance: Instance, policy: str, seed: int) -> list[float]:
    """Each pod's start by the rules said plainly, without the freed-node shortcut.

    At every instant pods leave, then every waiting pod is tried in queue order on every
    node, then the arrivals.
    """
    state = ClusterState(instance)
    chooser = POLICIES[policy](ShareContext(rng=GoRand(seed), frag=NodeFrag(
        typical_pods(instance), state)))
    start = [float("nan")] * instance.n_jobs
    leaving: list[tuple[float, int]] = []

    def place(pod: int, now: float) -> bool:
        feasible = state.feasible(pod)
        if not len(feasible):
            return False
        node = (int(feasible[0]) if len(feasible) == 1
                else state.pick(feasible, chooser.score(state, pod, feasible)))
        gpus = (np.array([chooser.share_gpu(state, pod, node)]) if state.pod_share[pod]
                else state.whole_gpus(node, int(state.pod_gang[pod])))
        state.place(pod, node, gpus)
        start[pod] = now
        heapq.heappush(leaving, (now + float(instance.min_duration[pod]), pod))
        return True

    arrivals = sorted(range(instance.n_jobs), key=lambda j: (instance.release[j], j))
    queue: list[int] = []
    arrived = 0
    while arrived < len(arrivals) or leaving:
        now = min(float(instance.release[arrivals[arrived]]) if arrived < len(arrivals)
                  else np.inf, leaving[0][0] if leaving else np.inf)
        if leaving and leaving[0][0] <= now:
            while leaving and leaving[0][0] <= now:
                state.remove(heapq.heappop(leaving)[1])
            queue = [pod for pod in queue if not place(pod, now)]
        while arrived < len(arrivals) and instance.release[arrivals[arrived]] <= now:
            if not place(arrivals[arrived], now):
                queue.append(arrivals[arrived])
            arrived += 1
    return start


@pytest.mark.parametrize("policy", sorted(POLICIES))
def test_every_policy_matches_the_plain_rules_and_verifies(tmp_path: Path,
                                                           policy: str) -> None:
    """On a random busy trace every policy's run verifies and starts pods as plain rules do.

    The plain replay (:func:`naive_starts`) retries every waiting pod on every node at
    every departure.
    """
    rng = np.random.default_rng(5)
    nodes: list[Node] = [(f"n{k}", 32000, 65536, int(g), str(m)) for k, (g, m) in enumerate(
        [(8, "V100"), (4, "T4"), (2, "V100"), (8, "T4"), (1, "P100")])]
    pods: list[TimedPod] = []
    for k in range(160):
        gang = int(rng.choice([0, 1, 1, 1, 2, 4]))
        milli = int(rng.choice([250, 500, 1000])) if gang == 1 else 1000 * (gang > 0)
        created = int(rng.integers(0, 400))
        pods.append((f"p{k:03d}", int(rng.integers(1, 9)) * 1000, 1024, gang, milli, created,
                     created + int(rng.integers(1, 120))))
    instance = timed_instance(tmp_path, nodes, pods)
    result = time_run(instance, policy, seed=42)
    assert result.schedule.verification is not None and result.schedule.verification.ok
    assert result.metrics["waited_share"] > 0.1   # the trace is busy enough to queue pods
    expected = dict(zip(instance.job_ids, naive_starts(instance, policy, 42), strict=True))
    assert starts(result.instance, result.start) == {
        pod: expected[pod] for pod in result.instance.job_ids}


def test_a_trace_of_pods_that_fit_nowhere_fails_them_all(tmp_path: Path) -> None:
    """Pods asking more CPU, or more GPUs, than any node has all fail; the empty run verifies."""
    instance = timed_instance(tmp_path, TWO_NODES, [("cpu", 9000, 1024, 0, 0, 0, 10),
                                                    ("gpus", 1000, 1024, 2, 1000, 5, 10)])
    result = time_run(instance, "gpu-packing")
    assert result.failed == ("cpu", "gpus")
    assert result.schedule.verification is not None and result.schedule.verification.ok
    assert result.metrics["placed"] == 0 and result.metrics["allocated_peak"] == 0
