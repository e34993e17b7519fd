"""``gpuplan check`` cannot be fooled: every tampered copy of a verified schedule fails.

Each case starts from the verified greedy schedule of ``tests/data/valid_small.json`` (optimal,
makespan 1300) and changes one thing a careless or dishonest writer might: the claim of
what it optimises, its status and bound, or the plan itself.
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
from gpuplan.schedule import Schedule

SMALL = DATA / "valid_small.json"

Document = dict[str, Any]


def _placement(document: Document, job: str) -> Document:
    return next(p for p in document["placements"] if p["job"] == job)


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
        document["placements"] = [p for p in document["placements"] if p["job"] != job]
    return change


def _claim_max_weight(document: Document) -> None:
    """A schedule that says max-weight places no job and so ignores every time rule."""
    document.update(objective_kind="max-weight", objective=0.0, bound=0.0, gap=0.0,
                    placements=[],
                    unplaced=[{"job": j, "reason": "not worth it"}
                              for j in ("prep", "train", "eval", "sweep-a", "sweep-b")])


def _duplicate(job: str) -> Callable[[Document], None]:
    def change(document: Document) -> None:
        document["placements"].append(dict(_placement(document, job)))
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


@pytest.fixture(scope="module")
def verified() -> Document:
    """The verified greedy schedule of the small instance, as a JSON document."""
    schedule = plan(read_instance(SMALL), "greedy")
    assert schedule.verification is not None and schedule.verification.ok
    assert schedule.status.value == "optimal" and schedule.objective == 1300.0
    document: Document = json.loads(schedule.to_json())
    return document


@pytest.mark.parametrize("name", sorted(TAMPERED))
def test_tampered_schedule_is_caught(verified: Document, name: str) -> None:
    """The verifier reports the tampering as a violation of the expected kind."""
    change, kind = TAMPERED[name]
    document = json.loads(json.dumps(verified))
    change(document)
    schedule = Schedule.from_json(json.dumps(document), name)
    violations = verify_schedule(read_instance(SMALL), schedule).violations
    assert kind in {v.kind.value for v in violations}, [str(v) for v in violations]


@pytest.mark.parametrize("name", ["claims max-weight and places nothing",
                                  "optimal with a 13% gap", "optimal with a bound of -1e300"])
def test_check_exits_1_on_a_false_claim(verified: Document, name: str, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """``gpuplan check`` says "violation" and exits 1 for claims the file cannot back."""
    document = json.loads(json.dumps(verified))
    TAMPERED[name][0](document)
    path = tmp_path / "tampered.json"
    path.write_text(json.dumps(document))
    assert main(["check", str(SMALL), str(path)]) == 1
    assert "violation" in capsys.readouterr().err


def test_check_takes_the_objective_from_the_instance_or_the_user(
        verified: Document, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The objective checked is the instance's, or --objective: the schedule's claim is data."""
    path = tmp_path / "s.json"
    path.write_text(json.dumps(verified))
    assert main(["check", str(SMALL), str(path)]) == 0
    assert main(["check", str(SMALL), str(path), "--objective", "weighted-completion"]) == 1
    err = capsys.readouterr().err
    assert "planned for 'makespan', the instance asks for 'weighted-completion'" in err


@pytest.mark.parametrize("status", ["no_solution", "infeasible"])
def test_check_does_not_verify_a_file_without_a_plan(
        status: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A no_solution or infeasible file holds nothing to verify: exit 1, said plainly."""
    instance = read_instance(SMALL)
    document = {"instance": instance.name, "objective_kind": "makespan", "status": status,
                "objective": None, "bound": None, "gap": None, "method": "hand",
                "solver": "hand", "wall_time_s": 0.0, "seed": 0, "gpuplan_version": "test",
                "placements": [], "unplaced": [{"job": j, "reason": "none found"}
                                               for j in instance.job_ids]}
    path = tmp_path / "empty.json"
    path.write_text(json.dumps(document))
    assert main(["check", str(SMALL), str(path)]) == 1
    assert f"status {status} holds no plan" in capsys.readouterr().err


def test_schedule_with_a_key_given_twice_is_bad_input(
        verified: Document, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A schedule file that says "objective" twice is refused, not read with either value."""
    text = json.dumps(verified).replace('"objective": 1300.0', '"objective": 1300.0, '
                                        '"objective": 1.0', 1)
    path = tmp_path / "twice.json"
    path.write_text(text)
    assert main(["check", str(SMALL), str(path)]) == 2
    assert "key 'objective' is given 2 times" in capsys.readouterr().err


def test_lateness_is_caught_at_the_largest_times() -> None:
    """Near 1e9 s a plan 900 s late, or started before its predecessor ends, still fails."""
    from gpuplan.readers.instance_file import build_instance, parse_document

    document = {"gpu_types": [{"id": "A", "capacity": {"memory": 1}}],
                "nodes": [{"id": "n", "gpus": {"A": 2}}],
                "jobs": [{"id": "a", "duration_s": 5e8, "release_s": 4e8, "deadline_s": 9e8},
                         {"id": "b", "duration_s": 1.5, "depends_on": ["a"]}],
                "objective": "makespan"}
    instance = build_instance(parse_document(document, "big"), "big")

    def schedule(a_start: float, b_start: float) -> Schedule:
        placements = [{"job": "a", "node": "n", "gpu_type": "A", "gpu_ids": ["n/0"],
                       "start_s": a_start, "end_s": a_start + 5e8},
                      {"job": "b", "node": "n", "gpu_type": "A", "gpu_ids": ["n/1"],
                       "start_s": b_start, "end_s": b_start + 1.5}]
        return Schedule.model_validate_json(json.dumps({
            "instance": instance.name, "objective_kind": "makespan", "status": "feasible",
            "objective": None, "bound": None, "gap": None, "method": "hand", "solver": "hand",
            "wall_time_s": 0.0, "seed": 0, "gpuplan_version": "test",
            "placements": placements, "unplaced": []}))

    assert verify_schedule(instance, schedule(4e8, 9e8)).ok
    kinds = {v.kind.value for v in verify_schedule(instance, schedule(4e8 + 900, 9e8)).violations}
    assert kinds == {"deadline", "dependency"}
