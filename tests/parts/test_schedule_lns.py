"""LNS over the CP-SAT scheduling model, and list scheduling with GPU sharing."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import INSTANCES

from gpuplan import Instance, ObjectiveKind, Schedule, Status, read_instance
from gpuplan.core.budget import Budget, Limits
from gpuplan.core.objectives import TIME_OBJECTIVES
from gpuplan.core.result import Result
from gpuplan.models.scheduling import SchedulingModel, TickScale
from gpuplan.parts.construct import list_schedule
from gpuplan.parts.schedule_lns import KINDS, ScheduleNeighbourhoods, improve_schedule
from gpuplan.parts.schedule_sharing import best_sharing_schedule, sharing_list_schedule
from gpuplan.readers.instance_file import build_instance, parse_document
from gpuplan.verify import verify_schedule

OPERATOR_50 = INSTANCES / "library" / "operator-50-s1.json"


def verified(instance: Instance, result: Any) -> bool:
    """Whether the verifier accepts a result's plan."""
    schedule = Schedule.from_result(instance, result, "test", 0.0, 0)
    return verify_schedule(instance, schedule).ok


def test_jobs_that_fit_together_share_a_gpu() -> None:
    """Three jobs of a third of a GPU run at once on the one GPU; list scheduling queues them."""
    third = {"memory_gib": 5.0, "compute": 0.3}
    instance = build_instance(parse_document({
        "gpu_types": [{"id": "G", "capacity": {"memory_gib": 16.0, "compute": 1.0},
                       "sharing": True}],
        "nodes": [{"id": "n", "gpus": {"G": 1}}],
        "jobs": [{"id": f"j{k}", "demand": third, "duration_s": 100} for k in range(3)]
        + [{"id": "big", "demand": {"memory_gib": 12.0, "compute": 0.5}, "duration_s": 50}],
        "objective": "makespan",
    }, "<test>"), "<test>")
    shared = sharing_list_schedule(instance)
    assert shared.objective == pytest.approx(150)
    assert list_schedule(instance).objective == pytest.approx(350)
    assert verified(instance, shared)


def test_a_target_makespan_sends_jobs_to_slow_gpus_that_would_idle() -> None:
    """Planned for makespan 30, a job takes the idle slow GPU and leaves the fast one free.

    At its earliest finish every job queues on the fast GPU (makespan 40); a job that
    ends by the target on the slow one goes there, and the fast-only job starts earlier.
    """
    instance = build_instance(parse_document({
        "gpu_types": [{"id": "fast", "capacity": {"compute": 1.0}, "sharing": True},
                      {"id": "slow", "capacity": {"compute": 1.0}, "sharing": True}],
        "nodes": [{"id": "f", "gpus": {"fast": 1}}, {"id": "s", "gpus": {"slow": 1}}],
        "jobs": [{"id": "a", "demand": {"compute": 1.0}, "duration_s": {"fast": 10, "slow": 20}},
                 {"id": "b", "demand": {"compute": 1.0}, "duration_s": {"fast": 10, "slow": 20}},
                 {"id": "c", "demand": {"compute": 1.0}, "duration_s": {"fast": 20}}],
        "objective": "makespan",
    }, "<test>"), "<test>")
    keys = np.arange(3.0)
    assert sharing_list_schedule(instance, keys).objective == pytest.approx(40)
    aimed = sharing_list_schedule(instance, keys, target=30.0)
    assert aimed.objective == pytest.approx(30)
    assert instance.type_ids[int(aimed.gpu_type[list(aimed.job).index(0)])] == "slow"
    assert verified(instance, aimed)


@pytest.mark.parametrize("objective", sorted(TIME_OBJECTIVES))
def test_sharing_plans_are_valid_for_every_time_objective(objective: ObjectiveKind) -> None:
    """With releases, dependencies, deadlines and shares, every plan passes the verifier."""
    instance = read_instance(OPERATOR_50, objective=objective)
    shared = sharing_list_schedule(instance)
    assert shared.objective is not None and not shared.unplaced
    assert verified(instance, shared)


def test_a_spent_budget_leaves_jobs_out() -> None:
    """A pass whose time is up places nothing more and says why, rather than running on."""
    instance = read_instance(OPERATOR_50)
    cut = sharing_list_schedule(instance, budget=Budget(0.0))
    assert cut.objective is None and not cut.status.has_plan
    assert len(cut.unplaced) == instance.n_jobs


def test_more_orders_never_worsen_the_plan() -> None:
    """The best of several orders is no worse than list scheduling's own, and valid."""
    instance = read_instance(OPERATOR_50)
    own = sharing_list_schedule(instance)
    best = best_sharing_schedule(instance, Budget(0.5), seed=1)
    assert own.objective is not None and best.objective is not None
    assert best.objective <= own.objective
    assert verified(instance, best)


@pytest.fixture(scope="module")
def operator_model() -> tuple[Instance, SchedulingModel]:
    """The 50-job operator batch's model, hinted with the sharing plan."""
    instance = read_instance(OPERATOR_50)
    model = SchedulingModel.build(instance, TickScale.choose(instance))
    start = sharing_list_schedule(instance)
    model.hint(start.job, start.gpus, start.start)
    return instance, model


@pytest.mark.parametrize("kind", KINDS)
def test_neighbourhoods_hold_every_job_but_the_freed(
        operator_model: tuple[Instance, SchedulingModel], kind: str) -> None:
    """A freed job keeps no variable fixed; every other keeps its group and GPUs.

    Jobs held in time end before the first freed job starts, so the freed ones can be
    placed anew in the room the rest leaves.
    """
    _, model = operator_model
    hoods = ScheduleNeighbourhoods(model)
    values = model.hinted_values()
    free = hoods.choose(kind, values, 12, np.random.default_rng(3))
    assert free.sum() == 12
    fixed, capped = hoods.held(values, free, cap=True)
    held_jobs = hoods.var_job[np.r_[fixed, capped]]
    assert not free[held_jobs].any()
    literals = np.flatnonzero((hoods.var_job >= 0) & ~hoods.is_time)
    kept = literals[~free[hoods.var_job[literals]]]
    assert set(kept.tolist()) <= set(fixed.tolist())
    timed = fixed[hoods.is_time[fixed]]
    first = values[hoods.start_index][free].min()
    assert (values[hoods.end_index][hoods.var_job[timed]] <= first).all()


def test_lns_keeps_a_valid_plan_no_worse_than_its_start(
        operator_model: tuple[Instance, SchedulingModel]) -> None:
    """The improved solution is CP-SAT's, decodes to a verified plan, and is no worse."""
    instance, model = operator_model
    start = model.hinted_values()
    hoods = ScheduleNeighbourhoods(model)
    budget = Budget(1.0)
    improved = improve_schedule(model, start, Limits(budget, 1, 0, 1e-4), budget)
    assert improved.subproblems >= 1
    assert improved.objective <= hoods.objective(start)
    assert improved.objective == hoods.objective(improved.values)
    job, types, gpus, begin, end, _ = model.decode(improved.values)
    result = Result(status=Status.FEASIBLE, objective=float(end.max()), bound=None,
                    solver="lns", job=job, gpu_type=types, gpus=gpus, start=begin, end=end)
    assert verified(instance, result)
    assert float(end.max()) == pytest.approx(improved.objective * model.objective_scale)
