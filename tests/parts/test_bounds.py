"""Bounds that need no search: simple_bound and the energetic search, never beyond a plan."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import instance_from
from hypothesis import HealthCheck, assume, given, settings
from strategies import instance_documents

from gpuplan import Instance, ObjectiveKind, Status, plan
from gpuplan.backends import get_backend
from gpuplan.core.budget import Budget, Limits
from gpuplan.core.errors import InputError
from gpuplan.core.settings import RunSettings
from gpuplan.models.bounds import objective_bound
from gpuplan.parts.bounds import energetic_bound, simple_bound


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


def _bound(instance: Instance) -> float:
    """The energetic bound with no time limit."""
    return energetic_bound(instance, get_backend("highs"), Limits(Budget())).value


def memory_gpu(jobs: list[dict[str, Any]], memory: float = 80.0) -> Instance:
    """Jobs on a single GPU of ``memory`` GiB, for makespan."""
    return instance_from({
        "gpu_types": [{"id": "G", "capacity": {"memory_gib": memory, "compute": 1.0}}],
        "nodes": [{"id": "n", "gpus": {"G": 1}}],
        "jobs": jobs,
        "objective": "makespan",
    })


def _fast_and_slow() -> Instance:
    """Two non-preemptible jobs, 100 s on one fast GPU or 1000 s on 100 slow ones."""
    return instance_from({
        "gpu_types": [{"id": "fast", "capacity": {"compute": 1.0}},
                      {"id": "slow", "capacity": {"compute": 1.0}}],
        "nodes": [{"id": "a", "gpus": {"fast": 1}}, {"id": "b", "gpus": {"slow": 100}}],
        "jobs": [{"id": f"L{k}", "demand": {"compute": 1.0},
                  "duration_s": {"fast": 100, "slow": 1000}} for k in (1, 2)],
        "objective": "makespan",
    })


def test_jobs_too_big_to_share_count_as_whole_gpus() -> None:
    """Three jobs of 50 of 80 GiB and 0.3 compute: no two share, so 300 s, not 187.5 s."""
    instance = memory_gpu([{"id": f"j{k}", "demand": {"memory_gib": 50, "compute": 0.3},
                          "duration_s": 100} for k in range(3)])
    assert _bound(instance) == pytest.approx(300.0, rel=2e-6)
    assert plan(instance).objective == 300.0


def test_a_slow_type_too_slow_for_the_window_is_not_used() -> None:
    """Two non-preemptible jobs, 100 s on one fast GPU or 1000 s on 100 slow ones.

    Splitting each job over the types proves only 2000/11 s; a job run whole on a slow
    GPU ends at 1000 s, so any plan below that runs both on the fast GPU: 200 s.
    """
    instance = _fast_and_slow()
    assert 199.5 <= _bound(instance) <= 200.0


def test_energetic_reasoning_sees_a_job_that_cannot_fit_before_a_fixed_one() -> None:
    """A job pinned to [50, 150] s leaves 50 s before it, too little for a 60 s job.

    Area gives 160 s and chains 150 s; the 60 s job must follow the pinned one: 210 s.
    """
    instance = memory_gpu([
        {"id": "pinned", "demand": {"compute": 1.0}, "duration_s": 100, "release_s": 50,
         "deadline_s": 150},
        {"id": "free", "demand": {"compute": 1.0}, "duration_s": 60},
    ])
    assert 209.0 <= _bound(instance) <= 210.0
    assert plan(instance, "cp").objective == 210.0


def test_a_spent_budget_still_returns_the_bound_given() -> None:
    """With no time left no LP runs, and the bound passed in comes back unchanged."""
    instance = memory_gpu([{"id": "j", "demand": {"compute": 1.0}, "duration_s": 10}])
    bound = energetic_bound(instance, get_backend("highs"), Limits(Budget(0.0)), 7.0)
    assert bound.value == 7.0


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(document=instance_documents(max_jobs=5))
def test_no_plan_beats_the_bound(document: dict[str, Any]) -> None:
    """On random small batches the bound never exceeds a verified plan's makespan.

    The plans are CP-SAT's, proven optimal where it could (the bound is then at most the
    optimum), else the best found; any verified plan bounds the optimum from above.
    """
    document["objective"] = "makespan"
    try:
        instance = instance_from(document)
    except InputError:
        assume(False)
        return
    schedule = plan(instance, "cp", settings=RunSettings(time_limit_s=2.0, threads=1))
    assume(schedule.status.has_plan and schedule.objective is not None)
    assert schedule.status in (Status.OPTIMAL, Status.FEASIBLE)
    assert _bound(instance) <= schedule.objective * (1 + 1e-9)


def test_the_shares_put_each_job_where_the_bound_runs_it() -> None:
    """The type shares a planner may follow: both jobs whole on the fast GPU (200 s)."""
    instance = _fast_and_slow()
    bound = energetic_bound(instance, get_backend("highs"), Limits(Budget()))
    assert bound.source == "energetic"
    assert bound.shares is not None
    assert bound.shares == pytest.approx(np.array([[1.0, 0.0], [1.0, 0.0]]))
