"""Objectives: deadlines-met counts the jobs done by their due date, and may leave jobs out."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import DATA, one_gpu

from gpuplan import InputError, plan, read_instance
from gpuplan.core.objectives import (
    ADMISSION_OBJECTIVES,
    ALL_OBJECTIVES,
    TIME_OBJECTIVES,
    ObjectiveKind,
    time_objective,
)


def test_deadlines_met_is_a_time_objective_to_maximise_that_may_leave_jobs_out() -> None:
    """It has a timeline, more is better, and a plan may decline jobs (admission control)."""
    kind = ObjectiveKind.DEADLINES_MET
    assert not kind.is_static and kind.sense == "max" and kind.allows_unplaced


def test_only_a_method_that_names_it_plans_deadlines_met() -> None:
    """No set a general method declares holds it: a method plans admission by name."""
    assert {ObjectiveKind.DEADLINES_MET} == ADMISSION_OBJECTIVES
    assert ObjectiveKind.DEADLINES_MET not in ALL_OBJECTIVES | TIME_OBJECTIVES
    assert set(ObjectiveKind) == ALL_OBJECTIVES | ADMISSION_OBJECTIVES


def test_deadlines_met_weighs_the_jobs_done_by_their_due_date() -> None:
    """Jobs done by their due date count their weight; late or declined ones do not.

    Done at 100 by 100 (weight 2), at 300 after 200 (weight 3), with no due date (weight
    5), and never (weight 7): 2 + 5 count.
    """
    instance = one_gpu([
        {"id": "on-time", "duration_s": 100, "due_s": 100, "weight": 2},
        {"id": "late", "duration_s": 100, "due_s": 200, "weight": 3},
        {"id": "no-due", "duration_s": 100, "weight": 5},
        {"id": "declined", "duration_s": 100, "due_s": 1000, "weight": 7},
    ])
    job = np.array([0, 1, 2])
    value = time_objective(instance, job, np.zeros(3, dtype=np.int64),
                           np.array([100.0, 300.0, 400.0]), ObjectiveKind.DEADLINES_MET)
    assert value == pytest.approx(7.0)


def test_solve_says_no_planning_method_plans_deadlines_met() -> None:
    """Solving for deadlines-met with a method that cannot says so and what to do instead."""
    instance = read_instance(DATA / "elastic.json")
    with pytest.raises(InputError) as caught:
        plan(instance, "greedy")
    assert caught.value.message == (
        "method 'greedy' cannot plan objective 'deadlines-met'; no planning method can; "
        "plan the instance for another `objective`")
