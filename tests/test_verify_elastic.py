"""The verifier holds elastic jobs to their pieces: counts, layouts, progress, overheads, events.

One elastic job ``a`` (1 to 16 GPUs, one iteration per second per GPU, 1000 iterations,
10 s lost at each start, resume and change of GPUs) and one rigid job ``r`` on two nodes
of 8 A100. The valid plan runs ``a`` on 4 GPUs from 0 (10 s overhead, then 100 s doing
400 iterations), rescales it at 110 s to 8 GPUs (10 s, then 75 s doing 600): done at 195 s.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import instance_from, run_cli

from gpuplan import Schedule, Status, verify_schedule
from gpuplan.core.instance import Instance
from gpuplan.core.result import EventKind, Result
from gpuplan.core.schedule import Event, RunRecord, Segment
from gpuplan.simulate.check import check_run

COUNTS = [1, 2, 4, 8, 16]


def document(preemptible: bool = True, objective: str = "deadlines-met") -> dict[str, Any]:
    """The instance of this module, ``a`` preemptible or not."""
    return {
        "name": "elastic-small",
        "gpu_types": [{"id": "A100", "capacity": {"memory_gib": 80}}],
        "nodes": [{"id": "n0", "gpus": {"A100": 8}}, {"id": "n1", "gpus": {"A100": 8}}],
        "jobs": [
            {"id": "a", "gpus": 4, "due_s": 200, "preemptible": preemptible,
             "elastic": {"gpus": COUNTS, "work": 1000, "rescale_s": 10,
                         "speed": {"A100": {str(c): float(c) for c in COUNTS}}}},
            {"id": "r", "gpus": 2, "duration_s": 100, "due_s": 50},
        ],
        "objective": objective,
    }


@pytest.fixture
def instance() -> Instance:
    """The module's instance, ``a`` preemptible."""
    return instance_from(document())


def gpus(node: str, first: int, count: int) -> list[str]:
    """GPU ids ``node/first`` .. on one node."""
    return [f"{node}/{k}" for k in range(first, first + count)]


def piece(job: str, ids: list[str], start: float, end: float, **fields: Any) -> Segment:
    """A segment of ``job`` on these A100 GPUs (its node: the first GPU's)."""
    return Segment(job=job, node=ids[0].split("/")[0], gpu_type="A100", gpu_ids=ids,
                   start_s=start, end_s=end, **fields)


def event(time: float, kind: str, job: str, ids: list[str]) -> Event:
    """An event of the run."""
    return Event(time_s=time, kind=EventKind(kind), job=job, gpu_ids=ids)


def valid_segments() -> list[Segment]:
    """The module's valid plan: ``a`` rescaled from 4 to 8 GPUs at 110 s, ``r`` beside it."""
    return [
        piece("a", gpus("n0", 0, 4), 0.0, 110.0, work=0.4, restore_s=10.0),
        piece("r", gpus("n1", 0, 2), 0.0, 100.0, work=1.0),
        piece("a", gpus("n0", 0, 8), 110.0, 195.0, work=0.6, restore_s=10.0),
    ]


def valid_events() -> list[Event]:
    """The valid plan's events: one rescale where ``a`` changes count."""
    return [event(0.0, "start", "a", gpus("n0", 0, 4)), event(0.0, "start", "r", gpus("n1", 0, 2)),
            event(100.0, "complete", "r", gpus("n1", 0, 2)),
            event(110.0, "rescale", "a", gpus("n0", 0, 8)),
            event(195.0, "complete", "a", gpus("n0", 0, 8))]


def plan(segments: list[Segment], events: list[Event] | None = None,
         objective: str = "deadlines-met", **fields: Any) -> Schedule:
    """A schedule of these segments and events, claiming no objective."""
    return Schedule(instance="elastic-small", objective_kind=objective,
                    status=Status.FEASIBLE, objective=None, bound=None, gap=None,
                    method="hand", solver="hand", wall_time_s=0.0, seed=0,
                    gpuplan_version="test", segments=segments, events=events or [],
                    unplaced=[], **fields)


def messages(instance: Instance, schedule: Schedule) -> list[str]:
    """The verifier's violations, as lines."""
    return [str(v) for v in verify_schedule(instance, schedule).violations]


def test_count_change_with_its_overheads_verifies(instance: Instance) -> None:
    """A rescale from 4 to 8 GPUs that pays rescale_s at both starts verifies.

    Only ``a`` completes by its due date (195 <= 200; ``r`` ends at 100 > 50): deadlines-met
    is 1.
    """
    verification = verify_schedule(instance, plan(valid_segments(), valid_events()))
    assert verification.ok, verification.violations
    assert verification.objective == 1.0


def test_a_plan_without_events_verifies(instance: Instance) -> None:
    """A plan (not a run log) may leave its events out: the segments are the plan."""
    assert verify_schedule(instance, plan(valid_segments())).ok


@pytest.mark.parametrize(("which", "said"), [
    (0, "the piece at 0 s on 4 A100 GPUs starts the job, which costs its rescale_s 10 s, but "
        "pays 0 s"),
    (2, "the piece at 110 s on 8 A100 GPUs changes its count from 4 to 8 GPUs, which costs its "
        "rescale_s 10 s, but pays 0 s"),
])
def test_a_piece_that_skips_its_rescale_is_named(instance: Instance, which: int,
                                                 said: str) -> None:
    """A start or count change without its rescale_s is an overhead violation of that piece."""
    segments = valid_segments()
    segments[which] = segments[which].model_copy(update={"restore_s": 0.0, "work": None})
    found = messages(instance, plan(segments))
    assert any(said in line and line.startswith("[overhead] job 'a'") for line in found), found


def test_a_resume_after_a_pause_pays_and_a_continuation_does_not(instance: Instance) -> None:
    """After a pause the job pays again; on the same GPUs at once it goes on for free.

    ``a`` pauses 20 s between its pieces (its second one then pays 10 s), and its second
    piece is split at 160 s on the same 8 GPUs with nothing paid there.
    """
    segments = [
        piece("a", gpus("n0", 0, 4), 0.0, 110.0, work=0.4, restore_s=10.0),
        piece("r", gpus("n1", 0, 2), 0.0, 100.0),
        piece("a", gpus("n0", 0, 8), 130.0, 160.0, work=0.16, restore_s=10.0),
        piece("a", gpus("n0", 0, 8), 160.0, 215.0, work=0.44),
    ]
    assert verify_schedule(instance, plan(segments)).ok
    segments[2] = segments[2].model_copy(update={"restore_s": 0.0, "work": None})
    segments[3] = segments[3].model_copy(update={"end_s": 205.0, "work": None})
    found = messages(instance, plan(segments))
    assert any("the piece at 130 s on 8 A100 GPUs resumes it" in line for line in found), found


def test_a_count_the_job_has_no_speed_for_is_a_gang_violation(instance: Instance) -> None:
    """3 GPUs is not among ``a``'s counts: the piece is named with the counts it may use."""
    segments = valid_segments()
    segments[0] = piece("a", gpus("n0", 0, 3), 0.0, 143.333333, restore_s=10.0)
    found = messages(instance, plan(segments))
    assert any(line.startswith("[gang] job 'a': the piece at 0 s runs on 3 A100 GPUs, a count "
                               "the job has no speed for there (its counts on A100: 1, 2, 4, "
                               "8, 16)") for line in found), found


def test_a_piece_is_laid_out_on_one_node_or_whole_nodes(instance: Instance) -> None:
    """8 GPUs as 4 + 4 on two nodes is refused; 16 as two whole nodes is a piece."""
    split = gpus("n0", 4, 4) + gpus("n1", 4, 4)
    segments = valid_segments()
    segments[2] = piece("a", split, 110.0, 195.0, restore_s=10.0)
    found = messages(instance, plan(segments))
    assert any("runs its 8 GPUs as 4 on n0, 4 on n1, but its piece takes all on one node"
               in line for line in found), found
    whole = gpus("n0", 0, 8) + gpus("n1", 0, 8)
    # 400 done on 4 GPUs; 600 left on 16 at 16 it/s: 37.5 s after 10 s of overhead.
    segments = [valid_segments()[0], piece("r", gpus("n1", 0, 2), 157.5, 257.5),
                piece("a", whole, 110.0, 157.5, restore_s=10.0)]
    assert verify_schedule(instance, plan(segments)).ok


def test_pieces_that_do_not_add_up_to_the_work_are_reported(instance: Instance) -> None:
    """Ending 5 s early leaves 40 iterations undone: said in iterations, with each piece."""
    segments = valid_segments()
    segments[2] = segments[2].model_copy(update={"end_s": 190.0, "work": None})
    found = messages(instance, plan(segments))
    assert any(line.startswith("[segment] the pieces of elastic job 'a' do 960 of its 1000 "
                               "iterations") and "the piece at 110 s on 8 A100 GPUs runs 70 s "
                               "after 10 s of overhead at 8 it/s" in line
               for line in found), found


def test_a_declared_work_share_is_checked_against_the_count(instance: Instance) -> None:
    """The first piece does 400 of 1000 iterations (0.4): declaring 0.5 is a work violation."""
    segments = valid_segments()
    segments[0] = segments[0].model_copy(update={"work": 0.5})
    found = messages(instance, plan(segments))
    assert any(line.startswith("[work] job 'a': the segment at 0 s declares work 0.5, but "
                               "100 s of run time on A100 do 0.4") for line in found), found


def test_a_job_that_is_not_preemptible_is_one_piece() -> None:
    """Not preemptible, ``a`` runs on one count from start to end (8 GPUs: 10 + 125 s)."""
    instance = instance_from(document(preemptible=False))
    whole = [piece("a", gpus("n0", 0, 8), 0.0, 135.0, restore_s=10.0),
             piece("r", gpus("n1", 0, 2), 0.0, 100.0)]
    assert verify_schedule(instance, plan(whole)).ok
    found = messages(instance, plan(valid_segments()))
    assert "[duplicate] job 'a' is placed more than once but is not preemptible" in found


def test_events_name_a_count_change_as_one_rescale(instance: Instance) -> None:
    """A preempt and migrate where the job goes on at once on 8 GPUs is not its event."""
    events = valid_events()
    events[3:4] = [event(110.0, "preempt", "a", gpus("n0", 0, 4)),
                   event(110.0, "migrate", "a", gpus("n0", 0, 8))]
    found = messages(instance, plan(valid_segments(), events))
    assert any("the migrate event at 110 s should be one rescale event" in line
               for line in found), found
    assert any("job 'a' has no rescale event at 110 s" in line for line in found), found


def test_a_result_states_the_overheads_its_pieces_owe(instance: Instance) -> None:
    """A result that leaves the overheads out is written with them, and verifies.

    ``a`` run whole on its reference count (4 GPUs) for its duration, 10 + 250 s, as a
    planner that sees it as a rigid job plans it.
    """
    assert instance.duration[0, 0] == pytest.approx(260.0)
    result = Result(status=Status.FEASIBLE, objective=None, bound=None, solver="hand",
                    job=np.array([0, 1]), gpu_type=np.array([0, 0]),
                    start=np.array([0.0, 0.0]), end=np.array([260.0, 100.0]),
                    gpus=(np.arange(4), np.arange(8, 10)))
    schedule = Schedule.from_result(instance, result, "hand", 0.0, 0)
    first = next(s for s in schedule.segments if s.job == "a")
    assert (first.restore_s, first.work) == (10.0, 1.0)
    assert verify_schedule(instance, schedule).ok


def run_log(method: str = "simulate:edf") -> Schedule:
    """The valid plan as a run log of the elastic simulator's ``edf`` policy."""
    record = RunRecord(scheduler="edf", placement="buddy", admission="edf", mode="event",
                       round_s=None, restart_overhead_s=0.0, migration_overhead_s=0.0,
                       window=[0, 2], metrics={}, utilisation_by_type={})
    return plan(valid_segments(), valid_events(), run=record).model_copy(
        update={"method": method, "solver": "gpuplan simulate edf"})


def test_an_elastic_run_log_passes_the_run_checker(instance: Instance) -> None:
    """A verified run log of an elastic policy keeps what its record states in the engine's terms.

    Its method must name its scheduler.
    """
    log = run_log()
    assert verify_schedule(instance, log).ok
    assert check_run(instance, log) == []
    assert check_run(instance, run_log("simulate:elasticflow")) == [
        "method: 'simulate:elasticflow' names scheduler 'elasticflow', but run.scheduler is "
        "'edf'"]


def test_gpuplan_check_accepts_an_elastic_run_log_and_names_a_broken_piece(
        tmp_path: Path) -> None:
    """``gpuplan check`` exits 0 on the run log, and 1 naming the piece that skips its rescale."""
    path = tmp_path / "elastic-small.json"
    path.write_text(json.dumps(document()))
    log = tmp_path / "run.json"
    log.write_text(run_log().to_json())
    ok = run_cli("check", path, log)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    broken = json.loads(log.read_text())
    broken["segments"][2]["restore_s"] = 0.0
    broken["segments"][2]["work"] = None
    log.write_text(json.dumps(broken))
    bad = run_cli("check", path, log)
    assert bad.returncode == 1
    assert "changes its count from 4 to 8 GPUs" in bad.stdout + bad.stderr
