"""LP-guided list scheduling: types from the makespan LP, jobs listed on them."""

from __future__ import annotations

import pytest

from gpuplan import Instance, Schedule, verify_schedule
from gpuplan.core.budget import Budget, Limits
from gpuplan.parts.construct import list_schedule
from gpuplan.parts.lp_list import lp_list_schedule
from gpuplan.readers.generate import generate_document
from gpuplan.readers.instance_file import build_instance, parse_document


def limits() -> Limits:
    """20 s from now: a budget made at import would be spent when a long suite gets here."""
    return Limits(Budget(20.0))


def two_types() -> Instance:
    """One fast and one slow GPU; a runs 10 s fast or 11 s slow, b 10 s fast or 100 s slow.

    Greedy list scheduling puts a on the fast GPU (it finishes there first), so b waits:
    makespan 20 s. The LP's optimum is 10.9 s with 90% of a on the slow GPU and 99% of b
    on the fast one (both GPUs and a's own run time, 11 - 0.1, reach 10.9 s), so a runs on
    the slow GPU: makespan 11 s.
    """
    return build_instance(parse_document({
        "gpu_types": [{"id": t, "capacity": {"compute": 1.0}} for t in ("fast", "slow")],
        "nodes": [{"id": f"n{t}", "gpus": {t: 1}} for t in ("fast", "slow")],
        "jobs": [{"id": "a", "demand": {"compute": 1.0},
                  "duration_s": {"fast": 10.0, "slow": 11.0}},
                 {"id": "b", "demand": {"compute": 1.0},
                  "duration_s": {"fast": 10.0, "slow": 100.0}}],
        "objective": "makespan",
    }, "<test>"), "<test>")


def verified(instance: Instance, result: object) -> bool:
    """Whether the independent verifier accepts the plan."""
    schedule = Schedule.from_result(instance, result, "lp-list", 0.0, 0)  # type: ignore[arg-type]
    return verify_schedule(instance, schedule).ok


def test_the_job_goes_where_the_lp_puts_it() -> None:
    """On the hand-checked pair, a runs on the slow GPU: 11 s, where greedy takes 20 s."""
    instance = two_types()
    assert list_schedule(instance).objective == pytest.approx(20.0)
    result = lp_list_schedule(instance, limits())
    assert result.objective == pytest.approx(11.0)
    assert result.bound == pytest.approx(10.9)
    on = {instance.job_ids[j]: instance.type_ids[t]
          for j, t in zip(result.job, result.gpu_type, strict=True)}
    assert on == {"a": "slow", "b": "fast"}
    assert verified(instance, result)


@pytest.mark.parametrize(("dependencies", "window", "deadlines"),
                         [(0.0, 0.0, 0.0), (0.3, 0.0, 0.0), (0.0, 3600.0, 0.0),
                          (0.2, 1800.0, 0.5)])
def test_plans_are_valid_and_never_below_the_lp_bound(
        dependencies: float, window: float, deadlines: float) -> None:
    """With dependencies, releases and deadlines, a plan is verified and above its bound.

    A plan that would miss a deadline is no plan at all, never an invalid one.
    """
    instance = build_instance(parse_document(generate_document(
        80, 3, seed=4, dependencies=dependencies, arrival_window_s=window,
        deadlines=deadlines), "<gen>"), "<gen>")
    result = lp_list_schedule(instance, limits())
    if not result.status.has_plan:
        assert deadlines > 0 and result.unplaced
        return
    assert verified(instance, result)
    assert result.objective is not None and result.bound is not None
    assert result.objective >= result.bound * (1 - 1e-9)

