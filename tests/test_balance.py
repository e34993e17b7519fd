"""Allocation policies (``gpuplan.models.allocation``) against hand-computed optima."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import INSTANCES, run_cli

from gpuplan import Schedule, plan
from gpuplan.models.allocation import Policy, ThroughputData, load_unit, quadratic_program
from gpuplan.readers.instance_file import build_instance, parse_document
from gpuplan.schedule import Status
from gpuplan.solvers.backends import BACKENDS
from gpuplan.solvers.balance import solve_policy
from gpuplan.solvers.base import SolveOptions
from gpuplan.solvers.rounds import plan_rounds

OPTIONS = SolveOptions()


def data(rate: list[list[float]], gpus: list[int], **fields: Any) -> ThroughputData:
    """Single-GPU jobs with these rates (share of the job per second) on these types."""
    n_jobs, n_types = np.shape(rate)
    return ThroughputData(
        rate=np.array(rate, dtype=float),
        gang=np.array(fields.get("gang", [1] * n_jobs)),
        gpus=np.array(gpus, dtype=float),
        weight=np.array(fields.get("weight", [1.0] * n_jobs), dtype=float),
        release=np.array(fields.get("release", [0.0] * n_jobs), dtype=float),
        deadline=np.array(fields.get("deadline", [np.inf] * n_jobs), dtype=float),
        price_per_hour=np.array(fields.get("price", [0.0] * n_types), dtype=float),
    )


def test_max_min_fairness_follows_weights() -> None:
    """One GPU, weights 1 and 2, equal share 1/2 each: z = 2/3 with shares 1/3 and 2/3."""
    result = solve_policy(data([[1.0], [1.0]], [1], weight=[1, 2]), Policy.MAX_MIN_FAIRNESS,
                          OPTIONS)
    assert result.status is Status.OPTIMAL and result.value == pytest.approx(2 / 3)
    assert result.share[:, 0] == pytest.approx([1 / 3, 2 / 3])


def test_makespan_sends_each_job_to_its_type() -> None:
    """Job 0 is twice as fast on A, job 1 equal on both: each takes one type, 10 s."""
    result = solve_policy(data([[0.1, 0.05], [0.1, 0.1]], [1, 1]), Policy.MAKESPAN, OPTIONS)
    assert result.value == pytest.approx(10.0)
    assert result.share == pytest.approx(np.array([[1.0, 0.0], [0.0, 1.0]]))


def test_gang_scale_factor_consumes_gpus() -> None:
    """A 2-GPU job on 2 GPUs beside a 1-GPU job: the gang's share costs twice as much."""
    result = solve_policy(data([[0.1], [0.1]], [2], gang=[2, 1]), Policy.MAKESPAN, OPTIONS)
    # Throughputs 0.1 x each: 2 x0 + x1 <= 2, x0 = x1 = 2/3, makespan 15 s.
    assert result.value == pytest.approx(15.0)
    assert result.share[:, 0] == pytest.approx([2 / 3, 2 / 3])


def test_max_throughput_sum() -> None:
    """Normalised throughputs 4/3 (job 0 on A) + 1 (job 1 on B)."""
    result = solve_policy(data([[1.0, 0.5], [1.0, 1.0]], [1, 1]), Policy.MAX_THROUGHPUT,
                          OPTIONS)
    assert result.value == pytest.approx(7 / 3)


def test_min_cost_meets_the_deadline_on_the_cheap_type() -> None:
    """Deadline 100 s: half of A (50 s, 1/h) costs 0.5/h, a fifth of B (20 s, 10/h) 2/h."""
    result = solve_policy(data([[1 / 50, 1 / 20]], [1, 1], deadline=[100.0], price=[1, 10]),
                          Policy.MIN_COST, OPTIONS, floor=0.0)
    assert result.value == pytest.approx(0.5)
    assert result.share == pytest.approx(np.array([[0.5, 0.0]]))


def test_finish_time_fairness_is_max_min_without_releases() -> None:
    """Unweighted and all released at 0, rho* is one over the max-min value."""
    rates = data([[1.0, 0.2], [0.5, 0.5], [0.3, 0.9]], [1, 2])
    fairness = solve_policy(rates, Policy.MAX_MIN_FAIRNESS, OPTIONS)
    finish = solve_policy(rates, Policy.FINISH_TIME_FAIRNESS, OPTIONS)
    assert fairness.value is not None and finish.value is not None
    assert finish.value == pytest.approx(1.0 / fairness.value, rel=1e-5)


def test_finish_time_fairness_with_releases() -> None:
    """Each job alone on its fast type; job 1, released at 10 s, sets rho = 11 / (10 + 1/0.55)."""
    rates = data([[1.0, 0.1], [0.1, 1.0]], [1, 1], release=[0.0, 10.0])
    result = solve_policy(rates, Policy.FINISH_TIME_FAIRNESS, OPTIONS)
    assert result.value == pytest.approx(11.0 / (10.0 + 1.0 / 0.55), rel=1e-5)


def test_partitions_lose_nothing_on_identical_jobs() -> None:
    """POP in 2 parts of 2 jobs on 1 of the 2 GPUs each: the same max-min value, 1."""
    rates = data([[0.1]] * 4, [2])
    exact = solve_policy(rates, Policy.MAX_MIN_FAIRNESS, OPTIONS)
    split = solve_policy(rates, Policy.MAX_MIN_FAIRNESS, SolveOptions(partitions=2))
    assert exact.value == pytest.approx(1.0) and split.value == pytest.approx(1.0)
    assert split.status is Status.FEASIBLE and split.share.sum() == pytest.approx(2.0)


def test_partitions_never_beat_the_exact_optimum() -> None:
    """On unlike jobs a 3-way split is feasible for the fleet and no better than exact."""
    rng = np.random.default_rng(3)
    rates = data(rng.uniform(0.01, 0.1, size=(12, 3)).tolist(), [4, 4, 4])
    exact = solve_policy(rates, Policy.MAX_MIN_FAIRNESS, OPTIONS)
    split = solve_policy(rates, Policy.MAX_MIN_FAIRNESS, SolveOptions(partitions=3))
    assert exact.value is not None and split.value is not None
    assert split.value <= exact.value + 1e-9
    assert (rates.gang @ split.share <= rates.gpus + 1e-9).all()
    assert (split.share.sum(axis=1) <= 1 + 1e-9).all()


@pytest.mark.parametrize("backend", ["highs", "pyomo"])
def test_quadratic_balancing(backend: str) -> None:
    """30 GPU-seconds on 1 + 2 GPUs: loads 10 and 20, squared sum 100 + 2 * 10^2 = 300."""
    rates = data([[0.1, 0.1]] * 3, [1, 2])
    solution = BACKENDS[backend]().solve_program(quadratic_program(rates).program, OPTIONS)
    assert solution.status is Status.OPTIMAL and solution.objective is not None
    assert solution.objective * load_unit(rates) ** 2 == pytest.approx(300.0, rel=1e-6)
    result = solve_policy(rates, Policy.QUADRATIC, OPTIONS)
    assert result.value == pytest.approx(300.0, rel=1e-6)
    assert result.throughput == pytest.approx([10.0, 20.0], rel=1e-6)


def test_rates_from_an_instance() -> None:
    """Rates are one over the durations; a type the job may not use has rate 0."""
    instance = build_instance(parse_document({
        "gpu_types": [{"id": "A", "capacity": {"compute": 1.0}},
                      {"id": "B", "capacity": {"compute": 1.0}}],
        "nodes": [{"id": "n", "gpus": {"A": 2, "B": 1}}],
        "jobs": [{"id": "j", "demand": {"compute": 1.0}, "duration_s": {"A": 4.0}}],
        "objective": "makespan",
    }, "<test>"), "<test>")
    rates = ThroughputData.from_instance(instance)
    assert rates.rate.tolist() == [[0.25, 0.0]]
    assert rates.gpus.tolist() == [2.0, 1.0]


def one_gpu(jobs: list[dict[str, Any]], gpus: int = 1) -> Any:
    """Jobs on ``gpus`` GPUs of one type, makespan objective."""
    return build_instance(parse_document({
        "gpu_types": [{"id": "G", "capacity": {"compute": 1.0}, "cost_per_hour": 1.0}],
        "nodes": [{"id": "n", "gpus": {"G": gpus}}],
        "jobs": jobs,
        "objective": "makespan",
    }, "<test>"), "<test>")


def test_round_based_plan_time_shares_preemptible_jobs() -> None:
    """Two 40 s jobs share one GPU half and half in 10 s rounds: 4 turns each, done by 80 s."""
    instance = one_gpu([{"id": j, "demand": {"compute": 1.0}, "duration_s": 40,
                         "preemptible": True} for j in ("a", "b")])
    schedule = plan(instance, "balance", SolveOptions(round_s=10.0))
    assert schedule.verification is not None and schedule.verification.ok
    assert schedule.objective == pytest.approx(80.0)
    segments = [p for p in schedule.placements if p.job == "a"]
    assert [p.end_s - p.start_s for p in segments] == [10.0] * 4


def test_round_based_plan_alternates_exactly() -> None:
    """The shares are tracked round by round: a and b alternate and err by at most 1/4."""
    instance = one_gpu([{"id": j, "demand": {"compute": 1.0}, "duration_s": 40,
                         "preemptible": True} for j in ("a", "b")])
    rounds = plan_rounds(instance, np.array([[0.5], [0.5]]), 10.0)
    order = [int(j) for j in rounds.job[np.argsort(rounds.start)]]
    assert order[:4] == [0, 1, 0, 1] and rounds.tracking_error.max() <= 0.25


def test_jobs_that_are_not_preemptible_keep_their_gpus() -> None:
    """Without preemption each job runs in one piece, and dependencies hold."""
    instance = one_gpu([{"id": "a", "demand": {"compute": 1.0}, "duration_s": 40},
                        {"id": "b", "demand": {"compute": 1.0}, "duration_s": 25,
                         "depends_on": ["a"]},
                        {"id": "c", "demand": {"compute": 1.0}, "duration_s": 30,
                         "release_s": 15}], gpus=2)
    schedule = plan(instance, "balance", SolveOptions(round_s=10.0))
    assert schedule.verification is not None and schedule.verification.ok
    assert sorted(p.job for p in schedule.placements) == ["a", "b", "c"]


def test_infeasible_floors_are_named() -> None:
    """Min-cost with floors of three equal shares on one GPU: the LP names the floors."""
    instance = one_gpu([{"id": j, "demand": {"compute": 1.0}, "duration_s": 40}
                        for j in ("a", "b")])
    schedule = plan(instance, "balance", SolveOptions(policy="min-cost", floor=3.0))
    assert schedule.status is Status.INFEASIBLE
    assert "throughput floor of job" in schedule.unplaced[0].reason


@pytest.mark.parametrize("policy", [p.value for p in Policy])
def test_every_policy_plans_from_the_cli(policy: str, tmp_path: Path) -> None:
    """Each policy writes a verified schedule for the Gavel instance."""
    out = tmp_path / "plan.json"
    result = run_cli("solve", str(INSTANCES / "gavel_makespan.json"), "--method", "balance",
                     "--policy", policy, "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert Schedule.read(out).verification.ok  # type: ignore[union-attr]
