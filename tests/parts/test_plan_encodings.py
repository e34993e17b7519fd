"""Plan encodings of the metaheuristics: move tables priced right, penalties finite."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from methods.test_sa_ga import STATIC, static_fleet

from gpuplan.parts.local_search import StaticSearch
from gpuplan.parts.plan_encodings import MOVES, AssignmentState


@pytest.mark.parametrize("objective", STATIC)
def test_move_tables_price_what_the_move_does(objective: str) -> None:
    """Every finite shift and swap entry equals the value and excess change of making it.

    Checked by brute force from random over-full plans of gangs of 1 and 2, for every
    static objective (GPU-opening values, the non-additive peak, jobs left out).
    """
    instance = static_fleet(objective, seed=3)
    state = AssignmentState(instance)
    rng = np.random.default_rng(0)
    checked = 0
    for _ in range(3):
        genome = state.random(rng)
        if state.may_drop:
            genome[rng.random(genome.size) < 0.2] = -1
        state.set(genome)
        for table in state.tables(list(MOVES), rng):
            for r, c in zip(*np.nonzero(np.isfinite(table.value)), strict=True):
                before = (state.value, state.excess)
                state.make(table, int(r), int(c))
                assert state.value - before[0] == pytest.approx(table.value[r, c], abs=1e-9)
                assert state.excess - before[1] == pytest.approx(table.excess[r, c], abs=1e-9)
                state.set(genome)
                checked += 1
    assert checked > 100


def test_penalty_stays_finite_over_long_searches() -> None:
    """The capacity penalty moves within bounds, so long searches never overflow it.

    It rises while plans over-fill and falls while they fit; an infinite or zero penalty
    would turn move prices into NaN (numpy warnings, and moves drawn at random).
    """
    state = AssignmentState(static_fleet("assign-cost"))
    state.greedy()
    search = StaticSearch(state, list(MOVES), np.random.default_rng(0))
    start = search.penalty
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(20_000):
            search.note_window(crowded=False)
        assert search.penalty == pytest.approx(start / 1e9)
        for _ in range(20_000):
            search.note_window(crowded=True)
        assert search.penalty == pytest.approx(start * 1e9)
        search.step(search.scale)
