"""Schedule JSON: lossless round trip, published schemas, atomic writes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import pytest
from conftest import DATA, INSTANCES

from gpuplan import InputError, Instance, Schedule, plan
from gpuplan.readers import load_data
from gpuplan.readers.instance_file import InstanceDocument


def test_round_trip(small: Instance) -> None:
    """Writing and reading a schedule gives back the same schedule."""
    schedule = plan(small)
    assert Schedule.from_json(schedule.to_json(), "<memory>") == schedule


def test_published_schemas_accept_real_files(small: Instance, tmp_path: Path) -> None:
    """The JSON Schemas accept every shipped instance and a written schedule."""
    instance_schema = InstanceDocument.model_json_schema()
    for path in [DATA / "valid_small.json", *INSTANCES.glob("*.json")]:
        jsonschema.validate(load_data(path), instance_schema)
    out = tmp_path / "s.json"
    plan(small).write(out)
    jsonschema.validate(json.loads(out.read_text()), Schedule.model_json_schema())


def test_schema_rejects_what_the_reader_rejects() -> None:
    """The published instance schema is not looser than needed on basic types."""
    bad = load_data(DATA / "bad" / "wrong_type_gang_string.json")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, InstanceDocument.model_json_schema())


def test_unverified_schedule_is_never_written(small: Instance, tmp_path: Path) -> None:
    """Writing refuses a schedule without a verification."""
    schedule = plan(small).model_copy(update={"verification": None})
    with pytest.raises(ValueError, match="not been verified"):
        schedule.write(tmp_path / "s.json")
    assert not (tmp_path / "s.json").exists()


def test_failed_write_keeps_the_old_file(
    small: Instance, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure during the rename leaves the previous file whole and no temporary file."""
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
    """A schedule file with a wrong or missing field is named by its JSON path."""
    document = json.loads(plan(small).to_json())
    path = tmp_path / "s.json"
    path.write_text(json.dumps({**document, "status": "great"}))
    with pytest.raises(InputError, match=r"s.json: status: Input should be 'optimal'"):
        Schedule.read(path)
    del document["placements"][0]["end_s"]
    path.write_text(json.dumps(document))
    with pytest.raises(InputError, match=r"s.json: placements\[0\].end_s: required field"):
        Schedule.read(path)
