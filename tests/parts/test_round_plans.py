"""Round-based plans: Gavel's rounds realising an allocation's time shares on whole GPUs."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest
from conftest import instance_from, one_gpu

from gpuplan.models.allocation import (
    Policy,
    ThroughputData,
)
from gpuplan.parts import round_plans as rounds_module
from gpuplan.parts.round_plans import Residual, plan_rounds
from parts.test_allocation import solve


def test_round_based_plan_alternates_exactly() -> None:
    """The shares are tracked round by round: a and b alternate and err by at most 1/4."""
    instance = one_gpu([{"id": j, "demand": {"compute": 1.0}, "duration_s": 40,
                         "preemptible": True} for j in ("a", "b")])
    rounds = plan_rounds(instance, np.array([[0.5], [0.5]]), 10.0)
    assert rounds is not None
    order = [int(j) for j in rounds.job[np.argsort(rounds.start)]]
    assert order[:4] == [0, 1, 0, 1] and rounds.tracking_error.max() <= 0.25


def test_repeated_rounds_planned_in_one_step_match_round_by_round(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Rounds that repeat, planned in one step, give the plan of planning every round.

    With releases, dependencies, gangs, and preemptible and pinned jobs.
    """
    rng = np.random.default_rng(7)
    jobs = []
    for i in range(24):
        job: dict[str, Any] = {
            "id": f"j{i}", "demand": {"compute": 1.0}, "gpus": int(rng.choice([1, 2])),
            "duration_s": {"A": float(rng.uniform(200, 5000)),
                           "B": float(rng.uniform(400, 9000))},
            "release_s": float(rng.choice([0.0, rng.uniform(0, 20000)])),
            "preemptible": bool(rng.random() < 0.6)}
        if i >= 4 and rng.random() < 0.3:
            job["depends_on"] = [f"j{int(rng.integers(0, i))}"]
        jobs.append(job)
    instance = instance_from({
        "gpu_types": [{"id": "A", "capacity": {"compute": 1.0}},
                      {"id": "B", "capacity": {"compute": 1.0}}],
        "nodes": [{"id": "a", "gpus": {"A": 4}}, {"id": "b", "gpus": {"B": 2, "A": 2}}],
        "jobs": jobs, "objective": "makespan"})
    share = solve(ThroughputData.from_instance(instance), Policy.MAX_MIN_FAIRNESS).share
    fast = plan_rounds(instance, share, 60.0)
    monkeypatch.setattr(rounds_module, "_repeats", lambda *args: 0)
    slow = plan_rounds(instance, share, 60.0)
    assert fast is not None and slow is not None
    assert fast.rounds == slow.rounds
    assert fast.job.tolist() == slow.job.tolist()
    assert fast.gpu_type.tolist() == slow.gpu_type.tolist()
    assert [g.tolist() for g in fast.gpus] == [g.tolist() for g in slow.gpus]
    assert fast.end == pytest.approx(slow.end, rel=1e-12)
    assert fast.work == pytest.approx(slow.work, rel=1e-9)


def test_a_job_alone_for_many_rounds_is_planned_in_one_step() -> None:
    """One 5*10^7-s job in 1,000-s rounds: 50,000 rounds, one segment, well under a second."""
    instance = one_gpu([{"id": "a", "demand": {"compute": 1.0}, "duration_s": 5e7,
                         "preemptible": True}])
    began = time.perf_counter()
    result = plan_rounds(instance, np.array([[1.0]]), 1000.0)
    assert time.perf_counter() - began < 1.0
    assert result is not None and result.rounds == 50_000 and result.job.size == 1
    assert result.end[0] == pytest.approx(5e7)


def test_allocation_is_solved_again_as_jobs_arrive() -> None:
    """A job released later, or waiting for another, brings a new allocation with it."""
    instance = one_gpu([{"id": "a", "demand": {"compute": 1.0}, "duration_s": 40,
                         "preemptible": True},
                        {"id": "b", "demand": {"compute": 1.0}, "duration_s": 40,
                         "preemptible": True, "release_s": 20},
                        {"id": "c", "demand": {"compute": 1.0}, "duration_s": 10,
                         "preemptible": True, "depends_on": ["a"]}])
    seen: list[list[int]] = []

    def reallocate(state: Residual) -> np.ndarray:
        seen.append(state.jobs.tolist())
        share = np.zeros((3, 1))
        share[state.jobs] = 1.0 / state.jobs.size
        return share

    rounds = plan_rounds(instance, np.array([[1.0], [0.0], [0.0]]), 10.0,
                         reallocate=reallocate)
    assert rounds is not None
    assert seen[0] == [0, 1, 2] and [1, 2] in seen
