"""``--method cp``: CP-SAT plans with start times, against hand-computed optima."""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import DATA, INSTANCES, run_cli
from ortools.sat.python import cp_model

from gpuplan import Instance, ObjectiveKind, Schedule, Status, plan, read_instance
from gpuplan.core.budget import Budget
from gpuplan.core.errors import InputError
from gpuplan.core.settings import RunSettings
from gpuplan.core.status import OPTIMAL_GAP, relative_gap
from gpuplan.models.linear import OutOfTimeError
from gpuplan.models.machine_load import sequencing_free
from gpuplan.models.scheduling import (
    SchedulingModel,
    TickScale,
    decimal,
    to_ticks,
)
from gpuplan.parts.construct import list_schedule
from gpuplan.parts.schedule_sharing import sharing_list_schedule
from gpuplan.readers.generate import generate_document
from gpuplan.readers.instance_file import build_instance, parse_document

#: Long enough for every small instance here to be proven optimal.
SETTINGS = RunSettings(time_limit_s=20, seed=0)


def fleet(jobs: list[dict[str, Any]], objective: str, nodes: int = 1, gpus: int = 1,
          types: tuple[str, ...] = ("G",), sharing: bool = False) -> Instance:
    """One node per type and count, 16 GiB and compute 1.0 per GPU, price 1 per hour.

    GPUs are held whole unless ``sharing``.
    """
    return build_instance(parse_document({
        "gpu_types": [{"id": t, "capacity": {"memory_gib": 16.0, "compute": 1.0},
                       "cost_per_hour": 1.0 + k, "sharing": sharing}
                      for k, t in enumerate(types)],
        "nodes": [{"id": f"{t}{n}", "gpus": {t: gpus}} for t in types for n in range(nodes)],
        "jobs": jobs,
        "objective": objective,
    }, "<test>"), "<test>")


def job(name: str, duration: float | dict[str, float], **fields: Any) -> dict[str, Any]:
    """A job needing a whole GPU unless ``demand`` says otherwise."""
    return {"id": name, "demand": fields.pop("demand", {"compute": 1.0}),
            "duration_s": duration, **fields}


def solved(instance: Instance, options: dict[str, Any] | None = None,
           settings: RunSettings = SETTINGS) -> Any:
    """The verified CP schedule, as a dict of job id to placement."""
    schedule = plan(instance, "cp", options, settings=settings)
    assert schedule.verification is not None and schedule.verification.ok
    return schedule, {p.job: p for p in schedule.segments}


def test_sharing_halves_the_makespan() -> None:
    """Two half-GPU jobs run together on the one GPU: makespan 100, not 200 as greedy."""
    half = {"memory_gib": 8.0, "compute": 0.5}
    instance = fleet([job("a", 100, demand=half), job("b", 100, demand=half)], "makespan",
                     sharing=True)
    schedule, by_job = solved(instance)
    assert schedule.status is Status.OPTIMAL and schedule.objective == pytest.approx(100)
    assert by_job["a"].gpu_ids == by_job["b"].gpu_ids
    assert plan(instance).objective == pytest.approx(200)


def unrelated_machines(release: float = 0.0) -> tuple[Instance, float]:
    """R||Cmax, 10 jobs on 3 machines, and its optimum found by trying all 3^10 plans."""
    rng = np.random.default_rng(7)
    times = rng.integers(1, 101, size=(10, 3))
    types = ("A", "B", "C")
    instance = fleet([job(f"j{j}", {t: int(times[j, i]) for i, t in enumerate(types)},
                          release_s=release) for j in range(10)], "makespan", types=types)
    every = np.array(list(itertools.product(range(3), repeat=10)))
    loads = np.stack([np.where(every == i, times[:, i], 0).sum(axis=1) for i in range(3)])
    return instance, release + float(loads.max(axis=0).min())


def test_interval_model_solves_unrelated_machines() -> None:
    """The interval model proves the brute-force R||Cmax optimum."""
    instance, optimum = unrelated_machines()
    model = SchedulingModel.build(instance, TickScale.choose(instance))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = 20
    solver.parameters.num_workers = 2
    assert solver.solve(model.model) == cp_model.OPTIMAL
    assert solver.objective_value * model.objective_scale == pytest.approx(optimum)


def test_sequencing_free_batches_use_the_load_model() -> None:
    """A common release shifts every job; cp plans from it and proves the optimum."""
    instance, optimum = unrelated_machines(release=50.0)
    assert sequencing_free(instance)
    schedule, by_job = solved(instance)
    assert schedule.status is Status.OPTIMAL and schedule.objective == pytest.approx(optimum)
    assert min(p.start_s for p in by_job.values()) == pytest.approx(50.0)


def test_what_needs_sequencing_is_not_sequencing_free() -> None:
    """Dependencies, a gang, a late release or a deadline each rule the load model out."""
    base = [job("a", 10), job("b", 20)]
    assert sequencing_free(fleet(base, "makespan", gpus=2))
    for change in ({"depends_on": ["a"]}, {"gpus": 2}, {"release_s": 5}, {"deadline_s": 100}):
        assert not sequencing_free(fleet([base[0], {**base[1], **change}], "makespan",
                                         gpus=2)), change
    assert not sequencing_free(fleet(base, "weighted-completion", gpus=2))


def test_memory_prevents_sharing() -> None:
    """Half the compute but 10 GiB each of 16: they cannot share, makespan 200."""
    big = {"memory_gib": 10.0, "compute": 0.5}
    instance = fleet([job("a", 100, demand=big), job("b", 100, demand=big)], "makespan")
    schedule, _ = solved(instance)
    assert schedule.status is Status.OPTIMAL and schedule.objective == pytest.approx(200)


def test_gangs_pack_a_node() -> None:
    """On 4 GPUs, a 4-GPU job and two 2-GPU jobs take two rounds: makespan 200."""
    jobs = [job("big", 100, gpus=4), job("left", 100, gpus=2), job("right", 100, gpus=2)]
    schedule, by_job = solved(fleet(jobs, "makespan", gpus=4))
    assert schedule.status is Status.OPTIMAL and schedule.objective == pytest.approx(200)
    assert len(by_job["big"].gpu_ids) == 4
    assert by_job["left"].start_s == by_job["right"].start_s
    assert not set(by_job["left"].gpu_ids) & set(by_job["right"].gpu_ids)


def test_dependencies_and_release() -> None:
    """Job b waits for a (ends 150), c is released at 300: makespan 400 on two GPUs."""
    jobs = [job("a", 100, release_s=50), job("b", 100, depends_on=["a"]),
            job("c", 100, release_s=300)]
    schedule, by_job = solved(fleet(jobs, "makespan", gpus=2))
    assert schedule.status is Status.OPTIMAL and schedule.objective == pytest.approx(400)
    assert by_job["b"].start_s >= by_job["a"].end_s
    assert by_job["c"].start_s >= 300


def test_deadline_reorders_jobs() -> None:
    """Weighted completion puts the heavy short job first unless a deadline forbids it."""
    jobs = [job("long", 300, weight=1, deadline_s=300), job("short", 100, weight=10)]
    schedule, by_job = solved(fleet(jobs, "weighted-completion"))
    # long first: 1*300 + 10*400 = 4300 (short first would miss long's deadline).
    assert schedule.status is Status.OPTIMAL and schedule.objective == pytest.approx(4300)
    assert by_job["long"].start_s == 0


def test_tardiness_optimum() -> None:
    """Due dates 100 and 150 for jobs of 100 on one GPU: one is late by 50, weight 2 first."""
    jobs = [job("a", 100, due_s=100, weight=1), job("b", 100, due_s=150, weight=2)]
    schedule, _ = solved(fleet(jobs, "tardiness"))
    # b first: a ends 200, late 100 (cost 100); a first: b late 50 (cost 100). Tie at 100.
    assert schedule.status is Status.OPTIMAL and schedule.objective == pytest.approx(100)


def test_cost_uses_the_cheap_type_unless_a_deadline_needs_the_fast_one() -> None:
    """Cheap type A (slow) for all but the job whose deadline only B meets."""
    jobs = [job("loose", {"A": 3600, "B": 1800}),
            job("urgent", {"A": 3600, "B": 1800}, deadline_s=2000)]
    instance = fleet(jobs, "cost", types=("A", "B"))
    schedule, by_job = solved(instance)
    # A costs 1/h, B 2/h: loose on A for 1.0, urgent on B for 1800 s * 2/h = 1.0.
    assert schedule.status is Status.OPTIMAL and schedule.objective == pytest.approx(2.0)
    assert by_job["loose"].gpu_type == "A" and by_job["urgent"].gpu_type == "B"


def test_lexicographic_makespan_then_cost() -> None:
    """Both types give makespan 3600 for one job each; then cost keeps the cheaper one."""
    jobs = [job("x", {"A": 3600, "B": 3600}), job("y", {"A": 1800, "B": 1800})]
    instance = fleet(jobs, "makespan", gpus=2, types=("A", "B"))
    schedule, by_job = solved(instance, {"then": "cost"})
    assert schedule.objective == pytest.approx(3600)
    assert {p.gpu_type for p in by_job.values()} == {"A"}


def test_tick_rounding_keeps_real_times() -> None:
    """Durations with no exact tick are rounded up to ticks; the plan keeps real times."""
    jobs = [job("a", 100.1234567), job("b", 50.7654321, depends_on=["a"])]
    instance = fleet(jobs, "makespan")
    scale = TickScale.choose(instance)
    assert not scale.exact and scale.tick_s == pytest.approx(0.01)
    schedule, by_job = solved(instance)
    assert "durations rounded up" in schedule.solver
    assert by_job["a"].end_s - by_job["a"].start_s == pytest.approx(100.1234567)
    assert by_job["b"].start_s >= by_job["a"].end_s
    assert schedule.objective <= 100.1234567 + 50.7654321 + 2 * scale.tick_s


def test_exact_tick_for_whole_seconds() -> None:
    """Whole minutes make a tick of 10 s exact, so CP-SAT's bound is reported."""
    instance = fleet([job("a", 60), job("b", 120)], "makespan")
    assert TickScale.choose(instance) == TickScale(10.0, True)


def test_conflicting_deadlines_are_named() -> None:
    """Each deadline is reachable alone, not both on one GPU: the core names both jobs."""
    jobs = [job("a", 100, deadline_s=150), job("b", 100, deadline_s=150), job("c", 10)]
    schedule = plan(fleet(jobs, "makespan"), "cp", settings=SETTINGS)
    assert schedule.status is Status.INFEASIBLE
    reason = {u.job: u.reason for u in schedule.unplaced}["a"]
    assert "'a'" in reason and "'b'" in reason and "'c'" not in reason


@pytest.mark.parametrize("objective", ["makespan", "weighted-completion", "tardiness", "cost"])
def test_quickstart_never_worse_than_list_scheduling(objective: str) -> None:
    """On the quickstart instance, cp is verified and at least as good as greedy."""
    instance = read_instance(INSTANCES / "quickstart.json", objective=ObjectiveKind(objective))
    schedule, _ = solved(instance, settings=RunSettings(time_limit_s=5))
    greedy = plan(instance)
    assert schedule.objective is not None and greedy.objective is not None
    assert schedule.objective <= greedy.objective * (1 + 1e-9)
    assert schedule.bound is not None and schedule.bound <= schedule.objective * (1 + 1e-9)


def test_cli_cp_and_then() -> None:
    """The CLI runs cp with --then and rejects --then on a static method."""
    done = run_cli("solve", INSTANCES / "quickstart.json", "--method", "cp", "--objective",
                   "makespan", "--then", "cost", "--time-limit", "5", "-o", "-")
    assert done.returncode == 0, done.stderr
    assert '"status"' in done.stdout
    bad = run_cli("solve", INSTANCES / "quickstart.json", "--method", "milp", "--objective",
                  "assign-cost", "--then", "cost")
    assert bad.returncode == 2 and "--then" in bad.stderr


def test_gpu_ids_are_distinct_per_instant() -> None:
    """Four single-GPU jobs on two GPUs: no two overlapping jobs share a GPU."""
    instance = fleet([job(f"j{k}", 100 + 10 * k) for k in range(4)], "makespan", gpus=2)
    schedule, by_job = solved(instance)
    spans = [(p.start_s, p.end_s, p.gpu_ids[0]) for p in by_job.values()]
    for s1, e1, g1 in spans:
        overlapping = [g for s, e, g in spans if s < e1 and s1 < e and (s, e) != (s1, e1)]
        assert g1 not in overlapping
    assert schedule.objective == pytest.approx(230)  # {100, 130} and {110, 120}


@pytest.mark.parametrize("method", ["cp", "textbook"])
def test_unrelated_machines_optimum_by_cp_and_the_textbook_peer(method: str) -> None:
    """Gpuplan's cp and the plain interval model (the peer) both prove the R||Cmax optimum."""
    instance, optimum = unrelated_machines()
    schedule = plan(instance, method, settings=SETTINGS)
    assert schedule.verification is not None and schedule.verification.ok
    assert schedule.status is Status.OPTIMAL and schedule.objective == pytest.approx(optimum)


def test_textbook_peer_keeps_release_dependency_and_deadline() -> None:
    """The peer's model has releases, dependencies and deadlines: 400 on two GPUs, verified."""
    jobs = [job("a", 100, release_s=50), job("b", 100, depends_on=["a"], deadline_s=260),
            job("c", 100, release_s=300)]
    schedule = plan(fleet(jobs, "makespan", gpus=2), "textbook", settings=SETTINGS)
    assert schedule.verification is not None and schedule.verification.ok
    assert schedule.objective == pytest.approx(400)


def honest(schedule: Schedule) -> None:
    """A plan's bound is at most its objective, and 'optimal' has a gap of at most 1e-4."""
    assert schedule.objective is not None and schedule.bound is not None
    assert schedule.bound <= schedule.objective * (1 + 1e-9)
    if schedule.status is Status.OPTIMAL:
        gap = relative_gap(schedule.objective, schedule.bound)
        assert gap is not None and gap <= OPTIMAL_GAP


def test_exact_means_an_exact_multiple() -> None:
    """Whole ticks are exact multiples: 0.3 s is three ticks of 0.1 s, 0.1 + 0.2 s is not.

    10^9 + 0.5 s is no whole number of 10^6-s ticks, so it rounds up (or down), never to
    the nearest.
    """
    ticks, whole = to_ticks(np.array([0.3, 0.1 + 0.2, 7.0, 0.0]), decimal(0.1), up=True)
    assert ticks.tolist() == [3, 4, 70, 0] and whole.tolist() == [True, False, True, True]
    big = np.array([1_000_000_000.5])
    assert to_ticks(big, decimal(1e6), up=True)[0].tolist() == [1001]
    assert to_ticks(big, decimal(1e6), up=False)[0].tolist() == [1000]
    assert not to_ticks(big, decimal(1e6), up=True)[1].any()
    assert to_ticks(big, decimal(0.5), up=True) [0].tolist() == [2_000_000_001]


def test_half_a_second_past_whole_ticks_is_planned_not_infeasible() -> None:
    """A 999,000,000.5-s job due by 999,000,000.9 s is planned and proven optimal.

    It was called infeasible: 10^6 s passed as an exact tick within a relative 1e-9, so
    the job took 1000 ticks and its deadline 999.
    """
    instance = fleet([job("a", 999_000_000.5, deadline_s=999_000_000.9)], "makespan")
    assert not TickScale.at(instance, 1e6).exact
    schedule, by_job = solved(instance)
    assert schedule.status is Status.OPTIMAL
    assert by_job["a"].end_s == pytest.approx(999_000_000.5, abs=1e-3)
    honest(schedule)


def test_the_reported_billion_second_job_is_refused_as_input(tmp_path: Path) -> None:
    """The issue's file (a 1,000,000,000.5-s job) is past the format's 1e9 s: exit 2, no plan.

    cp's side of the report is the 999,000,000.5-s job above.
    """
    path = tmp_path / "billion.json"
    path.write_text(json.dumps({
        "gpu_types": [{"id": "G", "capacity": {"compute": 1.0}}],
        "nodes": [{"id": "n", "gpus": {"G": 1}}],
        "jobs": [{"id": "a", "demand": {"compute": 1.0}, "duration_s": 1_000_000_000.5,
                  "deadline_s": 1_000_000_001}],
        "objective": "makespan",
    }))
    done = run_cli("solve", path, "--method", "cp", "-o", tmp_path / "plan.json")
    assert done.returncode == 2 and "less than or equal to 1000000000" in done.stderr
    assert not (tmp_path / "plan.json").exists()


def test_a_coarse_tick_on_valid_small_still_plans(tmp_path: Path) -> None:
    """--tick 1e6 on valid_small.json gives a plan (exit 0), not 'infeasible'.

    Every job rounds up to 10^6 s and the deadline 2000 s down to 0, so the rounded model
    has no plan; the instance has one, and cp returns list scheduling's.
    """
    out = tmp_path / "plan.json"
    done = run_cli("solve", DATA / "valid_small.json", "--method", "cp", "--tick", "1e6",
                   "-o", out)
    assert done.returncode == 0, done.stderr
    assert "infeasible" not in done.stderr
    schedule = Schedule.read(out)
    assert schedule.status.has_plan and len(schedule.segments) == 5
    assert "rounded" in schedule.solver


def test_infeasible_at_a_rounded_tick_is_no_proof() -> None:
    """An infeasible model at a rounded tick gives no_solution, never 'infeasible'.

    At a tick of 7 s the conflicting deadlines also fail, but rounding proves nothing; the
    reason names the conflict and the exact tick (10 s).
    """
    jobs = [job("a", 100, deadline_s=150), job("b", 100, deadline_s=150), job("c", 10)]
    schedule = plan(fleet(jobs, "makespan"), "cp", {"tick_s": 7}, settings=SETTINGS)
    assert schedule.status is Status.NO_SOLUTION
    reason = {u.job: u.reason for u in schedule.unplaced}["a"]
    assert "'a'" in reason and "'b'" in reason
    assert "no proof" in reason and "--tick 10" in reason


@pytest.mark.parametrize("objective", ["makespan", "weighted-completion", "tardiness", "cost"])
def test_a_rounded_model_never_bounds_above_the_plan(objective: str) -> None:
    """An inexact tick never gives a bound above the plan's objective.

    With --tick 1e6, jobs of 900,000,000.5 s and 800,000,000.5 s round up to whole ticks
    (a bound from that rounded model was once reported, above the objective).
    """
    jobs = [job("a", 900_000_000.5, due_s=0),
            job("b", 800_000_000.5, depends_on=["a"], due_s=0)]
    schedule, _ = solved(fleet(jobs, objective), {"tick_s": 1e6})
    assert "rounded" in schedule.solver
    honest(schedule)


def test_a_tick_too_fine_for_cp_sat_is_an_input_error(small: Instance) -> None:
    """A tick that puts the horizon past 2**53 ticks is an input error (exit 2).

    The message names the limit and a tick that works (1e-12 s on valid_small), which
    does work; a tick of 1e-20 s was an internal error.
    """
    with pytest.raises(InputError, match=r"2\*\*53.*`tick_s` 1e-12"):
        plan(small, "cp", {"tick_s": 1e-13})
    done = run_cli("solve", DATA / "valid_small.json", "--method", "cp", "--tick", "1e-20")
    assert done.returncode == 2, done.stderr
    assert "--tick" in done.stderr and "Traceback" not in done.stderr
    assert plan(small, "cp", {"tick_s": 1e-12},
                settings=RunSettings(time_limit_s=5)).status.has_plan


def test_the_automatic_tick_falls_back_to_a_coarser_rounded_one() -> None:
    """Without --tick, a horizon too long for exact ticks gets a coarser, rounded tick.

    Microsecond durations over 1.08e10 s would need 10^16 ticks: cp says it rounds, and
    plans at the real times all the same.
    """
    jobs = [job(f"j{k}", 900_000_000.000001 + k) for k in range(12)]
    instance = fleet(jobs, "makespan")
    scale = TickScale.choose(instance)
    assert not scale.exact and scale.tick_s > 1e-6
    schedule, by_job = solved(instance)
    assert "rounded" in schedule.solver
    assert by_job["j3"].end_s - by_job["j3"].start_s == pytest.approx(900_000_003.000001)
    honest(schedule)


@pytest.mark.parametrize("case", ["then", "warm-start", "preemptible", "coarse-tick"])
def test_optimal_only_with_a_bound_within_1e_4(case: str) -> None:
    """'optimal' always comes with a bound within 1e-4 of the objective.

    So on every path: --then, a warm start, a rounded tick, and preemptible jobs, which cp
    plans whole (200 s) against a preemptive bound of 150 s, so only feasible.
    """
    quickstart = read_instance(INSTANCES / "quickstart.json")
    settings = RunSettings(time_limit_s=3)
    if case == "then":
        schedule = plan(quickstart, "cp", {"then": "cost"}, settings=settings)
    elif case == "warm-start":
        schedule = plan(quickstart, "cp", settings=settings, warm="sa")
    elif case == "coarse-tick":
        schedule = plan(quickstart, "cp", {"tick_s": 1000}, settings=settings)
    else:
        jobs = [job(f"p{k}", 100, preemptible=True) for k in range(3)]
        schedule = plan(fleet(jobs, "makespan", gpus=2), "cp", settings=settings)
        assert schedule.status is Status.FEASIBLE
        assert schedule.objective == pytest.approx(200) and schedule.bound == pytest.approx(150)
    assert schedule.verification is not None and schedule.verification.ok
    honest(schedule)


def test_preemptible_batches_start_from_the_round_based_plan() -> None:
    """Three one-hour preemptible jobs on two GPUs: 1.5 h, where one-piece plans need 2 h.

    cp's model runs each job in one piece; for makespan on a batch of preemptible jobs it
    starts from balance's round-based plan, which moves jobs between GPUs round by round
    and reaches the preemptive bound here.
    """
    jobs = [job(f"p{k}", 3600, preemptible=True) for k in range(3)]
    schedule = plan(fleet(jobs, "makespan", gpus=2), "cp", settings=RunSettings(time_limit_s=5))
    assert schedule.verification is not None and schedule.verification.ok
    assert schedule.objective == pytest.approx(5400) and schedule.bound == pytest.approx(5400)
    assert len(schedule.segments) > 3
    honest(schedule)


def test_list_scheduling_hint_is_a_solution_of_the_model() -> None:
    """CP-SAT starts from list scheduling's plan as a valid solution, not one to repair.

    The model breaks the symmetry of twin GPUs: on GPUs that jobs may share, the first job
    that may use a group sits on its lowest GPUs. The hint renames twin GPUs to match (it
    broke that rule before).
    """
    instance = build_instance(parse_document(generate_document(60, 3, seed=2), "<gen>"),
                              "<gen>")
    greedy = list_schedule(instance)
    model = SchedulingModel.build(instance, TickScale.choose(instance))
    model.hint(greedy.job, greedy.gpus, greedy.start)
    solver = cp_model.CpSolver()
    solver.parameters.fix_variables_to_their_hinted_value = True
    solver.parameters.max_time_in_seconds = 10
    assert solver.solve(model.model) in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    assert greedy.objective is not None
    assert solver.objective_value * model.objective_scale <= greedy.objective * (1 + 1e-9)


def shares_gpus(gpus: tuple[Any, ...], start: Any, end: Any) -> bool:
    """Whether two segments of a plan run on a common GPU at the same time."""
    return any(set(gpus[a].tolist()) & set(gpus[b].tolist())
               and start[a] < end[b] and start[b] < end[a]
               for a, b in itertools.combinations(range(len(gpus)), 2))


@pytest.mark.parametrize("objective", ["makespan", "weighted-completion", "tardiness"])
def test_a_shared_plan_is_a_complete_hint(objective: str) -> None:
    """A plan whose jobs share GPUs hints every variable, and CP-SAT keeps it as it is.

    Every interval, presence and per-GPU literal and the objective's variables (makespan,
    lateness) are hinted, so that fixing all of them to the hint is a solution whose
    value is the plan's: the plan keeps its shared GPUs and start times.
    """
    instance = read_instance(INSTANCES / "library" / "operator-50-s1.json",
                             objective=ObjectiveKind(objective))
    shared = sharing_list_schedule(instance)
    assert shared.objective is not None and shares_gpus(shared.gpus, shared.start, shared.end)
    model = SchedulingModel.build(instance, TickScale.choose(instance))
    model.hint(shared.job, shared.gpus, shared.start)
    assert model.hinted_values().size == len(model.model.proto.variables)
    solver = cp_model.CpSolver()
    solver.parameters.fix_variables_to_their_hinted_value = True
    solver.parameters.max_time_in_seconds = 10
    assert solver.solve(model.model) == cp_model.OPTIMAL
    assert solver.objective_value * model.objective_scale == pytest.approx(shared.objective)


def test_building_stops_when_its_time_is_up(small: Instance) -> None:
    """A model given no time to be built raises OutOfTimeError rather than running on."""
    with pytest.raises(OutOfTimeError):
        SchedulingModel.build(small, TickScale.choose(small), budget=Budget(0.0))


@pytest.mark.parametrize("limit", [0.3, 1.5])
def test_the_time_limit_covers_building_the_model(limit: float) -> None:
    """The time limit covers building the model: a verified plan within the limit + slack.

    1000 jobs that may share 128 GPUs make a model of 140,000 literals, whose solve took
    4 s at a limit of 1.5 s; the slack is for a busy machine.
    """
    instance = build_instance(parse_document(generate_document(1000, 16, seed=1), "<gen>"),
                              "<gen>")
    started = time.perf_counter()
    schedule = plan(instance, "cp", settings=RunSettings(time_limit_s=limit))
    elapsed = time.perf_counter() - started
    assert elapsed <= limit * 1.1 + 1.0, f"{elapsed:.2f} s at a limit of {limit} s"
    assert schedule.verification is not None and schedule.verification.ok
    assert schedule.status.has_plan


@pytest.mark.parametrize("objective", ["makespan", "tardiness"])
def test_a_schedule_file_start_is_never_lost(tmp_path: Path, objective: str) -> None:
    """Cp from a schedule file (``--warm-start SCHEDULE.json``) is at least as good as it.

    The start is greedy's plan, written and read back as a user's file would be.
    """
    instance = read_instance(INSTANCES / "quickstart.json", objective=ObjectiveKind(objective))
    path = tmp_path / "greedy.json"
    plan(instance, "greedy").write(path)
    start = Schedule.read(path)
    schedule = plan(instance, "cp", settings=RunSettings(time_limit_s=2), warm=start)
    assert schedule.verification is not None and schedule.verification.ok
    assert start.objective is not None and schedule.objective is not None
    assert schedule.objective <= start.objective * (1 + 1e-9)
    honest(schedule)


def test_a_start_better_than_list_scheduling_is_kept(tmp_path: Path) -> None:
    """Without time for CP-SAT, a start better than list scheduling's plan is returned.

    Two half-GPU jobs: cp's plan shares the GPU (makespan 100), list scheduling's does
    not (200). From cp's plan, a run too short for CP-SAT returns that plan, not 200: the
    start was dropped before.
    """
    half = {"memory_gib": 8.0, "compute": 0.5}
    instance = fleet([job("a", 100, demand=half), job("b", 100, demand=half)], "makespan",
                     sharing=True)
    path = tmp_path / "shared.json"
    plan(instance, "cp", settings=SETTINGS).write(path)
    schedule = plan(instance, "cp", settings=RunSettings(time_limit_s=0.01),
                    warm=Schedule.read(path))
    assert schedule.verification is not None and schedule.verification.ok
    assert schedule.objective == pytest.approx(100)
    assert "warm start" in schedule.solver


@pytest.mark.parametrize("then", ["assign-cost", "makespan"])
def test_then_must_be_another_time_based_objective(then: str) -> None:
    """--then on a static objective, or equal to the primary, is refused naming --then."""
    instance = read_instance(INSTANCES / "quickstart.json", objective=ObjectiveKind.MAKESPAN)
    with pytest.raises(InputError) as refused:
        plan(instance, "cp", {"then": then})
    assert refused.value.source == "`then`"
    assert "weighted-completion" in refused.value.message
