"""The changes file of ``gpuplan replan``: what reads as no change."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import INSTANCES, Gpuplan

from gpuplan import read_instance


@pytest.mark.parametrize(("name", "text"), [
    ("changes.yaml", ""),
    ("changes.yaml", " \n\t\n"),
    ("changes.yml", "# nothing happened today\n"),
    ("changes.json", ""),
    ("changes.json", "\n"),
], ids=["empty-yaml", "blank-yaml", "comments-only", "empty-json", "blank-json"])
def test_an_empty_changes_file_is_no_change(gpuplan: Gpuplan, tmp_path: Path, name: str,
                                            text: str) -> None:
    """An empty changes file re-plans like ``{}``: the plan comes back with nothing moved.

    It used to be exit 2 ("Input should be a valid dictionary", or malformed JSON).
    """
    instance = INSTANCES / "quickstart.json"
    previous, new = tmp_path / "plan.json", tmp_path / "new.json"
    assert gpuplan("solve", instance, "--objective", "makespan", "-o", previous).code == 0
    changes = tmp_path / name
    changes.write_text(text)
    done = gpuplan("replan", instance, previous, "--changes", changes, "--at", "3600",
                   "--method", "greedy", "-o", new, "--json")
    assert done.code == 0, done.err
    disruption = json.loads(done.out)["disruption"]
    assert disruption["unchanged"] == read_instance(instance).n_jobs
    assert not (disruption["stopped"] or disruption["moved"] or disruption["migrated"])
