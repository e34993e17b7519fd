"""The cluster state filters nodes as FGD does and keeps its books through place and remove."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpuplan.sharing.cluster import ClusterState
from sharing import openb_instance

NODES = [("node-c", 64000, 262144, 2, "P100"),
         ("node-a", 96000, 393216, 8, "T4"),
         ("node-b", 32000, 65536, 4, "T4")]
PODS = [("cpu-only", 40000, 100000, 0, 0, ""),
        ("share", 4000, 8192, 1, 300, ""),
        ("whole-t4", 8000, 16384, 1, 1000, "T4"),
        ("four", 16000, 32768, 4, 1000, ""),
        ("big-mem", 1000, 300000, 0, 0, "")]


@pytest.fixture
def state(tmp_path: Path) -> ClusterState:
    """Three nodes of two models and five pods of every kind, nothing placed."""
    return ClusterState(openb_instance(tmp_path, NODES, PODS))


def test_filters_check_cpu_memory_type_and_gpus(state: ClusterState) -> None:
    """CPU, memory, the pod's GPU models and room on its GPUs all decide feasibility."""
    pod = {name: j for j, name in enumerate(state.instance.job_ids)}
    assert state.feasible(pod["cpu-only"]).tolist() == [0, 1]       # node-b has 32000 CPU
    assert state.feasible(pod["big-mem"]).tolist() == [1]            # only node-a's memory
    assert state.feasible(pod["whole-t4"]).tolist() == [1, 2]        # T4 only
    assert state.feasible(pod["four"]).tolist() == [1, 2]            # 4 whole GPUs
    state.place(pod["share"], 2, np.array([1]))
    assert state.feasible(pod["four"]).tolist() == [1]               # one GPU is now shared
    state.place(pod["whole-t4"], 1, np.array([0]))
    assert state.gpu_free[1].tolist() == [0] + [1000] * 7
    assert state.feasible(pod["share"]).tolist() == [0, 1, 2]        # 700 left on node-b's GPU 1


def test_place_then_remove_restores_the_node(state: ClusterState) -> None:
    """Removing a pod gives back its CPU, memory and GPU milli and bumps the node's version."""
    before = (state.cpu_free.copy(), state.mem_free.copy(), state.gpu_free.copy())
    state.place(1, 0, np.array([1]))
    assert (state.cpu_free[0], state.mem_free[0], state.gpu_free[0, 1]) == (60000, 253952, 700)
    assert state.used_gpu_milli == 300
    assert state.affinity[0, 0] == 1 and state.version[0] == 1
    node, gpus = state.remove(1)
    assert (node, gpus.tolist()) == (0, [1])
    assert all((a == b).all() for a, b in zip(before, (state.cpu_free, state.mem_free,
                                                        state.gpu_free), strict=True))
    assert state.affinity[0, 0] == 0 and state.version[0] == 2 and state.pod_node[1] == -1


def test_overfull_or_double_placement_is_refused(state: ClusterState) -> None:
    """A GPU without room, a wrong GPU count or a second placement raises instead of lying."""
    state.place(3, 2, np.array([0, 1, 2, 3]))
    with pytest.raises(ValueError, match="does not fit"):
        state.place(1, 2, np.array([0]))
    with pytest.raises(ValueError, match="cannot be placed"):
        state.place(3, 1, np.array([0, 1, 2, 3]))
    with pytest.raises(ValueError, match="cannot be placed"):
        state.place(2, 1, np.array([0, 1]))
    with pytest.raises(ValueError, match="not placed"):
        state.remove(0)


def test_ties_go_to_the_smallest_node_name(state: ClusterState) -> None:
    """Equal scores pick the lexicographically smallest node id, not the first index."""
    assert state.rank.tolist() == [2, 0, 1]
    assert state.pick(np.array([0, 1, 2]), np.array([5, 5, 5])) == 1     # node-a
    assert state.pick(np.array([0, 2]), np.array([5, 5])) == 2           # node-b
    assert state.pick(np.array([0, 1, 2]), np.array([6, 5, 5])) == 0     # higher score wins


def test_gpu_choices(state: ClusterState) -> None:
    """Whole GPUs are the lowest-index free ones; a share pod's best fit is the tightest GPU."""
    state.place(1, 1, np.array([2]))                  # node-a GPU 2 has 700 left
    assert state.whole_gpus(1, 3).tolist() == [0, 1, 3]
    assert state.best_fit_gpu(1, 300) == 2
    assert state.best_fit_gpu(1, 800) == 0
    assert state.global_gpus(2, np.array([0, 3])).tolist() == [10, 13]
