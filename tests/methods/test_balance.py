"""Allocation policies (``gpuplan.models.allocation``) against hand-computed optima."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import INSTANCES, instance_from, one_gpu, run_cli

from gpuplan import Schedule, plan
from gpuplan.core.errors import InputError
from gpuplan.core.instance import Instance
from gpuplan.core.settings import RunSettings
from gpuplan.core.status import Status
from gpuplan.harness.library import operator_document
from gpuplan.methods import balance
from gpuplan.models.allocation import (
    Policy,
    ThroughputData,
)
from gpuplan.parts import round_plans as rounds_module
from gpuplan.readers.instance_file import build_instance, parse_document


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


def test_round_based_plan_time_shares_preemptible_jobs() -> None:
    """Two 40 s jobs share one GPU half and half in 10 s rounds: 4 turns each, done by 80 s."""
    instance = one_gpu([{"id": j, "demand": {"compute": 1.0}, "duration_s": 40,
                         "preemptible": True} for j in ("a", "b")])
    schedule = plan(instance, "balance", {"round_s": 10.0})
    assert schedule.verification is not None and schedule.verification.ok
    assert schedule.objective == pytest.approx(80.0)
    segments = [p for p in schedule.segments if p.job == "a"]
    assert [p.end_s - p.start_s for p in segments] == [10.0] * 4




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
    return instance_from({
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
    instance = instance_from(document)
    with pytest.raises(InputError) as error:
        plan(instance, "balance")
    least = float(error.value.message.rsplit(" ", 1)[1])
    assert least == pytest.approx(1e4)
    began = time.perf_counter()
    schedule = plan(instance, "balance", {"round_s": least})
    assert time.perf_counter() - began < 10.0
    assert schedule.verification is not None and schedule.verification.ok






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
    instance = instance_from({
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




def test_cli_names_partitions(tmp_path: Path) -> None:
    """``--partitions 1000`` on the Gavel instance: exit 2, naming --partitions."""
    result = run_cli("solve", str(INSTANCES / "gavel_makespan.json"), "--method", "balance",
                     "--partitions", "1000", "-o", str(tmp_path / "plan.json"))
    assert result.returncode == 2 and "--partitions" in result.stderr








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




def test_round_plan_of_an_operator_batch_beats_greedy_near_its_fluid_value() -> None:
    """On a 50-job operator batch the makespan plan is within 20% of its fluid makespan.

    That makespan (the makespan policy's value) bounds every plan that runs one job per
    GPU at a time, greedy's too, which ends over 40% after it here; the round plan ends
    at least 10% before greedy's.
    """
    instance = instance_from(operator_document(50, seed=1))
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
