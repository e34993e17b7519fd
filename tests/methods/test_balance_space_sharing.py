"""Space sharing: pair columns priced in, pair-aware rounds, and the verifier's pair rule."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import run_cli

from gpuplan import Schedule, Status, plan, verify_schedule
from gpuplan.backends import get_backend
from gpuplan.core.budget import Budget, Limits
from gpuplan.core.errors import InputError
from gpuplan.core.instance import Instance
from gpuplan.core.schedule import Segment, ViolationKind
from gpuplan.core.settings import Context
from gpuplan.methods.balance import BalanceMethod, BalanceOptions
from gpuplan.models.allocation import (
    Colocation,
    PairColumns,
    Policy,
    ThroughputData,
    fairness_scale,
    rate_program,
)
from gpuplan.parts.allocation import Allocation, AllocationOptions, solve_policy
from gpuplan.readers.instance_file import build_instance, parse_document


def solve(data: ThroughputData, policy: Policy, sharing: bool = True) -> Allocation:
    """Solve a policy without a time limit, with pairs sharing GPUs unless told not to."""
    return solve_policy(data, AllocationOptions(policy=policy.value, space_sharing=sharing),
                        Context(Budget()))


def pair_instance(speeds: tuple[float, float] = (0.8, 0.8), gpus: int = 1) -> Instance:
    """Two preemptible 1-s jobs of classes a and b on ``gpus`` GPUs; a+b share at ``speeds``."""
    return build_instance(parse_document({
        "name": "pair",
        "gpu_types": [{"id": "A", "capacity": {"compute": 1.0}}],
        "nodes": [{"id": "n", "gpus": {"A": gpus}}],
        "jobs": [{"id": name, "demand": {"compute": 1.0}, "duration_s": 1.0,
                  "preemptible": True, "colocation_class": name} for name in ("a", "b")],
        "colocation": [{"gpu_type": "A", "classes": ["a", "b"], "speeds": list(speeds)}],
        "objective": "makespan",
    }, "<test>"), "<test>")


def test_pair_makespan_by_hand() -> None:
    """One GPU: alone each job gets half (makespan 2 s); paired at 0.8 both end at 1.25 s."""
    data = ThroughputData.from_instance(pair_instance())
    alone = solve(data, Policy.MAKESPAN, sharing=False)
    shared = solve(data, Policy.MAKESPAN)
    assert alone.value == pytest.approx(2.0)
    assert shared.status is Status.OPTIMAL and shared.value == pytest.approx(1.25)
    assert shared.pair_share is not None and shared.pair_share.sum() == pytest.approx(1.0)


def test_slow_pairs_are_not_used() -> None:
    """Speeds 0.4 + 0.4 < 1 do less than one job alone: each keeps half the GPU (1/2)."""
    data = ThroughputData.from_instance(pair_instance((0.4, 0.4)))
    shared = solve(data, Policy.MAX_MIN_FAIRNESS)
    assert shared.value == pytest.approx(0.5)
    assert shared.pair_share is not None and shared.pair_share.sum() == pytest.approx(0.0)


def random_data(seed: int, n_jobs: int = 14, n_classes: int = 4) -> ThroughputData:
    """Random rates, gangs 1/2 and class-pair speeds on three types (some pairs banned)."""
    rng = np.random.default_rng(seed)
    speed = rng.uniform(0.3, 1.0, size=(n_classes, n_classes, 3))
    speed[rng.random(speed.shape) < 0.2] = 0.0
    return ThroughputData(
        rate=rng.uniform(0.5, 3.0, size=(n_jobs, 3)) * [1.0, 0.6, 0.3],
        gang=rng.choice([1, 2], size=n_jobs), gpus=np.array([3.0, 4.0, 5.0]),
        weight=rng.choice([1.0, 2.0], size=n_jobs), release=np.zeros(n_jobs),
        deadline=np.full(n_jobs, np.inf), price_per_hour=np.zeros(3),
        colocation=Colocation(rng.integers(0, n_classes, size=n_jobs), speed))


def every_pair_optimum(data: ThroughputData, scale: np.ndarray) -> float:
    """The max-min LP with every allowed pair column listed up front."""
    assert data.colocation is not None
    a, b = np.triu_indices(data.n_jobs, 1)
    a, b, t = (np.repeat(a, 3), np.repeat(b, 3), np.tile(np.arange(3), a.size))
    cls, speed = data.colocation.job_class, data.colocation.speed
    keep = ((data.gang[a] == data.gang[b]) & (speed[cls[a], cls[b], t] > 0)
            & (speed[cls[b], cls[a], t] > 0))
    pairs = PairColumns(a[keep], b[keep], t[keep])
    master = get_backend("highs").open(rate_program(data, scale).program, Limits(Budget()))
    start, index, value = pairs.matrix(data, scale)
    master.add_columns(np.zeros(pairs.size), np.ones(pairs.size), start, index, value)
    solution = master.solve(Budget())
    assert solution.objective is not None
    return solution.objective


@pytest.mark.parametrize("seed", range(5))
def test_column_generation_reaches_the_all_pairs_optimum(seed: int) -> None:
    """Pricing pairs in ends at the optimum of the LP that lists every pair (max-min)."""
    data = random_data(seed)
    priced = solve(data, Policy.MAX_MIN_FAIRNESS)
    scale, unit = fairness_scale(data)
    assert priced.status is Status.OPTIMAL
    assert priced.value == pytest.approx(every_pair_optimum(data, scale) / unit, rel=1e-6)
    alone = solve(data, Policy.MAX_MIN_FAIRNESS, sharing=False)
    assert priced.value is not None and alone.value is not None
    assert priced.value >= alone.value - 1e-9


def shared_schedule(instance: Instance, end: float) -> Schedule:
    """Both jobs on GPU n/0 over [0, end]."""
    return Schedule(
        instance=instance.name, objective_kind="makespan", status=Status.FEASIBLE,
        objective=end, bound=None, gap=None, method="hand", solver="hand", wall_time_s=0.0,
        seed=0, gpuplan_version="test",
        segments=[Segment(job=j, node="n", gpu_type="A", gpu_ids=["n/0"], start_s=0.0,
                          end_s=end) for j in ("a", "b")],
        unplaced=[])


def test_verifier_runs_a_declared_pair_at_its_speeds() -> None:
    """Sharing [0, 1.25] at 0.8 does all the work; [0, 1] does 0.8 of it: SEGMENT."""
    instance = pair_instance()
    assert verify_schedule(instance, shared_schedule(instance, 1.25)).ok
    short = verify_schedule(instance, shared_schedule(instance, 1.0))
    assert {v.kind for v in short.violations} == {ViolationKind.SEGMENT}


def test_verifier_holds_undeclared_pairs_to_capacity() -> None:
    """Without a colocation entry the same overlap exceeds the GPU's compute."""
    instance = pair_instance()
    bare = dataclasses.replace(instance, colocation_speed=np.zeros_like(
        instance.colocation_speed))
    verdict = verify_schedule(bare, shared_schedule(bare, 1.0))
    assert ViolationKind.CAPACITY in {v.kind for v in verdict.violations}


def write(tmp_path: Path, document: dict[str, Any]) -> Path:
    """An instance file."""
    path = tmp_path / "pair.json"
    path.write_text(json.dumps(document))
    return path


def test_cli_space_sharing_plan_is_verified(tmp_path: Path) -> None:
    """Balance --space-sharing on two pairable jobs: a verified 1.25-s round-based plan."""
    source = {
        "gpu_types": [{"id": "A", "capacity": {"compute": 1.0}}],
        "nodes": [{"id": "n", "gpus": {"A": 1}}],
        "jobs": [{"id": name, "demand": {"compute": 1.0}, "duration_s": 1.0,
                  "preemptible": True, "colocation_class": name} for name in ("a", "b")],
        "colocation": [{"gpu_type": "A", "classes": ["a", "b"], "speeds": [0.8, 0.8]}],
        "objective": "makespan",
    }
    out = tmp_path / "plan.json"
    result = run_cli("solve", write(tmp_path, source), "--method", "balance", "--policy",
                     "makespan", "--space-sharing", "--round", "1", "-o", out)
    assert result.returncode == 0, result.stderr
    schedule = Schedule.read(out)
    assert schedule.objective == pytest.approx(1.25)
    assert schedule.verification is not None and schedule.verification.ok


def test_cli_space_sharing_needs_colocation_data(tmp_path: Path) -> None:
    """--space-sharing on an instance without colocation speeds: exit 2, names the field."""
    source = {"gpu_types": [{"id": "A", "capacity": {"compute": 1.0}}],
              "nodes": [{"id": "n", "gpus": {"A": 1}}],
              "jobs": [{"id": "a", "duration_s": 1.0}], "objective": "makespan"}
    result = run_cli("solve", write(tmp_path, source), "--method", "balance",
                     "--space-sharing")
    assert result.returncode == 2 and "colocation" in result.stderr


def test_space_sharing_without_colocation_data_is_refused() -> None:
    """An instance without colocation speeds: refused before solving, naming --space-sharing."""
    instance = build_instance(parse_document({
        "gpu_types": [{"id": "A", "capacity": {"compute": 1.0}}],
        "nodes": [{"id": "n", "gpus": {"A": 1}}],
        "jobs": [{"id": "a", "duration_s": 1.0}], "objective": "makespan"}, "<test>"), "<test>")
    with pytest.raises(InputError) as error:
        plan(instance, "balance", {"policy": "makespan", "space_sharing": True})
    assert error.value.path == "colocation" and "`space_sharing`" in error.value.message


@pytest.mark.parametrize("fields", [{"policy": "max-throughput"},
                                    {"policy": "makespan", "partitions": 2}])
def test_space_sharing_needs_an_unpartitioned_max_min_policy(fields: dict[str, Any]) -> None:
    """Another policy, or partitions: refused before solving, naming --space-sharing."""
    with pytest.raises(InputError) as error:
        plan(pair_instance(gpus=2), "balance", {**fields, "space_sharing": True})
    assert error.value.source == "`space_sharing`"
    assert "max-min-fairness or makespan" in error.value.message


def test_space_sharing_on_pyomo_is_refused_naming_the_solver() -> None:
    """Column generation needs a program held open, which Pyomo does not offer: --solver."""
    with pytest.raises(InputError) as error:
        plan(pair_instance(), "balance", {"policy": "makespan", "space_sharing": True,
                                          "solver": "pyomo"})
    assert error.value.source == "`backend`" and "incremental" in error.value.message


def test_space_shared_segments_name_their_partner_and_work() -> None:
    """The plan states, per segment, the segment sharing its GPUs and its share of the work.

    On one GPU, a and b share at speed 0.8 and c runs alone; in 0.25-s rounds the pair and
    c take turns (makespan 2.25 s). Each pair segment names the other job's segment over
    the same interval and GPUs and does 0.8 * 0.25 of its 1-s job; c's segments share
    nothing and do 0.25; every job's work adds up to 1.
    """
    instance = build_instance(parse_document({
        "gpu_types": [{"id": "A", "capacity": {"compute": 1.0}}],
        "nodes": [{"id": "n", "gpus": {"A": 1}}],
        "jobs": [{"id": name, "demand": {"compute": 1.0}, "duration_s": 1.0,
                  "preemptible": True, "colocation_class": name} for name in "abc"],
        "colocation": [{"gpu_type": "A", "classes": ["a", "b"], "speeds": [0.8, 0.8]}],
        "objective": "makespan"}, "<test>"), "<test>")
    options: dict[str, Any] = {"policy": "makespan", "round_s": 0.25, "space_sharing": True}
    result = BalanceMethod().solve(instance, BalanceOptions(**options), Context(Budget()))
    assert result.objective == pytest.approx(2.25)
    assert result.partner is not None and result.work is not None
    partner, work = result.partner, result.work
    alone = result.job == 2
    assert (partner[alone] == -1).all() and (partner[~alone] >= 0).all()
    for k in np.flatnonzero(~alone).tolist():
        mate = int(partner[k])
        assert partner[mate] == k and result.job[mate] != result.job[k]
        assert (result.start[mate], result.end[mate]) == (result.start[k], result.end[k])
        assert result.gpus[mate].tolist() == result.gpus[k].tolist()
    assert work[~alone] == pytest.approx(0.8 * 0.25) and work[alone] == pytest.approx(0.25)
    assert np.bincount(result.job, weights=work) == pytest.approx([1.0, 1.0, 1.0])
    assert result.restore_s is None and result.migrate_s is None
    schedule = plan(instance, "balance", options)
    assert schedule.verification is not None and schedule.verification.ok
    assert {(s.job, s.partner) for s in schedule.segments} == {("a", "b"), ("b", "a"),
                                                               ("c", None)}
