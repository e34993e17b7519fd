"""gpuplan's cutting-stock policy: its LP prices, stranded capacity and choices, by hand.

Typical pods for most tests: share pods of 650, 470 and 320 milli (10, 20 and 15 pods, 1 CPU
each, so CPU never binds). Their cutting-stock LP packs 650+320 (10 GPUs), 470+470 (10) and
320x3 (5/3): 21.67 GPUs, with the unique dual prices v(320) = 1/3 (the 320x3 pattern is tight
and 320 is the most numerous), v(650) = 1 - 1/3 = 2/3 and v(470) = 1/2. Best fills of a gap:
V(210) = 0, V(350) = 1/3, V(530) = 1/2, V(680) = 2/3, V(1000) = 1.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpuplan.harness.replay import replay_schedule
from gpuplan.sharing import ShareContext
from gpuplan.sharing.cluster import ClusterState
from gpuplan.sharing.frag import NodeFrag, TypicalPods
from gpuplan.sharing.gorand import GoRand
from gpuplan.sharing.policies import POLICIES
from gpuplan.sharing.policies.cutting_stock import (
    ORDER_WEIGHT,
    CuttingStockPolicy,
    GapPrices,
    share_sizes,
    stranded,
)
from gpuplan.sharing.replay import replay
from sharing import Pod, openb_instance


def _typical(cpu: list[int], milli: list[int], gang: list[int], count: list[int],
             types: int = 1) -> TypicalPods:
    """Typical pods with these shapes (no GPU model constraint), probability by count."""
    n = np.array(count)
    return TypicalPods(cpu=np.array(cpu), milli=np.array(milli), gang=np.array(gang),
                       spec=("",) * len(cpu), allowed=np.ones((len(cpu), types), dtype=bool),
                       count=n, prob=n / n.sum(), coverage=1.0)


#: The module docstring's share pods.
SHARES = _typical([1000, 1000, 1000], [650, 470, 320], [1, 1, 1], [10, 20, 15])


def test_lp_prices_and_gap_values() -> None:
    """The LP's duals and the best fills of gaps are the hand-solved ones."""
    prices = GapPrices(*share_sizes(SHARES))
    assert prices.size_value[[320, 470, 650]] == pytest.approx([1 / 3, 1 / 2, 2 / 3])
    assert prices.gap_value[[210, 350, 530, 680, 1000]] == pytest.approx(
        [0, 1 / 3, 1 / 2, 2 / 3, 1])
    # A size the LP never saw is worth the best fill of its own gap: 400 holds a 320.
    assert prices.size_value[400] == pytest.approx(1 / 3)


def test_loss_of_spoiling_a_gap() -> None:
    """A pod loses value only where it spoils the gap's best completion.

    320 beside a 650 (gap 350 -> 30) or on an idle GPU (1000 -> 680) loses nothing; beside a
    470 (530 -> 210) it loses 1/2 - 0 - 1/3 = 1/6 GPU: the 470 waited for another 470.
    """
    prices = GapPrices(*share_sizes(SHARES))
    assert prices.loss(np.array([350, 1000, 530]), 320) == pytest.approx([0, 0, 1 / 6])
    assert prices.loss(np.array([530, 1000, 680]), 470) == pytest.approx([0, 0, 1 / 6])


def test_no_share_pods_prices_nothing() -> None:
    """Typical pods without share pods (whole GPUs only) price every gap at 0."""
    prices = GapPrices(*share_sizes(_typical([8000], [1000], [1], [5])))
    assert prices.rounds == 0 and not prices.gap_value.any()
    assert prices.loss(np.array([1000, 500]), 300) == pytest.approx([0, 0])


def test_stranded_counts_pods_the_cpu_still_admits() -> None:
    """A node whose CPU admits few pods strands the rest of its free GPUs; FGD sees none.

    Shapes (probability 0.4 each, model 0 only): 500 milli with 4 CPUs, one whole GPU with
    12 CPUs; and a CPU-only shape (0.2) that adds nothing. Node 0, 8 idle GPUs and 12 CPUs:
    the GPUs hold 16 share pods but the CPU admits 3, so 13/16 of 8000 is stranded (6500);
    8 whole-GPU pods, 1 admitted: 7/8 of 8000 (7000); 0.4 * 13500 = 5400. Node 1, GPUs at
    300 and 1000 with 96 CPUs: the 300 is too small for both shapes and the CPU admits all:
    0.8 * 300 = 240. Node 2, the same on model 1, which neither GPU shape may use: 0.8 *
    1300 = 1040.
    """
    typical = TypicalPods(cpu=np.array([4000, 12000, 2000]), milli=np.array([500, 1000, 0]),
                          gang=np.array([1, 1, 0]), spec=("T4", "T4", ""),
                          allowed=np.array([[True, False], [True, False], [True, True]]),
                          count=np.array([2, 2, 1]), prob=np.array([0.4, 0.4, 0.2]),
                          coverage=1.0)
    gpu = np.zeros((3, 8), dtype=np.int64)
    gpu[0] = 1000
    gpu[1:, :2] = [300, 1000]
    values = stranded(typical, np.array([12000, 96000, 96000]), gpu, np.array([0, 0, 1]))
    assert values == pytest.approx([5400, 240, 1040])


NODES = [("n0", 96000, 393216, 4, "T4"), ("n1", 96000, 393216, 2, "T4")]
PODS: list[Pod] = [("held-470", 1000, 1024, 1, 470, ""), ("held-650", 1000, 1024, 1, 650, ""),
                   ("p320", 1000, 1024, 1, 320, ""), ("p470", 1000, 1024, 1, 470, ""),
                   ("whole", 1000, 1024, 1, 1000, "")]


@pytest.fixture
def policy_state(tmp_path: Path) -> tuple[CuttingStockPolicy, ClusterState]:
    """n0 (4 GPUs) holds a 470 on GPU 0 and a 650 on GPU 1; n1 (2 GPUs) is idle."""
    state = ClusterState(openb_instance(tmp_path, NODES, PODS))
    state.place(0, 0, np.array([0]))
    state.place(1, 0, np.array([1]))
    policy = CuttingStockPolicy(ShareContext(rng=GoRand(1), frag=NodeFrag(SHARES, state)))
    return policy, state


def test_share_pod_costs_by_hand(policy_state: tuple[CuttingStockPolicy, ClusterState]) -> None:
    """A 320 completes the 650's GPU (650 + 320), and n0 beats the idle n1.

    Stranded milli = (10 * (milli under 650) + 20 * (under 470) + 15 * (under 320)) / 45 on
    n0's GPUs [530, 350, 1000, 1000]: (10*880 + 20*350) / 45 = 351.11. The 320 on GPU 0
    leaves [210, 350, ...]: (10*560 + 20*560 + 15*210) / 45 = 443.33, a rise of 92.22, plus
    GAP_WEIGHT/6 for the spoiled 470 gap; on GPU 1 [530, 30, ...]: (10*560 + 20*30 +
    15*30) / 45 = 147.78, a drop of 203.33 and no loss; on an idle GPU nothing changes. n1
    (idle, 2nd of 2 in name order) costs 0 plus ORDER_WEIGHT/2. Scores are minus the costs
    in thousandths of a milli.
    """
    policy, state = policy_state
    assert policy.score(state, 2, np.array([0, 1])).tolist() == [
        203333, -round(ORDER_WEIGHT / 2 * 1000)]
    assert policy.share_gpu(state, 2, 0) == 1


def test_470_waits_for_a_470(policy_state: tuple[CuttingStockPolicy, ClusterState]) -> None:
    """A 470 joins the 470 (gap 530 -> 60) rather than an idle GPU of the same node.

    Beside the 470: [60, 350, 1000, 1000], (10*410 + 20*410 + 15*60) / 45 = 293.33, a drop
    of 57.78; on GPU 2: [530, 350, 530, 1000], (10*1410 + 20*350) / 45 = 468.89, a rise of
    117.78; neither loses gap value (V(530) - V(60) = V(1000) - V(530) = 1/2).
    """
    policy, state = policy_state
    assert policy.score(state, 3, np.array([0])).tolist() == [57778]
    assert policy.share_gpu(state, 3, 0) == 0


def test_prices_keep_a_470_gap_for_a_470(tmp_path: Path) -> None:
    """The LP prices overrule stranded capacity: a 320 stays off a 470's GPU; FGD takes it.

    Typical pods 650, 470, 320 with 40, 20, 15 pods: the LP packs 650 (+320) alone and
    470+470, with v(650) = 1, v(470) = 1/2, v(320) = 0. On n0's GPUs [530, 1000] the 320
    beside the 470 leaves [210, 1000]: stranded (40*530)/75 = 282.67 falls to 210 (every
    shape misses the 210), a drop of 72.67, but it loses V(530) - V(210) - 0 = 1/2 GPU;
    on the idle GPU, [530, 680], nothing changes and nothing is lost (V(1000) = V(680) =
    1). FGD's measure alone sees only the drop and takes GPU 0.
    """
    nodes = [("n0", 96000, 393216, 2, "T4")]
    pods: list[Pod] = [("held-470", 1000, 1024, 1, 470, ""), ("p320", 1000, 1024, 1, 320, "")]
    state = ClusterState(openb_instance(tmp_path, nodes, pods))
    state.place(0, 0, np.array([0]))
    typical = _typical([1000, 1000, 1000], [650, 470, 320], [1, 1, 1], [40, 20, 15])
    context = ShareContext(rng=GoRand(1), frag=NodeFrag(typical, state))
    policy = CuttingStockPolicy(context)
    assert policy.prices.size_value[[320, 470, 650]] == pytest.approx([0, 1 / 2, 1])
    assert policy.share_gpu(state, 1, 0) == 1
    assert policy.score(state, 1, np.array([0])).tolist() == [0]
    fgd = POLICIES["fgd"](context)
    fgd.score(state, 1, np.array([0]))
    assert fgd.share_gpu(state, 1, 0) == 0


def test_cpu_only_pod_spares_a_cpu_poor_node(tmp_path: Path) -> None:
    """A CPU-only pod avoids the node whose GPUs it would strand; FGD's measure sees no harm.

    Typical pods: whole GPUs with 12 CPUs. m0 (8 GPUs, 60 CPUs, first in name order) admits
    5 of its 8 GPUs' pods (3000 stranded); after a 44-CPU pod its 16 CPUs admit 1 (7000): a
    rise of 4000. m1 (8 GPUs, 160 CPUs) admits all 8 before and after (116 CPUs): 0, plus
    ORDER_WEIGHT/2 for being second. FGD only asks whether one 12-CPU pod still fits, which
    it does on both, so it ties them and takes m0.
    """
    nodes = [("m0", 60000, 393216, 8, "G2"), ("m1", 160000, 393216, 8, "G2")]
    pods: list[Pod] = [("cpu", 44000, 1024, 0, 0, "")]
    state = ClusterState(openb_instance(tmp_path, nodes, pods))
    context = ShareContext(rng=GoRand(1), frag=NodeFrag(_typical([12000], [1000], [1], [1]),
                                                         state))
    both = np.array([0, 1])
    assert CuttingStockPolicy(context).score(state, 0, both).tolist() == [-4000000, -2500000]
    fgd = POLICIES["fgd"](context).score(state, 0, both)
    assert fgd[0] == fgd[1]


def test_replay_end_state_verifies(tmp_path: Path) -> None:
    """A replay of a mixed trace ends in a static schedule the independent verifier accepts.

    Share pods of the openb sizes, whole and multi-GPU pods, CPU-only pods and T4-only pods
    on three node models, inflated to 130%: every pod is placed on a node, GPUs and model it
    fits or fails, and the allocated milli the replay reports is the verified objective.
    """
    rng = np.random.default_rng(3)
    nodes = ([(f"g8-{k}", 96000, 393216, 8, "G2") for k in range(4)]
             + [(f"t2-{k}", 104000, 524288, 2, "T4") for k in range(4)]
             + [(f"p2-{k}", 16000, 122880, 2, "P100") for k in range(3)])
    pods: list[Pod] = []
    for k in range(60):
        gpus, milli = [(0, 0), (1, 1000), (2, 1000), (8, 1000), (1, 810), (1, 470), (1, 320),
                       (1, 160)][int(rng.choice(8, p=[.1, .35, .05, .02, .18, .15, .1, .05]))]
        spec = "T4" if gpus == 1 and rng.random() < 0.1 else ""
        pods.append((f"pod-{k:02d}", int(rng.choice([2000, 4000, 12000, 24000])),
                     int(rng.choice([4096, 32768])), gpus, milli, spec))
    result = replay(openb_instance(tmp_path, nodes, pods), "cutting-stock", 42)
    verification = replay_schedule(result).verification
    assert verification is not None and verification.ok
    assert verification.objective == result.used_milli[-1] > 0
    assert (result.node < 0).any()
