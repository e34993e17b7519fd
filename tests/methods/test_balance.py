"""Allocation policies (``gpuplan.models.allocation``) against hand-computed optima."""

from __future__ import annotations

import dataclasses
import re
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import INSTANCES, run_cli

from gpuplan import Schedule, plan
from gpuplan.backends import BACKENDS
from gpuplan.core.budget import Budget
from gpuplan.core.errors import InputError
from gpuplan.core.instance import Instance
from gpuplan.core.settings import Context, RunSettings
from gpuplan.core.status import Status
from gpuplan.harness.library import operator_document
from gpuplan.methods import balance
from gpuplan.models.allocation import (
    FairShare,
    Policy,
    ThroughputData,
    finish_time_ratios,
    load_unit,
    price_pairs,
    quadratic_program,
)
from gpuplan.parts import allocation
from gpuplan.parts import round_plans as rounds_module
from gpuplan.parts.allocation import Allocation, AllocationOptions, solve_policy
from gpuplan.parts.round_plans import Residual, plan_rounds
from gpuplan.readers.instance_file import build_instance, parse_document


def solve(rates: ThroughputData, policy: Policy, **fields: Any) -> Allocation:
    """Solve a policy without a time limit; ``fields`` are further balance options."""
    return solve_policy(rates, AllocationOptions(policy=policy.value, **fields), Context(Budget()))


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


@pytest.mark.parametrize(("fair_share", "value"), [("gpus", 1 / 3), ("time", 2 / 3)])
def test_max_min_fairness_follows_weights(fair_share: str, value: float) -> None:
    """One GPU, weights 1 and 2: shares 1/3 and 2/3 on either basis.

    Gavel's value measures against the whole GPU (its proportional share, 1): 1/3; the
    time basis against the equal share 1/2: 2/3.
    """
    result = solve(data([[1.0], [1.0]], [1], weight=[1, 2]), Policy.MAX_MIN_FAIRNESS,
                   fair_share=fair_share)
    assert result.status is Status.OPTIMAL and result.value == pytest.approx(value)
    assert result.share[:, 0] == pytest.approx([1 / 3, 2 / 3])


@pytest.mark.parametrize(("fair_share", "small"), [("gpus", 1.0), ("time", 0.8)])
def test_max_min_fairness_owes_gangs_their_gpus(fair_share: str, small: float) -> None:
    """A 1-GPU and a 4-GPU job on 4 V100s: Gavel gives the 1-GPU job all of the time.

    Gavel's max-min owes each job an equal share of GPUs, so the 4-GPU job is owed a
    quarter of the time the 1-GPU job is; owed equal time, both get 80%.
    """
    result = solve(data([[0.1], [0.1]], [4], gang=[1, 4]), Policy.MAX_MIN_FAIRNESS,
                   fair_share=fair_share)
    assert result.status is Status.OPTIMAL
    assert result.share[0, 0] == pytest.approx(small, rel=1e-6)
    assert result.share[1, 0] >= 0.25 - 1e-9


def test_makespan_sends_each_job_to_its_type() -> None:
    """Job 0 is twice as fast on A, job 1 equal on both: each takes one type, 10 s."""
    result = solve(data([[0.1, 0.05], [0.1, 0.1]], [1, 1]), Policy.MAKESPAN)
    assert result.value == pytest.approx(10.0)
    assert result.share == pytest.approx(np.array([[1.0, 0.0], [0.0, 1.0]]))


def test_gang_scale_factor_consumes_gpus() -> None:
    """A 2-GPU job on 2 GPUs beside a 1-GPU job: the gang's share costs twice as much."""
    result = solve(data([[0.1], [0.1]], [2], gang=[2, 1]), Policy.MAKESPAN)
    # Throughputs 0.1 x each: 2 x0 + x1 <= 2, x0 = x1 = 2/3, makespan 15 s.
    assert result.value == pytest.approx(15.0)
    assert result.share[:, 0] == pytest.approx([2 / 3, 2 / 3])


def test_max_throughput_sum() -> None:
    """Normalised throughputs 4/3 (job 0 on A) + 1 (job 1 on B)."""
    result = solve(data([[1.0, 0.5], [1.0, 1.0]], [1, 1]), Policy.MAX_THROUGHPUT)
    assert result.value == pytest.approx(7 / 3)


def test_min_cost_meets_the_deadline_on_the_cheap_type() -> None:
    """Deadline 100 s: half of A (50 s, 1/h) costs 0.5/h, a fifth of B (20 s, 10/h) 2/h."""
    result = solve(data([[1 / 50, 1 / 20]], [1, 1], deadline=[100.0], price=[1, 10]),
                   Policy.MIN_COST, floor=0.0)
    assert result.value == pytest.approx(0.5)
    assert result.share == pytest.approx(np.array([[0.5, 0.0]]))


def test_finish_time_fairness_is_max_min_without_releases() -> None:
    """Unweighted and all released at 0, rho* is one over the max-min value."""
    rates = data([[1.0, 0.2], [0.5, 0.5], [0.3, 0.9]], [1, 2])
    fairness = solve(rates, Policy.MAX_MIN_FAIRNESS)
    finish = solve(rates, Policy.FINISH_TIME_FAIRNESS)
    assert fairness.value is not None and finish.value is not None
    assert finish.value == pytest.approx(1.0 / fairness.value, rel=1e-5)


def test_finish_time_fairness_counts_from_each_arrival() -> None:
    """Each job alone on its fast type: rho = 0.55 / 1 for both, released at 0 s or 10 s.

    Finish times count from the job's own arrival (Themis' rho), so a late release does
    not make the early job look worse off; the isolated share is half of each type.
    """
    rates = data([[1.0, 0.1], [0.1, 1.0]], [1, 1], release=[0.0, 10.0])
    result = solve(rates, Policy.FINISH_TIME_FAIRNESS)
    assert result.value == pytest.approx(0.55, rel=1e-5)
    assert result.share == pytest.approx(np.eye(2), abs=1e-6)


def test_finish_time_fairness_on_a_residual_state() -> None:
    """Job a waited 20 s with half its work left, job b just arrived; one GPU, 10 s each.

    Both are owed half the GPU (20 s from arrival). Equal ratios need
    ``20 + 5 / x = 10 / (1 - x)``: ``x = (1 + sqrt(17)) / 8`` and ``rho = 0.5 / (1 - x)``.
    """
    rates = dataclasses.replace(data([[0.1], [0.1]], [1]), remaining=np.array([0.5, 1.0]),
                                elapsed=np.array([20.0, 0.0]))
    result = solve(rates, Policy.FINISH_TIME_FAIRNESS)
    x = (1 + np.sqrt(17)) / 8
    assert result.value == pytest.approx(0.5 / (1 - x), rel=1e-5)
    assert result.share[:, 0] == pytest.approx([x, 1 - x], rel=1e-4)


def residual(seed: int, n_jobs: int = 8) -> ThroughputData:
    """A random residual state: 3 types, gangs of 1 to 4, every job waited and part done.

    Elapsed and isolated times are each the done work's fair-share time times a factor
    of 0.3 to 3, so that the ratios spread over both sides of 1.
    """
    rng = np.random.default_rng(seed)
    rate = rng.uniform(0.2, 1.0, size=(n_jobs, 3)) / rng.uniform(1e3, 1e5, size=(n_jobs, 1))
    rate[rng.random((n_jobs, 3)) < 0.2] = 0.0
    rate[:, 0] = np.where(rate.sum(axis=1) > 0, rate[:, 0], 1e-4)
    state = dataclasses.replace(
        data(rate.tolist(), rng.integers(2, 9, size=3).tolist(),
             gang=rng.choice([1, 1, 2, 4], size=n_jobs).tolist()),
        remaining=rng.uniform(0.05, 1.0, size=n_jobs))
    done = (1 - state.work_left()) / state.fair_share_rate(FairShare.GPUS) + 100.0
    return dataclasses.replace(state, elapsed=done * rng.uniform(0.3, 3.0, size=n_jobs),
                               isolated_elapsed=done * rng.uniform(0.3, 3.0, size=n_jobs))


def bisection(rates: ThroughputData) -> float:
    """The largest finish-time ratio by bisection alone, from the fair share's ratio."""
    fair = rates.fair_share(FairShare.GPUS)
    high = float(finish_time_ratios(rates, rates.fair_share_rate(FairShare.GPUS)).max())
    (share, _), status = allocation._bisect(rates, FairShare.GPUS, BACKENDS["highs"](),
                                         Context(Budget()), 0.0, high, (fair, ""))
    assert status is Status.OPTIMAL
    return float(finish_time_ratios(rates, (rates.rate * share).sum(axis=1)).max())


def count_programs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the programs HiGHS solves from now on: a one-item list, the count."""
    count = [0]
    highs = type(BACKENDS["highs"]())
    solve_program = highs.solve_program

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        count[0] += 1
        return solve_program(self, *args, **kwargs)

    monkeypatch.setattr(highs, "solve_program", counted)
    return count


def test_finish_time_fairness_fixed_point_meets_the_bisection(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """On 50 random residual states, the fixed point's ratio is the bisection's, in few LPs.

    The bisection takes about 20 LPs a state; the fixed point reaches the same ratio (both
    are within the tolerance of the optimum) in 4 LPs or fewer on average, the one that
    proves it optimal included (3.5 measured), and never more than 8.
    """
    count = count_programs(monkeypatch)
    programs = []
    for seed in range(50):
        rates = residual(seed)
        count[0] = 0
        result = solve(rates, Policy.FINISH_TIME_FAIRNESS)
        programs.append(count[0])
        assert result.status is Status.OPTIMAL and result.value is not None
        reference = bisection(rates)
        assert result.value == pytest.approx(reference, rel=2 * allocation.BISECTION_TOLERANCE)
        assert (rates.gang @ result.share <= rates.gpus + 1e-6).all()
        assert (result.share.sum(axis=1) <= 1 + 1e-6).all()
    assert np.mean(programs) <= 4 and max(programs) <= 8


def test_finish_time_fairness_serves_a_job_about_to_end() -> None:
    """A job with 1e-12 of its work left still gets a throughput: every ratio stays finite.

    Its share is far below the LP's tolerances; left without one, its ratio would be
    astronomical, and the policy's value with it.
    """
    rates = residual(0)
    remaining = rates.work_left().copy()
    remaining[[1, 4]] = 1e-12
    rates = dataclasses.replace(rates, remaining=remaining)
    result = solve(rates, Policy.FINISH_TIME_FAIRNESS)
    ratios = finish_time_ratios(rates, result.throughput)
    assert result.throughput.min() > 0 and result.value is not None
    assert result.value == pytest.approx(ratios.max())
    assert result.value <= float(finish_time_ratios(
        rates, rates.fair_share_rate(FairShare.GPUS)).max())


def test_partitions_lose_nothing_on_identical_jobs() -> None:
    """POP in 2 parts of 2 jobs on 1 of the 2 GPUs each: the same max-min value.

    Each job gets half a GPU: 1/2 of a whole GPU's rate, Gavel's value.
    """
    rates = data([[0.1]] * 4, [2])
    exact = solve(rates, Policy.MAX_MIN_FAIRNESS)
    split = solve(rates, Policy.MAX_MIN_FAIRNESS, partitions=2)
    assert exact.value == pytest.approx(0.5) and split.value == pytest.approx(0.5)
    assert split.status is Status.FEASIBLE and split.share.sum() == pytest.approx(2.0)


def test_partitions_deal_priority_weights_evenly() -> None:
    """Two heavy (weight 5) and six light jobs, POP in 2 parts: no loss, whatever the seed.

    Alike jobs but for their weights: each part gets one heavy and three light jobs, as
    the whole fleet has; a part with both heavy jobs would lower the max-min value.
    """
    rates = data([[0.1]] * 8, [2], weight=[5, 1, 1, 5, 1, 1, 1, 1])
    exact = solve(rates, Policy.MAX_MIN_FAIRNESS)
    assert exact.value is not None
    for seed in range(8):
        split = solve_policy(rates, AllocationOptions(partitions=2), Context(Budget(), seed=seed))
        assert split.value == pytest.approx(exact.value, rel=1e-6), seed


def test_partitions_never_beat_the_exact_optimum() -> None:
    """On unlike jobs a 3-way split is feasible for the fleet and no better than exact."""
    rng = np.random.default_rng(3)
    rates = data(rng.uniform(0.01, 0.1, size=(12, 3)).tolist(), [4, 4, 4])
    exact = solve(rates, Policy.MAX_MIN_FAIRNESS)
    split = solve(rates, Policy.MAX_MIN_FAIRNESS, partitions=3)
    assert exact.value is not None and split.value is not None
    assert split.value <= exact.value + 1e-9
    assert (rates.gang @ split.share <= rates.gpus + 1e-9).all()
    assert (split.share.sum(axis=1) <= 1 + 1e-9).all()


@pytest.mark.parametrize("backend", ["highs", "pyomo"])
def test_quadratic_balancing(backend: str) -> None:
    """30 GPU-seconds on 1 + 2 GPUs: loads 10 and 20, squared sum 100 + 2 * 10^2 = 300."""
    rates = data([[0.1, 0.1]] * 3, [1, 2])
    solution = BACKENDS[backend]().solve_program(quadratic_program(rates).program,
                                                 Context(Budget()).limits())
    assert solution.status is Status.OPTIMAL and solution.objective is not None
    assert solution.objective * load_unit(rates) ** 2 == pytest.approx(300.0, rel=1e-6)
    result = solve(rates, Policy.QUADRATIC, backend=backend)
    assert result.value == pytest.approx(300.0, rel=1e-6)
    assert result.throughput == pytest.approx([10.0, 20.0], rel=1e-6)


def test_balance_on_pyomo_runs_pyomo() -> None:
    """``solver=pyomo`` hands the policy's LP to Pyomo: the plan of HiGHS, Pyomo named."""
    options = {"policy": "makespan", "round_s": 10.0}
    highs = plan(two_jobs_one_gpu(), "balance", options)
    pyomo = plan(two_jobs_one_gpu(), "balance", {**options, "solver": "pyomo"})
    assert highs.solver.startswith("highs") and pyomo.solver.startswith("pyomo")
    assert pyomo.verification is not None and pyomo.verification.ok
    assert pyomo.objective == pytest.approx(highs.objective)


def test_cli_balance_on_pyomo_runs_pyomo(tmp_path: Path) -> None:
    """``--method balance --solver pyomo`` on the quickstart: a verified plan by Pyomo."""
    out = tmp_path / "plan.json"
    result = run_cli("solve", str(INSTANCES / "quickstart.json"), "--method", "balance",
                     "--solver", "pyomo", "-o", str(out))
    assert result.returncode == 0, result.stderr
    schedule = Schedule.read(out)
    assert schedule.solver.startswith("pyomo")
    assert schedule.verification is not None and schedule.verification.ok


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


def instance_of(document: dict[str, Any]) -> Instance:
    """An instance from a document written in the test."""
    instance: Instance = build_instance(parse_document(document, "<test>"), "<test>")
    return instance


def one_gpu(jobs: list[dict[str, Any]], gpus: int = 1) -> Instance:
    """Jobs on ``gpus`` GPUs of one type, makespan objective."""
    return instance_of({
        "gpu_types": [{"id": "G", "capacity": {"compute": 1.0}, "cost_per_hour": 1.0}],
        "nodes": [{"id": "n", "gpus": {"G": gpus}}],
        "jobs": jobs,
        "objective": "makespan",
    })


def test_round_based_plan_time_shares_preemptible_jobs() -> None:
    """Two 40 s jobs share one GPU half and half in 10 s rounds: 4 turns each, done by 80 s."""
    instance = one_gpu([{"id": j, "demand": {"compute": 1.0}, "duration_s": 40,
                         "preemptible": True} for j in ("a", "b")])
    schedule = plan(instance, "balance", {"round_s": 10.0})
    assert schedule.verification is not None and schedule.verification.ok
    assert schedule.objective == pytest.approx(80.0)
    segments = [p for p in schedule.segments if p.job == "a"]
    assert [p.end_s - p.start_s for p in segments] == [10.0] * 4


def test_round_based_plan_alternates_exactly() -> None:
    """The shares are tracked round by round: a and b alternate and err by at most 1/4."""
    instance = one_gpu([{"id": j, "demand": {"compute": 1.0}, "duration_s": 40,
                         "preemptible": True} for j in ("a", "b")])
    rounds = plan_rounds(instance, np.array([[0.5], [0.5]]), 10.0)
    assert rounds is not None
    order = [int(j) for j in rounds.job[np.argsort(rounds.start)]]
    assert order[:4] == [0, 1, 0, 1] and rounds.tracking_error.max() <= 0.25


def test_jobs_that_are_not_preemptible_keep_their_gpus() -> None:
    """Without preemption each job runs in one piece, and dependencies hold."""
    instance = one_gpu([{"id": "a", "demand": {"compute": 1.0}, "duration_s": 40},
                        {"id": "b", "demand": {"compute": 1.0}, "duration_s": 25,
                         "depends_on": ["a"]},
                        {"id": "c", "demand": {"compute": 1.0}, "duration_s": 30,
                         "release_s": 15}], gpus=2)
    schedule = plan(instance, "balance", {"round_s": 10.0})
    assert schedule.verification is not None and schedule.verification.ok
    assert sorted(p.job for p in schedule.segments) == ["a", "b", "c"]


def test_infeasible_floors_are_named() -> None:
    """Min-cost with floors of three equal shares on one GPU: the LP names the floors."""
    instance = one_gpu([{"id": j, "demand": {"compute": 1.0}, "duration_s": 40}
                        for j in ("a", "b")])
    schedule = plan(instance, "balance", {"policy": "min-cost", "floor": 3.0})
    assert schedule.status is Status.INFEASIBLE
    assert "throughput floor of job" in schedule.unplaced[0].reason


def test_infeasible_floors_on_a_backend_that_cannot_name_them() -> None:
    """Pyomo names no conflicting rows: the infeasible min-cost is planned and says so."""
    instance = one_gpu([{"id": j, "demand": {"compute": 1.0}, "duration_s": 40}
                        for j in ("a", "b")])
    schedule = plan(instance, "balance", {"policy": "min-cost", "floor": 3.0,
                                          "solver": "pyomo"})
    assert schedule.status is Status.INFEASIBLE
    assert "pyomo backend cannot name the conflicting" in schedule.unplaced[0].reason


@pytest.mark.parametrize("policy", [p.value for p in Policy])
def test_every_policy_plans_from_the_cli(policy: str, tmp_path: Path) -> None:
    """Each policy writes a verified schedule for the Gavel instance."""
    out = tmp_path / "plan.json"
    result = run_cli("solve", str(INSTANCES / "gavel_makespan.json"), "--method", "balance",
                     "--policy", policy, "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert Schedule.read(out).verification.ok  # type: ignore[union-attr]


def contended(n_jobs: int = 200, seed: int = 0, sharing: bool = False) -> Instance:
    """Preemptible day-long jobs, many more than the 8 GPUs of two types: long round plans.

    Planned in full at ``--round 100`` (30,000 rounds, 150,000 segments) it takes 15 s.
    With ``sharing``, jobs of classes x and y may share GPUs of type A.
    """
    rng = np.random.default_rng(seed)
    jobs = [{"id": f"j{i}", "demand": {"compute": 1.0}, "gpus": int(gang),
             "duration_s": {"A": float(d), "B": float(2 * d)}, "preemptible": True,
             **({"colocation_class": "xy"[i % 2]} if sharing else {})}
            for i, (d, gang) in enumerate(zip(rng.uniform(1e4, 1e5, size=n_jobs),
                                              rng.choice([1, 2], size=n_jobs), strict=True))]
    return instance_of({
        "gpu_types": [{"id": "A", "capacity": {"compute": 1.0}},
                      {"id": "B", "capacity": {"compute": 1.0}}],
        "nodes": [{"id": "a", "gpus": {"A": 4}}, {"id": "b", "gpus": {"B": 4}}],
        "jobs": jobs,
        **({"colocation": [{"gpu_type": "A", "classes": ["x", "y"], "speeds": [0.7, 0.6]}]}
           if sharing else {}),
        "objective": "makespan",
    })


@pytest.mark.parametrize("fields", [{}, {"policy": "makespan"}, {"partitions": 2},
                                    {"policy": "finish-time-fairness"},
                                    {"space_sharing": True}])
def test_time_limit_covers_the_round_based_plan(fields: dict[str, Any]) -> None:
    """A plan that takes 15 s in full: with --time-limit 1 a verified plan comes in time.

    The round-based plan does not fit, so the greedy plan made at the start is returned,
    as ``feasible``, and the solver string says why; never a partial plan.
    """
    instance = contended(sharing=bool(fields.get("space_sharing")))
    began = time.perf_counter()
    schedule = plan(instance, "balance", {"round_s": 100.0, **fields},
                    settings=RunSettings(time_limit_s=1.0))
    elapsed = time.perf_counter() - began
    assert elapsed < 1.0 + 2.0
    assert schedule.verification is not None and schedule.verification.ok
    assert schedule.status is Status.FEASIBLE
    assert len({p.job for p in schedule.segments}) == instance.n_jobs
    assert "greedy list-scheduling plan instead" in schedule.solver


@pytest.mark.parametrize("fields", [{}, {"partitions": 2}, {"space_sharing": True},
                                    {"policy": "quadratic"}])
def test_no_allocation_within_the_limit_falls_back_to_the_greedy_plan(
        fields: dict[str, Any]) -> None:
    """A limit spent before the policy's LP starts: the greedy plan, verified, says so."""
    instance = contended(n_jobs=20, sharing=bool(fields.get("space_sharing")))
    schedule = plan(instance, "balance", fields, settings=RunSettings(time_limit_s=1e-6))
    assert schedule.verification is not None and schedule.verification.ok
    assert schedule.status is Status.FEASIBLE
    assert "allocation within the time limit" in schedule.solver


def test_a_plan_that_fits_the_limit_is_the_round_based_plan() -> None:
    """Four jobs in 10-s rounds fit easily in 5 s: the plan is the policy's, not greedy's."""
    instance = one_gpu([{"id": j, "demand": {"compute": 1.0}, "duration_s": 40,
                         "preemptible": True} for j in "abcd"])
    schedule = plan(instance, "balance", {"round_s": 10.0}, settings=RunSettings(time_limit_s=5.0))
    assert schedule.verification is not None and schedule.verification.ok
    assert "rounds of 10 s" in schedule.solver and "greedy" not in schedule.solver


def test_round_too_small_is_an_input_error_before_any_work(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A 10^6-s job in rounds of 1 ms needs 10^9 rounds: --round is refused up front.

    Neither the greedy plan nor the policy's LP is started, and the shortest round that
    works (10 s, for at most 100,000 rounds) is named; it then plans at once.
    """
    instance = one_gpu([{"id": "a", "demand": {"compute": 1.0}, "duration_s": 1e6}])

    def no_work(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("work started before --round was checked")

    monkeypatch.setattr(balance, "solve_policy", no_work)
    monkeypatch.setattr(balance, "list_schedule", no_work)
    with pytest.raises(InputError) as error:
        plan(instance, "balance", {"round_s": 1e-3}, settings=RunSettings(time_limit_s=5.0))
    assert error.value.source == "`round_s`"
    assert "1,000,000,000 rounds" in error.value.message
    assert "use `round_s` of at least 10" in error.value.message
    monkeypatch.undo()
    began = time.perf_counter()
    schedule = plan(instance, "balance", {"round_s": 10.0})
    assert time.perf_counter() - began < 5.0
    assert schedule.verification is not None and schedule.verification.ok
    assert schedule.objective == pytest.approx(1e6)


def test_cli_refuses_a_tiny_round(tmp_path: Path) -> None:
    """``--round 1e-6`` on the Gavel instance: exit 2 at once, naming --round."""
    began = time.perf_counter()
    result = run_cli("solve", str(INSTANCES / "gavel_makespan.json"), "--method", "balance",
                     "--round", "1e-6", "-o", str(tmp_path / "plan.json"))
    assert time.perf_counter() - began < 20.0
    assert result.returncode == 2
    assert "--round" in result.stderr and "use --round of at least" in result.stderr
    assert not (tmp_path / "plan.json").exists()


def test_a_plan_that_outgrows_the_rounds_is_an_input_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A plan that runs out of rounds while planning is refused, naming --round.

    A chain of 30 one-second jobs takes 30 rounds whatever their length, which the
    checks before planning cannot see; here at most 10 rounds are allowed.
    """
    monkeypatch.setattr(rounds_module, "MAX_ROUNDS", 10)
    instance = one_gpu([{"id": f"j{i}", "demand": {"compute": 1.0}, "duration_s": 1.0,
                         **({"depends_on": [f"j{i - 1}"]} if i else {})} for i in range(30)],
                       gpus=30)
    with pytest.raises(InputError) as error:
        plan(instance, "balance", {"round_s": 60.0})
    assert error.value.source == "`round_s`" and "more than 10 rounds" in error.value.message


def test_legal_extremes_end_in_seconds() -> None:
    """10,000 GPUs, 10^9-s jobs and weights from 1 to 10^9 end in seconds.

    The default --round is refused (it would take 2.8 million rounds), and the round it
    suggests gives a verified plan.
    """
    document = {
        "gpu_types": [{"id": "G", "capacity": {"compute": 1.0}}],
        "nodes": [{"id": f"n{k}", "gpus": {"G": 8}} for k in range(1250)],
        "jobs": [{"id": f"j{i}", "demand": {"compute": 1.0}, "gpus": 8,
                  "duration_s": 1e9 if i % 2 else 1e3, "weight": 1e9 if i % 3 else 1.0,
                  "preemptible": bool(i % 2)} for i in range(40)],
        "objective": "makespan",
    }
    instance = instance_of(document)
    with pytest.raises(InputError) as error:
        plan(instance, "balance")
    least = float(error.value.message.rsplit(" ", 1)[1])
    assert least == pytest.approx(1e4)
    began = time.perf_counter()
    schedule = plan(instance, "balance", {"round_s": least})
    assert time.perf_counter() - began < 10.0
    assert schedule.verification is not None and schedule.verification.ok


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
    instance = instance_of({
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


def two_jobs_one_gpu() -> Instance:
    """Two preemptible 40-s jobs on one GPU: any plan ends at 80 s at best."""
    return one_gpu([{"id": j, "demand": {"compute": 1.0}, "duration_s": 40,
                     "preemptible": True} for j in ("a", "b")])


@pytest.mark.parametrize("policy", [p.value for p in Policy])
def test_optimal_only_without_a_gap(policy: str) -> None:
    """Each policy's plan is optimal only when it meets the bound, on the plan's objective.

    In 30-s rounds each job ends in a round's first 10 s and the GPU idles: 100 s
    against the bound of 80 s, so every round-based policy says feasible with that
    bound (never the policy's own value); quadratic's whole jobs end at 80 s: optimal.
    """
    rounds = {} if policy == Policy.QUADRATIC.value else {"round_s": 30.0}
    schedule = plan(two_jobs_one_gpu(), "balance", {"policy": policy, **rounds})
    assert schedule.verification is not None and schedule.verification.ok
    assert schedule.bound == pytest.approx(80.0)
    assert schedule.objective is not None and schedule.bound is not None
    assert schedule.objective >= schedule.bound
    if policy == Policy.QUADRATIC.value:
        assert schedule.status is Status.OPTIMAL and schedule.gap == 0.0
    else:
        assert schedule.objective == pytest.approx(100.0)
        assert schedule.status is Status.FEASIBLE and schedule.gap == pytest.approx(0.2)


def test_space_shared_plan_is_optimal_only_without_a_gap() -> None:
    """A space-shared round-based plan above its bound is feasible, not optimal.

    Pairs at speeds 0.7 and 0.6 in 0.25-s rounds; the bound divides the work by the
    pair gain 1.3.
    """
    instance = instance_of({
        "gpu_types": [{"id": "A", "capacity": {"compute": 1.0}}],
        "nodes": [{"id": "n", "gpus": {"A": 1}}],
        "jobs": [{"id": name, "demand": {"compute": 1.0}, "duration_s": 1.0,
                  "preemptible": True, "colocation_class": name} for name in ("a", "b")],
        "colocation": [{"gpu_type": "A", "classes": ["a", "b"], "speeds": [0.7, 0.6]}],
        "objective": "makespan",
    })
    schedule = plan(instance, "balance", {"policy": "makespan", "round_s": 0.25,
                                          "space_sharing": True})
    assert schedule.verification is not None and schedule.verification.ok
    assert schedule.objective is not None and schedule.bound is not None
    assert schedule.bound == pytest.approx(2.0 / 1.3)
    assert schedule.objective > schedule.bound * (1 + 1e-4)
    assert schedule.status is Status.FEASIBLE


def test_a_plan_that_meets_the_bound_is_optimal() -> None:
    """One 40-s job on one GPU ends at 40 s, the bound: optimal with no gap."""
    instance = one_gpu([{"id": "a", "demand": {"compute": 1.0}, "duration_s": 40,
                         "preemptible": True}])
    schedule = plan(instance, "balance", {"round_s": 30.0})
    assert schedule.status is Status.OPTIMAL and schedule.gap == 0.0
    assert schedule.verification is not None and schedule.verification.ok


@pytest.mark.parametrize("parts", [5, 9])
def test_more_partitions_than_jobs_or_gpus_is_an_input_error(parts: int) -> None:
    """4 jobs on 8 GPUs: 5 parts leave one without a job, 9 one without a GPU too."""
    rates = data([[0.1]] * 4, [8])
    with pytest.raises(InputError) as error:
        solve(rates, Policy.MAX_MIN_FAIRNESS, partitions=parts)
    assert error.value.source == "`partitions`"
    assert "at most 4" in error.value.message


def test_cli_names_partitions(tmp_path: Path) -> None:
    """``--partitions 1000`` on the Gavel instance: exit 2, naming --partitions."""
    result = run_cli("solve", str(INSTANCES / "gavel_makespan.json"), "--method", "balance",
                     "--partitions", "1000", "-o", str(tmp_path / "plan.json"))
    assert result.returncode == 2 and "--partitions" in result.stderr


def test_every_part_gets_a_gpu() -> None:
    """Three types of one GPU in three parts: every part gets a GPU.

    So every job keeps its equal share (max-min value 1); dealt type by type, the first
    part took all three and the others none.
    """
    rates = data([[0.1, 0.1, 0.1]] * 3, [1, 1, 1])
    split = solve(rates, Policy.MAX_MIN_FAIRNESS, partitions=3)
    assert split.value == pytest.approx(1.0)


def test_pricing_stops_when_its_budget_is_spent() -> None:
    """Pricing with a budget already spent returns None, not a partial list."""
    document = contended(n_jobs=6, sharing=True)
    rates = ThroughputData.from_instance(document)
    scale = np.ones(rates.n_jobs)
    duals = np.full(2 * rates.n_jobs + 2, -1.0)
    assert price_pairs(rates, scale, duals) is not None
    spent = Budget(1.0, started=time.perf_counter() - 2.0)
    assert price_pairs(rates, scale, duals, budget=spent) is None


def test_max_min_fairness_with_weights_a_billion_apart() -> None:
    """Weights 10^9 and 1 on two GPUs: each job gets its own GPU, value 10^-9, not 0.

    The weight-10^9 job's normalised throughput 1 over its weight is the minimum.
    """
    result = solve(data([[0.1], [0.1]], [2], weight=[1e9, 1.0]), Policy.MAX_MIN_FAIRNESS)
    assert result.value == pytest.approx(1e-9)
    assert result.share[0, 0] == pytest.approx(1.0)


def test_more_jobs_than_the_rounds_can_hold_is_an_input_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every job takes a round: 30 jobs on one GPU with at most 10 rounds is refused at once.

    No --round helps, so the error names --method and the methods that can plan it.
    """
    monkeypatch.setattr(rounds_module, "MAX_ROUNDS", 10)
    instance = one_gpu([{"id": f"j{i}", "demand": {"compute": 1.0}, "duration_s": 1.0}
                        for i in range(30)])
    with pytest.raises(InputError) as error:
        plan(instance, "balance")
    assert error.value.source == "`method`" and "greedy or cp" in error.value.message


@pytest.mark.parametrize(("options", "flag"), [
    ({"policy": "makespan", "floor": 1.5}, "`floor`"),
    ({"policy": "quadratic", "round_s": 5.0}, "`round_s`"),
    ({"policy": "makespan", "fair_share": "time"}, "`fair_share`"),
])
def test_a_setting_the_policy_does_not_read_is_refused(options: dict[str, Any],
                                                      flag: str) -> None:
    """A setting the policy does not read is exit 2, not silently dropped.

    --floor outside min-cost, --round with quadratic, --fair-share outside the fairness
    policies.
    """
    with pytest.raises(InputError, match=flag):
        plan(two_jobs_one_gpu(), "balance", options)


def fast_and_slow(jobs: list[dict[str, Any]]) -> Instance:
    """Jobs on one fast GPU (F) and one slow GPU (S), makespan objective."""
    return instance_of({
        "gpu_types": [{"id": "F", "capacity": {"compute": 1.0}},
                      {"id": "S", "capacity": {"compute": 1.0}}],
        "nodes": [{"id": "n", "gpus": {"F": 1, "S": 1}}], "jobs": jobs,
        "objective": "makespan"})


def test_makespan_of_whole_jobs_uses_no_type_they_would_outlast() -> None:
    """Two jobs of 10 s on F, 100 s on S, in one piece: the policy's value is 20 s, met.

    Split over both GPUs the fluid plan would end at 18.2 s; a job run whole on S alone
    takes 100 s, so the makespan policy gives S no time and plans 20 s, a lower bound on
    every plan here, which the round plan meets.
    """
    instance = fast_and_slow([{"id": j, "demand": {"compute": 1.0},
                               "duration_s": {"F": 10, "S": 100}} for j in ("a", "b")])
    rates = ThroughputData.from_instance(instance)
    assert solve(rates, Policy.MAKESPAN).value == pytest.approx(200 / 11)
    whole = allocation.structured(instance, rates, np.arange(2))
    assert solve(whole, Policy.MAKESPAN).value == pytest.approx(20.0)
    schedule = plan(instance, "balance", {"policy": "makespan", "round_s": 60.0})
    assert schedule.objective == pytest.approx(20.0)
    assert {p.gpu_type for p in schedule.segments} == {"F"}


def test_a_job_in_one_piece_starts_when_gpus_free_not_at_the_next_round() -> None:
    """Only jobs that keep their GPUs run: the round ends with the first, 25 + 25 = 50 s."""
    instance = one_gpu([{"id": j, "demand": {"compute": 1.0}, "duration_s": 25}
                        for j in ("a", "b")])
    schedule = plan(instance, "balance", {"policy": "makespan", "round_s": 60.0})
    assert schedule.objective == pytest.approx(50.0)


def test_gpus_are_reserved_for_a_deadline_released_later() -> None:
    """A 10-s job released at 10 s with a deadline at 30 s keeps its GPU from a 100-s job.

    Started at 0 s, the long job would hold the only GPU past the deadline; the plan
    starts it after the short one instead and meets the deadline.
    """
    instance = one_gpu([{"id": "long", "demand": {"compute": 1.0}, "duration_s": 100},
                        {"id": "short", "demand": {"compute": 1.0}, "duration_s": 10,
                         "release_s": 10, "deadline_s": 30}])
    schedule = plan(instance, "balance", {"policy": "makespan", "round_s": 5.0})
    assert schedule.verification is not None and schedule.verification.ok
    start = {p.job: p.start_s for p in schedule.segments}
    assert start["short"] == pytest.approx(10.0) and start["long"] >= 20.0


def test_a_preemptible_job_runs_first_once_its_deadline_nears() -> None:
    """A 40-s job due at 60 s, time-shared with a 100-s job, still ends by its deadline.

    The makespan policy spreads both jobs to the plan's end at 140 s; followed to the
    letter, its shares would end the short job there. Once its slack is down to two
    rounds it runs before the long job, and the plan meets the deadline without losing
    a second of makespan (it was late before, and no plan came out).
    """
    instance = one_gpu([{"id": "long", "demand": {"compute": 1.0}, "duration_s": 100,
                         "preemptible": True},
                        {"id": "short", "demand": {"compute": 1.0}, "duration_s": 40,
                         "preemptible": True, "deadline_s": 60}])
    schedule = plan(instance, "balance", {"policy": "makespan", "round_s": 5.0})
    assert schedule.verification is not None and schedule.verification.ok
    assert max(p.end_s for p in schedule.segments if p.job == "short") <= 60.0
    assert schedule.objective == pytest.approx(140.0)


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


def test_round_plan_of_an_operator_batch_beats_greedy_near_its_fluid_value() -> None:
    """On a 50-job operator batch the makespan plan is within 20% of its fluid makespan.

    That makespan (the makespan policy's value) bounds every plan that runs one job per
    GPU at a time, greedy's too, which ends over 40% after it here; the round plan ends
    at least 10% before greedy's.
    """
    instance = instance_of(operator_document(50, seed=1))
    schedule = plan(instance, "balance", {"policy": "makespan"})
    found = re.search(r"makespan ([\d.e+]+)", str(schedule.solver))
    assert found is not None and schedule.objective is not None
    fluid = float(found[1])
    assert fluid <= schedule.objective <= 1.2 * fluid
    greedy = plan(instance, "greedy").objective
    assert greedy is not None and fluid <= greedy and schedule.objective < 0.9 * greedy


def test_a_round_plan_that_misses_a_deadline_gives_way_to_greedy(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """With a time limit, greedy's plan (made first) stands in for a late round plan."""
    instance = one_gpu([{"id": j, "demand": {"compute": 1.0}, "duration_s": 25}
                        for j in ("a", "b")])
    monkeypatch.setattr(balance, "_late", lambda *args: {0: "late, as the test says"})
    schedule = plan(instance, "balance", {"round_s": 10.0},
                    settings=RunSettings(time_limit_s=5.0))
    assert schedule.verification is not None and schedule.verification.ok
    assert "misses 1 deadlines; greedy" in str(schedule.solver)
    assert not plan(instance, "balance", {"round_s": 10.0}).status.has_plan
