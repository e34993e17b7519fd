"""The run-log checker: a log is held to the parts, options, mode and rules its record claims.

Each test makes a real run log with ``simulate`` (which checks it, so an untouched log
passes), tampers with it as a user editing the file could, and asserts that the verifier
or :func:`~gpuplan.simulate.check.check_run` names what was changed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from conftest import instance_from

from gpuplan.core.instance import Instance
from gpuplan.core.schedule import Schedule
from gpuplan.simulate import Mode, RunSpec, SimulationConfig, simulate
from gpuplan.simulate.check import check_run
from gpuplan.verify import verify_schedule

#: A job by id: (GPUs, seconds on A, arrival s).
Jobs = dict[str, tuple[int, float, float]]
Document = dict[str, Any]


def cluster(nodes: list[int], jobs: Jobs) -> Instance:
    """Nodes ``n1``, ``n2``... with the given numbers of GPUs of type A, and the jobs."""
    return instance_from({
        "name": "trace",
        "gpu_types": [{"id": "A", "capacity": {"memory_gib": 16}}],
        "nodes": [{"id": f"n{k + 1}", "gpus": {"A": gpus}} for k, gpus in enumerate(nodes)],
        "jobs": [{"id": job, "gpus": gang, "demand": {"memory_gib": 1},
                  "duration_s": {"A": seconds}, "release_s": arrival, "preemptible": True}
                 for job, (gang, seconds, arrival) in jobs.items()],
        "objective": "weighted-completion",
    })


def run(instance: Instance, scheduler: str, *, mode: Mode = Mode.EVENT,
        restart_s: float = 0.0, **options: Any) -> Schedule:
    """The checked run log of ``scheduler`` (rounds of 100 s, no migration overhead)."""
    config = SimulationConfig(mode=mode, round_s=100.0, restart_overhead_s=restart_s,
                              migration_overhead_s=0.0)
    return simulate(instance, RunSpec(scheduler=scheduler, config=config, options=options))


def tampered(instance: Instance, schedule: Schedule,
             change: Callable[[Document], None]) -> Schedule:
    """The log as a file, changed by ``change``, read back.

    The objective is restated as the changed segments give it, as a forger who knows it
    is recomputed would: what catches the change must be the rule it breaks.
    """
    document = schedule.model_dump(mode="json")
    change(document)
    forged = Schedule.model_validate_json(json.dumps(document))
    objective = verify_schedule(instance, forged).objective
    return forged.model_copy(update={"objective": objective})


def problems(instance: Instance, schedule: Schedule) -> str:
    """Everything the verifier and the run checker say of the log, one per line."""
    verification = verify_schedule(instance, schedule)
    said = [str(v) for v in verification.violations]
    if verification.ok:
        said += check_run(instance, schedule)
    return "\n".join(said)


def segment(document: Document, job: str, k: int = 0) -> Document:
    """The ``k``-th segment of ``job`` in start order."""
    mine = sorted((s for s in document["segments"] if s["job"] == job),
                  key=lambda s: s["start_s"])
    found: Document = mine[k]
    return found


def shift(document: Document, job: str, k: int, by: float) -> None:
    """Move the ``k``-th segment of ``job``, and its events, ``by`` seconds later."""
    moved = segment(document, job, k)
    for event in document["events"]:
        if event["job"] == job and event["time_s"] in (moved["start_s"], moved["end_s"]):
            event["time_s"] += by
    moved["start_s"] += by
    moved["end_s"] += by
    document["events"].sort(key=lambda e: e["time_s"])


@pytest.fixture
def preempting() -> tuple[Instance, Schedule]:
    """SRTF on 1 GPU: ``short`` (100 s, at 200) preempts ``long`` (1000 s), which resumes."""
    instance = cluster([1], {"long": (1, 1000, 0), "short": (1, 100, 200)})
    return instance, run(instance, "srtf", restart_s=30.0)


@pytest.mark.parametrize(("field", "value", "said"), [
    ("scheduler", "oracle", "run.scheduler: 'oracle' is not a registered scheduler"),
    ("placement", "magic", "run.placement: 'magic' is not a registered placement"),
    ("admission", "vip", "run.admission: 'vip' is not a registered admission"),
    ("mode", "banana", "run.mode: 'banana' is not a mode"),
    ("round_s", 360.0, "run.round_s: event mode has no rounds"),
])
def test_a_record_naming_what_gpuplan_does_not_have_is_caught(
        preempting: tuple[Instance, Schedule], field: str, value: Any, said: str) -> None:
    """Unknown parts, modes and a round length in event mode are named with their field."""
    instance, schedule = preempting

    def change(document: Document) -> None:
        document["run"][field] = value

    assert said in problems(instance, tampered(instance, schedule, change))


def test_a_round_mode_record_without_a_round_length_is_caught() -> None:
    """Round mode needs its round length in the record."""
    instance = cluster([1], {"a": (1, 100, 0)})
    schedule = run(instance, "fifo", mode=Mode.ROUND)

    def change(document: Document) -> None:
        document["run"]["round_s"] = None

    assert "run.round_s: round mode needs a positive round length" in problems(
        instance, tampered(instance, schedule, change))


@pytest.mark.parametrize(("options", "said"), [
    ({"oracle_power": 9}, "run.options: oracle_power: no part of the policy takes it"),
    ({"thresholds": [2.0, 1.0]}, "run.options: thresholds: [2.0, 1.0] is not a list of "
     "positive GPU-hours in increasing order"),
    ({"thresholds": "soon"}, "run.options: thresholds: expected GPU-hours"),
])
def test_options_the_parts_do_not_take_are_caught(options: Document, said: str) -> None:
    """The record's options must be ones its parts take, with values they accept."""
    instance = cluster([1], {"long": (1, 5000, 0), "short": (1, 100, 200)})
    schedule = run(instance, "las")
    assert schedule.run is not None and schedule.run.options["thresholds"] == [
        3250 / 3600, 2.0]

    def change(document: Document) -> None:
        document["run"]["options"] = options

    assert said in problems(instance, tampered(instance, schedule, change))


def test_a_preempting_run_relabelled_non_preemptive_is_caught(
        preempting: tuple[Instance, Schedule]) -> None:
    """An srtf run that preempts cannot pass as fifo's, which never preempts."""
    instance, schedule = preempting

    def change(document: Document) -> None:
        document["run"]["scheduler"] = "fifo"

    assert ("scheduler 'fifo' never preempts, but job 'long' runs in 2 segments (stopped at "
            "200 s)") in problems(instance, tampered(instance, schedule, change))


def test_a_run_log_without_events_is_rejected(preempting: tuple[Instance, Schedule]) -> None:
    """Events are required of a run log: without them its migrations cannot be counted."""
    instance, schedule = preempting

    def change(document: Document) -> None:
        document["events"] = []

    assert "a run log lists every event of its run" in problems(
        instance, tampered(instance, schedule, change))


def test_overheads_are_owed_as_the_record_says(preempting: tuple[Instance, Schedule]) -> None:
    """A resume that pays no restore although the record charges 30 s is caught.

    Removing the overheads from the record too leaves segments whose work their run time
    does not give.
    """
    instance, schedule = preempting

    def unpaid(document: Document) -> None:
        segment(document, "long", 1)["restore_s"] = 0.0

    assert "pays restore 0 s and migration 0 s, but the run charges 30 s" in problems(
        instance, tampered(instance, schedule, unpaid))

    def free_of_charge(document: Document) -> None:
        unpaid(document)
        document["run"]["restart_overhead_s"] = 0.0

    assert "declares work" in problems(instance, tampered(instance, schedule, free_of_charge))


def test_a_move_is_read_from_the_gpus() -> None:
    """A move whose segment and event call it a plain resume is caught.

    On four 1-GPU nodes, ``short`` (at 200) displaces ``third``, the last of three equal
    long jobs; ``brief`` frees its GPU at 250 and ``third`` moves there. The log is changed
    so that the move's segment names no ``migrated_from`` and its event is a resume.
    """
    instance = cluster([1, 1, 1, 1], {"early": (1, 1000, 0), "late": (1, 1000, 0),
                                      "third": (1, 1000, 0), "brief": (1, 250, 0),
                                      "short": (1, 100, 200)})
    schedule = run(instance, "srtf")

    def change(document: Document) -> None:
        moved = segment(document, "third", 1)
        assert moved["start_s"] == 250 and moved["migrated_from"] is not None
        moved["migrated_from"] = None
        for event in document["events"]:
            if event["job"] == "third" and event["kind"] == "migrate":
                event["kind"] = "resume"

    assert ("the segment at 250 s runs on other GPUs than the job's previous segment, but "
            "its migrated_from says it did not move") in problems(
                instance, tampered(instance, schedule, change))


def test_a_later_job_started_ahead_of_one_that_fits_breaks_fifo() -> None:
    """Swapping two jobs of a fifo run makes the later one pass the earlier, which fit."""
    instance = cluster([1], {"a": (1, 100, 0), "b": (1, 100, 0)})
    schedule = run(instance, "fifo")

    def change(document: Document) -> None:
        for entry in (*document["segments"], *document["events"]):
            entry["job"] = {"a": "b", "b": "a"}[entry["job"]]

    assert ("job 'b' starts at 0 s while job 'a', ahead of it, waits and fits on A GPUs of "
            "node 'n1'") in problems(instance, tampered(instance, schedule, change))


def test_a_preemption_nobody_uses_breaks_srtf(preempting: tuple[Instance, Schedule]) -> None:
    """SRTF stops a job only to start another on its GPUs at that instant."""
    instance, schedule = preempting

    def change(document: Document) -> None:
        shift(document, "long", 1, 50.0)
        shift(document, "short", 0, 50.0)

    assert ("job 'long' is preempted at 200 s and no job starts on n1/0 then") in problems(
        instance, tampered(instance, schedule, change))


def test_a_start_between_round_boundaries_is_caught() -> None:
    """In round mode a job arriving mid-round starts at the next boundary, not before."""
    instance = cluster([2], {"a": (1, 1000, 0), "b": (1, 100, 50)})
    schedule = run(instance, "fifo", mode=Mode.ROUND)
    assert segment(schedule.model_dump(mode="json"), "b")["start_s"] == 100

    def change(document: Document) -> None:
        shift(document, "b", 0, -50.0)

    assert "jobs start or stop at 50 s, 50 s after the boundary at 0 s" in problems(
        instance, tampered(instance, schedule, change))


def test_every_scheduler_keeps_its_promises_on_nodes_split_by_gangs() -> None:
    """FIFO, SJF, SRTF and LAS runs on mixed gangs over uneven nodes pass the checker.

    The jobs' gangs (1, 2, 3) do not pack the nodes (2, 3 and 4 GPUs) evenly, so GPUs free
    in sum are often split over nodes: the case where granting by summed free GPUs broke
    FIFO's order and left preempted GPUs unused.
    """
    jobs: Jobs = {f"j{k}": (1 + k % 3, 100.0 + 37 * (k % 7), 10.0 * (k % 5) + k)
                  for k in range(24)}
    instance = cluster([2, 3, 4], jobs)
    for scheduler in ("fifo", "sjf", "srtf", "las"):
        for mode in Mode:
            schedule = run(instance, scheduler, mode=mode, restart_s=5.0)
            assert check_run(instance, schedule) == [], (scheduler, mode)
