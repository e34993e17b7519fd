"""R||Cmax in ``--method cp``: the pair search, LP rounding and the two-lane portfolio."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from conftest import HighsSolve

from gpuplan import Instance, Status, plan
from gpuplan.backends import get_backend
from gpuplan.core.budget import Budget, Limits
from gpuplan.core.settings import RunSettings
from gpuplan.models.assignment_makespan import AssignmentMakespanModel
from gpuplan.parts.unrelated_machines import NEVER, PairSearch, lp_rounded
from gpuplan.readers.instance_file import build_instance, parse_document


def rcmax(times: np.ndarray, release: float = 0.0) -> Instance:
    """R||Cmax: one GPU type per machine, one GPU each, single-GPU jobs of ``times`` (J, M)."""
    machines = range(times.shape[1])
    return build_instance(parse_document({
        "gpu_types": [{"id": f"m{i}", "capacity": {"compute": 1.0}} for i in machines],
        "nodes": [{"id": f"n{i}", "gpus": {f"m{i}": 1}} for i in machines],
        "jobs": [{"id": f"j{j}", "demand": {"compute": 1.0}, "release_s": release,
                  "duration_s": {f"m{i}": int(row[i]) for i in machines}}
                 for j, row in enumerate(times)],
        "objective": "makespan",
    }, "<test>"), "<test>")


def brute_force(times: np.ndarray) -> int:
    """The R||Cmax optimum of ``times`` by trying every assignment."""
    n, m = times.shape
    every = np.array(list(itertools.product(range(m), repeat=n)))
    loads = np.stack([np.where(every == i, times[:, i], 0).sum(axis=1) for i in range(m)])
    return int(loads.max(axis=0).min())


def test_pair_reassignment_is_exact_and_keeps_the_least_total() -> None:
    """Two GPUs' jobs get a plan within the cap of least total load, as brute force finds."""
    rng = np.random.default_rng(3)
    times = rng.integers(1, 30, size=(9, 2))
    optimum = brute_force(times)
    search = PairSearch(times.astype(np.int64), np.zeros(9, dtype=np.int64),
                        np.random.default_rng(0))
    assert search.reassign(0, 1, optimum)
    assert search.makespan == optimum
    every = np.array(list(itertools.product(range(2), repeat=9)))
    loads = np.stack([np.where(every == i, times[:, i], 0).sum(axis=1) for i in range(2)])
    fits = loads.max(axis=0) <= optimum
    assert search.load.sum() == loads.sum(axis=0)[fits].min()
    assert not search.reassign(0, 1, optimum - 1), "no plan fits below the optimum"


def test_pair_search_respects_eligibility() -> None:
    """A job that may not use a GPU never lands there, whatever the loads."""
    times = np.array([[5, NEVER], [5, 5], [5, 5], [NEVER, 9]], dtype=np.int64)
    search = PairSearch(times, np.array([0, 0, 0, 1]), np.random.default_rng(0))
    search.improve(Budget(5.0), 0, get_backend("highs"), Limits(Budget()), lambda g, m: None)
    assert search.gpu[0] == 0 and search.gpu[3] == 1
    assert search.makespan == 14


def test_lp_rounding_gives_a_plan_and_a_bound() -> None:
    """The LP's value is at most the optimum, and its rounded plan places every job."""
    times = np.random.default_rng(5).integers(1, 100, size=(8, 3))
    instance = rcmax(times)
    model = AssignmentMakespanModel.build(instance, instance.duration, False)
    gpu, value = lp_rounded(model, get_backend("highs"), Limits(Budget(10.0)))
    assert gpu is not None and value is not None
    assert (gpu >= 0).all() and value <= brute_force(times) + 1e-6


def test_model_encodes_and_decodes_a_plan() -> None:
    """A plan's column values decode back to it, and its C row holds at the plan's makespan."""
    times = np.random.default_rng(1).integers(1, 50, size=(6, 3))
    instance = rcmax(times)
    model = AssignmentMakespanModel.build(instance, instance.duration, True)
    gpu = np.array([0, 1, 2, 0, 1, 2])
    makespan = max(times[gpu == g, g].sum() for g in range(3))
    values = model.encode(gpu, makespan)
    assert (model.decode(values) == gpu).all()
    activity = model.program.activity(values)
    assert (activity <= model.program.row_upper + 1e-9).all()
    assert (activity >= model.program.row_lower - 1e-9).all()


@pytest.mark.parametrize("threads", [1, 2])
def test_cp_proves_the_optimum_on_either_thread_count(threads: int) -> None:
    """The cp portfolio (lanes, or search then branch-and-cut) proves the brute-force optimum."""
    times = np.random.default_rng(7).integers(1, 101, size=(10, 3))
    schedule = plan(rcmax(times, release=50.0), "cp",
                    settings=RunSettings(time_limit_s=20, threads=threads))
    assert schedule.verification is not None and schedule.verification.ok
    assert schedule.status is Status.OPTIMAL
    assert schedule.objective == pytest.approx(50.0 + brute_force(times))
    assert min(s.start_s for s in schedule.segments) == pytest.approx(50.0)


def test_cp_bound_is_valid_and_plan_verified_at_a_short_limit() -> None:
    """At a limit too short for a proof, the plan is verified and the bound below it."""
    times = np.random.default_rng(0).integers(1, 101, size=(200, 20))
    schedule = plan(rcmax(times), "cp", settings=RunSettings(time_limit_s=1.0))
    assert schedule.verification is not None and schedule.verification.ok
    assert schedule.objective is not None and schedule.bound is not None
    assert schedule.bound <= schedule.objective


def test_branch_and_cut_lane_is_the_peers_solve_untouched(
        highs_solves: list[HighsSolve]) -> None:
    """The branch-and-cut lane of cp on R||Cmax is the peer's solve, untouched.

    The search runs beside it, so cp's plan is never worse than the peer's on the same
    machine (with a start or offered plans, HiGHS ended a unit above the peer on 3 of
    the 81 R||Cmax grid instances).
    """
    times = np.random.default_rng(5).integers(1, 101, size=(60, 6))
    settings = RunSettings(time_limit_s=1.0, threads=2)
    plan(rcmax(times), "textbook", settings=settings)
    (peer,) = highs_solves
    plan(rcmax(times), "cp", settings=settings)
    lane = [c for c in highs_solves[1:] if c.thread == "gpuplan-branch-and-cut"]
    assert len(lane) == 1 and lane[0].same_solve(peer)
    assert peer.threads == 2 and not peer.started and not peer.offered
