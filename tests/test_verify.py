"""The verifier catches every kind of violation in hand-broken schedules."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from conftest import DATA

from gpuplan import (
    Instance,
    ObjectiveKind,
    Schedule,
    Status,
    Unplaced,
    read_instance,
    verify_schedule,
)
from gpuplan.core.schedule import Segment, ViolationKind
from gpuplan.readers.instance_file import build_instance, parse_document

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
    """A schedule document for ``instance`` holding exactly the given segments."""
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
        "segments": [
            Segment(job=job, node=n, gpu_type=t, gpu_ids=g, start_s=s, end_s=e)
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
    """The valid plan with one job's segment changed."""
    plan = dict(VALID)
    node, gpu_type, gpus, start, end = plan[job]
    current = {"node": node, "gpu_type": gpu_type, "gpus": gpus, "start": start, "end": end}
    current.update(changes)
    plan[job] = (current["node"], current["gpu_type"], current["gpus"], current["start"],
                 current["end"])
    return plan


def test_valid_plan_passes(small: Instance) -> None:
    """The hand-made plan satisfies everything and its makespan is recomputed.

    If this broke, correct plans would be rejected or reported with a wrong makespan.
    """
    verification = verify_schedule(small, schedule_of(VALID, small, objective=1300.0))
    assert verification.ok, verification.violations
    assert verification.objective == 1300.0


@pytest.mark.parametrize(
    ("plan", "kind", "words"),
    [
        (edited("train", gpus=["n1/0", "n1/1", "n1/2"]), ViolationKind.GANG, "needs 4 GPUs"),
        (edited("sweep-a", gpus=["n2/0", "n1/3"]), ViolationKind.GANG,
             "runs its 2 GPUs as 1 on n1, 1 on n2, but its gang takes all on one node"),
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
    """One broken constraint gives a readable violation of its kind.

    If this broke, `gpuplan check` would pass a plan breaking that constraint.
    """
    verification = verify_schedule(small, schedule_of(plan, small))
    assert not verification.ok
    messages = [v.message for v in verification.violations if v.kind is kind]
    assert any(words in m for m in messages), verification.violations


def test_missing_and_duplicate_jobs(small: Instance) -> None:
    """A job left out, placed twice, or of unknown id is reported.

    If this broke, a plan could silently drop or double-run a job.
    """
    missing = {k: v for k, v in VALID.items() if k != "eval"}
    assert ViolationKind.UNPLACED in kinds(small, schedule_of(missing, small))
    twice = schedule_of(VALID, small)
    twice = twice.model_copy(update={"segments": [*twice.segments, twice.segments[0]]})
    assert ViolationKind.DUPLICATE in kinds(small, twice)
    ghost = schedule_of(VALID, small, unplaced=[Unplaced(job="ghost", reason="-")])
    assert ViolationKind.REFERENCE in kinds(small, ghost)
    both = schedule_of(VALID, small, unplaced=[Unplaced(job="eval", reason="-")])
    assert ViolationKind.DUPLICATE in kinds(small, both)


def test_unplaced_only_where_allowed(small: Instance) -> None:
    """Dropping a job is a violation unless the objective maximises placed weight.

    If this broke, plans could drop jobs the objective requires, or max-weight plans would fail.
    """
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
    """Static plans start at 0 and share GPUs all at once, whatever times are written.

    If this broke, static plans could overload GPUs by claiming disjoint times.
    """
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
    """A misreported objective, a bound beyond it, or another objective kind is caught.

    If this broke, a schedule could report a better objective or bound than it has.
    """
    assert ViolationKind.OBJECTIVE in kinds(small, schedule_of(VALID, small, objective=999.0))
    assert ViolationKind.BOUND in kinds(
        small, schedule_of(VALID, small, objective=1300.0, bound=1400.0)
    )
    assert ViolationKind.OBJECTIVE in kinds(
        small, schedule_of(VALID, small, objective_kind="weighted-completion")
    )


def test_many_violations_are_summarised(small: Instance) -> None:
    """Past the listing limit, violations of one kind are counted in one line.

    If this broke, a badly broken file would flood the terminal with thousands of lines.
    """
    many = small.with_objective(ObjectiveKind.MAX_WEIGHT)
    segments = [
        Segment(job="ghost", node="n1", gpu_type="A100", gpu_ids=["n1/0"], start_s=0, end_s=1)
    ] * 30
    schedule = schedule_of({}, many, segments=segments,
                           unplaced=[Unplaced(job=j, reason="-") for j in many.job_ids])
    messages = [v.message for v in verify_schedule(many, schedule).violations]
    assert len(messages) == 21
    assert messages[-1] == "... and 10 more like these"


def test_gap_must_follow_from_objective_and_bound(small: Instance) -> None:
    """A gap that does not match |objective - bound| / |objective| is reported.

    If this broke, the reported optimality gap could be made up.
    """
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


def segments(*parts: tuple[str, float, float]) -> list[Segment]:
    """Segments of job ``p``: (type, start, end) each; A is GPU n/0, B is n/1."""
    gpu = {"A": "n/0", "B": "n/1"}
    return [Segment(job="p", node="n", gpu_type=t, gpu_ids=[gpu[t]], start_s=s, end_s=e)
            for t, s, e in parts]


def test_preemptible_job_in_two_segments() -> None:
    """Half the work on A (50 s), then half on B (100 s): valid, completes at 150 s.

    If this broke, valid preempted plans would be rejected or their makespan misread.
    """
    instance = two_type_instance(preemptible=True)
    schedule = schedule_of({}, instance, segments=segments(("A", 0, 50), ("B", 50, 150)))
    verdict = verify_schedule(instance, schedule)
    assert verdict.ok and verdict.objective == pytest.approx(150.0)


@pytest.mark.parametrize(("parts", "kind"), [
    ((("A", 0, 50), ("B", 40, 140)), ViolationKind.SEGMENT),  # runs twice at 40-50 s
    ((("A", 0, 50), ("B", 50, 100)), ViolationKind.SEGMENT),  # only 3/4 of the work
    ((("A", 0, 50), ("B", 60, 60)), ViolationKind.DURATION),  # an empty segment
])
def test_bad_segments_are_caught(parts: tuple[tuple[str, float, float], ...],
                                 kind: ViolationKind) -> None:
    """Overlapping segments, missing work and empty segments are each reported.

    If this broke, a preempted job could run twice at once or never finish its work.
    """
    instance = two_type_instance(preemptible=True)
    assert kind in kinds(instance, schedule_of({}, instance, segments=segments(*parts)))


def test_segments_need_a_preemptible_job() -> None:
    """The same two segments for a job that is not preemptible: a duplicate placement.

    If this broke, a job that cannot be paused could be planned in pieces.
    """
    instance = two_type_instance(preemptible=False)
    schedule = schedule_of({}, instance, segments=segments(("A", 0, 50), ("B", 50, 150)))
    assert ViolationKind.DUPLICATE in kinds(instance, schedule)


def test_segment_cost_is_its_share_of_the_work() -> None:
    """Half the job on A (1.0 for the whole job) and half on B (0.5): cost 0.75.

    If this broke, the cost of a job split across types would be misreported.
    """
    instance = two_type_instance(preemptible=True, objective="cost")
    schedule = schedule_of({}, instance, segments=segments(("A", 0, 50), ("B", 50, 150)))
    assert verify_schedule(instance, schedule).objective == pytest.approx(0.75)


# Schedule v2: what a segment declares (work, partner, overheads, migrated_from) and the
# events, checked against tests/data/segments_small.json. Its valid plan,
# tests/data/schedule_v2_segments.json: a (class x) and b (class y) share A GPU n/0 over
# [0, 50] s at speeds 0.8 and 0.5; c runs whole on n/1 over [0, 50]; a migrates to the B GPU
# n/2 over [50, 185] (5 s restore, 10 s migration, then 120 s of work); b goes on alone on
# n/0 over [50, 125] (a continuation: no preempt or resume events needed).
SEGMENTS_SMALL = DATA / "segments_small.json"
VALID_V2 = DATA / "schedule_v2_segments.json"
BAD_SCHEDULES = DATA / "bad_schedules"

Document = dict[str, Any]

#: bad schedule file (for segments_small.json) -> the violation kind it must give. Each
#: file breaks one fact of the valid plan; the message must name the job.
VIOLATING: dict[str, tuple[ViolationKind, str]] = {
    "work_mismatch.json": (ViolationKind.WORK, "a"),
    "partner_without_segment.json": (ViolationKind.PARTNER, "c"),
    "overhead_longer_than_segment.json": (ViolationKind.OVERHEAD, "a"),
    "migrated_from_wrong_gpus.json": (ViolationKind.MIGRATION, "a"),
    "event_at_wrong_time.json": (ViolationKind.EVENT, "a"),
}
#: Bad schedule files that are not even read (tested in test_schedule.py).
UNREADABLE = {"epoch_without_offset.json"}


@pytest.fixture(scope="module")
def shared() -> Instance:
    """The instance of the space-sharing, migrating v2 plan."""
    return read_instance(SEGMENTS_SMALL)


def v2_document() -> Document:
    """The valid v2 plan of segments_small.json, as a JSON document."""
    document: Document = json.loads(VALID_V2.read_text())
    return document


def v2_kinds(instance: Instance, change: Callable[[Document], object]) -> dict[ViolationKind,
                                                                           list[str]]:
    """The violations (messages by kind) of the valid v2 plan after ``change``."""
    document = v2_document()
    change(document)
    schedule = Schedule.from_json(json.dumps(document), "<changed>")
    found: dict[ViolationKind, list[str]] = {}
    for v in verify_schedule(instance, schedule).violations:
        found.setdefault(v.kind, []).append(v.message)
    return found


def segment(document: Document, job: str, start: float) -> Document:
    """The segment of ``job`` starting at ``start`` in a schedule document."""
    found: Document = next(s for s in document["segments"]
                           if s["job"] == job and s["start_s"] == start)
    return found


def event(document: Document, job: str, kind: str) -> Document:
    """The first ``kind`` event of ``job`` in a schedule document."""
    found: Document = next(e for e in document["events"]
                           if e["job"] == job and e["kind"] == kind)
    return found


def test_valid_v2_plan_passes(shared: Instance) -> None:
    """Shared GPUs, overheads, a migration and events that all agree pass, makespan 185.

    If this broke, `gpuplan check` would reject the correct plans a simulator writes.
    """
    verification = verify_schedule(shared, Schedule.read(VALID_V2))
    assert verification.ok, verification.violations
    assert verification.objective == pytest.approx(185.0)


def test_every_bad_schedule_file_has_an_expectation() -> None:
    """A bad schedule file without an expected kind would test nothing.

    If this broke, a defect file could sit in tests/data/bad_schedules unchecked.
    """
    assert sorted(p.name for p in BAD_SCHEDULES.iterdir()) == sorted({*VIOLATING, *UNREADABLE})


@pytest.mark.parametrize("name", sorted(VIOLATING))
def test_bad_schedule_file_is_caught(shared: Instance, name: str) -> None:
    """Each bad v2 file gives a violation of its kind whose message names the job.

    If this broke, a schedule declaring work, partners, overheads, migrations or events its
    segments do not show would pass `gpuplan check`, or the user would not learn which job.
    """
    kind, job = VIOLATING[name]
    verification = verify_schedule(shared, Schedule.read(BAD_SCHEDULES / name))
    messages = [v.message for v in verification.violations if v.kind is kind]
    assert messages, verification.violations
    assert any(f"job {job!r}" in m for m in messages), messages


@pytest.mark.parametrize(("change", "words"), [
    (lambda d: segment(d, "b", 50.0).update(work=0.7), "declares work 0.7, but 75 s"),
    (lambda d: segment(d, "a", 50.0).update(restore_s=0.0), "declares work 0.6, but 125 s"),
    (lambda d: segment(d, "c", 0.0).update(work=0.5), "runs whole in one segment"),
    # With b moved to n/1, a runs alone at speed 1: 0.5 of the job, not the declared 0.4.
    (lambda d: (segment(d, "a", 0.0).update(partner=None),
                segment(d, "b", 0.0).update(partner=None, gpu_ids=["n/1"]),
                segment(d, "c", 0.0).update(gpu_ids=["n/0"])), "do 0.5 of the job"),
])
def test_declared_work_is_recomputed(shared: Instance, change: Callable[[Document], object],
                                     words: str) -> None:
    """A declared work share that its interval, overheads and pair speed do not give is WORK.

    If this broke, a schedule could claim a job done by segments too short to do it.
    """
    messages = v2_kinds(shared, change).get(ViolationKind.WORK, [])
    assert any(words in m for m in messages), messages


@pytest.mark.parametrize(("change", "words"), [
    (lambda d: segment(d, "b", 0.0).update(partner=None), "but 'b' names no partner"),
    (lambda d: segment(d, "a", 0.0).update(partner="a"), "job 'a' names itself"),
    (lambda d: segment(d, "a", 0.0).update(partner="ghost"), "unknown job 'ghost'"),
    (lambda d: (segment(d, "a", 0.0).update(partner="c"),
                segment(d, "c", 0.0).update(partner="a", gpu_ids=["n/0"])),
     "'a' and 'c' share GPUs on n/0 over [0, 50] s, but the instance lists no colocation"),
])
def test_declared_partner_is_checked(shared: Instance, change: Callable[[Document], object],
                                     words: str) -> None:
    """A partner that does not name the segment back, or may not share, is PARTNER.

    If this broke, two jobs could crowd one GPU at colocation speeds the instance never
    gave them.
    """
    found = v2_kinds(shared, change)
    assert any(words in m for m in found.get(ViolationKind.PARTNER, [])), found


def test_segments_naming_no_partner_are_paired_as_in_v1(shared: Instance) -> None:
    """A null partner means "infer": a and b on n/0 over [0, 50] still pair at 0.8 and 0.5.

    If this broke, v2 files of methods that do not name partners would fail on work.
    """
    assert v2_kinds(shared, lambda d: [segment(d, j, 0.0).update(partner=None)
                                       for j in "ab"]) == {}


def test_partner_under_a_static_objective(shared: Instance) -> None:
    """A static plan places the batch at once: no pairing, a declared partner is PARTNER.

    If this broke, a static plan could put two jobs on one GPU beyond its capacity.
    """
    static = shared.with_objective(ObjectiveKind.MIN_GPUS)
    schedule = Schedule(**{**Schedule.read(VALID_V2).model_dump(include={
        "instance", "status", "method", "solver", "wall_time_s", "seed", "gpuplan_version"}),
        "objective_kind": "min-gpus", "objective": None, "bound": None, "gap": None,
        "status": Status.FEASIBLE, "unplaced": [],
        "segments": [Segment(job=j, node="n", gpu_type="A", gpu_ids=["n/0"], start_s=0.0,
                             end_s=100.0, partner=p) for j, p in (("a", "b"), ("b", "a"))]})
    found = {v.kind: v.message for v in verify_schedule(static, schedule).violations}
    assert "places the batch at once" in found[ViolationKind.PARTNER]
    assert ViolationKind.CAPACITY in found


@pytest.mark.parametrize(("change", "words"), [
    (lambda d: segment(d, "c", 0.0).update(restore_s=1.0), "it is not preemptible"),
    (lambda d: segment(d, "a", 50.0).update(restore_s=130.0), "pays 140 s of overheads"),
])
def test_overheads_are_checked(shared: Instance, change: Callable[[Document], object],
                               words: str) -> None:
    """Overheads longer than the segment, or paid by a job never paused, are OVERHEAD.

    If this broke, a plan could hide run time in overheads or bill restores never made.
    """
    found = v2_kinds(shared, change)
    assert any(words in m for m in found.get(ViolationKind.OVERHEAD, [])), found


def test_negative_overheads_are_refused_when_read() -> None:
    """A negative overhead is not a schedule at all: the file is bad input at its path.

    If this broke, a negative restore_s could give a segment more run time than its length.
    """
    from gpuplan import InputError

    document = v2_document()
    segment(document, "a", 50.0)["restore_s"] = -5.0
    with pytest.raises(InputError, match=r"segments\[3\]\.restore_s: Input should be greater"):
        Schedule.from_json(json.dumps(document), "<negative>")


@pytest.mark.parametrize(("change", "words"), [
    (lambda d: segment(d, "a", 50.0).update(migrated_from=None),
     "pays 10 s of migration but does not migrate"),
    (lambda d: segment(d, "a", 0.0).update(migrated_from=["n/2"]), "the job's first segment"),
    (lambda d: (segment(d, "b", 50.0).update(migrated_from=["n/0"]),
                d["events"].extend([{"time_s": 50.0, "kind": "preempt", "job": "b",
                                     "gpu_ids": ["n/0"]}])),
     "the GPUs it runs on: a migration moves the job"),
])
def test_migrations_are_checked(shared: Instance, change: Callable[[Document], object],
                                words: str) -> None:
    """migrated_from must name the previous, different GPUs; migration costs need one.

    If this broke, an exporter could move a job between GPUs it never held.
    """
    found = v2_kinds(shared, change)
    assert any(words in m for m in found.get(ViolationKind.MIGRATION, [])), found


def _drop_event(job: str, kind: str) -> Callable[[Document], None]:
    def change(document: Document) -> None:
        document["events"].remove(event(document, job, kind))
    return change


def _add_event(time_s: float, kind: str, job: str, gpus: list[str]) -> Callable[[Document], None]:
    def change(document: Document) -> None:
        document["events"].append({"time_s": time_s, "kind": kind, "job": job,
                                   "gpu_ids": gpus})
        document["events"].sort(key=lambda e: e["time_s"])
    return change


@pytest.mark.parametrize(("change", "words"), [
    (_drop_event("b", "complete"), "job 'b' has no complete event at 125 s"),
    (_drop_event("a", "migrate"), "job 'a' has no migrate event at 50 s"),
    (lambda d: event(d, "a", "migrate").update(kind="resume"), "should be a migrate event"),
    (_add_event(50.0, "migrate", "b", ["n/0"]), "is no migration"),
    (lambda d: event(d, "c", "start").update(gpu_ids=["n/0"]),
     "names GPU(s) n/0, but the segment then runs on n/1"),
    (lambda d: event(d, "c", "start").update(job="ghost"), "names unknown job 'ghost'"),
    (lambda d: event(d, "c", "start").update(gpu_ids=["n/9"]), "unknown GPU(s) n/9"),
    (lambda d: d["events"].reverse(), "(events are in time order)"),
    (_add_event(0.0, "start", "a", ["n/0"]), "job 'a': the start event at 0 s is given twice"),
    (_add_event(185.0, "complete", "b", ["n/0"]), "not at the end of the job's last segment"),
    # After every event of job c came (the verifier has let its expected events go).
    (_add_event(50.0, "complete", "c", ["n/1"]), "job 'c': the complete event at 50 s is given "
     "twice"),
])
def test_events_are_checked(shared: Instance, change: Callable[[Document], object],
                            words: str) -> None:
    """Events the segments do not show, or missing ones, are EVENT.

    If this broke, an exporter or monitor reading the events would start, stop or move
    jobs at times or on GPUs the plan does not have.
    """
    found = v2_kinds(shared, change)
    assert any(words in m for m in found.get(ViolationKind.EVENT, [])), found


def test_continuation_events_are_optional(shared: Instance) -> None:
    """Where a segment goes on on the same GPUs (new partner), preempt/resume may be given.

    If this broke, a simulator that reports b's change of partner at 50 s would be rejected.
    """
    found = v2_kinds(shared, lambda d: (_add_event(50.0, "preempt", "b", ["n/0"])(d),
                                        _add_event(50.0, "resume", "b", ["n/0"])(d)))
    assert found == {}


def test_a_plan_without_events_checks_its_segments_alone(shared: Instance) -> None:
    """Events are optional: without them, the segments are the whole plan.

    If this broke, every method that does not simulate the run would fail verification.
    """
    assert v2_kinds(shared, lambda d: d.update(events=[])) == {}


def test_a_v1_plan_of_the_same_segments_checks_as_before(shared: Instance) -> None:
    """The v2 plan without its declared facts is a v1 plan: pairs inferred, no overheads.

    Without overheads a's B segment does 135/200 of the job, so the work no longer adds up:
    exactly what the version-1 verifier said of this plan.
    If this broke, a v1 file would check differently now.
    """
    document = v2_document()
    document["format_version"] = 1
    document["placements"] = [{k: s[k] for k in ("job", "node", "gpu_type", "gpu_ids",
                                                 "start_s", "end_s")}
                              for s in document.pop("segments")]
    for key in ("epoch", "events"):
        del document[key]
    schedule = Schedule.from_json(json.dumps(document), "<v1>")
    messages = [str(v) for v in verify_schedule(shared, schedule).violations]
    assert messages == ["[segment] the segments of job 'a' do 1.075 of its work; they must add "
                        "up to 1"]
