"""FGD's replay: its arrival order, inflation and node order, and consistent end states."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpuplan.sharing.cluster import ClusterState
from gpuplan.sharing.policies import POLICIES
from gpuplan.sharing.replay import ReplayResult, fgd_arrivals, replay
from sharing import Pod, openb_instance

#: 14 GPUs: n-b (T4, 4), n-c (P100, 2), n-a (T4, 8).
NODES = [("n-b", 32000, 65536, 4, "T4"), ("n-c", 64000, 131072, 2, "P100"),
         ("n-a", 96000, 196608, 8, "T4")]


def test_order_and_node_ranks_are_gos(tmp_path: Path) -> None:
    """Pods shuffle and nodes rank exactly as FGD's Go code draws them.

    Go 1.19: ``rand.Seed(42); rand.Int()``, then ``rand.Shuffle`` of 5 name-sorted pods gives
    ``[1 3 4 2 0]``; after the 10 reflector draws (``rand.Float64()``) ``rand.Perm(3)`` gives
    ``[1 0 2]`` for the name-sorted nodes n-a, n-b, n-c. Without tuning (ratio 0) nothing is
    drawn in between.
    """
    pods: list[Pod] = [(f"p{k}", 1000, 1024, 1, 100, "") for k in (4, 2, 0, 3, 1)]
    instance = openb_instance(tmp_path, NODES, pods)
    arrivals = fgd_arrivals(instance, 42, ratio=0)
    assert [instance.job_ids[j] for j in arrivals.jobs] == ["p1", "p3", "p4", "p2", "p0"]
    assert arrivals.rank.tolist() == [0, 2, 1]     # n-b, n-c, n-a
    assert (arrivals.clone == -1).all()


def test_inflation_stops_on_the_per_gpu_request(tmp_path: Path) -> None:
    """Inflation stops before a copy whose *per-GPU* milli would pass the target.

    So 8-GPU copies overshoot: one 8-GPU pod on 14 GPUs (target 1.3 * 14000 = 18200) gets
    two copies, 24000 milli, as 16000 + 1000 still passes the test and 24000 + 1000 does not.
    """
    pods: list[Pod] = [("eight", 8000, 1024, 8, 1000, "")]
    arrivals = fgd_arrivals(openb_instance(tmp_path, NODES, pods), 42)
    assert arrivals.clone.tolist() == [-1, 0, 1]


def test_inflation_of_share_pods_fills_to_the_target(tmp_path: Path) -> None:
    """Two 500-milli pods are copied up to 18000 milli, the most below 18200 in 500 steps."""
    pods: list[Pod] = [("a", 1000, 1024, 1, 500, ""), ("b", 2000, 1024, 1, 500, "")]
    arrivals = fgd_arrivals(openb_instance(tmp_path, NODES, pods), 7)
    assert len(arrivals.jobs) == 36 and arrivals.clone.tolist()[2:] == list(range(34))
    assert set(arrivals.jobs.tolist()) == {0, 1}


def test_shrinking_drops_pods_until_at_the_target(tmp_path: Path) -> None:
    """Over the target, random pods are dropped until the request is at most the target."""
    pods: list[Pod] = [(f"w{k:02d}", 1000, 1024, 1, 1000, "") for k in range(20)]
    instance = openb_instance(tmp_path, NODES, pods)
    for ratio, kept in ((1.0, 14), (0.5, 7)):
        arrivals = fgd_arrivals(instance, 3, ratio=ratio)
        assert len(arrivals.jobs) == kept == len(set(arrivals.jobs.tolist()))


def test_cpu_pods_tie_to_the_smallest_renamed_node(tmp_path: Path) -> None:
    """GPU packing scores CPU-only pods 0 everywhere, so the tie rule alone places them.

    FGD renames the name-sorted nodes ``%04d-<name>`` with ``rand.Perm``: with seed 42 n-b
    becomes ``0000-n-b`` (see :func:`test_order_and_node_ranks_are_gos`), the smallest name,
    so it takes CPU pods until its 32 CPUs are used; then ``0001-n-a``, never the first
    node by index or by original name.
    """
    pods: list[Pod] = [(f"c{k}", 12000, 1024, 0, 0, "") for k in range(5)]
    result = replay(openb_instance(tmp_path, NODES, pods), "gpu-packing", 42, ratio=0)
    assert result.node.tolist() == [0, 0, 2, 2, 2]


#: 64 GPUs: six 8-GPU T4 nodes, four 2-GPU P100 nodes, two 4-GPU T4 nodes.
MIXED_NODES = ([(f"t8-{k}", 96000, 393216, 8, "T4") for k in range(6)]
               + [(f"p2-{k}", 64000, 262144, 2, "P100") for k in range(4)]
               + [(f"t4-{k}", 32000, 131072, 4, "T4") for k in range(2)])


def test_curves_of_a_full_cluster(tmp_path: Path) -> None:
    """With every GPU allocated the fragment ratio is 0/0: no value, as in FGD's analysis.

    At 50% the free GPU fits the one typical shape, so nothing is fragment; points without
    a pod within a percent either side have no value.
    """
    nodes = [("only", 64000, 131072, 2, "P100")]
    pods: list[Pod] = [("a", 1000, 1024, 1, 1000, ""), ("b", 1000, 1024, 1, 1000, "")]
    curves = replay(openb_instance(tmp_path, nodes, pods), "best-fit", 1, ratio=0).curves()
    assert (curves["allocated"][50], curves["allocated"][100]) == (50.0, 100.0)
    assert curves["frag_ratio"][50] == 0.0 and np.isnan(curves["frag_ratio"][100])
    assert np.isnan(curves["allocated"][0]) and np.isnan(curves["allocated"][102])


def _mixed_pods() -> list[Pod]:
    """50 pods of every kind, some T4-only, asking for about 90% of the GPUs."""
    rng = np.random.default_rng(5)
    pods: list[Pod] = []
    for k in range(50):
        kind = int(rng.choice(6, p=[0.2, 0.4, 0.2, 0.1, 0.05, 0.05]))
        gpus, milli = [(0, 0), (1, int(rng.choice([100, 250, 500, 700]))), (1, 1000),
                       (2, 1000), (4, 1000), (8, 1000)][kind]
        spec = "T4" if gpus and rng.random() < 0.3 else ""
        pods.append((f"pod-{k:02d}", int(rng.choice([1000, 4000, 8000, 16000])),
                     int(rng.choice([1024, 8192, 32768])), gpus, milli, spec))
    return pods


def _check_end_state(result: ReplayResult) -> None:
    """Recompute every node's and GPU's load from the result and replay place-or-fail."""
    instance, state = result.instance, ClusterState(result.instance)
    gpu_load = np.zeros(instance.n_gpus, dtype=np.int64)
    node_load = np.zeros((instance.n_nodes, 2))
    for pod in range(instance.n_jobs):
        node = int(result.node[pod])
        if node < 0:
            assert len(state.feasible(pod)) == 0, "a pod failed that fitted somewhere"
            continue
        gpus = result.global_gpus(pod)
        assert len(set(gpus.tolist())) == instance.gang[pod]
        assert (instance.gpu_node[gpus] == node).all()
        assert instance.eligible[pod, instance.gpu_type[gpus]].all()
        gpu_load[gpus] += state.pod_milli[pod]
        node_load[node] += instance.node_demand[pod]
        state.place(pod, node, result.gpus[pod][:instance.gang[pod]])
    assert (gpu_load <= 1000).all() and (node_load <= instance.node_capacity).all()
    assert result.used_milli[-1] == gpu_load.sum()
    assert (np.diff(result.used_milli) >= 0).all()
    assert (result.used_milli <= result.arrived_milli).all()


@pytest.mark.parametrize("policy", list(POLICIES))
def test_small_replay_end_state_is_consistent(tmp_path: Path, policy: str) -> None:
    """Every policy's replay of a mixed trace ends in a state the trace allows.

    It respects every capacity, type and gang, fails only pods no node could take on
    arrival, and names the inflated copies apart.
    """
    result = replay(openb_instance(tmp_path, MIXED_NODES, _mixed_pods()), policy, 11)
    _check_end_state(result)
    ids = result.instance.job_ids
    assert len(set(ids)) == len(ids) and any("#" in job for job in ids)
    assert (result.node < 0).any() and (result.node >= 0).any()
