"""The admission MILP: which arrivals a plan over the timeline can meet, promises first."""

from __future__ import annotations

import numpy as np
import pytest

from gpuplan.backends.highs import HighsBackend
from gpuplan.core.budget import Budget, Limits
from gpuplan.models.admission import AdmissionJob, admission_model, hull


def job(left_s: float, need: float, admitted: bool = False) -> AdmissionJob:
    """A job scaling linearly, 1 iteration/s per GPU, on 1, 2, 4 or 8 GPUs."""
    return AdmissionJob(left_s=left_s, need=need, counts=np.array([1, 2, 4, 8]),
                        rates=np.array([1.0, 2.0, 4.0, 8.0]), overhead_s=0.0,
                        admitted=admitted)


def admitted(jobs: list[AdmissionJob], gpus: int) -> list[bool]:
    """Which jobs the solved model admits."""
    model = admission_model(jobs, gpus, periods=12)
    solution = HighsBackend().solve_program(model.program, Limits(Budget(10.0)))
    assert solution.values is not None
    return model.admitted(solution.values).tolist()


def test_the_hull_drops_levels_under_the_chord() -> None:
    """(2, 1.0) lies under the chord from (1, 1.0) to (4, 3.2): not on the hull."""
    slope, intercept = hull(np.array([1, 2, 4]), np.array([1.0, 1.0, 3.2]))
    assert slope.tolist() == pytest.approx([1.0, 2.2 / 3])
    assert intercept.tolist() == pytest.approx([0.0, 1.0 - 2.2 / 3])


def test_the_hull_ends_where_more_gpus_stop_helping() -> None:
    """A level slower than a smaller one adds no segment."""
    slope, _ = hull(np.array([1, 2, 4]), np.array([1.0, 1.5, 1.4]))
    assert slope.size == 2


def test_all_arrivals_that_fit_together_are_admitted() -> None:
    """Two jobs of 4000 GPU-seconds in 1000 s on 8 GPUs: both."""
    assert admitted([job(1000, 4000), job(1000, 4000)], gpus=8) == [True, True]


def test_of_rivals_for_the_same_gpus_the_most_that_fit_are_admitted() -> None:
    """One big job or two small ones by the same deadline: the two small ones."""
    chosen = admitted([job(1000, 8000), job(1000, 4000), job(1000, 4000)], gpus=8)
    assert chosen == [False, True, True]


def test_an_admitted_job_keeps_its_gpus_before_any_arrival() -> None:
    """The admitted job needs all 8 GPUs: the arrival is not taken in."""
    chosen = admitted([job(1000, 8000, admitted=True), job(1000, 1000)], gpus=8)
    assert chosen == [True, False]


def test_a_later_deadline_leaves_room_after_an_earlier_one() -> None:
    """8000 iterations by 1000 s, then 8000 more by 2000 s: both fit, one after the other."""
    assert admitted([job(1000, 8000), job(2000, 8000)], gpus=8) == [True, True]
