"""Schedule JSON: lossless round trip, published schemas, atomic writes, version 1 files."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from conftest import DATA, INSTANCES

from gpuplan import (
    InputError,
    Instance,
    ObjectiveKind,
    Schedule,
    plan,
    read_instance,
    verify_schedule,
)
from gpuplan.core.result import Event, EventKind, Result
from gpuplan.core.schedule import FORMAT_VERSION, parse_epoch
from gpuplan.core.status import Status
from gpuplan.readers import load_data
from gpuplan.readers.instance_file import InstanceDocument

V1_SMALL = DATA / "schedule_v1_small.json"
V2_SEGMENTS = DATA / "schedule_v2_segments.json"


def test_round_trip(small: Instance) -> None:
    """Writing and reading a schedule gives back the same schedule.

    If this broke, reading back a written schedule would give a different plan.
    """
    schedule = plan(small)
    assert Schedule.from_json(schedule.to_json(), "<memory>") == schedule


def test_published_schemas_accept_real_files(small: Instance, tmp_path: Path) -> None:
    """The JSON Schemas accept every shipped instance and a written schedule.

    If this broke, validators built from `gpuplan schema` would reject gpuplan's own files.
    """
    instance_schema = InstanceDocument.model_json_schema()
    for path in [DATA / "valid_small.json", *INSTANCES.glob("*.json")]:
        jsonschema.validate(load_data(path), instance_schema)
    out = tmp_path / "s.json"
    plan(small).write(out)
    jsonschema.validate(json.loads(out.read_text()), Schedule.model_json_schema())


def test_schema_rejects_what_the_reader_rejects() -> None:
    """The published instance schema is not looser than needed on basic types.

    If this broke, files passing the published schema would still be refused by gpuplan.
    """
    bad = load_data(DATA / "bad" / "wrong_type_gang_string.json")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, InstanceDocument.model_json_schema())


def test_unverified_schedule_is_never_written(small: Instance, tmp_path: Path) -> None:
    """Writing refuses a schedule without a verification.

    If this broke, a schedule nobody checked could reach disk and look trustworthy.
    """
    schedule = plan(small).model_copy(update={"verification": None})
    with pytest.raises(ValueError, match="not been verified"):
        schedule.write(tmp_path / "s.json")
    assert not (tmp_path / "s.json").exists()


def test_failed_write_keeps_the_old_file(
    small: Instance, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure during the rename leaves the previous file whole and no temporary file.

    If this broke, a full disk could leave a truncated schedule in place of a good one.
    """
    out = tmp_path / "s.json"
    out.write_text("previous")

    def broken_replace(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        plan(small).write(out)
    assert out.read_text() == "previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.json"]


def test_bad_schedule_file_is_input_error(small: Instance, tmp_path: Path) -> None:
    """A schedule file with a wrong or missing field is named by its JSON path.

    If this broke, users would get a traceback instead of the place to fix in their file.
    """
    document = json.loads(plan(small).to_json())
    path = tmp_path / "s.json"
    path.write_text(json.dumps({**document, "status": "great"}))
    with pytest.raises(InputError, match=r"s.json: status: Input should be 'optimal'"):
        Schedule.read(path)
    del document["segments"][0]["end_s"]
    path.write_text(json.dumps(document))
    with pytest.raises(InputError, match=r"s.json: segments\[0\].end_s: required field"):
        Schedule.read(path)


def test_v2_file_round_trip() -> None:
    """A v2 file with partners, overheads, a migration, events and an epoch round-trips.

    It reads back equal and writes back byte for byte.

    If this broke, reading and rewriting a schedule would change or lose facts of the plan.
    """
    schedule = Schedule.read(V2_SEGMENTS)
    assert schedule.format_version == FORMAT_VERSION == 2
    assert Schedule.from_json(schedule.to_json(), "<memory>") == schedule
    assert schedule.to_json() == V2_SEGMENTS.read_text()
    moved = schedule.segments[3]
    assert (moved.job, moved.work, moved.restore_s, moved.migrate_s, moved.migrated_from) == (
        "a", 0.6, 5.0, 10.0, ["n/0"])
    assert schedule.epoch == datetime(2026, 12, 1, 7, tzinfo=UTC)


def test_v1_file_is_read_and_checked() -> None:
    """A version-1 file (placements) is read into v2 segments, checks as before, writes v2.

    If this broke, users could no longer check or re-plan from the schedules older gpuplan
    versions wrote.
    """
    schedule = Schedule.read(V1_SMALL)
    placements = json.loads(V1_SMALL.read_text())["placements"]
    assert schedule.format_version == 2 and len(schedule.segments) == len(placements) == 5
    for segment, placement in zip(schedule.segments, placements, strict=True):
        assert segment.model_dump(include=set(placement)) == placement
        assert (segment.work, segment.partner, segment.migrated_from) == (None, None, None)
        assert segment.restore_s == segment.migrate_s == 0.0
    assert schedule.events == [] and schedule.epoch is None
    verification = verify_schedule(read_instance(DATA / "valid_small.json"), schedule)
    assert verification.ok and verification.objective == 1300.0
    written = json.loads(schedule.to_json())
    assert written["format_version"] == 2 and "placements" not in written
    assert Schedule.from_json(schedule.to_json(), "<memory>") == schedule


def test_v1_file_errors_name_the_v1_path(tmp_path: Path) -> None:
    """A broken v1 file is bad input at the path the user wrote (placements, not segments).

    If this broke, the error would point at a field that is not in the user's file.
    """
    document = json.loads(V1_SMALL.read_text())
    del document["placements"][2]["gpu_ids"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(document))
    with pytest.raises(InputError, match=r"old.json: placements\[2\].gpu_ids: required field"):
        Schedule.read(path)
    document = json.loads(V1_SMALL.read_text())
    document["placements"][0]["work"] = 1.0
    path.write_text(json.dumps(document))
    with pytest.raises(InputError, match=r"placements\[0\].work: unknown field"):
        Schedule.read(path)


def test_unknown_format_version_is_input_error(tmp_path: Path) -> None:
    """A format version gpuplan does not know is refused, at format_version.

    If this broke, a file from a newer gpuplan could be misread silently.
    """
    document = json.loads(V2_SEGMENTS.read_text())
    path = tmp_path / "future.json"
    path.write_text(json.dumps({**document, "format_version": 3}))
    with pytest.raises(InputError, match=r"future.json: format_version: Input should be less"):
        Schedule.read(path)


def test_published_schema_has_the_v2_fields() -> None:
    """`gpuplan schema schedule` describes segments, events and epoch, and accepts v2 files.

    If this broke, people writing or reading schedules by the published schema would not
    know the new fields, or valid files would fail their validators.
    """
    schema = Schedule.model_json_schema()
    properties = schema["properties"]
    assert {"segments", "events", "epoch"} <= set(properties) and "placements" not in properties
    assert properties["format_version"]["minimum"] == properties["format_version"]["maximum"] == 2
    assert "date-time" in json.dumps(properties["epoch"])
    segment = schema["$defs"]["Segment"]["properties"]
    for name in ("work", "partner", "restore_s", "migrate_s", "migrated_from"):
        assert segment[name]["description"], name
    # 0 only for a run's segment spent wholly on its overheads (the description says so).
    assert '"minimum": 0' in json.dumps(segment["work"]) and "restore" in json.dumps(
        segment["work"])
    event = schema["$defs"]["Event"]["properties"]
    assert {"time_s", "kind", "job", "gpu_ids"} == set(event)
    assert set(schema["$defs"]["EventKind"]["enum"]) == {k.value for k in EventKind}
    for name in ("segments", "events", "epoch"):
        assert properties[name]["description"], name
    jsonschema.validate(json.loads(V2_SEGMENTS.read_text()), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(json.loads(V1_SMALL.read_text()), schema)


@pytest.mark.parametrize(("epoch", "words"), [
    ("2026-12-01T08:00:00", "timezone"),
    ("2026-12-01", "valid datetime"),
    ("soon", "valid datetime"),
    ("2026-13-01T08:00:00Z", "month"),
    (1764576000, "valid datetime"),
])
def test_bad_epoch_is_input_error(tmp_path: Path, epoch: object, words: str) -> None:
    """An epoch that is no ISO-8601 date-time with a UTC offset is bad input at "epoch".

    If this broke, an exporter could start jobs at a wall-clock time off by the local
    time zone, or crash on the file.
    """
    document = json.loads(V2_SEGMENTS.read_text())
    path = tmp_path / "s.json"
    path.write_text(json.dumps({**document, "epoch": epoch}))
    with pytest.raises(InputError, match=r"s.json: epoch: ") as caught:
        Schedule.read(path)
    assert words in caught.value.message


def test_shipped_bad_epoch_file_is_input_error() -> None:
    """tests/data/bad_schedules/epoch_without_offset.json is refused, naming epoch.

    If this broke, a schedule with a naive local time as its epoch would be read.
    """
    path = DATA / "bad_schedules" / "epoch_without_offset.json"
    with pytest.raises(InputError, match="epoch: Input should have timezone info") as caught:
        Schedule.read(path)
    assert caught.value.source == str(path) and caught.value.path == "epoch"


def test_parse_epoch() -> None:
    """An --epoch text with an offset parses; one without is an error naming its source.

    If this broke, the command line could take a naive time as t = 0.
    """
    assert parse_epoch("2026-12-01T08:00:00+01:00", "--epoch") == datetime(
        2026, 12, 1, 7, tzinfo=UTC)
    assert parse_epoch("2026-12-01T07:00:00Z", "--epoch").utcoffset() == timedelta(0)
    with pytest.raises(InputError, match=r"^--epoch: '2026-12-01T08:00' is not an ISO-8601"):
        parse_epoch("2026-12-01T08:00", "--epoch")


def _ids(*gpus: int) -> np.ndarray:
    return np.array(gpus, dtype=np.int64)


def _migrating_result(**facts: object) -> Result:
    """The plan of schedule_v2_segments.json as a method's result, by index."""
    events = (Event(0.0, EventKind.START, 0, _ids(0)), Event(0.0, EventKind.START, 1, _ids(0)),
              Event(0.0, EventKind.START, 2, _ids(1)), Event(50.0, EventKind.PREEMPT, 0, _ids(0)),
              Event(50.0, EventKind.COMPLETE, 2, _ids(1)),
              Event(50.0, EventKind.MIGRATE, 0, _ids(2)),
              Event(125.0, EventKind.COMPLETE, 1, _ids(0)),
              Event(185.0, EventKind.COMPLETE, 0, _ids(2)))
    values: dict[str, object] = dict(
        status=Status.FEASIBLE, objective=185.0, bound=None, solver="hand",
        job=_ids(0, 1, 2, 1, 0), gpu_type=_ids(0, 0, 0, 0, 1),
        start=np.array([0.0, 0.0, 0.0, 50.0, 50.0]), end=np.array([50.0, 50.0, 50.0, 125.0, 185.0]),
        gpus=(_ids(0), _ids(0), _ids(1), _ids(0), _ids(2)),
        restore_s=np.array([0.0, 0.0, 0.0, 0.0, 5.0]),
        migrate_s=np.array([0.0, 0.0, 0.0, 0.0, 10.0]), events=events)
    values.update(facts)
    return Result(**values)  # type: ignore[arg-type]


def test_from_result_states_every_fact() -> None:
    """A result without work or partners becomes a v2 schedule stating both, which checks.

    Work comes from run time less overheads at the type's and the pair's speed; partners
    from two pairable jobs on the same GPUs over the same interval; migrated_from from the
    previous GPUs of a segment that pays migration; the events come along, and the epoch.
    If this broke, written schedules would omit or misstate facts exporters rely on.
    """
    instance = read_instance(DATA / "segments_small.json")
    epoch = datetime(2026, 12, 1, 8, tzinfo=timezone(timedelta(hours=1)))
    schedule = Schedule.from_result(instance, _migrating_result(), "hand", 0.0, 0, epoch=epoch)
    expected = Schedule.read(V2_SEGMENTS)
    assert schedule.segments == expected.segments and schedule.events == expected.events
    assert schedule.epoch == epoch and schedule.verification is None
    assert verify_schedule(instance, schedule).ok


def test_from_result_keeps_what_the_result_states() -> None:
    """Work shares and partners the method gives are written as given (the verifier judges).

    If this broke, the file would show gpuplan's guess instead of what the method planned.
    """
    instance = read_instance(DATA / "segments_small.json")
    result = _migrating_result(work=np.array([0.4, 0.25, 1.0, 0.75, 0.6]),
                               partner=np.array([1, 0, -1, -1, -1], dtype=np.int64))
    schedule = Schedule.from_result(instance, result, "hand", 0.0, 0)
    assert [s.work for s in schedule.segments] == [0.4, 0.25, 1.0, 0.6, 0.75]
    assert [s.partner for s in schedule.segments] == ["b", "a", None, None, None]
    lone = _migrating_result(partner=np.full(5, -1, dtype=np.int64))
    alone = Schedule.from_result(instance, lone, "hand", 0.0, 0)
    assert [s.partner for s in alone.segments] == [None] * 5
    assert alone.segments[0].work == 0.5  # a alone on n/0 for 50 of its 100 s


def test_from_result_calls_a_move_a_migration_only_when_it_is_one() -> None:
    """Resuming on other GPUs is a migration when it pays migrate_s or an event says so.

    If this broke, exporters would move (or fail to move) a job's checkpoint between GPUs.
    """
    instance = read_instance(DATA / "segments_small.json")
    quiet = _migrating_result(migrate_s=np.zeros(5), events=())
    assert Schedule.from_result(instance, quiet, "hand", 0.0, 0).segments[3].migrated_from is None
    told = _migrating_result(migrate_s=np.zeros(5))
    assert Schedule.from_result(instance, told, "hand", 0.0, 0).segments[3].migrated_from == [
        "n/0"]


def test_from_result_leaves_a_broken_work_share_to_the_verifier() -> None:
    """An empty segment of a preempted job is written with work null and reported, not a crash.

    If this broke, a method's bug would surface as a pydantic error instead of a
    verification failure naming the job.
    """
    instance = read_instance(DATA / "segments_small.json")
    result = _migrating_result(end=np.array([50.0, 50.0, 50.0, 125.0, 50.0]),
                               restore_s=np.zeros(5), migrate_s=np.zeros(5), events=())
    schedule = Schedule.from_result(instance, result, "hand", 0.0, 0)
    assert schedule.segments[3].work is None
    kinds = {v.kind.value for v in verify_schedule(instance, schedule).violations}
    assert {"duration", "segment"} <= kinds


def test_from_result_pairs_nothing_under_a_static_objective() -> None:
    """Two pairable jobs on one GPU in a static plan are not written as partners.

    If this broke, a static plan of jobs with colocation classes would fail verification
    (a partner where the batch is placed at once) and gpuplan would report a bug.
    """
    instance = read_instance(DATA / "segments_small.json").with_objective(
        ObjectiveKind.MIN_GPUS)
    result = _migrating_result(job=_ids(0, 1), gpu_type=_ids(0, 0), start=np.zeros(2),
                               end=np.array([100.0, 100.0]), gpus=(_ids(0), _ids(0)),
                               restore_s=None, migrate_s=None, events=())
    schedule = Schedule.from_result(instance, result, "hand", 0.0, 0)
    assert [(s.partner, s.work) for s in schedule.segments] == [(None, 1.0), (None, 1.0)]
