"""``--method textbook`` on makespan: the assignment MILP of R||Cmax on HiGHS and CP-SAT."""

from __future__ import annotations

import numpy as np
import pytest
from parts.test_unrelated_machines import brute_force, rcmax

from gpuplan import Status, plan
from gpuplan.core.errors import InputError
from gpuplan.core.settings import RunSettings
from gpuplan.readers.instance_file import build_instance, parse_document

SETTINGS = RunSettings(time_limit_s=20)


@pytest.mark.parametrize("backend", ["highs", "cpsat"])
def test_assignment_milp_proves_the_rcmax_optimum(backend: str) -> None:
    """Both solvers prove the brute-force optimum after the common release, plan verified."""
    times = np.random.default_rng(7).integers(1, 101, size=(10, 3))
    schedule = plan(rcmax(times, release=30.0), "textbook", {"backend": backend},
                    settings=SETTINGS)
    assert schedule.verification is not None and schedule.verification.ok
    assert schedule.status is Status.OPTIMAL
    assert schedule.objective == pytest.approx(30.0 + brute_force(times))
    assert schedule.bound == pytest.approx(schedule.objective)
    assert f"textbook on {backend}" in schedule.solver


def test_fractional_durations_on_cpsat_keep_a_valid_bound() -> None:
    """Durations in tenths of a second: CP-SAT's ticks are exact, its bound at most the plan."""
    times = np.random.default_rng(2).integers(10, 200, size=(8, 2)) / 10
    document = {
        "gpu_types": [{"id": f"m{i}", "capacity": {"compute": 1.0}} for i in range(2)],
        "nodes": [{"id": f"n{i}", "gpus": {f"m{i}": 1}} for i in range(2)],
        "jobs": [{"id": f"j{j}", "demand": {"compute": 1.0},
                  "duration_s": {f"m{i}": float(row[i]) for i in range(2)}}
                 for j, row in enumerate(times)],
        "objective": "makespan",
    }
    instance = build_instance(parse_document(document, "<test>"), "<test>")
    on_cpsat = plan(instance, "textbook", {"backend": "cpsat"}, settings=SETTINGS)
    on_highs = plan(instance, "textbook", settings=SETTINGS)
    for schedule in (on_cpsat, on_highs):
        assert schedule.verification is not None and schedule.verification.ok
        assert schedule.status is Status.OPTIMAL
    assert on_cpsat.objective == pytest.approx(on_highs.objective)


def test_time_limit_is_honoured_with_a_plan_or_a_reason() -> None:
    """At half a second on 500 jobs the peer returns a verified plan or says why not."""
    times = np.random.default_rng(0).integers(1, 101, size=(500, 30))
    schedule = plan(rcmax(times), "textbook", settings=RunSettings(time_limit_s=0.5))
    if schedule.objective is not None:
        assert schedule.verification is not None and schedule.verification.ok
        assert schedule.bound is None or schedule.bound <= schedule.objective
    else:
        assert schedule.unplaced
    assert schedule.wall_time_s < 5.0


def test_makespan_with_dependencies_keeps_the_interval_model() -> None:
    """A batch with a dependency needs sequencing: HiGHS is refused, CP-SAT plans it."""
    document = {
        "gpu_types": [{"id": "G", "capacity": {"compute": 1.0}}],
        "nodes": [{"id": "n", "gpus": {"G": 2}}],
        "jobs": [{"id": "a", "demand": {"compute": 1.0}, "duration_s": 10},
                 {"id": "b", "demand": {"compute": 1.0}, "duration_s": 10,
                  "depends_on": ["a"]}],
        "objective": "makespan",
    }
    instance = build_instance(parse_document(document, "<test>"), "<test>")
    with pytest.raises(InputError, match="sequencing"):
        plan(instance, "textbook", {"backend": "highs"}, settings=SETTINGS)
    schedule = plan(instance, "textbook", settings=SETTINGS)
    assert schedule.objective == pytest.approx(20.0)
    assert "CP-SAT" in schedule.solver
