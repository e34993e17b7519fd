"""``gpuplan check`` cannot be fooled: every tampered copy of a verified schedule fails.

Each case starts from the verified greedy schedule of ``tests/data/valid_small.json`` (optimal,
makespan 1300) and changes one thing a careless or dishonest writer might: the claim of
what it optimises, its status and bound, or the plan itself. Every case runs on the schedule
as gpuplan writes it now (v2, segments) and as version 1 wrote it (placements,
``tests/data/schedule_v1_small.json``): old files are held to the same rules. The
partitions and account/QOS GPU limits are tampered with on the greedy schedule of
``tests/data/quotas.json``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import DATA

from gpuplan import plan, read_instance, verify_schedule
from gpuplan.cli import main
from gpuplan.core.schedule import Schedule

SMALL = DATA / "valid_small.json"
V1_SMALL = DATA / "schedule_v1_small.json"
SEGMENTS_SMALL = DATA / "segments_small.json"
QUOTAS = DATA / "quotas.json"
V2_SEGMENTS = DATA / "schedule_v2_segments.json"

Document = dict[str, Any]


def _plan_key(document: Document) -> str:
    """Where the plan is: ``segments`` (v2) or ``placements`` (v1)."""
    return "placements" if "placements" in document else "segments"


def _placement(document: Document, job: str) -> Document:
    found: Document = next(p for p in document[_plan_key(document)] if p["job"] == job)
    return found


def _set(**fields: Any) -> Callable[[Document], None]:
    def change(document: Document) -> None:
        document.update(fields)
    return change


def _shift(job: str, by: float) -> Callable[[Document], None]:
    def change(document: Document) -> None:
        p = _placement(document, job)
        p["start_s"] += by
        p["end_s"] += by
    return change


def _edit(name: str, **fields: Any) -> Callable[[Document], None]:
    def change(document: Document) -> None:
        _placement(document, name).update(fields)
    return change


def _drop(job: str) -> Callable[[Document], None]:
    def change(document: Document) -> None:
        key = _plan_key(document)
        document[key] = [p for p in document[key] if p["job"] != job]
    return change


def _claim_max_weight(document: Document) -> None:
    """A schedule that says max-weight places no job and so ignores every time rule."""
    document.update(objective_kind="max-weight", objective=0.0, bound=0.0, gap=0.0,
                    unplaced=[{"job": j, "reason": "not worth it"}
                              for j in ("prep", "train", "eval", "sweep-a", "sweep-b")])
    document[_plan_key(document)] = []


def _duplicate(job: str) -> Callable[[Document], None]:
    def change(document: Document) -> None:
        document[_plan_key(document)].append(dict(_placement(document, job)))
    return change


def _also_unplaced(document: Document) -> None:
    document["unplaced"] = [{"job": "eval", "reason": "-"}]


#: name -> the change, and the violation kind the verifier must report.
TAMPERED: dict[str, tuple[Callable[[Document], None], str]] = {
    "claims max-weight and places nothing": (_claim_max_weight, "objective"),
    "optimal with a 13% gap": (_set(bound=1131.0, gap=0.13), "status"),
    "optimal with a bound of -1e300": (_set(bound=-1e300, gap=1e300 / 1300 + 1), "status"),
    "optimal without a bound": (_set(bound=None, gap=None), "status"),
    "infeasible yet placing jobs": (_set(status="infeasible", objective=None, bound=None,
                                         gap=None), "status"),
    "no plan yet an objective": (_set(status="no_solution"), "objective"),
    "objective understated": (_set(objective=1000.0, bound=1000.0), "objective"),
    "bound above the objective": (_set(status="feasible", bound=1400.0, gap=100 / 1300),
                                  "bound"),
    "gap that does not follow": (_set(status="feasible", bound=1200.0, gap=0.01), "bound"),
    "starts before its release": (_shift("sweep-a", -40.0), "release"),
    "ends after its deadline": (_shift("train", 950.0), "deadline"),
    "runs shorter than its duration": (_edit("eval", end_s=1250.0), "duration"),
    "placed twice": (_duplicate("prep"), "duplicate"),
    "placed and unplaced": (_also_unplaced, "duplicate"),
    "a job left out": (_drop("eval"), "unplaced"),
    "a GPU of another type": (_edit("sweep-b", gpu_ids=["n2/0"]), "type"),
    "a type the job may not use": (_edit("sweep-b", gpu_type="A100", gpu_ids=["n1/0"],
                                         node="n1"), "type"),
    "a gang on too few GPUs": (_edit("train", gpu_ids=["n1/0", "n1/1"]), "gang"),
    "a gang across nodes": (_edit("sweep-a", gpu_ids=["n2/0", "n1/1"]), "gang"),
    "a GPU listed twice": (_edit("sweep-a", gpu_ids=["n2/0", "n2/0"]), "gang"),
    "two jobs over one GPU's memory": (_edit("sweep-a", node="n1", gpu_ids=["n1/2", "n1/3"]),
                                       "capacity"),
    "before its predecessor ends": (_shift("eval", -150.0), "dependency"),
    "an unknown job": (_edit("prep", job="ghost"), "reference"),
    "an unknown GPU": (_edit("prep", gpu_ids=["n9/0"]), "reference"),
}


@pytest.fixture(scope="module", params=["v2", "v1"])
def verified(request: pytest.FixtureRequest) -> Document:
    """The verified greedy schedule of the small instance, as a JSON document (v2 or v1)."""
    if request.param == "v1":
        document: Document = json.loads(V1_SMALL.read_text())
        assert document["format_version"] == 1 and document["verification"]["ok"]
        return document
    schedule = plan(read_instance(SMALL), "greedy")
    assert schedule.verification is not None and schedule.verification.ok
    assert schedule.status.value == "optimal" and schedule.objective == 1300.0
    document = json.loads(schedule.to_json())
    assert document["format_version"] == 2
    return document


@pytest.mark.parametrize("name", sorted(TAMPERED))
def test_tampered_schedule_is_caught(verified: Document, name: str) -> None:
    """The verifier reports the tampering as a violation of the expected kind.

    If this broke, `gpuplan check` would pass a schedule (new or version 1) that breaks a
    constraint or claims what its plan does not show.
    """
    change, kind = TAMPERED[name]
    document = json.loads(json.dumps(verified))
    change(document)
    schedule = Schedule.from_json(json.dumps(document), name)
    violations = verify_schedule(read_instance(SMALL), schedule).violations
    assert kind in {v.kind.value for v in violations}, [str(v) for v in violations]


#: name -> the change to quotas.json's greedy schedule, and the message the verifier gives.
TAMPERED_QUOTAS: dict[str, tuple[Callable[[Document], None], str]] = {
    # a1's first two GPUs are free from 3600 s, until nlp-4 takes all four at 7200 s.
    "a job on a node outside its partition": (
        _edit("ops-1", node="a1", gpu_ids=["a1/0"], start_s=3600.0, end_s=3900.0),
        "[partition] job 'ops-1' runs on a1 over [3600, 3900] s, outside its partition "
        "'mixed' (nodes a2, l1)"),
    # a2's first two GPUs are free from 600 s.
    "an account over its GPU limit": (
        _edit("nlp-3", node="a2", gpu_ids=["a2/0", "a2/1"], start_s=1800.0, end_s=5400.0),
        "[gpu-limit] the jobs of account 'nlp' hold 6 GPUs at once at 1800 s ('nlp-1', "
        "'nlp-2', 'nlp-3'), over its limit of 4"),
    # ops-1 holds a2/1 over [0, 300] s; a2/0 and a2/2 are free then.
    "a QOS over its GPU limit": (
        _edit("ops-2", gpu_ids=["a2/0", "a2/2"], start_s=0.0, end_s=300.0),
        "[gpu-limit] the jobs of QOS 'urgent' hold 3 GPUs at once at 0 s ('ops-1', 'ops-2'), "
        "over its limit of 2"),
}


@pytest.mark.parametrize("name", sorted(TAMPERED_QUOTAS))
def test_tampered_partition_or_limit_is_caught(name: str) -> None:
    """A job moved out of its partition, or beside its account's (QOS's) other jobs, is caught.

    The one violation says where, when, which jobs and the limit. If this broke, `gpuplan
    check` would pass a plan Slurm refuses or holds back.
    """
    schedule = plan(read_instance(QUOTAS), "greedy")
    assert schedule.verification is not None and schedule.verification.ok
    document = json.loads(schedule.to_json())
    change, message = TAMPERED_QUOTAS[name]
    change(document)
    tampered = Schedule.from_json(json.dumps(document), name)
    violations = verify_schedule(read_instance(QUOTAS), tampered).violations
    assert [str(v) for v in violations] == [message]


@pytest.mark.parametrize("name", ["claims max-weight and places nothing",
                                  "optimal with a 13% gap", "optimal with a bound of -1e300"])
def test_check_exits_1_on_a_false_claim(verified: Document, name: str, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """``gpuplan check`` says "violation" and exits 1 for claims the file cannot back.

    If this broke, scripts relying on the exit code would accept a false schedule.
    """
    document = json.loads(json.dumps(verified))
    TAMPERED[name][0](document)
    path = tmp_path / "tampered.json"
    path.write_text(json.dumps(document))
    assert main(["check", str(SMALL), str(path)]) == 1
    assert "violation" in capsys.readouterr().err


def test_check_takes_the_objective_from_the_instance_or_the_user(
        verified: Document, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The objective checked is the instance's, or --objective: the schedule's claim is data.

    If this broke, a schedule could choose the objective it is judged by.
    """
    path = tmp_path / "s.json"
    path.write_text(json.dumps(verified))
    assert main(["check", str(SMALL), str(path)]) == 0
    assert main(["check", str(SMALL), str(path), "--objective", "weighted-completion"]) == 1
    err = capsys.readouterr().err
    assert "planned for 'makespan', the instance asks for 'weighted-completion'" in err


@pytest.mark.parametrize("status", ["no_solution", "infeasible"])
def test_check_does_not_verify_a_file_without_a_plan(
        status: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A no_solution or infeasible file holds nothing to verify: exit 1, said plainly.

    If this broke, a file without a plan would look like a checked plan.
    """
    instance = read_instance(SMALL)
    document = {"instance": instance.name, "objective_kind": "makespan", "status": status,
                "objective": None, "bound": None, "gap": None, "method": "hand",
                "solver": "hand", "wall_time_s": 0.0, "seed": 0, "gpuplan_version": "test",
                "segments": [], "unplaced": [{"job": j, "reason": "none found"}
                                               for j in instance.job_ids]}
    path = tmp_path / "empty.json"
    path.write_text(json.dumps(document))
    assert main(["check", str(SMALL), str(path)]) == 1
    assert f"status {status} holds no plan" in capsys.readouterr().err


def test_schedule_with_a_key_given_twice_is_bad_input(
        verified: Document, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A schedule file that says "objective" twice is refused, not read with either value.

    If this broke, gpuplan and another JSON reader could see different claims in one file.
    """
    text = json.dumps(verified).replace('"objective": 1300.0', '"objective": 1300.0, '
                                        '"objective": 1.0', 1)
    path = tmp_path / "twice.json"
    path.write_text(text)
    assert main(["check", str(SMALL), str(path)]) == 2
    assert "key 'objective' is given 2 times" in capsys.readouterr().err


def test_lateness_is_caught_at_the_largest_times() -> None:
    """Near 1e9 s a plan 900 s late, or started before its predecessor ends, still fails.

    If this broke, late plans with large times would pass as rounding noise.
    """
    from gpuplan.readers.instance_file import build_instance, parse_document

    document = {"gpu_types": [{"id": "A", "capacity": {"memory": 1}}],
                "nodes": [{"id": "n", "gpus": {"A": 2}}],
                "jobs": [{"id": "a", "duration_s": 5e8, "release_s": 4e8, "deadline_s": 9e8},
                         {"id": "b", "duration_s": 1.5, "depends_on": ["a"]}],
                "objective": "makespan"}
    instance = build_instance(parse_document(document, "big"), "big")

    def schedule(a_start: float, b_start: float) -> Schedule:
        segments = [{"job": "a", "node": "n", "gpu_type": "A", "gpu_ids": ["n/0"],
                       "start_s": a_start, "end_s": a_start + 5e8},
                      {"job": "b", "node": "n", "gpu_type": "A", "gpu_ids": ["n/1"],
                       "start_s": b_start, "end_s": b_start + 1.5}]
        return Schedule.model_validate_json(json.dumps({
            "instance": instance.name, "objective_kind": "makespan", "status": "feasible",
            "objective": None, "bound": None, "gap": None, "method": "hand", "solver": "hand",
            "wall_time_s": 0.0, "seed": 0, "gpuplan_version": "test",
            "segments": segments, "unplaced": []}))

    assert verify_schedule(instance, schedule(4e8, 9e8)).ok
    kinds = {v.kind.value for v in verify_schedule(instance, schedule(4e8 + 900, 9e8)).violations}
    assert kinds == {"deadline", "dependency"}


@pytest.mark.parametrize(("instance", "schedule"), [(SMALL, V1_SMALL),
                                                    (SEGMENTS_SMALL, V2_SEGMENTS)])
def test_check_passes_valid_v1_and_v2_files(instance: Path, schedule: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """``gpuplan check`` exits 0 on a version-1 file and on a v2 file with every new fact.

    If this broke, users could not check the schedules older gpuplan versions wrote, or
    plans with shared GPUs, overheads, migrations and events.
    """
    assert main(["check", str(instance), str(schedule)]) == 0, capsys.readouterr().err


@pytest.mark.parametrize(("name", "kind"), [
    ("work_mismatch.json", "work"), ("partner_without_segment.json", "partner"),
    ("overhead_longer_than_segment.json", "overhead"),
    ("migrated_from_wrong_gpus.json", "migration"), ("event_at_wrong_time.json", "event"),
])
def test_check_exits_1_on_a_false_segment_fact(name: str, kind: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """``gpuplan check`` exits 1 and names the kind for each bad v2 schedule file.

    If this broke, a tampered work share, partner, overhead, migration or event would pass
    the command line's check.
    """
    path = DATA / "bad_schedules" / name
    assert main(["check", str(SEGMENTS_SMALL), str(path)]) == 1
    assert f"[{kind}]" in capsys.readouterr().err


def test_check_refuses_an_epoch_without_offset(capsys: pytest.CaptureFixture[str]) -> None:
    """A schedule whose epoch has no UTC offset is bad input (exit 2) naming "epoch".

    If this broke, exporters could read a local time as UTC and start jobs hours off.
    """
    path = DATA / "bad_schedules" / "epoch_without_offset.json"
    assert main(["check", str(SEGMENTS_SMALL), str(path)]) == 2
    assert f"{path}: epoch: Input should have timezone info" in capsys.readouterr().err
