"""The assignment MILP and LP on every backend, against known and brute-forced optima."""

from __future__ import annotations

import itertools
import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import ORLIB_GAP, ROOT, HighsSolve, instance_from, run_cli

from gpuplan import InputError, Instance, ObjectiveKind, Status, plan, read_instance
from gpuplan.backends import highs_runtime
from gpuplan.core.budget import Budget
from gpuplan.core.settings import CORES, Context, RunSettings
from gpuplan.core.status import relative_gap
from gpuplan.methods.lp import LpMethod, LpOptions
from gpuplan.methods.milp import MilpMethod, MilpOptions
from gpuplan.models.assignment import AssignmentModel, PooledModel
from gpuplan.models.textbook import ADDITIVE
from gpuplan.parts.lp_rounding import ROUNDINGS
from gpuplan.readers.instance_file import build_instance, parse_document
from gpuplan.readers.orlib_gap import gap_document

BACKENDS = ["highs", "cpsat", "pyomo"]

#: (problem of gap1.txt, sense, optimum) from the OR-Library and the benchmark README.
GAP1 = [(1, "min", 261), (1, "max", 336), (2, "min", 269), (3, "max", 339), (5, "min", 251)]

TINY = {
    "gpu_types": [
        {"id": "big", "capacity": {"mem": 10, "compute": 1.0},
         "sharing": True, "cost_per_hour": 3.0},
        {"id": "small", "capacity": {"mem": 4, "compute": 1.0},
         "sharing": True, "cost_per_hour": 1.0},
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
    """Every backend proves the brute-force optimum of the tiny instance, every objective.

    CP-SAT has no continuous columns for min-max-load's load level: that is refused up
    front, naming --solver.
    """
    instance = instance_from(TINY).with_objective(objective)
    if backend == "cpsat" and objective is ObjectiveKind.MIN_MAX_LOAD:
        with pytest.raises(InputError, match=r"`backend`.*continuous"):
            plan(instance, "milp", {"backend": backend})
        return
    schedule = plan(instance, "milp", {"backend": backend})
    assert schedule.status is Status.OPTIMAL
    assert schedule.objective == pytest.approx(brute_force(instance), abs=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("problem", "sense", "optimum"), GAP1)
def test_gap1_known_optima(backend: str, problem: int, sense: str, optimum: int) -> None:
    """OR-Library gap1 problems, both senses, proven optimal on every backend."""
    instance = read_instance(f"{ORLIB_GAP}/gap1.txt#{problem}", file_format="orlib-gap",
                             sense=sense)  # type: ignore[arg-type]
    schedule = plan(instance, "milp", {"backend": backend}, RunSettings(time_limit_s=30))
    assert schedule.status is Status.OPTIMAL
    assert schedule.objective == optimum
    assert schedule.bound == pytest.approx(optimum)




@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("problem", "sense", "optimum"), GAP1)
def test_textbook_model_known_optima(backend: str, problem: int, sense: str,
                                     optimum: int) -> None:
    """The textbook peer proves the same gap1 optima on every backend, its plan verified."""
    instance = read_instance(f"{ORLIB_GAP}/gap1.txt#{problem}", file_format="orlib-gap",
                             sense=sense)  # type: ignore[arg-type]
    schedule = plan(instance, "textbook", {"backend": backend}, RunSettings(time_limit_s=30))
    assert schedule.status is Status.OPTIMAL and schedule.objective == optimum
    assert schedule.verification is not None and schedule.verification.ok


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("objective", sorted(ADDITIVE), ids=lambda k: k.value)
def test_textbook_model_matches_brute_force(backend: str, objective: ObjectiveKind) -> None:
    """On the tiny instance the textbook peer proves the brute-force optimum, every backend."""
    instance = instance_from(TINY).with_objective(objective)
    schedule = plan(instance, "textbook", {"backend": backend})
    assert schedule.status is Status.OPTIMAL
    assert schedule.objective == pytest.approx(brute_force(instance), abs=1e-6)


def test_textbook_model_declines_gangs() -> None:
    """The textbook model places jobs on single GPUs: an instance with a gang is refused."""
    document = {**TINY, "jobs": [{**TINY["jobs"][1], "gpus": 2}, *TINY["jobs"][2:]],
                "nodes": [{"id": "a", "gpus": {"big": 1, "small": 2}}]}
    with pytest.raises(InputError, match="textbook"):
        plan(instance_from(document), "textbook")


def test_time_limited_highs_uses_core_and_lns() -> None:
    """With a time limit, HiGHS runs the core and LNS and still returns a verified plan."""
    instance = read_instance(f"{ORLIB_GAP}/gapd.txt#1", file_format="orlib-gap")
    schedule = plan(instance, "milp", settings=RunSettings(time_limit_s=2))
    assert schedule.status.has_plan
    assert "core" in schedule.solver
    assert 6353 <= schedule.objective <= 6353 * 1.02  # best known d05100
    assert schedule.bound is not None and schedule.bound <= 6353
    assert schedule.wall_time_s < 3


def test_gangs_on_one_node() -> None:
    """A gang of 2 must share a node: the only node with two free GPUs takes it."""
    document: dict[str, Any] = {
        "gpu_types": [{"id": "G", "capacity": {"compute": 1.0},
                       "sharing": True, "cost_per_hour": 1.0}],
        "nodes": [{"id": "a", "gpus": {"G": 2}}, {"id": "b", "gpus": {"G": 1}}],
        "jobs": [
            {"id": "pair", "gpus": 2, "demand": {"compute": 0.6}, "duration_s": 1},
            {"id": "solo", "demand": {"compute": 0.6}, "duration_s": 1},
        ],
        "objective": "min-gpus",
    }
    for backend in BACKENDS:
        schedule = plan(instance_from(document), "milp", {"backend": backend})
        assert schedule.objective == 3
        pair = next(p for p in schedule.segments if p.job == "pair")
        assert pair.node == "a" and sorted(pair.gpu_ids) == ["a/0", "a/1"]


def test_packing_infeasibility_is_proven_and_explained() -> None:
    """Volume fits (1.8 of 2) but no two jobs share a GPU: infeasible, with a reason."""
    document = {
        "gpu_types": [{"id": "G", "capacity": {"compute": 1.0}, "sharing": True}],
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
        schedule = plan(instance, "lp", {"rounding": rounding}, RunSettings(time_limit_s=5))
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




def test_thread_count_can_change_between_solves() -> None:
    """HiGHS's process-wide thread pool is resized when a solve asks for another size."""
    instance = instance_from(TINY)
    for threads in (1, 2, 1):
        schedule = plan(instance, "milp", settings=RunSettings(threads=threads))
        assert schedule.status is Status.OPTIMAL


def test_convert_and_export(tmp_path: Path) -> None:
    """``convert`` writes loadable instances; ``export-model`` writes LP and MPS files."""
    result = run_cli("convert", "orlib-gap", f"{ORLIB_GAP}/gap1.txt", "-o", tmp_path,
                     "--sense", "max")
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


def test_orlib_errors() -> None:
    """A multi-problem file needs #k; k must exist; non-GAP files are named as such."""
    with pytest.raises(InputError, match="holds 5 problems: pick one"):
        read_instance(f"{ORLIB_GAP}/gap1.txt", file_format="orlib-gap")
    with pytest.raises(InputError, match="holds 5 problem\\(s\\), not 9"):
        read_instance(f"{ORLIB_GAP}/gap1.txt#9", file_format="orlib-gap")
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


def test_milp_on_cpsat_refuses_the_load_level_up_front(tmp_path: Path) -> None:
    """min-max-load needs a continuous column, which CP-SAT lacks: refused before solving.

    Through the API and the command line (exit 2), the message names ``--solver``, cpsat
    and the capability that is missing.
    """
    instance = instance_from(TINY).with_objective(ObjectiveKind.MIN_MAX_LOAD)
    with pytest.raises(InputError) as refused:
        plan(instance, "milp", {"backend": "cpsat"})
    assert refused.value.source == "`backend`"
    assert "cpsat" in refused.value.message and "continuous" in refused.value.message
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(TINY))
    result = run_cli("solve", path, "--method", "milp", "--solver", "cpsat",
                     "--objective", "min-max-load", "-o", tmp_path / "out.json")
    assert result.returncode == 2, result.stderr
    assert all(word in result.stderr for word in ("--solver", "cpsat", "continuous"))
    assert not (tmp_path / "out.json").exists()


def test_lp_refuses_cpsat() -> None:
    """CP-SAT is not one of lp's backends (it has no continuous columns): --solver is refused.

    By name, as a flag or spec gives it, and as typed options.
    """
    instance = instance_from(TINY)
    for options in ({"backend": "cpsat"}, LpOptions(backend="cpsat")):
        with pytest.raises(InputError) as refused:
            plan(instance, "lp", options)
        assert refused.value.source == "`backend`" and "cpsat" in refused.value.message


def test_milp_starts_from_a_schedule() -> None:
    """A verified schedule given to start from is milp's start plan: kept, never worsened.

    The start is milp's own plan, better than greedy's. With almost no time, milp returns
    the start's value (not greedy's); with time, nothing worse.
    """
    instance = gap_instance(8, 40, seed=3)
    best = plan(instance, "milp", settings=RunSettings(time_limit_s=3))
    greedy = plan(instance, "greedy")
    assert best.objective is not None
    assert greedy.objective is None or best.objective < greedy.objective
    hurried = plan(instance, "milp", settings=RunSettings(time_limit_s=1e-3), warm=best)
    assert hurried.objective == best.objective
    given_time = plan(instance, "milp", settings=RunSettings(time_limit_s=2), warm=best)
    assert given_time.objective is not None and given_time.objective <= best.objective


def test_methods_solve_from_a_context() -> None:
    """Called directly, milp and lp plan within the context's budget.

    CP-SAT has no relaxation and takes no incumbents from another lane, so milp on it
    solves the whole model alone even with a time limit and two threads.
    """
    instance = instance_from(TINY)
    optimum = brute_force(instance)
    exact = MilpMethod().solve(instance, MilpOptions(), Context(Budget(2.0)))
    assert exact.status is Status.OPTIMAL and exact.objective == pytest.approx(optimum)
    alone = MilpMethod().solve(instance, MilpOptions(backend="cpsat"),
                               Context(Budget(2.0), threads=min(2, CORES)))
    assert alone.objective == pytest.approx(optimum) and "||" not in alone.solver
    rounded = LpMethod().solve(instance, LpOptions(), Context(Budget(2.0)))
    assert rounded.bound is not None and rounded.bound <= optimum + 1e-9
    assert rounded.objective is not None and rounded.objective >= optimum - 1e-9


# -- limits that hold: time, output, status -------------------------------------------

#: The time limit of the time-limit tests, and the slack allowed past it (generous: the
#: machine may be busy; the target is 10% + 0.5 s).
LIMIT_S, SLACK_S = 1.0, 1.0


def gap_instance(agents: int, jobs: int, seed: int = 0, sense: str = "min") -> Instance:
    """A Chu-Beasley type D GAP problem (hard for branch-and-cut), built in memory.

    Demands are U[1, 100], costs 111 minus the demand plus U[-10, 10], and each agent
    (one GPU of its own type) holds 80% of an even share of all demand.
    """
    rng = np.random.default_rng(seed)
    a = rng.integers(1, 101, size=(agents, jobs))
    c = 111 - a + rng.integers(-10, 11, size=(agents, jobs))
    b = (0.8 * a.sum(axis=1) / agents).astype(int)
    document = gap_document("d-like", c, a, b, sense)  # type: ignore[arg-type]
    return build_instance(parse_document(document, "<test>"), "<test>")


@pytest.fixture(scope="module")
def large_gap() -> Instance:
    """50 agents x 1,600 jobs: 80,000 columns, seconds to build in Pyomo, hard to prove."""
    return gap_instance(50, 1600)


#: (method, its options, threads, warm start) of the time-limit tests.
TIMED = [
    pytest.param("milp", {"backend": "highs"}, 2, None, id="milp-highs"),
    pytest.param("milp", {"backend": "highs"}, 1, None, id="milp-highs-1-thread"),
    pytest.param("milp", {"backend": "cpsat"}, 2, None, id="milp-cpsat"),
    pytest.param("milp", {"backend": "pyomo"}, 2, None, id="milp-pyomo"),
    pytest.param("milp", {"backend": "highs"}, 2, "greedy", id="milp-warm-greedy"),
    pytest.param("milp", {"backend": "highs"}, 2, "sa", id="milp-warm-sa"),
    pytest.param("milp", {"backend": "cpsat"}, 2, "ga", id="milp-cpsat-warm-ga"),
    pytest.param("lp", {"rounding": "largest-share"}, 2, None, id="lp-largest-share"),
    pytest.param("lp", {"rounding": "randomized"}, 2, None, id="lp-randomized"),
    pytest.param("lp", {"backend": "pyomo"}, 2, None, id="lp-pyomo"),
    pytest.param("textbook", {"backend": "highs"}, 2, None, id="textbook-highs"),
    pytest.param("textbook", {"backend": "cpsat"}, 2, None, id="textbook-cpsat"),
    pytest.param("textbook", {"backend": "pyomo"}, 2, None, id="textbook-pyomo"),
]


@pytest.mark.parametrize(("method", "options", "threads", "warm"), TIMED)
def test_time_limit_covers_the_whole_solve(large_gap: Instance, method: str,
                                           options: dict[str, Any], threads: int,
                                           warm: str | None) -> None:
    """Building, handing over, solving and reading back all fit in the time limit.

    The plan is verified, or there is none and every job says why; a plan found by the
    solver, or greedy's kept in its place, never claims more than it proves.
    """
    settings = RunSettings(time_limit_s=LIMIT_S, threads=min(threads, CORES))
    schedule = plan(large_gap, method, options, settings, warm=warm)
    assert schedule.wall_time_s <= LIMIT_S + SLACK_S, schedule.solver
    if schedule.status.has_plan:
        assert schedule.verification is not None and schedule.verification.ok
    else:
        assert schedule.status is Status.NO_SOLUTION
        assert all(u.reason for u in schedule.unplaced)
    gap = relative_gap(schedule.objective, schedule.bound)
    assert schedule.status is not Status.OPTIMAL or (gap is not None and gap <= 1e-4)


def test_milp_keeps_greedys_plan_when_building_spends_the_limit(large_gap: Instance) -> None:
    """A limit too short to build the model gives greedy's plan at once, and says why."""
    instance = large_gap.with_objective(ObjectiveKind.MAX_WEIGHT)
    schedule = plan(instance, "milp", settings=RunSettings(time_limit_s=1e-3))
    assert schedule.status is Status.FEASIBLE and schedule.segments
    assert schedule.verification is not None and schedule.verification.ok
    assert "greedy plan kept (the time limit was spent" in schedule.solver
    assert schedule.wall_time_s < 0.5


@pytest.mark.parametrize("backend", BACKENDS)
def test_optimal_only_within_the_gap_the_verifier_allows(backend: str) -> None:
    """A solver told to stop at a 20% gap calls its plan optimal; gpuplan says feasible.

    Unless the plan is within 0.01% of the bound, as the verifier requires of ``optimal``.
    """
    instance = gap_instance(10, 60, seed=2)
    schedule = plan(instance, "milp", {"backend": backend}, RunSettings(gap=0.2, threads=1))
    gap = relative_gap(schedule.objective, schedule.bound)
    assert schedule.status.has_plan and gap is not None
    assert (schedule.status is Status.OPTIMAL) == (gap <= 1e-4)
    assert gap > 1e-4, "the test needs an instance the solver stops on early"


@pytest.mark.skipif(CORES < 2, reason="two lanes need two cores")
def test_one_thread_runs_one_lane() -> None:
    """With --threads 1 milp runs branch-and-cut alone; with 2 the LP lane runs beside it."""
    instance = gap_instance(10, 80, seed=1)
    alone = plan(instance, "milp", settings=RunSettings(time_limit_s=1, threads=1))
    both = plan(instance, "milp", settings=RunSettings(time_limit_s=1, threads=2))
    assert "||" not in alone.solver and "branch-and-cut ||" in both.solver


@pytest.mark.skipif(CORES < 2, reason="two lanes need two cores")
def test_branch_and_cut_lane_is_the_peers_solve_untouched(
        highs_solves: list[HighsSolve]) -> None:
    """The branch-and-cut lane of milp is the peer's solve: same program, no start, no offers.

    That is what keeps milp from ever ending worse than the peer a user would write: a
    start or offered plans sent HiGHS down other paths, to worse plans on some problems.
    """
    instance = gap_instance(10, 60, seed=3)
    settings = RunSettings(time_limit_s=1.0, threads=2)
    plan(instance, "textbook", settings=settings)
    (peer,) = highs_solves
    plan(instance, "milp", settings=settings)
    lane = [c for c in highs_solves[1:] if c.thread == "gpuplan-branch-and-cut"]
    assert len(lane) == 1 and lane[0].same_solve(peer)
    assert peer.threads == 2 and not peer.started and not peer.offered
    # The guided lane's own solves run on one thread of their own.
    assert all(c.threads == 1 for c in highs_solves[1:] if c is not lane[0])


@pytest.mark.parametrize("backend", BACKENDS)
def test_largest_seed_is_accepted(backend: str) -> None:
    """Seeds up to 2**31 - 1 reach every backend (HiGHS and CP-SAT take 32-bit seeds)."""
    schedule = plan(instance_from(TINY), "milp", {"backend": backend},
                    RunSettings(seed=2**31 - 1))
    assert schedule.status is Status.OPTIMAL and schedule.seed == 2**31 - 1


def test_a_highs_solve_prints_nothing(capfd: pytest.CaptureFixture[str]) -> None:
    """Branch-and-cut, the LP relaxation and LNS write nothing to either terminal stream."""
    plan(gap_instance(8, 40), "milp", settings=RunSettings(time_limit_s=0.5))
    plan(gap_instance(8, 40), "lp", settings=RunSettings(time_limit_s=0.5))
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_the_highs_banner_goes_to_the_debug_log(tmp_path: Path) -> None:
    """The banner HiGHS prints when a process makes its first Highs object is not shown.

    Run in a fresh process whose standard output is a pipe (the case where C buffers it
    until exit); with debug logging on, it is in the log instead.
    """
    code = ("import logging, sys; logging.basicConfig(stream=sys.stderr, level=logging.DEBUG,"
            " format='LOG %(message)s'); logging.getLogger('pyomo').setLevel(logging.INFO);"
            " from gpuplan.backends.highs import quiet_banner; quiet_banner(); print('done')")
    quiet = subprocess.run([sys.executable, "-c", code.replace("DEBUG", "WARNING")],
                           capture_output=True, text=True, timeout=60)
    assert quiet.stdout == "done\n" and quiet.stderr == ""
    logged = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60)
    assert logged.stdout == "done\n"
    assert "LOG HiGHS: Running HiGHS" in logged.stderr


@pytest.mark.parametrize(("method", "solver"), [
    ("milp", "highs"), ("milp", "cpsat"), ("milp", "pyomo"), ("lp", "highs"),
    ("lp", "pyomo"), ("textbook", "highs"), ("textbook", "cpsat"), ("textbook", "pyomo"),
])
def test_cli_output_is_the_schedule_and_the_summary_only(method: str, solver: str,
                                                         tmp_path: Path) -> None:
    """``-o -`` writes exactly the schedule JSON; stderr holds gpuplan's summary, no solver log."""
    path = tmp_path / "gap.json"
    path.write_text(json.dumps(gap_document(
        "g", np.array([[5, 7, 3], [4, 2, 6]]), np.array([[3, 2, 2], [2, 3, 2]]),
        np.array([5, 5]), "min")))
    result = run_cli("solve", path, "--method", method, "--solver", solver,
                     "--time-limit", "5", "-o", "-")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["verification"]["ok"]
    for chatter in ("HiGHS", "Copyright", "Running", "WARNING", "Pyomo", "CP-SAT", "presolve"):
        assert chatter not in result.stderr, result.stderr


def test_empty_rows_and_tiny_coefficients_reach_every_backend() -> None:
    """Symmetry rows without entries (zero demand) and capacities of 1e-9 solve correctly.

    HiGHS drops matrix entries below 1e-9, Pyomo rejects a row without terms, and CP-SAT
    needs integers; the plan must still hold every GPU's capacity (CP-SAT's rounded rows
    prove nothing, so its plan is only feasible).
    """
    document = {
        "gpu_types": [{"id": "G", "capacity": {"compute": 1e-9, "mem": 1.0}, "sharing": True,
                       "cost_per_hour": 1.0}],
        "nodes": [{"id": "n", "gpus": {"G": 3}}],
        "jobs": [{"id": f"j{k}", "demand": {"compute": 6e-10, "mem": 0.0},
                  "duration_s": 1, "weight": 1} for k in range(4)],
        "objective": "max-weight",
    }
    instance = instance_from(document)
    for backend in BACKENDS:
        schedule = plan(instance, "milp", {"backend": backend})
        assert schedule.objective == 3, backend
        assert schedule.status is (Status.FEASIBLE if backend == "cpsat" else Status.OPTIMAL)






def test_one_thread_runs_the_warm_start_first(caplog: pytest.LogCaptureFixture) -> None:
    """With one thread there is no lane beside branch-and-cut: --warm-start sa runs first.

    Its plan is logged (``-v``) and the solve still fits the limit with a verified plan.
    """
    instance = gap_instance(10, 80, seed=1)
    with caplog.at_level(logging.INFO, logger="gpuplan"):
        schedule = plan(instance, "milp", settings=RunSettings(time_limit_s=1, threads=1),
                        warm="sa")
    assert any("warm start from sa" in r.getMessage() for r in caplog.records)
    assert schedule.verification is not None and schedule.verification.ok
    assert schedule.wall_time_s <= LIMIT_S + SLACK_S


def test_lns_uses_the_time_branch_and_cut_cannot(monkeypatch: pytest.MonkeyPatch) -> None:
    """When the model is too large for HiGHS to start in the time left, LNS goes on alone.

    HiGHS's reserve per nonzero is raised so that branch-and-cut on the whole model
    cannot start within the limit, while the small sub-MIPs of LNS still can.
    """
    instance = gap_instance(10, 80, seed=1).with_objective(ObjectiveKind.MAX_WEIGHT)
    size = AssignmentModel.build(instance).program
    monkeypatch.setattr(highs_runtime, "SECONDS_PER_NONZERO", 1.5 / (size.value.size + size.n_cols))
    schedule = plan(instance, "milp", settings=RunSettings(time_limit_s=1.0))
    assert "not started" in schedule.solver and "LNS (0 steps" not in schedule.solver
    assert "LNS (" in schedule.solver
    assert schedule.verification is not None and schedule.verification.ok
    assert 0.8 <= schedule.wall_time_s <= LIMIT_S + SLACK_S


@pytest.mark.parametrize("method", ["milp", "textbook"])
def test_a_tightened_cpsat_model_never_claims_infeasible(method: str) -> None:
    """Demands CP-SAT cannot scale exactly are tightened: its "infeasible" proves nothing.

    Jobs of 0.1234567891 and 0.8765432109 fill one GPU exactly; rounded safely (tighter)
    they no longer fit, and cpsat called the instance infeasible although greedy plans it.
    """
    document = {
        "gpu_types": [{"id": "A", "capacity": {"memory": 1.0}, "sharing": True}],
        "nodes": [{"id": "n", "gpus": {"A": 2}}],
        "jobs": [{"id": name, "duration_s": 1, "demand": {"memory": memory}, "cost": cost}
                 for name, memory, cost in (("a", 0.1234567891, 1), ("b", 0.8765432109, 2),
                                            ("c", 0.9, 3), ("d", 0.1, 4))],
        "objective": "assign-cost",
    }
    instance = build_instance(parse_document(document, "tight"), "tight")
    assert plan(instance, "greedy").status.has_plan
    schedule = plan(instance, method, {"backend": "cpsat"})
    assert schedule.status is not Status.INFEASIBLE
    assert schedule.verification is not None


def test_a_subnormal_demand_is_planned_without_overflow() -> None:
    """A demand of 2e-311 GiB (found by Hypothesis) plans and verifies.

    Scaling its row up by the power of two that brings it to 1 would overflow to
    infinity and turn the program's bounds into NaN (a bound of 0 reported for a plan
    of profit 1).
    """
    types = ("A100", "V100", "T4")
    instance = instance_from({
        "gpu_types": [{"id": t, "capacity": {"memory_gib": 16.0, "compute": 1.0}, "sharing": True}
                      for t in types],
        "nodes": [{"id": "node0", "gpus": {"V100": 2, "T4": 1}}],
        "jobs": [{"id": f"j{k}", "gpus": 1, "demand": {"memory_gib": memory, "compute": 0.1},
                  "duration_s": {"V100": 1.0}, "profit": profit}
                 for k, (memory, profit) in enumerate([(2.225073858507e-311, 1.0),
                                                       (0.0, 0.0), (0.0, 0.0)])],
        "objective": "assign-profit",
    })
    schedule = plan(instance, "milp", settings=RunSettings(threads=1))
    assert schedule.verification is not None and schedule.verification.ok
    assert schedule.objective == 1.0 and schedule.bound == 1.0






def test_the_lane_goes_from_the_lp_fixed_plan_to_the_core_mip() -> None:
    """Where the LP-fixed MIP has a plan, the lane's time goes to the core MIP and LNS.

    The tabu search runs only where that MIP found none: from its plan the core MIP and
    LNS did better on 8 of 12 type D and E problems.
    """
    instance = read_instance(f"{ORLIB_GAP}/gapd.txt#1", file_format="orlib-gap")
    found = plan(instance, "milp", settings=RunSettings(time_limit_s=2, threads=2))
    assert "LP-fixed MIP" in found.solver and "core MIP" in found.solver
    assert "tabu search" not in found.solver
