"""Bounds are valid and tight on hand-computed cases; infeasibility names job and constraint."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from conftest import DATA, instance_from
from hypothesis import HealthCheck, assume, given, settings
from strategies import instance_documents

from gpuplan import Instance, ObjectiveKind, Status, plan
from gpuplan.core.budget import Budget, Limits
from gpuplan.core.errors import InputError
from gpuplan.models.bounds import (
    earliest_completion,
    infeasibility_reasons,
    objective_bound,
    preemptive_wspt,
)
from gpuplan.parts.bounds import simple_bound
from gpuplan.readers.instance_file import build_instance, parse_document


def test_earliest_completion_follows_the_chain(small: Instance) -> None:
    """Prep (100) -> train (1000) -> eval (200): eval cannot end before 1300 s."""
    ect = earliest_completion(small)
    assert ect.time[small.job_index["eval"]] == 1300.0
    assert [small.job_ids[j] for j in ect.chain(small.job_index["eval"])] == [
        "prep", "train", "eval"
    ]
    assert ect.time[small.job_index["sweep-a"]] == 450.0  # release 50 + 400


@pytest.mark.parametrize(
    ("objective", "expected"),
    [
        (ObjectiveKind.MAKESPAN, 1300.0),
        (ObjectiveKind.WEIGHTED_COMPLETION, 100 + 3 * 1100 + 1300 + 450 + 300),
        (ObjectiveKind.TARDINESS, 100.0),  # eval due 1200, earliest end 1300
        (ObjectiveKind.MAX_WEIGHT, 7.0),
    ],
)
def test_hand_computed_bounds(small: Instance, objective: ObjectiveKind, expected: float) -> None:
    """The combinatorial bounds match hand calculation on the small instance."""
    assert objective_bound(small.with_objective(objective)) == pytest.approx(expected)


def test_packing_bounds() -> None:
    """Volume bounds: 2.6 units of compute need 3 unit GPUs; load at least 2.6 / 4."""
    jobs = [{"id": f"j{i}", "demand": {"compute": 0.65}, "duration_s": 1} for i in range(4)]
    document = {
        "gpu_types": [{"id": "G", "capacity": {"compute": 1.0},
                       "sharing": True, "cost_per_hour": 2.0}],
        "nodes": [{"id": "n", "gpus": {"G": 4}}],
        "jobs": jobs,
        "objective": "min-gpus",
    }
    instance = instance_from(document)
    assert objective_bound(instance) == 3
    assert objective_bound(instance.with_objective(ObjectiveKind.MIN_GPU_COST)) == pytest.approx(
        2.6 * 2.0
    )
    assert objective_bound(instance.with_objective(ObjectiveKind.MIN_MAX_LOAD)) == pytest.approx(
        0.65
    )
    # Greedy needs 4 GPUs (no two 0.65 jobs share); the bound proves at least 3.
    assert plan(instance).objective == 4


def test_deadline_chain_is_explained() -> None:
    """A deadline the dependency chain cannot meet: infeasible, naming job and chain."""
    raw = json.loads((DATA / "valid_small.json").read_text())
    raw["jobs"][2]["deadline_s"] = 1250
    instance = instance_from(raw)
    reasons = infeasibility_reasons(instance)
    assert list(reasons) == [instance.job_index["eval"]]
    assert reasons[instance.job_index["eval"]] == (
        "job 'eval' cannot meet its deadline 1250 s: with release 0 s through dependency "
        "chain 'prep' -> 'train' -> 'eval' at the shortest durations it ends no earlier "
        "than 1300 s"
    )
    schedule = plan(instance)
    assert schedule.status is Status.INFEASIBLE
    assert schedule.solver == "gpuplan-presolve"
    assert any("cannot meet its deadline" in u.reason for u in schedule.unplaced)


def test_fleet_too_small_is_explained() -> None:
    """Static objectives that need every job: total demand over the fleet's capacity."""
    jobs = [{"id": f"j{i}", "demand": {"compute": 0.6}, "duration_s": 1} for i in range(4)]
    instance = instance_from(
        {
            "gpu_types": [{"id": "G", "capacity": {"compute": 1.0}, "sharing": True}],
            "nodes": [{"id": "n", "gpus": {"G": 2}}],
            "jobs": jobs,
            "objective": "min-gpus",
        }
    )
    reasons = infeasibility_reasons(instance)
    assert reasons
    assert all("the jobs (4) need 2.4 compute in all; the fleet has 2" in r
               for r in reasons.values())
    assert infeasibility_reasons(instance.with_objective(ObjectiveKind.MAX_WEIGHT)) == {}


def test_jobs_limited_to_some_types_are_explained() -> None:
    """Hall-type check: jobs that only fit on L4 overflow the L4s while the fleet has room."""
    jobs = [
        {"id": f"small{i}", "demand": {"compute": 0.7}, "duration_s": 1, "allowed_types": ["L4"]}
        for i in range(3)
    ] + [{"id": "big", "demand": {"compute": 0.5}, "duration_s": 1}]
    instance = instance_from(
        {
            "gpu_types": [{"id": t, "capacity": {"compute": 1.0},
                           "sharing": True} for t in ("A100", "L4")],
            "nodes": [{"id": "n", "gpus": {"A100": 4, "L4": 2}}],
            "jobs": jobs,
            "objective": "min-gpus",
        }
    )
    reasons = infeasibility_reasons(instance)
    assert set(reasons) == {0, 1, 2}
    assert reasons[0] == (
        "the jobs that can run only on L4 (3) need 2.1 compute in all; those GPUs hold 2 "
        "(largest: 'small0', 'small1', 'small2')"
    )


def test_workload_bound_counts_each_jobs_own_run_time() -> None:
    """Two jobs of 100 s on the one fast GPU or 1000 s on 100 slow ones: bound 2000/11 s.

    Volume alone gives 18.2 s and the longest chain 100 s. Each job's own run time must
    fit too: with ``a`` of the work on the fast GPU, ``1000 - 450 a <= C`` per job and
    ``100 a <= C`` for the fast GPU, so ``C >= 2000/11``.
    """
    instance = build_instance(parse_document({
        "gpu_types": [{"id": "fast", "capacity": {"compute": 1.0}, "sharing": True},
                      {"id": "slow", "capacity": {"compute": 1.0}, "sharing": True}],
        "nodes": [{"id": "a", "gpus": {"fast": 1}}, {"id": "b", "gpus": {"slow": 100}}],
        "jobs": [{"id": f"L{k}", "demand": {"compute": 1.0}, "preemptible": True,
                  "duration_s": {"fast": 100, "slow": 1000}} for k in (1, 2)],
        "objective": "makespan",
    }, "<test>"), "<test>")
    assert simple_bound(instance, Limits(Budget())) == pytest.approx(2000 / 11, rel=1e-6)


def test_makespan_area_weighs_slow_gpus_less() -> None:
    """Four jobs of 100 s on the one fast GPU or 1000 s on one of 4 slow ones.

    All GPUs alike: 400 GPU-seconds over 5 GPUs, 80 s. Weighing a slow GPU at 1/8 of the
    fast one, a job costs at least min(100, 1000 / 8) = 100 over 1 + 4/8 GPUs: 266.7 s.
    (Any plan takes 400 s on the fast GPU, or 1000 s on a slow one.)
    """
    instance = instance_from({
        "gpu_types": [{"id": t, "capacity": {"compute": 1.0},
                       "sharing": True} for t in ("fast", "slow")],
        "nodes": [{"id": "a", "gpus": {"fast": 1}}, {"id": "b", "gpus": {"slow": 4}}],
        "jobs": [{"id": f"j{k}", "demand": {"compute": 1.0},
                  "duration_s": {"fast": 100, "slow": 1000}} for k in range(4)],
        "objective": "makespan",
    })
    assert objective_bound(instance) >= 400 / 1.5 - 1e-6
    assert plan(instance).objective == 400.0


def test_weighted_completion_counts_the_wait_for_a_shared_gpu() -> None:
    """Two jobs of 1 s and 2 s on one GPU: 1 + 3 = 4 at best, where chains see only 3."""
    instance = instance_from({
        "gpu_types": [{"id": "G", "capacity": {"compute": 1.0}, "sharing": True}],
        "nodes": [{"id": "n", "gpus": {"G": 1}}],
        "jobs": [{"id": f"j{p}", "demand": {"compute": 1.0}, "duration_s": p}
                 for p in (1, 2)],
        "objective": "weighted-completion",
    })
    assert objective_bound(instance) == pytest.approx(4.0)
    assert plan(instance).objective == 4.0


def test_preemptive_wspt_interrupts_for_a_heavier_job() -> None:
    """A heavy job released at 1 s preempts a light one: mean busy times 2.5 and 1.5 s."""
    mean = preemptive_wspt(np.array([0.0, 1.0]), np.array([3.0, 1.0]), np.array([1.0, 10.0]))
    # Light job: [0, 1] and [2, 4], average instant (0.5 * 1 + 3 * 2) / 3.
    assert mean == pytest.approx([6.5 / 3, 1.5])


@pytest.mark.parametrize("objective", ["makespan", "weighted-completion"])
@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(document=instance_documents(max_jobs=8))
def test_time_bounds_are_below_every_plan(objective: str, document: dict[str, Any]) -> None:
    """On random batches no verified plan has a smaller makespan or weighted completion."""
    document["objective"] = objective
    try:
        instance = instance_from(document)
    except InputError:
        assume(False)
        return
    schedule = plan(instance, "greedy")
    assume(schedule.status.has_plan and schedule.objective is not None)
    assert objective_bound(instance) <= schedule.objective * (1 + 1e-9)
