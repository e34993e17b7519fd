"""The verifier catches every kind of violation in hand-broken schedules."""

from __future__ import annotations

from typing import Any

import pytest

from gpuplan import Instance, ObjectiveKind, Placement, Schedule, Status, Unplaced, verify_schedule
from gpuplan.readers.instance_file import build_instance, parse_document
from gpuplan.schedule import ViolationKind

# A valid hand-made plan for tests/data/valid_small.json. GPUs are numbered per node in the
# order of gpu_types, so on n2 the two A100s are n2/0, n2/1 and the two L4s n2/2, n2/3.
VALID = {
    "prep": ("n2", "A100", ["n2/0"], 0.0, 100.0),
    "train": ("n1", "A100", ["n1/0", "n1/1", "n1/2", "n1/3"], 100.0, 1100.0),
    "eval": ("n2", "A100", ["n2/0"], 1100.0, 1300.0),
    "sweep-a": ("n2", "A100", ["n2/0", "n2/1"], 50.0, 450.0),
    "sweep-b": ("n2", "L4", ["n2/2"], 0.0, 300.0),
}


def schedule_of(
    plan: dict[str, tuple[str, str, list[str], float, float]],
    instance: Instance,
    **fields: Any,
) -> Schedule:
    """A schedule document for ``instance`` holding exactly the given placements."""
    values: dict[str, Any] = {
        "instance": instance.name,
        "objective_kind": instance.objective.value,
        "status": Status.FEASIBLE,
        "objective": None,
        "bound": None,
        "gap": None,
        "method": "hand",
        "solver": "hand",
        "wall_time_s": 0.0,
        "seed": 0,
        "gpuplan_version": "test",
        "placements": [
            Placement(job=job, node=n, gpu_type=t, gpu_ids=g, start_s=s, end_s=e)
            for job, (n, t, g, s, e) in plan.items()
        ],
        "unplaced": [],
    }
    values.update(fields)
    return Schedule(**values)


def kinds(instance: Instance, schedule: Schedule) -> set[ViolationKind]:
    """The kinds of violation the verifier reports."""
    return {v.kind for v in verify_schedule(instance, schedule).violations}


def edited(job: str, **changes: Any) -> dict[str, tuple[str, str, list[str], float, float]]:
    """The valid plan with one job's placement changed."""
    plan = dict(VALID)
    node, gpu_type, gpus, start, end = plan[job]
    current = {"node": node, "gpu_type": gpu_type, "gpus": gpus, "start": start, "end": end}
    current.update(changes)
    plan[job] = (current["node"], current["gpu_type"], current["gpus"], current["start"],
                 current["end"])
    return plan


def test_valid_plan_passes(small: Instance) -> None:
    """The hand-made plan satisfies everything and its makespan is recomputed."""
    verification = verify_schedule(small, schedule_of(VALID, small, objective=1300.0))
    assert verification.ok, verification.violations
    assert verification.objective == 1300.0


@pytest.mark.parametrize(
    ("plan", "kind", "words"),
    [
        (edited("train", gpus=["n1/0", "n1/1", "n1/2"]), ViolationKind.GANG, "needs 4 GPUs"),
        (edited("sweep-a", gpus=["n2/0", "n1/3"]), ViolationKind.GANG, "not on node 'n2'"),
        (edited("prep", gpus=["n2/2"]), ViolationKind.TYPE, "is a L4, not a A100"),
        (edited("sweep-b", gpu_type="A100", gpus=["n2/1"]), ViolationKind.TYPE, "may not run"),
        (edited("eval", end=1310.0), ViolationKind.DURATION, "takes 200 s there"),
        (edited("sweep-a", start=0.0, end=400.0), ViolationKind.RELEASE, "before its release"),
        (edited("train", start=1100.0, end=2100.0), ViolationKind.DEADLINE, "after its deadline"),
        (
            edited("eval", start=900.0, end=1100.0),
            ViolationKind.DEPENDENCY,
            "before its predecessor",
        ),
        (
            edited("sweep-a", node="n1", gpus=["n1/0", "n1/1"]),
            ViolationKind.CAPACITY,
            "GPU n1/0: compute load 1.5 exceeds capacity 1 at 100 s",
        ),
        (edited("prep", node="n9"), ViolationKind.REFERENCE, "unknown n9"),
        (edited("prep", gpus=["n2/0", "n2/0"]), ViolationKind.GANG, "more than once"),
    ],
)
def test_each_violation_is_caught(
    small: Instance, plan: dict[str, Any], kind: ViolationKind, words: str
) -> None:
    """One broken constraint gives a readable violation of its kind."""
    verification = verify_schedule(small, schedule_of(plan, small))
    assert not verification.ok
    messages = [v.message for v in verification.violations if v.kind is kind]
    assert any(words in m for m in messages), verification.violations


def test_missing_and_duplicate_jobs(small: Instance) -> None:
    """A job left out, placed twice, or of unknown id is reported."""
    missing = {k: v for k, v in VALID.items() if k != "eval"}
    assert ViolationKind.UNPLACED in kinds(small, schedule_of(missing, small))
    twice = schedule_of(VALID, small)
    twice = twice.model_copy(update={"placements": [*twice.placements, twice.placements[0]]})
    assert ViolationKind.DUPLICATE in kinds(small, twice)
    ghost = schedule_of(VALID, small, unplaced=[Unplaced(job="ghost", reason="-")])
    assert ViolationKind.REFERENCE in kinds(small, ghost)
    both = schedule_of(VALID, small, unplaced=[Unplaced(job="eval", reason="-")])
    assert ViolationKind.DUPLICATE in kinds(small, both)


def test_unplaced_only_where_allowed(small: Instance) -> None:
    """Dropping a job is a violation unless the objective maximises placed weight."""
    dropped = {k: v for k, v in VALID.items() if k != "sweep-b"}
    unplaced = [Unplaced(job="sweep-b", reason="chosen")]
    assert ViolationKind.UNPLACED in kinds(small, schedule_of(dropped, small, unplaced=unplaced))
    static = small.with_objective(ObjectiveKind.MAX_WEIGHT)
    at_zero = {k: (n, t, g, 0.0, e - s) for k, (n, t, g, s, e) in dropped.items()}
    del at_zero["sweep-a"]  # it would overload n2/0's compute together with prep and eval
    unplaced.append(Unplaced(job="sweep-a", reason="no room"))
    verification = verify_schedule(static, schedule_of(at_zero, static, unplaced=unplaced,
                                                       objective=5.0))
    assert verification.ok, verification.violations
    assert verification.objective == 5.0


def test_static_objectives_check_all_at_once(small: Instance) -> None:
    """Static plans start at 0 and share GPUs all at once, whatever times are written."""
    static = small.with_objective(ObjectiveKind.MIN_GPUS)
    at_zero = {k: (n, t, g, 0.0, e - s) for k, (n, t, g, s, e) in VALID.items()}
    # Disjoint in time, but static: prep, eval and sweep-a together need compute 1.5 on n2/0.
    assert ViolationKind.CAPACITY in kinds(static, schedule_of(at_zero, static))
    at_zero["eval"] = ("n1", "A100", ["n1/0"], 0.0, 200.0)
    at_zero["train"] = ("n2", "A100", ["n2/0", "n2/1"], 0.0, 1000.0)
    assert ViolationKind.GANG in kinds(static, schedule_of(at_zero, static))
    shifted = edited("sweep-b", start=5.0, end=305.0)
    assert ViolationKind.START in kinds(static, schedule_of(shifted, static))


def test_objective_and_bound_are_checked(small: Instance) -> None:
    """A misreported objective, a bound beyond it, or another objective kind is caught."""
    assert ViolationKind.OBJECTIVE in kinds(small, schedule_of(VALID, small, objective=999.0))
    assert ViolationKind.BOUND in kinds(
        small, schedule_of(VALID, small, objective=1300.0, bound=1400.0)
    )
    assert ViolationKind.OBJECTIVE in kinds(
        small, schedule_of(VALID, small, objective_kind="weighted-completion")
    )


def test_many_violations_are_summarised(small: Instance) -> None:
    """Past the listing limit, violations of one kind are counted in one line."""
    many = small.with_objective(ObjectiveKind.MAX_WEIGHT)
    placements = [
        Placement(job="ghost", node="n1", gpu_type="A100", gpu_ids=["n1/0"], start_s=0, end_s=1)
    ] * 30
    schedule = schedule_of({}, many, placements=placements,
                           unplaced=[Unplaced(job=j, reason="-") for j in many.job_ids])
    messages = [v.message for v in verify_schedule(many, schedule).violations]
    assert len(messages) == 21
    assert messages[-1] == "... and 10 more like these"


def test_gap_must_follow_from_objective_and_bound(small: Instance) -> None:
    """A gap that does not match |objective - bound| / |objective| is reported."""
    good = schedule_of(VALID, small, objective=1300.0, bound=1040.0, gap=0.2)
    assert verify_schedule(small, good).ok
    bad = schedule_of(VALID, small, objective=1300.0, bound=1040.0, gap=0.01)
    assert ViolationKind.BOUND in kinds(small, bad)


def two_type_instance(preemptible: bool, objective: str = "makespan") -> Instance:
    """One A (job takes 100 s there) and one B (200 s) GPU; a single job."""
    return build_instance(parse_document({
        "name": "segments",
        "gpu_types": [{"id": "A", "capacity": {"compute": 1.0}, "cost_per_hour": 36.0},
                      {"id": "B", "capacity": {"compute": 1.0}, "cost_per_hour": 9.0}],
        "nodes": [{"id": "n", "gpus": {"A": 1, "B": 1}}],
        "jobs": [{"id": "p", "demand": {"compute": 1.0}, "duration_s": {"A": 100, "B": 200},
                  "preemptible": preemptible}],
        "objective": objective,
    }, "<test>"), "<test>")


def segments(*parts: tuple[str, float, float]) -> list[Placement]:
    """Placements of job ``p``: (type, start, end) each; A is GPU n/0, B is n/1."""
    gpu = {"A": "n/0", "B": "n/1"}
    return [Placement(job="p", node="n", gpu_type=t, gpu_ids=[gpu[t]], start_s=s, end_s=e)
            for t, s, e in parts]


def test_preemptible_job_in_two_segments() -> None:
    """Half the work on A (50 s), then half on B (100 s): valid, completes at 150 s."""
    instance = two_type_instance(preemptible=True)
    schedule = schedule_of({}, instance, placements=segments(("A", 0, 50), ("B", 50, 150)))
    verdict = verify_schedule(instance, schedule)
    assert verdict.ok and verdict.objective == pytest.approx(150.0)


@pytest.mark.parametrize(("parts", "kind"), [
    ((("A", 0, 50), ("B", 40, 140)), ViolationKind.SEGMENT),  # runs twice at 40-50 s
    ((("A", 0, 50), ("B", 50, 100)), ViolationKind.SEGMENT),  # only 3/4 of the work
    ((("A", 0, 50), ("B", 60, 60)), ViolationKind.DURATION),  # an empty segment
])
def test_bad_segments_are_caught(parts: tuple[tuple[str, float, float], ...],
                                 kind: ViolationKind) -> None:
    """Overlapping segments, missing work and empty segments are each reported."""
    instance = two_type_instance(preemptible=True)
    assert kind in kinds(instance, schedule_of({}, instance, placements=segments(*parts)))


def test_segments_need_a_preemptible_job() -> None:
    """The same two segments for a job that is not preemptible: a duplicate placement."""
    instance = two_type_instance(preemptible=False)
    schedule = schedule_of({}, instance, placements=segments(("A", 0, 50), ("B", 50, 150)))
    assert ViolationKind.DUPLICATE in kinds(instance, schedule)


def test_segment_cost_is_its_share_of_the_work() -> None:
    """Half the job on A (1.0 for the whole job) and half on B (0.5): cost 0.75."""
    instance = two_type_instance(preemptible=True, objective="cost")
    schedule = schedule_of({}, instance, placements=segments(("A", 0, 50), ("B", 50, 150)))
    assert verify_schedule(instance, schedule).objective == pytest.approx(0.75)
