"""The verifier holds plans to the cluster's shape: whole GPUs, node resources, gangs, racks.

The plans here are hand-made for ``tests/data/racks_small.json`` (four 8-GPU H100 nodes, a1
and a2 in rack r1, b1 and b2 in rack r2, 64 CPUs and 512 GiB each) and for a two-GPU fleet
held whole or shared.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import DATA, instance_from
from test_verify import schedule_of

from gpuplan import Instance, ObjectiveKind, read_instance, verify_schedule
from gpuplan.core.schedule import ViolationKind

Plan = dict[str, tuple[str, str, list[str], float, float]]


def gpus(node: str, count: int, first: int = 0) -> list[str]:
    """GPU ids ``node/first`` .. on one node."""
    return [f"{node}/{k}" for k in range(first, first + count)]


#: A valid plan of racks_small.json: the rack-bound gang in r2, the whole-fleet gang after it,
#: the gang that prefers a rack within r1 (at its duration), small jobs after, the CPU-only
#: job on a1 once eval-1's CPUs are back.
RACKS: Plan = {
    "train-rack": ("b1", "H100", gpus("b1", 8) + gpus("b2", 8), 0.0, 3600.0),
    "tune": ("a1", "H100", gpus("a1", 8) + gpus("a2", 8), 0.0, 1000.0),
    "preprocess": ("a1", "H100", [], 1600.0, 1900.0),
    "eval-1": ("a1", "H100", gpus("a1", 1), 1000.0, 1600.0),
    "eval-2": ("a2", "H100", gpus("a2", 1), 1000.0, 1600.0),
    "embed": ("a2", "H100", gpus("a2", 2, 1), 1000.0, 1900.0),
    "train-fleet": ("a1", "H100", gpus("a1", 8) + gpus("a2", 8) + gpus("b1", 8)
                    + gpus("b2", 8), 3600.0, 5400.0),
}


@pytest.fixture
def racks() -> Instance:
    """Four nodes in two racks with CPUs and memory (makespan)."""
    return read_instance(DATA / "racks_small.json")


def violations(instance: Instance, plan: Plan, **fields: Any) -> dict[ViolationKind, list[str]]:
    """The verifier's violations of a hand-made plan, by kind."""
    found: dict[ViolationKind, list[str]] = {}
    for v in verify_schedule(instance, schedule_of(plan, instance, **fields)).violations:
        found.setdefault(v.kind, []).append(v.message)
    return found


def test_the_hand_made_plan_verifies(racks: Instance) -> None:
    """Multi-node gangs within their rack, node draws within capacity, a CPU-only job: ok.

    If this broke, valid plans of a real cluster's shape would be rejected.
    """
    assert violations(racks, RACKS, objective=5400.0) == {}


def test_two_jobs_on_a_gpu_held_whole_are_flagged() -> None:
    """Two jobs on one GPU at once is a violation unless the type declares sharing.

    If this broke, ``gpuplan check`` would pass a plan the cluster cannot run as written
    (the issue's cp plan stacked a 70 GiB and a 10 GiB job on the same H100s).
    """
    document: dict[str, Any] = {
        "gpu_types": [{"id": "H100", "capacity": {"memory_gib": 80}}],
        "nodes": [{"id": "n", "gpus": {"H100": 2}}],
        "jobs": [{"id": "pretrain", "gpus": 2, "demand": {"memory_gib": 70},
                  "duration_s": 600},
                 {"id": "infer-batch", "demand": {"memory_gib": 10}, "duration_s": 300}],
        "objective": "makespan",
    }
    plan: Plan = {"pretrain": ("n", "H100", ["n/0", "n/1"], 0.0, 600.0),
                  "infer-batch": ("n", "H100", ["n/1"], 100.0, 400.0)}
    whole = violations(instance_from(document), plan)
    assert list(whole) == [ViolationKind.EXCLUSIVE]
    assert whole[ViolationKind.EXCLUSIVE] == [
        "GPU n/1 is held by 2 jobs at once at 100 s ('pretrain', 'infer-batch'), but H100 "
        "GPUs are held whole: the instance does not declare them sharing"]
    document["gpu_types"][0]["sharing"] = True
    assert violations(instance_from(document), plan) == {}


def test_a_static_plan_holds_every_gpu_whole_at_once() -> None:
    """Under a static objective the whole batch runs at once: two jobs on a GPU are flagged."""
    instance = instance_from({
        "gpu_types": [{"id": "G", "capacity": {"memory_gib": 80}}],
        "nodes": [{"id": "n", "gpus": {"G": 2}}],
        "jobs": [{"id": f"j{k}", "demand": {"memory_gib": 10}, "duration_s": 1}
                 for k in range(2)],
        "objective": "max-weight",
    })
    plan: Plan = {"j0": ("n", "G", ["n/0"], 0.0, 1.0), "j1": ("n", "G", ["n/0"], 0.0, 1.0)}
    assert list(violations(instance, plan)) == [ViolationKind.EXCLUSIVE]


def test_a_gang_fills_its_nodes_evenly(racks: Instance) -> None:
    """A multi-node gang takes gpus_per_node GPUs on each of its nodes, no other split."""
    plan = dict(RACKS)
    plan["tune"] = ("a1", "H100", gpus("a1", 6) + gpus("a2", 8) + gpus("b1", 2, 6), 0.0, 1000.0)
    found = violations(racks, plan)
    assert ViolationKind.GANG in found
    assert ("job 'tune' runs its 16 GPUs as 6 on a1, 8 on a2, 2 on b1, but its gang takes 8 "
            "on each of 2 nodes (gpus_per_node)") in found[ViolationKind.GANG]


def test_a_gang_named_by_a_node_it_does_not_use_is_flagged(racks: Instance) -> None:
    """The segment's node is one of the gang's nodes."""
    plan = dict(RACKS)
    plan["tune"] = ("b1", *RACKS["tune"][1:])
    found = violations(racks, plan)
    assert any("node 'b1' holds none of its GPUs" in m for m in found[ViolationKind.GANG])


def test_a_gang_outside_its_required_rack_is_flagged(racks: Instance) -> None:
    """A gang that must stay within one rack may not span two.

    If this broke, plans would straddle racks the job may not leave.
    """
    plan = dict(RACKS)
    plan["train-rack"] = ("a2", "H100", gpus("a2", 8) + gpus("b1", 8), 0.0, 3600.0)
    found = violations(racks, plan)
    assert found[ViolationKind.TOPOLOGY] == [
        "job 'train-rack' must stay within one rack but runs on a2 in r1, b1 in r2"]


def test_a_gang_spread_over_its_preferred_level_runs_slower(racks: Instance) -> None:
    """A gang that prefers one rack runs spread_slowdown times longer across two.

    Its duration there is 1.5 x 1000 s: 1000 s is a violation, 1500 s is right.
    """
    plan = dict(RACKS)
    plan["tune"] = ("a1", "H100", gpus("a1", 8) + gpus("b1", 8), 3600.0, 4600.0)
    plan["train-fleet"] = ("a1", "H100", RACKS["train-fleet"][2], 5000.0, 6800.0)
    found = violations(racks, plan)
    assert found[ViolationKind.DURATION] == [
        "job 'tune' runs 1000 s on H100 but takes 1500 s there spread over racks (its "
        "duration 1000 s times its spread_slowdown 1.5)"]
    plan["tune"] = ("a1", "H100", gpus("a1", 8) + gpus("b1", 8), 3600.0, 5100.0)
    plan["train-fleet"] = ("a1", "H100", RACKS["train-fleet"][2], 5100.0, 6900.0)
    assert violations(racks, plan, objective=6900.0) == {}


def test_a_job_draws_its_node_demand_on_each_of_its_nodes(racks: Instance) -> None:
    """Node resources are per node: two jobs of 40 CPUs on one 64-CPU node overflow it.

    If this broke, ``--cpus-per-task``/``--mem`` would ask Slurm for more than the node has.
    """
    plan = dict(RACKS)
    plan["eval-2"] = ("a1", "H100", gpus("a1", 1, 1), 1000.0, 1600.0)
    found = violations(racks, plan)
    assert found[ViolationKind.CAPACITY] == [
        "node a1: cpus load 80 exceeds capacity 64 at 1000 s (jobs 'eval-1', 'eval-2')"]


def test_a_cpu_only_job_draws_on_its_node(racks: Instance) -> None:
    """A CPU-only job holds no GPU but counts on its node's CPUs."""
    plan = dict(RACKS)
    plan["preprocess"] = ("a1", "H100", [], 1200.0, 1500.0)
    found = violations(racks, plan)
    assert found[ViolationKind.CAPACITY] == [
        "node a1: cpus load 100 exceeds capacity 64 at 1200 s (jobs 'preprocess', 'eval-1')"]


def test_load_is_of_the_declared_resources(small: Instance) -> None:
    """min-max-load counts the resources the file declares (its GPUs are shared)."""
    plan: Plan = {"prep": ("n2", "A100", ["n2/0"], 0.0, 100.0),
                  "sweep-b": ("n2", "L4", ["n2/2"], 0.0, 300.0)}
    static = small.with_objective(ObjectiveKind.MIN_MAX_LOAD)
    verification = verify_schedule(static, schedule_of(plan, static))
    assert verification.objective == pytest.approx(20 / 24)
