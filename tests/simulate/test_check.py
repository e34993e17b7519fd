"""The run-log checker: a log is held to the parts, options, mode and rules its record claims.

Each test makes a real run log with ``simulate`` (which checks it, so an untouched log
passes), tampers with it as a user editing the file could, and asserts that the verifier
or :func:`~gpuplan.simulate.check.check_run` names what was changed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import DATA, GAVEL, instance_from

from gpuplan.core.instance import Instance, Outage
from gpuplan.core.schedule import Schedule
from gpuplan.readers.gavel import read_throughputs
from gpuplan.readers.generate import gavel_document
from gpuplan.readers.instance_file import instance_from_data
from gpuplan.simulate import Mode, RunSpec, SimulationConfig, simulate
from gpuplan.simulate.check import check_run
from gpuplan.simulate.engine import Failures
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


@pytest.mark.parametrize(("field", "value", "said"), [
    ("scheduler", "las", ["method: 'simulate:srtf' names scheduler 'srtf', but run.scheduler "
                          "is 'las'", "solver: 'gpuplan simulate srtf' names scheduler "
                          "'srtf', but run.scheduler is 'las'"]),
    ("method", "simulate:las", ["method: 'simulate:las' names scheduler 'las', but "
                                "run.scheduler is 'srtf'"]),
    ("solver", "gpuplan simulate las", ["solver: 'gpuplan simulate las' names scheduler "
                                        "'las', but run.scheduler is 'srtf'"]),
    ("method", "greedy", ["method: 'greedy' is not a run log's; run.scheduler 'srtf' runs "
                          "as 'simulate:srtf'"]),
], ids=["record", "method", "solver", "not-a-run"])
def test_a_scheduler_named_two_ways_is_caught(
        preempting: tuple[Instance, Schedule], field: str, value: str, said: list[str]) -> None:
    """An srtf log whose record says las (or whose method or solver says las) is rejected.

    If this broke, a user comparing schedulers would read an srtf run's numbers as las's:
    the log's method and its record would name two schedulers and gpuplan check would
    accept it.
    """
    instance, schedule = preempting

    def change(document: Document) -> None:
        if field == "scheduler":
            document["run"]["scheduler"] = value
        else:
            document[field] = value

    found = problems(instance, tampered(instance, schedule, change))
    for line in said:
        assert line in found
    assert problems(instance, schedule) == ""


def test_a_best_fit_log_relabelled_first_fit_is_caught() -> None:
    """A job best-fit put on the tighter node cannot pass as first-fit's, and back.

    On nodes of 4 and 2 GPUs a 1-GPU job goes to n2 under best-fit (fewest free GPUs)
    and to n1 under first-fit. If this broke, a placement study would credit first-fit
    with best-fit's packing (gpuplan check would accept the relabelled log).
    """
    instance = cluster([4, 2], {"a": (1, 100, 0), "b": (2, 100, 10)})
    logs = {name: simulate(instance, RunSpec(scheduler="fifo", placement=name))
            for name in ("best-fit", "first-fit")}
    assert segment(logs["best-fit"].model_dump(mode="json"), "a")["gpu_ids"] == ["n2/0"]
    assert segment(logs["first-fit"].model_dump(mode="json"), "a")["gpu_ids"] == ["n1/0"]
    for named, other in (("best-fit", "first-fit"), ("first-fit", "best-fit")):

        def change(document: Document, other: str = other) -> None:
            document["run"]["placement"] = other

        assert problems(instance, logs[named]) == ""
        pick, ran = ("n1/0", "n2/0") if other == "first-fit" else ("n2/0", "n1/0")
        assert (f"run.placement is {other!r}, which gives job 'a' {pick} at 0 s, but it "
                f"starts on {ran}") in problems(instance, tampered(instance, logs[named],
                                                                    change))


@pytest.mark.parametrize("scheduler", ["fifo", "sjf", "srtf", "las"])
@pytest.mark.parametrize("mode", [Mode.EVENT, Mode.ROUND], ids=["event", "round"])
def test_a_relabelled_placement_is_caught_under_every_scheduler(scheduler: str,
                                                                mode: Mode) -> None:
    """Mixed gangs over nodes of 4, 3 and 2 GPUs: best-fit's log is not first-fit's.

    Under srtf and las jobs also start by displacing others, where the placement saw more
    GPUs free than the log shows; the starts that did not displace anyone still give the
    relabelling away. If this broke, a preempting scheduler's log could name any placement.
    """
    jobs: Jobs = {f"j{k}": (1 + k % 3, 100.0 + 37 * (k % 7), 10.0 * (k % 5) + k)
                  for k in range(24)}
    instance = cluster([4, 3, 2], jobs)
    schedule = run(instance, scheduler, mode=mode, restart_s=5.0)
    assert schedule.run is not None and schedule.run.placement == "best-fit"

    def change(document: Document) -> None:
        document["run"]["placement"] = "first-fit"

    assert "run.placement is 'first-fit', which gives job" in problems(
        instance, tampered(instance, schedule, change))


def test_a_round_mode_log_relabelled_with_shorter_rounds_is_caught() -> None:
    """A run of 100 s rounds relabelled as rounds of 60 s has starts off the new rounds.

    ``b`` arrives at 50 while ``a`` runs and starts at the 100 s boundary; with rounds of
    60 s it would have started at 60 or 120, never at 100. If this broke, a Gavel
    reproduction could claim a round length it did not run (its JCTs depend on it).
    """
    instance = cluster([2], {"a": (1, 1000, 0), "b": (1, 100, 50)})
    schedule = run(instance, "fifo", mode=Mode.ROUND)
    assert segment(schedule.model_dump(mode="json"), "b")["start_s"] == 100

    def change(document: Document) -> None:
        document["run"]["round_s"] = 60.0

    assert ("jobs start or stop at 100 s, 40 s after the boundary at 60 s, before the next "
            "at 120 s (rounds of 60 s)") in problems(instance, tampered(instance, schedule,
                                                                        change))
    assert problems(instance, schedule) == ""


def test_a_round_that_ends_early_is_held_to_its_last_completion() -> None:
    """A round whose jobs all end early ends with the last of them, not a round later.

    ``a`` (30 s) runs alone from 0: its round ends at 30, and ``b``, which arrived at 10,
    starts then. Moved to the full round's end (100 s), the log's start is off the
    boundaries the engine's clock gives. If this broke, a log could idle GPUs for the
    rest of a round that Gavel's simulator ends early.
    """
    instance = cluster([1], {"a": (1, 30, 0), "b": (1, 100, 10)})
    schedule = run(instance, "fifo", mode=Mode.ROUND)
    assert segment(schedule.model_dump(mode="json"), "b")["start_s"] == 30

    def change(document: Document) -> None:
        shift(document, "b", 0, 70.0)

    assert "jobs start or stop at 100 s, 70 s after the boundary at 30 s" in problems(
        instance, tampered(instance, schedule, change))


def gavel_multi(jobs: int, rate: float) -> Instance:
    """A Gavel workload of multi-GPU jobs (gangs of 1 to 8) on 8 GPUs of each type."""
    rates = read_throughputs(Path(GAVEL / "simulation_throughputs.json"))
    document = gavel_document(rates, {"v100": 8, "p100": 8, "k80": 8}, jobs, rate, seed=3,
                              multi_gpu=True, gpus_per_node=8)
    return instance_from_data(document, "gavel").online()


def racks() -> Instance:
    """racks_small.json without its CPU-only job, arriving 50 s apart.

    Gangs across the nodes of a rack, node CPUs and memory.
    """
    document: dict[str, Any] = json.loads((DATA / "racks_small.json").read_text())
    document["jobs"] = [dict(job, release_s=50.0 * k) for k, job in enumerate(
        j for j in document["jobs"] if j.get("gpus", 1) > 0)]
    return instance_from_data(document, "racks").online()


def test_resumes_after_a_repair_keep_fifo_order() -> None:
    """Jobs a failure stopped resume, ahead of later jobs, when their node comes back.

    fifo and sjf on multi-GPU Gavel jobs with 20 node failures a day: at a repair the
    stopped jobs resume on the returned GPUs while later jobs start elsewhere at the same
    instant. If the checker counted only first starts, it called such correct runs out of
    order and ``gpuplan simulate`` failed them as a bug.
    """
    instance = gavel_multi(200, 20.0)
    failures = Failures(per_day=20.0, checkpoint_s=600.0, seed=1)
    for scheduler in ("fifo", "sjf"):
        schedule = simulate(instance, RunSpec(scheduler=scheduler, failures=failures,
                                              seed=1))
        record = schedule.run
        assert record is not None and record.failures
        resumed = [e for e in schedule.events if e.kind in ("resume", "migrate")]
        assert resumed, scheduler
        assert problems(instance, schedule) == "", scheduler


def test_a_job_passing_a_waiting_job_that_fits_is_caught_after_a_failure() -> None:
    """A start that passes a job stopped by a failure, which fits, breaks fifo.

    ``first`` runs on n1 until n1 fails at 100 (it loses its work: no checkpoint);
    ``second`` runs on n2. When n1 comes back at 200, ``first`` resumes there, ahead of
    ``third`` (arrived at 150), which starts when ``first`` ends at 1200. The log is
    changed so that ``third`` takes n1 at 200 and ``first`` resumes at 1200: the checker
    names ``first`` as passed over. If this broke, a fifo log could let a later job
    overtake one that a failure stopped.
    """
    instance = cluster([1, 1], {"first": (1, 1000, 0), "second": (1, 2000, 1),
                                "third": (1, 1000, 150)})
    n1 = np.flatnonzero(instance.gpu_node == 0)
    failures = Failures(listed=(Outage(n1, 100.0, 200.0, "n1 failed"),))
    schedule = simulate(instance, RunSpec(scheduler="fifo", failures=failures,
                                          config=SimulationConfig(restart_overhead_s=0.0)))
    assert problems(instance, schedule) == ""
    document = schedule.model_dump(mode="json")
    assert segment(document, "first", 1)["start_s"] == 200
    assert segment(document, "third")["start_s"] == 1200
    swap = {("first", 200.0): ("third", "start"), ("third", 1200.0): ("first", "resume")}

    def change(document: Document) -> None:
        for entry in document["segments"]:
            entry["job"] = swap.get((entry["job"], entry["start_s"]), (entry["job"],))[0]
        for entry in document["events"]:
            key = (entry["job"], entry["time_s"])
            if entry["kind"] == "complete":
                key = {("first", 1200.0): ("first", 200.0),
                       ("third", 2200.0): ("third", 1200.0)}.get(key, key)
                entry["job"] = swap.get(key, (entry["job"],))[0]
            elif key in swap:
                entry["job"], entry["kind"] = swap[key]

    forged = tampered(instance, schedule, change)
    assert ("job 'third' starts at 200 s while job 'first', ahead of it, waits and fits "
            "on A GPUs of node 'n1'") in problems(instance, forged)


@pytest.mark.parametrize(("scheduler", "mode"), [
    *((name, mode) for name in ("fifo", "sjf", "srtf", "las") for mode in Mode),
    ("gavel-las", Mode.ROUND)], ids=str)
@pytest.mark.parametrize("placement", ["best-fit", "first-fit"])
def test_untampered_runs_raise_no_false_alarm(scheduler: str, placement: str,
                                              mode: Mode) -> None:
    """Untampered runs pass, with and without failures, on multi-GPU and multi-node gangs.

    Every scheduler, placement and mode, on Gavel's multi-GPU jobs and on multi-node gangs
    in racks with node resources. Each run is checked as ``simulate`` checks it, and again
    as ``gpuplan check`` reads it back from its file. If this broke, ``gpuplan simulate``
    would refuse correct runs as bugs of its own engine, or ``gpuplan check`` would reject
    the logs it wrote.
    """
    config = SimulationConfig(mode=mode, round_s=900.0, restart_overhead_s=10.0,
                              migration_overhead_s=5.0)
    for name, instance in (("gavel", gavel_multi(60, 6.0)), ("racks", racks())):
        for failures in (Failures(), Failures(per_day=30.0, down_s=1800.0,
                                              checkpoint_s=600.0, seed=2)):
            spec = RunSpec(scheduler=scheduler, placement=placement, config=config,
                           failures=failures, seed=1)
            schedule = simulate(instance, spec)
            label = (name, failures.any)
            assert problems(instance, schedule) == "", label
            read = Schedule.model_validate_json(schedule.model_dump_json())
            assert check_run(instance, read) == [], label
