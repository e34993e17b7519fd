"""Each of FGD's policies scores hand-built nodes as its Go plugin does (checked by hand).

Three nodes: n0 (P100, 64 CPUs, 2 GPUs) holding a 300-milli share pod on GPU 0 with 4 CPUs
(60000 CPU and GPUs at 700 and 1000 left, 1700 milli); n1 (T4, 96 CPUs, 8 GPUs) empty; n2
(T4, 32 CPUs, 4 GPUs) holding a whole-GPU pod with 16 CPUs on GPU 0 (16000 CPU, 3000 milli).
The pods scored: a share pod of 500 milli with 8 CPUs, a whole-GPU pod with 8 CPUs and a
CPU-only pod with 2 CPUs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpuplan.sharing import ShareContext, SharePolicy
from gpuplan.sharing.cluster import ClusterState
from gpuplan.sharing.frag import NodeFrag, TypicalPods
from gpuplan.sharing.gorand import GoRand
from gpuplan.sharing.policies import POLICIES
from sharing import openb_instance

NODES = [("n0", 64000, 262144, 2, "P100"), ("n1", 96000, 393216, 8, "T4"),
         ("n2", 32000, 65536, 4, "T4")]
PODS = [("held-share", 4000, 1024, 1, 300, ""), ("held-whole", 16000, 1024, 1, 1000, ""),
        ("share", 8000, 1024, 1, 500, ""), ("whole", 8000, 1024, 1, 1000, ""),
        ("cpu", 2000, 1024, 0, 0, "")]
SHARE, WHOLE, CPU = 2, 3, 4
ALL = np.array([0, 1, 2])

#: Typical pods for FGD: half share pods (4 CPUs, 500 milli), half 2-GPU pods (8 CPUs).
TYPICAL = TypicalPods(cpu=np.array([4000, 8000]), milli=np.array([500, 1000]),
                      gang=np.array([1, 2]), spec=("", ""),
                      allowed=np.ones((2, 2), dtype=bool), count=np.array([1, 1]),
                      prob=np.array([0.5, 0.5]), coverage=1.0)


@pytest.fixture
def state(tmp_path: Path) -> ClusterState:
    """The three nodes with their two held pods."""
    state = ClusterState(openb_instance(tmp_path, NODES, PODS))
    state.place(0, 0, np.array([0]))
    state.place(1, 2, np.array([0]))
    return state


def _policy(name: str, state: ClusterState, seed: int = 1) -> SharePolicy:
    """A registered policy bound to the state, FGD's typical pods and a Go source."""
    return POLICIES[name](ShareContext(rng=GoRand(seed), frag=NodeFrag(TYPICAL, state)))


@pytest.mark.parametrize(("name", "pod", "expected"), [
    # v = (cpu left)/128000/2 + (milli left)/8000/2: n0 .278125, n1 .8125, n2 .1875 ->
    # int((1 - v) * 100) = 72, 18, 81 -> min-max to 0..100: (72-18)*100//63 = 85, 0, 100.
    ("best-fit", SHARE, [85, 0, 100]),
    # 1 - ((cpu/128000)(8000/128000) + (milli/8000)(500/8000)) / 2: n0 .97871, n1 .94531,
    # n2 .98438 -> 97, 94, 98.
    ("dot-product", SHARE, [97, 94, 98]),
    # n0 uses its 700 GPU: 100 - (70 // 10) = 93; n1 idle: 33 - 8 = 25; n2 takes a free GPU
    # on a used node: 50 - 1 = 49.
    ("gpu-packing", SHARE, [93, 25, 49]),
    ("gpu-packing", CPU, [0, 0, 0]),
    # 25 * (8000 - free) // 8000 = 19, 0, 15, plus 75 (only share pods, n0), 25 (empty, n1),
    # 0 (other shapes only, n2); the whole-GPU pod: 0, 25 and 75.
    ("gpu-clustering", SHARE, [94, 25, 15]),
    ("gpu-clustering", WHOLE, [19, 25, 90]),
    ("gpu-clustering", CPU, [0, 0, 0]),
    # Frag n0 850, n1 0, n2 0. Share pod: n0 on GPU 1 leaves 600 (drop 250, sigmoid .5622);
    # n1 and n2 leave 250 (rise 250, sigmoid .4378). Whole pod: n0 leaves 350 (drop 500,
    # .6225); n1, n2 stay at 0 (.5).
    ("fgd", SHARE, [56, 43, 43]),
    ("fgd", WHOLE, [62, 50, 50]),
])
def test_scores_by_hand(state: ClusterState, name: str, pod: int, expected: list[int]) -> None:
    """The policy's integer scores of n0, n1 and n2 are the hand-computed ones."""
    assert _policy(name, state).score(state, pod, ALL).tolist() == expected


@pytest.mark.parametrize(("name", "gpus"), [
    ("best-fit", [0, 0, 1]), ("dot-product", [0, 0, 1]), ("gpu-packing", [0, 0, 1]),
    ("gpu-clustering", [0, 0, 1]),
    # FGD: on n0 GPU 1 (drop 250) beats GPU 0 (drop 150: 53); on n1 all GPUs tie, the first
    # wins; on n2 GPU 0 is full.
    ("fgd", [1, 0, 1])])
def test_share_gpu_choice(state: ClusterState, name: str, gpus: list[int]) -> None:
    """Best-fit GPU selection takes the tightest GPU with room; FGD its own best."""
    policy = _policy(name, state)
    policy.score(state, SHARE, ALL)
    assert [policy.share_gpu(state, SHARE, node) for node in range(3)] == gpus


def test_random_draws_as_go_does(state: ClusterState) -> None:
    """Random's node is Go's ``rand.Intn(3)`` and its GPU Go's reservoir walk over 8 GPUs.

    Go 1.19 with ``rand.Seed(7)`` gives ``Intn(3) == 2`` and then, drawing ``Intn(k)`` for
    k = 1..8 and keeping GPU k-1 whenever it is 0, GPU 7.
    """
    policy = _policy("random", state, seed=7)
    assert policy.score(state, SHARE, ALL).tolist() == [0, 0, 100]
    assert policy.share_gpu(state, SHARE, 1) == 7


def test_registry_has_the_papers_six() -> None:
    """The six policies of FGD's figure 7 are registered under the paper's names."""
    assert list(POLICIES)[:6] == ["random", "dot-product", "gpu-clustering", "gpu-packing",
                                  "best-fit", "fgd"]
    assert all(POLICIES[name].name == name for name in POLICIES)
