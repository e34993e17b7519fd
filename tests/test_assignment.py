"""The assignment MILP and LP on every backend, against known and brute-forced optima."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import ROOT, run_cli
from test_greedy import instance_from

from gpuplan import InputError, Instance, ObjectiveKind, Status, plan, read_instance
from gpuplan.models.assignment import AssignmentModel, PooledModel
from gpuplan.models.textbook import ADDITIVE
from gpuplan.solvers import SolveOptions
from gpuplan.solvers.highs import HighsBackend
from gpuplan.solvers.lns import subprogram
from gpuplan.solvers.rounding import ROUNDINGS

GAP = ROOT.parent / "shared" / "benchmarks" / "gap" / "orlib"
BACKENDS = ["highs", "cpsat", "pyomo"]
needs_gap = pytest.mark.skipif(not GAP.exists(), reason="../shared/benchmarks not present")

#: (problem of gap1.txt, sense, optimum) from the OR-Library and the benchmark README.
GAP1 = [(1, "min", 261), (1, "max", 336), (2, "min", 269), (3, "max", 339), (5, "min", 251)]

TINY = {
    "gpu_types": [
        {"id": "big", "capacity": {"mem": 10, "compute": 1.0}, "cost_per_hour": 3.0},
        {"id": "small", "capacity": {"mem": 4, "compute": 1.0}, "cost_per_hour": 1.0},
    ],
    "nodes": [{"id": "a", "gpus": {"big": 1, "small": 1}}, {"id": "b", "gpus": {"small": 1}}],
    "jobs": [
        {"id": "j1", "demand": {"mem": 6, "compute": 0.5}, "duration_s": {"big": 10},
         "weight": 4, "profit": {"big": 7}},
        {"id": "j2", "demand": {"mem": 3, "compute": 0.5}, "duration_s": {"big": 8, "small": 20},
         "weight": 2, "profit": {"big": 3, "small": 5}},
        {"id": "j3", "demand": {"mem": 3, "compute": 0.6}, "duration_s": {"big": 5, "small": 9},
         "weight": 3, "profit": {"big": 2, "small": 4}},
        {"id": "j4", "demand": {"mem": 2, "compute": 0.45}, "duration_s": 4,
         "weight": 1, "profit": {"big": 1, "small": 2}},
    ],
    "objective": "assign-cost",
}
STATIC = [k for k in ObjectiveKind if k.is_static]


def brute_force(instance: Instance) -> float:
    """The optimum of a tiny single-GPU-job instance by enumerating every assignment."""
    n_gpus, best = instance.n_gpus, None
    choices = [-1, *range(n_gpus)] if instance.objective.allows_unplaced else range(n_gpus)
    for pick in itertools.product(choices, repeat=instance.n_jobs):
        load = np.zeros((n_gpus, len(instance.resources)))
        value, ok = 0.0, True
        for j, g in enumerate(pick):
            if g < 0:
                continue
            t = instance.gpu_type[g]
            ok &= bool(instance.eligible[j, t])
            load[g] += instance.demand[j, t]
            value += {
                ObjectiveKind.ASSIGN_COST: instance.cost[j, t],
                ObjectiveKind.ASSIGN_PROFIT: instance.profit[j, t],
                ObjectiveKind.MAX_WEIGHT: instance.weight[j],
            }.get(instance.objective, 0.0)
        capacity = instance.capacity[instance.gpu_type]
        if not ok or (load > capacity + 1e-9).any():
            continue
        used = np.zeros(n_gpus, dtype=bool)
        used[[g for g in pick if g >= 0]] = True
        match instance.objective:
            case ObjectiveKind.MIN_GPUS:
                value = float(used.sum())
            case ObjectiveKind.MIN_GPU_COST:
                value = float(instance.price_per_hour[instance.gpu_type[used]].sum())
            case ObjectiveKind.MIN_MAX_LOAD:
                value = float((load / capacity).max())
        if best is None or (value > best if instance.objective.sense == "max" else value < best):
            best = value
    assert best is not None
    return best


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("objective", STATIC, ids=lambda k: k.value)
def test_backends_match_brute_force(backend: str, objective: ObjectiveKind) -> None:
    """Every backend proves the brute-force optimum of the tiny instance, every objective."""
    if backend == "cpsat" and objective is ObjectiveKind.MIN_MAX_LOAD:
        pytest.skip("CP-SAT has no continuous columns for the load level")
    instance = instance_from(TINY).with_objective(objective)
    schedule = plan(instance, "milp", SolveOptions(backend=backend))
    assert schedule.status is Status.OPTIMAL
    assert schedule.objective == pytest.approx(brute_force(instance), abs=1e-6)


@needs_gap
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("problem", "sense", "optimum"), GAP1)
def test_gap1_known_optima(backend: str, problem: int, sense: str, optimum: int) -> None:
    """OR-Library gap1 problems, both senses, proven optimal on every backend."""
    instance = read_instance(f"{GAP}/gap1.txt#{problem}", file_format="orlib-gap",
                             sense=sense)  # type: ignore[arg-type]
    schedule = plan(instance, "milp", SolveOptions(backend=backend, time_limit_s=30))
    assert schedule.status is Status.OPTIMAL
    assert schedule.objective == optimum
    assert schedule.bound == pytest.approx(optimum)


@needs_gap
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("problem", "sense", "optimum"), GAP1)
def test_textbook_model_known_optima(backend: str, problem: int, sense: str,
                                     optimum: int) -> None:
    """The textbook peer proves the same gap1 optima on every backend, its plan verified."""
    instance = read_instance(f"{GAP}/gap1.txt#{problem}", file_format="orlib-gap",
                             sense=sense)  # type: ignore[arg-type]
    schedule = plan(instance, "textbook", SolveOptions(backend=backend, time_limit_s=30))
    assert schedule.status is Status.OPTIMAL and schedule.objective == optimum
    assert schedule.verification is not None and schedule.verification.ok


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("objective", sorted(ADDITIVE), ids=lambda k: k.value)
def test_textbook_model_matches_brute_force(backend: str, objective: ObjectiveKind) -> None:
    """On the tiny instance the textbook peer proves the brute-force optimum, every backend."""
    instance = instance_from(TINY).with_objective(objective)
    schedule = plan(instance, "textbook", SolveOptions(backend=backend))
    assert schedule.status is Status.OPTIMAL
    assert schedule.objective == pytest.approx(brute_force(instance), abs=1e-6)


def test_textbook_model_declines_gangs() -> None:
    """The textbook model places jobs on single GPUs: an instance with a gang is refused."""
    document = {**TINY, "jobs": [{**TINY["jobs"][1], "gpus": 2}, *TINY["jobs"][2:]],
                "nodes": [{"id": "a", "gpus": {"big": 1, "small": 2}}]}
    with pytest.raises(InputError, match="textbook"):
        plan(instance_from(document), "textbook")


@needs_gap
def test_time_limited_highs_uses_core_and_lns() -> None:
    """With a time limit, HiGHS runs the core and LNS and still returns a verified plan."""
    instance = read_instance(f"{GAP}/gapd.txt#1", file_format="orlib-gap")
    schedule = plan(instance, "milp", SolveOptions(time_limit_s=2))
    assert schedule.status.has_plan
    assert "core" in schedule.solver
    assert 6353 <= schedule.objective <= 6353 * 1.02  # best known d05100
    assert schedule.bound is not None and schedule.bound <= 6353
    assert schedule.wall_time_s < 3


def test_gangs_on_one_node() -> None:
    """A gang of 2 must share a node: the only node with two free GPUs takes it."""
    document: dict[str, Any] = {
        "gpu_types": [{"id": "G", "capacity": {"compute": 1.0}, "cost_per_hour": 1.0}],
        "nodes": [{"id": "a", "gpus": {"G": 2}}, {"id": "b", "gpus": {"G": 1}}],
        "jobs": [
            {"id": "pair", "gpus": 2, "demand": {"compute": 0.6}, "duration_s": 1},
            {"id": "solo", "demand": {"compute": 0.6}, "duration_s": 1},
        ],
        "objective": "min-gpus",
    }
    for backend in BACKENDS:
        schedule = plan(instance_from(document), "milp", SolveOptions(backend=backend))
        assert schedule.objective == 3
        pair = next(p for p in schedule.placements if p.job == "pair")
        assert pair.node == "a" and sorted(pair.gpu_ids) == ["a/0", "a/1"]


def test_packing_infeasibility_is_proven_and_explained() -> None:
    """Volume fits (1.8 of 2) but no two jobs share a GPU: infeasible, with a reason."""
    document = {
        "gpu_types": [{"id": "G", "capacity": {"compute": 1.0}}],
        "nodes": [{"id": "n", "gpus": {"G": 2}}],
        "jobs": [{"id": f"j{i}", "demand": {"compute": 0.6}, "duration_s": 1} for i in range(3)],
        "objective": "min-gpus",
    }
    schedule = plan(instance_from(document), "milp")
    assert schedule.status is Status.INFEASIBLE
    assert all("no plan satisfies every constraint" in u.reason for u in schedule.unplaced)


def test_lp_relaxation_bounds_and_rounds() -> None:
    """The pooled LP bounds the MILP optimum; both roundings give verified plans."""
    instance = instance_from(TINY).with_objective(ObjectiveKind.MAX_WEIGHT)
    optimum = brute_force(instance)
    for rounding in ROUNDINGS:
        schedule = plan(instance, "lp", SolveOptions(rounding=rounding, time_limit_s=5))
        assert schedule.status.has_plan
        assert schedule.bound is not None and schedule.bound >= optimum - 1e-9
        assert schedule.objective <= optimum + 1e-9
    pooled = PooledModel.build(instance)
    assert pooled.program.n_cols == int(instance.eligible.sum())


def test_methods_refuse_objectives_they_cannot_plan() -> None:
    """Milp has no timeline; lp only pools per-(job, type) objectives."""
    instance = instance_from(TINY)
    with pytest.raises(InputError, match="methods that can: greedy"):
        plan(instance.with_objective(ObjectiveKind.MAKESPAN), "milp")
    with pytest.raises(InputError, match="cannot plan objective 'min-gpus'"):
        plan(instance.with_objective(ObjectiveKind.MIN_GPUS), "lp")


def test_subprogram_fixes_the_rest() -> None:
    """Freeing every column gives back the program; freeing none leaves nothing to solve."""
    model = AssignmentModel.build(instance_from(TINY))
    program = model.program
    solution = HighsBackend().solve_program(program, SolveOptions())
    assert solution.values is not None
    whole, columns = subprogram(program, np.ones(program.n_cols, dtype=bool), solution.values)
    assert whole.n_cols == program.n_cols and whole.n_rows == program.n_rows
    assert HighsBackend().solve_program(whole, SolveOptions()).objective == pytest.approx(
        solution.objective
    )
    empty, columns = subprogram(program, np.zeros(program.n_cols, dtype=bool), solution.values)
    assert empty.n_cols == 0 and empty.n_rows == 0 and columns.size == 0


def test_thread_count_can_change_between_solves() -> None:
    """HiGHS's process-wide thread pool is resized when a solve asks for another size."""
    instance = instance_from(TINY)
    for threads in (1, 2, 1):
        schedule = plan(instance, "milp", SolveOptions(threads=threads))
        assert schedule.status is Status.OPTIMAL


@needs_gap
def test_convert_and_export(tmp_path: Path) -> None:
    """``convert`` writes loadable instances; ``export-model`` writes LP and MPS files."""
    result = run_cli("convert", "orlib-gap", f"{GAP}/gap1.txt", "-o", tmp_path, "--sense", "max")
    assert result.returncode == 0, result.stderr
    converted = sorted(p.name for p in tmp_path.glob("*.json"))
    assert converted == [f"gap1-{k}.json" for k in range(1, 6)]
    solved = run_cli("solve", tmp_path / "gap1-1.json", "--method", "milp", "-o", "-")
    assert solved.returncode == 0 and '"objective": 336.0' in solved.stdout
    for fmt in ("lp", "mps"):
        out = tmp_path / f"model.{fmt}"
        exported = run_cli("export-model", tmp_path / "gap1-1.json", "--format", fmt, "-o", out)
        assert exported.returncode == 0, exported.stderr
        assert "capacity" in out.read_text()


@needs_gap
def test_orlib_errors() -> None:
    """A multi-problem file needs #k; k must exist; non-GAP files are named as such."""
    with pytest.raises(InputError, match="holds 5 problems: pick one"):
        read_instance(f"{GAP}/gap1.txt", file_format="orlib-gap")
    with pytest.raises(InputError, match="holds 5 problem\\(s\\), not 9"):
        read_instance(f"{GAP}/gap1.txt#9", file_format="orlib-gap")
    with pytest.raises(InputError, match="not an OR-Library GAP file"):
        read_instance(ROOT / "instances" / "quickstart.json", file_format="orlib-gap")


def test_warm_start_from_a_schedule_file(tmp_path: Path) -> None:
    """``--warm-start`` takes any schedule; the MILP ends no worse than the start."""
    instance = ROOT / "instances" / "quickstart.json"
    start = tmp_path / "greedy.json"
    args = ("--objective", "max-weight")
    assert run_cli("solve", instance, *args, "-o", start).returncode == 0
    result = run_cli("solve", instance, *args, "--method", "milp", "--warm-start", start,
                     "--time-limit", "5", "-o", "-")
    assert result.returncode == 0, result.stderr
    greedy, milp = json.loads(start.read_text()), json.loads(result.stdout)
    assert milp["objective"] >= greedy["objective"]
    bad = run_cli("solve", instance, *args, "--method", "milp",
                  "--warm-start", ROOT / "tests" / "data" / "valid_small.json")
    assert bad.returncode == 2 and "instance: required field is missing" in bad.stderr
