"""Defragmentation by migration: rescues move few pods, chain when they must, never lose one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpuplan.core.instance import Instance
from gpuplan.harness.replay import replay_schedule
from gpuplan.sharing import ShareContext, SharePolicy
from gpuplan.sharing.cluster import ClusterState
from gpuplan.sharing.frag import NodeFrag, typical_pods
from gpuplan.sharing.gorand import GoRand
from gpuplan.sharing.migrate import Defragmenter, Move, choose
from gpuplan.sharing.policies import POLICIES
from gpuplan.sharing.replay import ReplayResult, replay
from sharing import Node, Pod, openb_instance

#: Node a holds two share pods, b a share pod, a 7000-CPU pod and a full GPU but no CPU
#: left, c one busy GPU and spare CPU: a whole-GPU pod of 2000 CPU fits nowhere.
NODES: list[Node] = [("a", 6000, 65536, 2, "T4"), ("b", 10000, 65536, 2, "T4"),
                     ("c", 64000, 262144, 1, "T4")]
PODS: list[Pod] = [("s1", 2000, 1024, 1, 700, ""), ("s2", 2000, 1024, 1, 400, ""),
                   ("s3", 3000, 1024, 1, 600, ""), ("s4", 1000, 1024, 1, 700, ""),
                   ("cpu", 6000, 1024, 0, 0, ""), ("wc", 1000, 1024, 1, 1000, ""),
                   ("w", 2000, 1024, 1, 1000, "")]
#: Where the running pods are: pod name -> (node, GPU slots).
PLACED = {"s1": ("a", [0]), "s2": ("a", [1]), "s3": ("b", [0]), "s4": ("b", [1]),
          "cpu": ("b", []), "wc": ("c", [0])}


def _cluster(tmp_path: Path, nodes: list[Node], pods: list[Pod],
             placed: dict[str, tuple[str, list[int]]], policy: str = "fgd") -> tuple[
                 ClusterState, SharePolicy]:
    """The hand-built cluster with its running pods placed, and a policy bound to it."""
    instance = openb_instance(tmp_path, nodes, pods)
    state = ClusterState(instance)
    for name, (node, gpus) in placed.items():
        state.place(instance.job_index[name], instance.node_index[node], np.array(gpus))
    context = ShareContext(rng=GoRand(1), frag=NodeFrag(typical_pods(instance), state))
    return state, POLICIES[policy](context)


def _snapshot(state: ClusterState) -> list[np.ndarray]:
    """Every array a rescue may change."""
    return [a.copy() for a in (state.cpu_free, state.mem_free, state.gpu_free, state.pod_node,
                               state.pod_gpus, state.affinity)]


def _check_books(state: ClusterState) -> None:
    """Recompute every node's and GPU's load from where the pods are; they must match."""
    instance = state.instance
    cpu = np.rint(instance.node_capacity[:, 0]).astype(np.int64)
    mem = np.rint(instance.node_capacity[:, 1]).astype(np.int64)
    gpu = np.where(np.arange(state.gpu_free.shape[1]) < state.n_gpus[:, None], 1000, 0)
    for pod in np.flatnonzero(state.pod_node >= 0).tolist():
        node, gang = int(state.pod_node[pod]), int(state.pod_gang[pod])
        slots = state.pod_gpus[pod, :gang]
        assert len(set(slots.tolist())) == gang and (state.pod_gpus[pod, gang:] == -1).all()
        cpu[node] -= state.pod_cpu[pod]
        mem[node] -= state.pod_mem[pod]
        gpu[node, slots] -= state.pod_milli[pod]
    assert (cpu == state.cpu_free).all() and (mem == state.mem_free).all()
    assert (gpu == state.gpu_free).all() and (gpu >= 0).all() and (cpu >= 0).all()


def test_one_small_move_frees_a_whole_gpu(tmp_path: Path) -> None:
    """Two GPUs each hold a share pod; moving the smaller one frees a GPU for a whole pod."""
    nodes: list[Node] = [("x", 32000, 65536, 2, "T4"), ("y", 32000, 65536, 1, "T4")]
    pods: list[Pod] = [("big", 1000, 1024, 1, 600, ""), ("small", 1000, 1024, 1, 300, ""),
                       ("other", 1000, 1024, 1, 500, ""), ("whole", 1000, 1024, 1, 1000, "")]
    state, policy = _cluster(tmp_path, nodes, pods,
                             {"big": ("x", [0]), "small": ("x", [1]), "other": ("y", [0])})
    assert len(state.feasible(3)) == 0
    defrag = Defragmenter(max_moves=2)
    moves = defrag(state, 3, policy)
    assert [m.pod for m in moves] == [1] and defrag.rescued == [3]
    assert len(state.feasible(3)) > 0 and state.pod_node[3] == -1   # left for the replay
    assert (state.pod_node[:3] >= 0).all()
    _check_books(state)


def test_a_chain_of_two_moves_when_the_moved_pod_needs_room(tmp_path: Path) -> None:
    """s2 leaves a's GPU for w, but fits only on b once b's CPU-only pod goes to c."""
    state, policy = _cluster(tmp_path, NODES, PODS, PLACED)
    index = state.instance.job_index
    moves = Defragmenter(max_moves=2)(state, index["w"], policy)
    ids = state.instance.node_index
    assert {(m.pod, m.source, m.target) for m in moves} == {
        (index["s2"], ids["a"], ids["b"]), (index["cpu"], ids["b"], ids["c"])}
    assert all(m.rescued == index["w"] for m in moves)
    where = choose(state, index["w"], policy)
    assert where is not None and where[0] == ids["a"]
    state.place(index["w"], *where)
    assert (state.pod_node >= 0).all()
    _check_books(state)


@pytest.mark.parametrize(("max_moves", "depth", "budget"), [(1, 1, None), (2, 1, None),
                                                            (2, 2, 0.1)])
def test_no_plan_within_the_limits_changes_nothing(tmp_path: Path, max_moves: int, depth: int,
                                                   budget: float | None) -> None:
    """One move, no chain, or a budget spent: the rescue fails and leaves every book as it was.

    The only plan needs two moves in a chain; a budget of 0.1 moves per arrived pod allows
    none when the seventh pod arrives (floor(0.7) = 0).
    """
    state, policy = _cluster(tmp_path, NODES, PODS, PLACED)
    before = _snapshot(state)
    defrag = Defragmenter(max_moves=max_moves, depth=depth, budget=budget)
    assert defrag(state, state.instance.job_index["w"], policy) == []
    assert all((a == b).all() for a, b in zip(before, _snapshot(state), strict=True))
    assert defrag.moves == [] and defrag.rescued == []


def test_bad_limits_are_refused() -> None:
    """Limits below one move, one level or one try, or a negative budget, are refused."""
    for kwargs in ({"max_moves": 0}, {"depth": 0}, {"tries": 0}, {"budget": -0.01}):
        with pytest.raises(ValueError, match="at least 1"):
            Defragmenter(**kwargs)


#: 40 GPUs: four 8-GPU T4 nodes with little CPU per GPU, two 2-GPU P100 nodes, two 2-GPU T4
#: nodes with much CPU (as openb's G2 and T4 nodes).
MIXED_NODES: list[Node] = ([(f"g8-{k}", 48000, 196608, 8, "T4") for k in range(4)]
                           + [(f"p2-{k}", 32000, 131072, 2, "P100") for k in range(2)]
                           + [(f"t2-{k}", 104000, 393216, 2, "T4") for k in range(2)])


def _mixed_instance(tmp_path: Path) -> Instance:
    """60 pods of every kind (CPU-only, share, whole, multi-GPU, some T4-only)."""
    rng = np.random.default_rng(18)
    pods: list[Pod] = []
    for k in range(60):
        kind = rng.choice(["cpu", "share", "whole", "multi"], p=[0.15, 0.55, 0.25, 0.05])
        gpus, milli = {"cpu": (0, 0), "share": (1, int(rng.choice([230, 470, 650, 810]))),
                       "whole": (1, 1000), "multi": (int(rng.choice([2, 4])), 1000)}[kind]
        spec = "T4" if gpus and rng.random() < 0.2 else ""
        pods.append((f"pod-{k:02d}", int(rng.choice([4000, 6000, 8000, 12000, 16000])),
                     int(rng.choice([8192, 32768])), gpus, milli, spec))
    return openb_instance(tmp_path, MIXED_NODES, pods)


def _replay_moves(result: ReplayResult, one_at_a_time: bool) -> None:
    """Replay placements and moves in arrival order on a fresh cluster; it must end as the result.

    A pod first goes where it was before its first move (its final place if never moved).
    Each move must find its pod exactly at the move's source; a rescue's moves run together
    (all moved pods stop, then start at their targets) or, ``one_at_a_time``, one by one in
    the listed order. Every step must pass :meth:`ClusterState.place`'s capacity checks.
    """
    state = ClusterState(result.instance)
    start = {p: (int(result.node[p]), result.gpus[p][result.gpus[p] >= 0])
             for p in range(result.instance.n_jobs)}
    by_rescue: dict[int, list[Move]] = {}
    for move in reversed(result.moves):
        start[move.pod] = (move.source, move.source_gpus)
    for move in result.moves:
        by_rescue.setdefault(move.rescued, []).append(move)
    for pod in range(result.instance.n_jobs):
        moves = by_rescue.get(pod, [])
        for move in moves:
            assert state.pod_node[move.pod] == move.source
            held = state.pod_gpus[move.pod][state.pod_gpus[move.pod] >= 0]
            assert sorted(held.tolist()) == sorted(move.source_gpus.tolist())
        steps = [[move] for move in moves] if one_at_a_time else [moves]
        for step in steps:
            for move in step:
                state.remove(move.pod)
            for move in step:
                state.place(move.pod, move.target, move.target_gpus)
        node, gpus = start[pod]
        if node >= 0:
            state.place(pod, node, gpus)
        else:
            assert not moves, "a rescued pod was not placed"
    assert (state.pod_node == result.node).all() and (state.pod_gpus == result.gpus).all()
    _check_books(state)


@pytest.mark.parametrize("one_at_a_time", [False, True])
@pytest.mark.parametrize("policy", ["fgd", "best-fit", "random"])
def test_replay_with_migration_never_loses_a_pod(tmp_path: Path, policy: str,
                                                 one_at_a_time: bool) -> None:
    """With migration the replay rescues pods, and its end state is a valid placement.

    Moves replay (together per rescue, or one pod at a time when asked) onto the same end
    state, every rescued pod is placed, every other pod is on one node or failed, loads add
    up, and the verifier accepts the end state as a static max-weight schedule.
    """
    defrag = Defragmenter(max_moves=2, one_at_a_time=one_at_a_time)
    result = replay(_mixed_instance(tmp_path), policy, 7, rescue=defrag)
    assert len(result.moves) > 0
    _replay_moves(result, one_at_a_time)
    verification = replay_schedule(result).verification
    assert verification is not None and verification.ok


def test_a_swap_runs_only_as_stop_then_start(tmp_path: Path) -> None:
    """A and B must trade places for W; one at a time neither has room first, so no rescue.

    x has W's free GPU but A's CPU; A fits on y only once B is gone, and B on x only once A
    is gone.
    """
    nodes: list[Node] = [("x", 10000, 65536, 2, "T4"), ("y", 10000, 65536, 1, "T4")]
    pods: list[Pod] = [("A", 8000, 1024, 1, 300, ""), ("B", 4000, 1024, 1, 300, ""),
                       ("W", 5000, 1024, 1, 1000, "")]
    placed = {"A": ("x", [0]), "B": ("y", [0])}
    state, policy = _cluster(tmp_path, nodes, pods, placed)
    before = _snapshot(state)
    assert Defragmenter(max_moves=2, one_at_a_time=True)(state, 2, policy) == []
    assert all((a == b).all() for a, b in zip(before, _snapshot(state), strict=True))
    moves = Defragmenter(max_moves=2)(state, 2, policy)
    assert {(m.pod, m.source, m.target) for m in moves} == {(0, 0, 1), (1, 1, 0)}
    assert len(state.feasible(2)) > 0
    _check_books(state)


def test_the_budget_caps_moves_per_arrived_pod(tmp_path: Path) -> None:
    """However many pods fail, moves so far never exceed the budget's share of pods so far."""
    defrag = Defragmenter(max_moves=2, budget=0.02)
    result = replay(_mixed_instance(tmp_path), "fgd", 7, rescue=defrag)
    assert defrag.moves == list(result.moves) and len(result.moves) > 0
    done = 0
    for pod in sorted({m.rescued for m in result.moves}):
        done += sum(m.rescued == pod for m in result.moves)
        assert done <= 0.02 * (pod + 1)


@pytest.mark.parametrize("policy", list(POLICIES))
def test_a_rescue_that_never_moves_leaves_the_replay_as_fgds(tmp_path: Path,
                                                           policy: str) -> None:
    """A zero budget replays exactly as without a rescue, Random's draws included."""
    instance = _mixed_instance(tmp_path)
    plain = replay(instance, policy, 3)
    idle = replay(instance, policy, 3, rescue=Defragmenter(budget=0.0))
    assert idle.moves == () and (idle.node == plain.node).all()
    assert (idle.gpus == plain.gpus).all() and (idle.used_milli == plain.used_milli).all()
