"""simple_bound: the best bound a solve's share of time proves, and never beyond a plan."""

from __future__ import annotations

from conftest import instance_from

from gpuplan import Instance, ObjectiveKind, plan
from gpuplan.core.budget import Budget, Limits
from gpuplan.models.bounds import objective_bound
from gpuplan.parts.bounds import simple_bound


def _shared_gpus() -> Instance:
    """Six jobs of 50 of 80 GiB and 0.2 compute on two GPUs: no two fit one GPU.

    By compute the work is 6 * 0.2 * 100 GPU-seconds over 2 GPUs, 60 s; by memory
    187.5 s; as whole GPUs (what any plan does) 300 s.
    """
    return instance_from({
        "gpu_types": [{"id": "G", "capacity": {"memory_gib": 80.0, "compute": 1.0}}],
        "nodes": [{"id": "n", "gpus": {"G": 2}}],
        "jobs": [{"id": f"j{k}", "demand": {"memory_gib": 50, "compute": 0.2},
                  "duration_s": 100} for k in range(6)],
        "objective": "makespan",
    })


def test_the_bound_proves_the_optimum_where_jobs_cannot_share() -> None:
    """The user sees a bound equal to the plan's makespan: the plan is proven optimal."""
    instance = _shared_gpus()
    bound = simple_bound(instance, Limits(Budget()))
    assert 299.99 <= bound <= 300.0
    schedule = plan(instance, "greedy")
    assert schedule.objective == 300.0
    assert bound <= schedule.objective


def test_a_spent_budget_still_gives_the_combinatorial_bound() -> None:
    """With no time for an LP the bound is still proven: the combinatorial one."""
    instance = _shared_gpus()
    assert simple_bound(instance, Limits(Budget(0.0))) == objective_bound(instance)


def test_other_objectives_get_the_combinatorial_bound() -> None:
    """Weighted completion is bounded without LPs, by the same function greedy reports."""
    instance = _shared_gpus().with_objective(ObjectiveKind.WEIGHTED_COMPLETION)
    assert simple_bound(instance, Limits(Budget())) == objective_bound(instance)
