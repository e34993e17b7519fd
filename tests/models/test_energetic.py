"""Window and packing relaxations of makespan: hand-checked windows and dual-feasible functions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from parts.test_bounds import memory_gpu

from gpuplan.models.bounds import ROUNDINGS, THRESHOLDS, dff_rounding, dff_threshold
from gpuplan.models.energetic import windows


@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=8))
def test_dual_feasible_functions_keep_a_full_gpu_full(shares: list[float]) -> None:
    """Shares that fit one GPU still fit after every function: the bound relies on it."""
    share = np.array(shares)
    assume(share.sum() <= 1.0)
    for eps in THRESHOLDS:
        assert dff_threshold(share, eps).sum() <= 1.0 + 1e-12
    for k in ROUNDINGS:
        assert dff_rounding(share, k).sum() <= 1.0 + 1e-12








def test_windows_follow_chains_and_deadlines() -> None:
    """Heads add predecessors' durations, tails the successors', deadlines pass back."""
    instance = memory_gpu([
        {"id": "a", "demand": {"compute": 1.0}, "duration_s": 10, "release_s": 5},
        {"id": "b", "demand": {"compute": 1.0}, "duration_s": 20, "depends_on": ["a"],
         "deadline_s": 100},
    ])
    frame = windows(instance, 200.0)
    assert frame.est == pytest.approx([5.0, 15.0])
    assert frame.tail == pytest.approx([20.0, 0.0])
    assert frame.lct == pytest.approx([80.0, 100.0])
    assert frame.feasible
    assert not windows(instance, 30.0).feasible
