"""The greedy planners: known answers, determinism, and verified plans on random instances."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import INSTANCES, instance_from, run_cli
from hypothesis import HealthCheck, given, settings
from strategies import instance_documents

from gpuplan import InputError, Instance, ObjectiveKind, Status, plan
from gpuplan.core.objectives import ALL_OBJECTIVES
from gpuplan.core.settings import RunSettings


def one_type(jobs: list[dict[str, Any]], gpus: int, objective: str) -> Instance:
    """An instance on one node of ``gpus`` identical GPUs with unit capacities."""
    return instance_from(
        {
            "gpu_types": [{"id": "G", "capacity": {"compute": 1.0},
                           "sharing": True, "cost_per_hour": 1.0}],
            "nodes": [{"id": "n", "gpus": {"G": gpus}}],
            "jobs": jobs,
            "objective": objective,
        }
    )


def test_list_schedule_small(small: Instance) -> None:
    """On the small instance list scheduling meets the dependency-chain bound: optimal."""
    schedule = plan(small)
    assert schedule.status is Status.OPTIMAL
    assert schedule.objective == pytest.approx(1300.0)
    assert schedule.bound == pytest.approx(1300.0)
    assert schedule.verification is not None and schedule.verification.ok


def test_best_fit_decreasing_packs_tightly() -> None:
    """Sizes 0.5, 0.5, 0.4, 0.3, 0.3 fill exactly two unit GPUs (the volume bound)."""
    sizes = [0.3, 0.5, 0.4, 0.3, 0.5]
    jobs = [
        {"id": f"j{i}", "demand": {"compute": s}, "duration_s": 10} for i, s in enumerate(sizes)
    ]
    schedule = plan(one_type(jobs, 4, "min-gpus"))
    assert schedule.status is Status.OPTIMAL
    assert schedule.objective == 2
    assert {tuple(p.gpu_ids) for p in schedule.segments} == {("n/0",), ("n/1",)}


def test_max_weight_drops_the_least_dense_job() -> None:
    """With room for two of three unit jobs, the two heaviest are kept."""
    jobs = [
        {"id": "light", "demand": {"compute": 1.0}, "duration_s": 10, "weight": 1},
        {"id": "heavy", "demand": {"compute": 1.0}, "duration_s": 10, "weight": 5},
        {"id": "mid", "demand": {"compute": 1.0}, "duration_s": 10, "weight": 3},
    ]
    schedule = plan(one_type(jobs, 2, "max-weight"))
    assert schedule.status is Status.FEASIBLE
    assert schedule.objective == 8
    assert [u.job for u in schedule.unplaced] == ["light"]
    assert "compute" in schedule.unplaced[0].reason


def test_assign_cost_places_inflexible_jobs_first(small: Instance) -> None:
    """Regret order: the L4-only job gets an L4 before cheaper-on-L4 jobs fill them."""
    instance = small.with_objective(ObjectiveKind.ASSIGN_COST)
    schedule = plan(instance)
    assert schedule.status is Status.FEASIBLE
    assert not schedule.unplaced
    placed = {p.job: p.gpu_type for p in schedule.segments}
    assert placed["sweep-b"] == "L4"
    assert placed["sweep-a"] == "A100"  # its L4 pair no longer has 20 GiB free twice


def test_assign_cost_takes_the_cheapest_type_without_pressure(small: Instance) -> None:
    """With capacity to spare every job lands on its cheapest type: optimal at the bound."""
    jobs = [
        {"id": f"j{i}", "demand": {"compute": 0.1}, "duration_s": 10, "cost": {"A": i, "B": 5 - i}}
        for i in range(6)
    ]
    instance = instance_from(
        {
            "gpu_types": [{"id": t, "capacity": {"compute": 1.0}, "sharing": True} for t in "AB"],
            "nodes": [{"id": "n", "gpus": {"A": 1, "B": 1}}],
            "jobs": jobs,
            "objective": "assign-cost",
        }
    )
    schedule = plan(instance)
    assert schedule.status is Status.OPTIMAL
    assert schedule.objective == pytest.approx(0 + 1 + 2 + 2 + 1 + 0)


def test_greedy_is_deterministic_and_leaves_the_instance_alone(small: Instance) -> None:
    """Two runs give the same plan, and the instance's arrays cannot be written."""
    for objective in sorted(ALL_OBJECTIVES):
        if objective.needs_job_profit:
            continue  # the small instance has no profits
        instance = small.with_objective(objective)
        first, second = plan(instance), plan(instance)
        assert first.segments == second.segments
        assert first.unplaced == second.unplaced
    assert not small.demand.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        small.duration[0, 0] = 1.0


def test_deadline_miss_is_reported_per_job() -> None:
    """Two jobs that cannot both meet their deadline on one GPU: no solution, job named."""
    jobs = [
        {"id": "a", "demand": {"compute": 1.0}, "duration_s": 100, "deadline_s": 150},
        {"id": "b", "demand": {"compute": 1.0}, "duration_s": 100, "deadline_s": 150},
    ]
    schedule = plan(one_type(jobs, 1, "makespan"))
    assert schedule.status is Status.NO_SOLUTION
    assert schedule.objective is None
    assert [u.job for u in schedule.unplaced] == ["b"]
    assert "earliest finish 200 s is after its deadline 150 s" in schedule.unplaced[0].reason


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=instance_documents())
def test_greedy_plans_always_verify(document: dict[str, Any]) -> None:
    """On random instances every greedy plan passes the verifier (plan() raises otherwise)."""
    instance = instance_from(document)
    schedule = plan(instance)
    assert schedule.verification is not None
    assert schedule.verification.ok == schedule.status.has_plan
    objective = instance.objective
    if objective.allows_unplaced or (not objective.is_static and np.isinf(instance.deadline).all()):
        # Nothing can stop these: dropping is allowed, or time is unbounded.
        assert schedule.status.has_plan
    if schedule.status.has_plan:
        assert schedule.objective == pytest.approx(schedule.verification.objective)
        assert schedule.objective is not None and schedule.bound is not None
        better = schedule.objective >= schedule.bound - 1e-6
        assert better if objective.sense == "min" else schedule.objective <= schedule.bound + 1e-6


def _many_jobs(objective: str, n: int = 2000) -> Instance:
    """``n`` quarter-GPU jobs of 10 s on one node of 100 GPUs."""
    return one_type([{"id": f"j{k}", "demand": {"compute": 0.25}, "duration_s": 10.0}
                     for k in range(n)], 100, objective)


def test_greedy_stops_at_its_time_limit() -> None:
    """A limit too short for the pass leaves the jobs it did not reach out, saying so.

    Under max-weight that is still a plan (verified); an objective that needs every job
    gets no plan, and no claim.
    """
    partial = plan(_many_jobs("max-weight"), "greedy", settings=RunSettings(time_limit_s=1e-4))
    assert partial.status is Status.FEASIBLE
    assert partial.verification is not None and partial.verification.ok
    assert 0 < len(partial.segments) < 400
    assert partial.unplaced and all("time limit" in u.reason for u in partial.unplaced)
    none = plan(_many_jobs("makespan"), "greedy", settings=RunSettings(time_limit_s=1e-4))
    assert none.status is Status.NO_SOLUTION and none.objective is None
    assert any("time limit" in u.reason for u in none.unplaced)
    whole = plan(_many_jobs("max-weight"), "greedy", settings=RunSettings(time_limit_s=60))
    assert len(whole.segments) == 400


def test_iterations_are_refused(small: Instance) -> None:
    """Greedy counts no iterations: ``--iterations`` is exit 2 naming the flag and greedy.

    It would otherwise be ignored without a word (greedy makes one pass).
    """
    with pytest.raises(InputError) as refused:
        plan(small, "greedy", settings=RunSettings(iterations=5))
    assert refused.value.source == "`iterations`" and "greedy" in str(refused.value)
    result = run_cli("solve", INSTANCES / "quickstart.json", "--method", "greedy",
                     "--iterations", "5")
    assert result.returncode == 2
    assert "--iterations" in result.stderr and "greedy" in result.stderr
