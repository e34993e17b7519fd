"""The GAP tabu search with ejection chains: plans that fit, known optima, its scope."""

from __future__ import annotations

import itertools
from typing import Literal

import numpy as np
import pytest
from conftest import ORLIB_GAP, instance_from

from gpuplan import Instance, ObjectiveKind, plan, read_instance
from gpuplan.core.budget import Budget
from gpuplan.parts.gap_tabu import GapSearch, applies

#: (problem of gap1.txt, sense, optimum) from the OR-Library.
GAP1: list[tuple[int, Literal["min", "max"], int]] = [
    (1, "min", 261), (1, "max", 336), (3, "max", 339), (5, "min", 251)]


def knapsacks() -> Instance:
    """Two GPUs of 10 GiB, five single-GPU jobs of 3-7 GiB that do not all fit: max-weight."""
    return instance_from({
        "gpu_types": [{"id": "g", "capacity": {"mem": 10}}],
        "nodes": [{"id": "a", "gpus": {"g": 1}}, {"id": "b", "gpus": {"g": 1}}],
        "jobs": [{"id": f"j{k}", "demand": {"mem": k}, "duration_s": {"g": 1},
                  "weight": w} for k, w in ((7, 8), (6, 5), (5, 6), (4, 3), (3, 4))],
        "objective": "max-weight",
    })


@pytest.mark.parametrize(("problem", "sense", "optimum"), GAP1)
def test_reaches_known_optima(problem: int, sense: Literal["min", "max"], optimum: int) -> None:
    """From each job's cheapest GPU (over capacity), 1,000 moves reach the optimum."""
    instance = read_instance(f"{ORLIB_GAP}/gap1.txt#{problem}", file_format="orlib-gap",
                             sense=sense)
    search = GapSearch(instance)
    start = search.cheapest()
    assert not search.fits(start)
    found = search.run(start, Budget(iterations=1000), np.random.default_rng(0))
    assert found.plan is not None and search.fits(found.plan)
    assert found.value == optimum == search.value(found.plan)


def test_every_improvement_is_a_better_plan_that_fits() -> None:
    """Plans handed out on the way fit, and each is better than the one before."""
    instance = read_instance(f"{ORLIB_GAP}/gapd.txt#1", file_format="orlib-gap")
    search = GapSearch(instance)
    seen: list[float] = []

    def note(genome: np.ndarray, value: float) -> None:
        assert search.fits(genome) and search.value(genome) == value
        seen.append(value)

    found = search.run(search.cheapest(), Budget(iterations=400), np.random.default_rng(1),
                       on_improvement=note)
    assert seen and seen[-1] == found.value
    assert all(a > b for a, b in itertools.pairwise(seen))


def test_max_weight_leaves_jobs_out_and_matches_the_milp() -> None:
    """Where jobs may stay unplaced, the search finds milp's optimum, and a verified plan."""
    instance = knapsacks()
    search = GapSearch(instance)
    found = search.run(search.agents({}), Budget(iterations=300), np.random.default_rng(0))
    assert found.plan is not None
    best = plan(instance, "milp")
    assert found.value == best.objective
    assert len(search.placed(found.plan)) < instance.n_jobs


def test_scope_is_single_gpu_jobs_with_additive_objectives() -> None:
    """Gangs, and objectives that are not sums over jobs, are left to the other methods."""
    instance = knapsacks()
    assert applies(instance)
    assert not applies(instance.with_objective(ObjectiveKind.MIN_GPUS, "test"))
    gang = instance_from({
        "gpu_types": [{"id": "g", "capacity": {"mem": 10}}],
        "nodes": [{"id": "a", "gpus": {"g": 2}}],
        "jobs": [{"id": "j", "demand": {"mem": 1}, "duration_s": {"g": 1}, "gpus": 2,
                  "weight": 1}],
        "objective": "max-weight",
    })
    assert not applies(gang)
    with pytest.raises(ValueError, match="single-GPU"):
        GapSearch(gang)


@pytest.mark.parametrize("seed", range(3))
def test_a_plan_that_fits_is_found_where_the_search_stays_over_capacity(seed: int) -> None:
    """On a tight 20 x 100 problem, 300 moves from over capacity end with a plan that fits.

    The search spends nearly all its moves on over-full plans there; it must keep the plans
    that fit one move away, not only those it steps on (before, two of these seeds ended
    with no plan).
    """
    instance = read_instance(f"{ORLIB_GAP}/gapd.txt#5", file_format="orlib-gap")
    search = GapSearch(instance)
    found = search.run(search.cheapest(), Budget(iterations=300),
                       np.random.default_rng(seed))
    assert found.plan is not None and search.fits(found.plan)
    assert found.value == search.value(found.plan) < 6185 * 1.05
