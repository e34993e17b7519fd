"""``gpuplan convert itp TRACE --deadlines``: ElasticFlow's trace as elastic jobs on disk."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import DATA, Gpuplan

from gpuplan import read_instance

TRACE = DATA / "itp" / "elasticflow" / "195job.csv"


def test_the_trace_converts_to_elastic_jobs_that_validate(gpuplan: Gpuplan,
                                                          tmp_path: Path) -> None:
    """One instance file of 30 elastic jobs due by their deadlines, as ``validate`` reads it.

    ``--rescale-s`` sets every job's overhead; ``--throughputs`` may name the tables.
    """
    out = tmp_path / "out"
    tables = Path(__file__).resolve().parents[2] / "gpuplan" / "data" / "elasticflow_a100"
    done = gpuplan("convert", "itp", TRACE, "--deadlines", "--rescale-s", "5",
                   "--throughputs", tables, "-o", out)
    assert done.code == 0, done.err
    (path,) = out.glob("*.json")
    assert path.name == "itp-elastic-195job.json"
    instance = read_instance(path)
    assert instance.elastic.sum() == 30 and set(instance.rescale_s.tolist()) == {5.0}
    assert instance.objective.value == "deadlines-met"
    assert gpuplan("validate", path).code == 0


def test_itp_without_deadlines_stays_rigid(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """Without ``--deadlines`` ``itp`` reads the raw columns as before: rigid jobs."""
    done = gpuplan("convert", "itp", TRACE, "--limit", "3", "-o", tmp_path)
    assert done.code == 0, done.err
    document = json.loads((tmp_path / "itp-195job.json").read_text())
    assert all("elastic" not in job for job in document["jobs"])


@pytest.mark.parametrize(("arguments", "said"), [
    (["itp", TRACE, "--rescale-s", "5"], "--rescale-s: applies to itp with --deadlines"),
    (["itp", TRACE, "--throughputs", DATA], "--throughputs: applies to itp with --deadlines"),
    (["itp-elasticflow", TRACE, "--deadlines"], "--deadlines: applies to itp, not to "
     "itp-elasticflow"),
    (["itp", TRACE, "--deadlines", "--machine-list", TRACE], "--machine-list: is taken by "
     "philly, not by itp"),
    (["itp", TRACE, "--deadlines", "--throughputs", DATA / "itp"],
     "no throughput table (<model>.csv) in the folder"),
])
def test_a_flag_that_does_not_apply_is_exit_2_and_nothing_is_written(
        gpuplan: Gpuplan, tmp_path: Path, arguments: list[str | Path], said: str) -> None:
    """Each misplaced flag or useless table folder is named, and no folder is left."""
    outcome = gpuplan("convert", *arguments, "-o", tmp_path / "out")
    assert outcome.code == 2
    assert said in outcome.err and "Traceback" not in outcome.err
    assert not (tmp_path / "out").exists()


def test_a_row_without_a_table_is_exit_2_naming_its_line(gpuplan: Gpuplan,
                                                         tmp_path: Path) -> None:
    """A model ElasticFlow measured no throughput of: the trace's line and field, no file."""
    rows = TRACE.read_text().splitlines()
    rows[3] = rows[3].replace("resnet50", "llama")
    broken = tmp_path / "195job.csv"
    broken.write_text("\n".join(rows) + "\n")
    outcome = gpuplan("convert", "itp", broken, "--deadlines", "-o", tmp_path / "out")
    assert outcome.code == 2
    assert f"{broken}: line 4: model_name is 'llama', which has no throughput table" in (
        outcome.err)
    assert not (tmp_path / "out").exists()
