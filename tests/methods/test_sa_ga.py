"""Simulated annealing and the genetic algorithm: valid, reproducible, better than greedy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import INSTANCES, ORLIB_GAP, run_cli

from gpuplan import InputError, Instance, ObjectiveKind, Schedule, Status, plan
from gpuplan.core.budget import Budget
from gpuplan.core.settings import Context, RunSettings
from gpuplan.methods import get_method
from gpuplan.methods.base import Method
from gpuplan.methods.ga import GeneticMethod, GeneticOptions
from gpuplan.methods.sa import AnnealingMethod, AnnealingOptions
from gpuplan.parts.plan_encodings import CROSSOVERS
from gpuplan.readers import read_instance
from gpuplan.readers.instance_file import build_instance, parse_document

HEURISTICS = ["sa", "ga"]
#: Steps of sa, generations of ga: a budget small enough for the default test run.
STEPS = {"sa": 500, "ga": 5}


def static_fleet(objective: str, seed: int = 0) -> Instance:
    """Gangs of 1 and 2 with memory demands on two 4-GPU nodes of two types, all data given."""
    rng = np.random.default_rng(seed)
    jobs: list[dict[str, Any]] = []
    for k in range(12):
        gang = 2 if k % 4 == 0 else 1
        jobs.append({"id": f"j{k}", "gpus": gang,
                     "demand": {"memory": float(rng.integers(2, 9))},
                     "duration_s": 100.0, "weight": float(rng.integers(1, 5)),
                     "cost": {"A": float(rng.integers(5, 30)), "B": float(rng.integers(5, 30))},
                     "profit": {"A": float(rng.integers(5, 30)),
                                "B": float(rng.integers(5, 30))}})
    return build_instance(parse_document({
        "gpu_types": [{"id": "A", "capacity": {"memory": 16.0},
                       "sharing": True, "cost_per_hour": 3.0},
                      {"id": "B", "capacity": {"memory": 16.0},
                       "sharing": True, "cost_per_hour": 1.0}],
        "nodes": [{"id": "a", "gpus": {"A": 4}}, {"id": "b", "gpus": {"B": 4}}],
        "jobs": jobs, "objective": objective,
    }, "<test>"), "<test>")


STATIC = [k.value for k in ObjectiveKind if k.is_static]


def fleet_for(objective: str) -> Instance:
    """The static fleet for a static objective, the quickstart instance for a time-based one."""
    if ObjectiveKind(objective).is_static:
        return static_fleet(objective)
    return read_instance(INSTANCES / "quickstart.json")


@pytest.mark.parametrize("method", HEURISTICS)
@pytest.mark.parametrize("objective", STATIC)
def test_every_static_objective_is_planned_and_verified(method: str, objective: str) -> None:
    """Each static objective gets a verified plan no worse than best-fit decreasing's."""
    instance = static_fleet(objective)
    greedy = plan(instance, "greedy")
    found = plan(instance, method, settings=RunSettings(iterations=STEPS[method], seed=1))
    assert found.verification is not None and found.verification.ok
    assert found.objective is not None
    if greedy.objective is not None:
        sign = -1.0 if instance.objective.sense == "max" else 1.0
        assert sign * found.objective <= sign * greedy.objective + 1e-9


@pytest.mark.parametrize("method", HEURISTICS)
@pytest.mark.parametrize("path", [
    "quickstart.json",
    # 10 s of search: a benchmark, kept out of the default suite's 10 minutes.
    pytest.param("gavel_makespan.json", marks=pytest.mark.slow)])
def test_time_based_plans_beat_list_scheduling(method: str, path: str) -> None:
    """On the example instances the search ends strictly below list scheduling's makespan."""
    instance = read_instance(INSTANCES / path)
    greedy = plan(instance, "greedy")
    found = plan(instance, method, settings=RunSettings(iterations=60, seed=0))
    assert found.verification is not None and found.verification.ok
    assert found.objective is not None and greedy.objective is not None
    assert found.objective < greedy.objective


SAME_SEED = [
    pytest.param("sa", {}, id="sa"),
    pytest.param("sa", {"moves": ("swap",)}, id="sa-swap"),
    *(pytest.param("ga", {"crossover": name}, id=f"ga-{name}") for name in CROSSOVERS),
]


@pytest.mark.parametrize(("method", "options"), SAME_SEED)
@pytest.mark.parametrize("objective", ["assign-cost", "makespan"])
def test_same_seed_same_plan(method: str, options: dict[str, Any], objective: str) -> None:
    """Two runs with one seed and an iteration budget give the same plan, for every operator."""
    instance = fleet_for(objective)
    settings = RunSettings(iterations=10, seed=7)
    first = plan(instance, method, options, settings=settings)
    second = plan(instance, method, options, settings=settings)
    assert first.verification is not None and first.verification.ok
    assert first.segments == second.segments and first.objective == second.objective


@pytest.mark.parametrize("objective", ["assign-cost", "makespan"])
def test_direct_solve_is_what_plan_runs(objective: str) -> None:
    """A method's own solve with a context gives the plan of planning with those settings.

    Planning hands the seed and the iterations down in the budget and nothing else.
    """
    instance = fleet_for(objective)
    settings = RunSettings(iterations=10, seed=7)
    pairs: list[tuple[Method, Any]] = [(AnnealingMethod(), AnnealingOptions()),
                                       (GeneticMethod(), GeneticOptions())]
    for method, options in pairs:
        direct = method.solve(instance, options, Context(Budget(iterations=10), seed=7))
        planned = plan(instance, method.name, options, settings=settings)
        assert direct.objective == planned.objective
        assert direct.solver == planned.solver


def test_gap_optimum_reached_by_both() -> None:
    """OR-Library gap1 #1 (5 agents, 15 jobs), minimisation: sa and ga find the optimum 261."""
    instance = read_instance(f"{ORLIB_GAP / 'gap1.txt'}#1", file_format="orlib-gap",
                             sense="min")
    for method, steps in (("sa", 1000), ("ga", 5)):
        found = plan(instance, method, settings=RunSettings(iterations=steps, seed=0))
        assert found.objective == pytest.approx(261), method


def test_sa_tabu_search_plans_gap_and_anneals_the_rest() -> None:
    """``sa --search tabu`` reaches gap1 #1's maximum 336 in 500 moves, verified.

    The same seed gives the same plan; on gangs (where the tabu search does not apply)
    it anneals.
    """
    instance = read_instance(f"{ORLIB_GAP / 'gap1.txt'}#1", file_format="orlib-gap",
                             sense="max")
    settings = RunSettings(iterations=500, seed=3)
    found = plan(instance, "sa", {"search": "tabu"}, settings=settings)
    again = plan(instance, "sa", {"search": "tabu"}, settings=settings)
    assert found.objective == pytest.approx(336)
    assert found.verification is not None and found.verification.ok
    assert "tabu" in found.solver
    assert [s.gpu_ids for s in found.segments] == [s.gpu_ids for s in again.segments]
    annealed = plan(static_fleet("assign-profit"), "sa", {"search": "tabu"},
                    settings=RunSettings(iterations=STEPS["sa"]))
    assert annealed.status.has_plan and "tabu" not in annealed.solver


@pytest.mark.parametrize("warm", HEURISTICS)
def test_cp_keeps_a_better_start_plan(warm: str) -> None:
    """Cp given a heuristic's plan returns it or a better one, even with almost no time."""
    instance = read_instance(INSTANCES / "gavel_makespan.json")
    heuristic, cp = get_method(warm), get_method("cp")
    start = heuristic.solve(instance, heuristic.options_type(),
                            Context(Budget(iterations=30), seed=0))
    assert start.objective is not None
    result = cp.solve(instance, cp.options_type(), Context(Budget(0.05), start=start))
    assert result.objective is not None and result.objective <= start.objective + 1e-6


@pytest.mark.parametrize("method", ["milp", "cp"])
def test_cli_warm_start_from_a_heuristic(method: str, tmp_path: Path) -> None:
    """--warm-start sa splits the time limit and writes a verified plan."""
    instance = INSTANCES / ("gavel_makespan.json" if method == "cp" else "quickstart.json")
    extra = [] if method == "cp" else ["--objective", "max-weight"]
    result = run_cli("solve", instance, "--method", method, "--warm-start", "sa",
                     "--time-limit", "2", *extra, "-o", tmp_path / "plan.json")
    assert result.returncode == 0, result.stderr
    schedule = Schedule.read(tmp_path / "plan.json")
    assert schedule.verification is not None and schedule.verification.ok


def test_unknown_move_is_an_input_error() -> None:
    """--moves with a name not in the registry: exit 2 and the known names."""
    result = run_cli("solve", INSTANCES / "quickstart.json", "--method", "sa", "--moves",
                     "teleport")
    assert result.returncode == 2 and "shift" in result.stderr


def test_another_methods_flag_is_refused() -> None:
    """``policy`` (balance's) given to sa: refused naming the flag, sa, and what sa takes."""
    instance = read_instance(INSTANCES / "quickstart.json")
    with pytest.raises(InputError) as refused:
        plan(instance, "sa", {"policy": "makespan"})
    message = str(refused.value)
    assert "`policy`" in message and "'sa'" in message and "`moves`" in message
    assert "--crossover" not in message




@pytest.mark.parametrize("method", HEURISTICS)
def test_caller_stop_ends_the_search(method: str) -> None:
    """The budget's stop saying True ends the search at once, with a verified plan."""
    found = plan(static_fleet("assign-cost"), method, settings=RunSettings(time_limit_s=60),
                 stop=lambda: True)
    assert found.verification is not None and found.verification.ok
    assert found.wall_time_s < 5


@pytest.mark.parametrize("method", HEURISTICS)
def test_search_ends_when_its_plan_meets_the_bound(method: str) -> None:
    """A plan equal to the bound is optimal: the search returns it long before the limit."""
    found = plan(static_fleet("min-gpus"), method, settings=RunSettings(time_limit_s=60))
    assert found.status is Status.OPTIMAL and found.objective == found.bound
    assert found.wall_time_s < 10


def large_static(objective: str) -> Instance:
    """600 jobs on 16 nodes of 8 GPUs, gangs of 1 and 2: many blocks to price per step."""
    rng = np.random.default_rng(5)
    jobs = [{"id": f"j{k}", "gpus": 2 if k % 5 == 0 else 1,
             "demand": {"memory": float(rng.integers(2, 12))}, "duration_s": 100.0,
             "cost": {"A": float(rng.integers(5, 30)), "B": float(rng.integers(5, 30))}}
            for k in range(600)]
    return build_instance(parse_document({
        "gpu_types": [{"id": "A", "capacity": {"memory": 16.0},
                       "sharing": True, "cost_per_hour": 3.0},
                      {"id": "B", "capacity": {"memory": 16.0},
                       "sharing": True, "cost_per_hour": 1.0}],
        "nodes": [{"id": f"n{i}", "gpus": {"AB"[i % 2]: 8}} for i in range(16)],
        "jobs": jobs, "objective": objective,
    }, "<test>"), "<test>")


@pytest.mark.parametrize("method", HEURISTICS)
@pytest.mark.parametrize("objective", ["max-weight", "makespan"])
def test_time_limit_holds(method: str, objective: str) -> None:
    """Set-up, search and the result fit in the limit; the plan is verified."""
    instance = (large_static(objective) if objective == "max-weight"
                else read_instance(INSTANCES / "gavel_cluster_500.json"))
    found = plan(instance, method, settings=RunSettings(time_limit_s=1.0, seed=3))
    assert found.wall_time_s <= 2.5
    assert found.verification is not None and found.verification.ok


@pytest.mark.parametrize("method", HEURISTICS)
@pytest.mark.parametrize("objective", ["assign-cost", "makespan"])
def test_largest_seed_is_accepted(method: str, objective: str) -> None:
    """Seeds up to 2**31 - 1, the CLI's range, give verified plans."""
    found = plan(fleet_for(objective), method,
                 settings=RunSettings(iterations=5, seed=2**31 - 1))
    assert found.verification is not None and found.verification.ok
    assert found.seed == 2**31 - 1
