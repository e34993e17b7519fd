"""ElasticFlow's ITP trace as elastic jobs: work, speeds per count, due dates (itp --deadlines).

``tests/data/itp/elasticflow/195job.csv`` holds 30 real rows of ElasticFlow's testbed trace
(its README says which); the tables are ElasticFlow's A100 throughputs that gpuplan ships.
"""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest
from conftest import DATA, instance_from

from gpuplan import InputError
from gpuplan.core.objectives import ObjectiveKind
from gpuplan.readers.itp import elasticflow_max_gpus, itp_elastic_document

TRACE = DATA / "itp" / "elasticflow" / "195job.csv"
SHIPPED = Path(__file__).resolve().parents[2] / "gpuplan" / "data" / "elasticflow_a100"


def table_row(model: str, batch: int) -> dict[str, float]:
    """The shipped table's row of a model at a batch size, by count, empty cells left out."""
    with (SHIPPED / f"{model}.csv").open() as handle:
        for row in csv.DictReader(handle):
            if int(row["global_batch_size"]) == batch:
                return {c: float(v) for c, v in row.items()
                        if c != "global_batch_size" and v.strip()}
    raise AssertionError(f"no row {batch} in {model}")


def test_each_job_is_elastic_with_its_iterations_speeds_and_due_date() -> None:
    """The first job (resnet50, batch 256, 1 GPU, 1,227 iterations) on the testbed's 128 GPUs.

    Its counts are the table's 1 to 64, its speeds the table's row, its due date its
    deadline less the first submission (810 s), its rescale_s ElasticFlow's base overhead
    on fewer than 256 GPUs (2 s).
    """
    document = itp_elastic_document(TRACE)
    instance = instance_from(document)
    assert document["name"] == "itp-elastic-195job"
    assert document["objective"] == ObjectiveKind.DEADLINES_MET.value
    assert len(document["nodes"]) == 16 and instance.elastic.all()
    first = document["jobs"][0]
    assert (first["gpus"], first["due_s"], first["release_s"]) == (1, 810.0, 0.0)
    assert first["elastic"]["work"] == 1227.0 and first["elastic"]["rescale_s"] == 2.0
    assert first["elastic"]["gpus"] == [1, 2, 4, 8, 16, 32, 64]
    assert first["elastic"]["speed"]["A100"] == table_row("resnet50", 256)
    assert instance.gang.tolist()[:12] == [1, 1] + [8] * 7 + [16] * 3


def test_counts_stop_where_the_table_or_the_batch_does() -> None:
    """deepspeech2 at batch 32 has no throughput on 64 GPUs: its counts end at 32."""
    document = itp_elastic_document(TRACE)
    speech = next(job for job in document["jobs"] if job["id"].startswith("4d71c366"))
    assert speech["elastic"]["gpus"] == [1, 2, 4, 8, 16, 32]


def test_a_small_fleet_keeps_the_counts_it_can_lay_out() -> None:
    """On 2 nodes (16 GPUs) counts end at 16, and the larger-fleet overhead needs 256 GPUs."""
    document = itp_elastic_document(TRACE, 2, limit=2)
    assert document["jobs"][0]["elastic"]["gpus"] == [1, 2, 4, 8, 16]
    big = itp_elastic_document(TRACE, 32, limit=1)
    assert big["jobs"][0]["elastic"]["rescale_s"] == 7.0
    given = itp_elastic_document(TRACE, limit=1, rescale_s="0")
    assert given["jobs"][0]["elastic"]["rescale_s"] == 0.0


def test_a_job_asking_for_more_than_the_fleet_is_named() -> None:
    """The 16-GPU jobs on one node: num_gpu is not a count the fleet holds, at its line."""
    with pytest.raises(InputError) as caught:
        itp_elastic_document(TRACE, 1)
    assert caught.value.path == "line 11"
    assert caught.value.message.startswith("num_gpu is 16 (job ")
    assert "the fleet has no 2 nodes of one type (at most 1)" in caught.value.message


def tables(tmp_path: Path, edit: dict[str, str]) -> Path:
    """A copy of the shipped tables with some files' text replaced ("" deletes the file)."""
    folder = tmp_path / "tables"
    shutil.copytree(SHIPPED, folder)
    for name, text in edit.items():
        if text:
            (folder / name).write_text(text)
        else:
            (folder / name).unlink()
    return folder


@pytest.mark.parametrize(("edit", "source", "path", "words"), [
    ({"bert.csv": ""}, "trace", None, "model_name is 'bert', which has no throughput table"),
    ({"resnet50.csv": "global_batch_size,1,2,4\n64,1,2,3\n"}, "trace", "line 2",
     "batch_size is 256, which"),
    ({"resnet50.csv": "global_batch_size,1,2,4\n64,1,2,3\n256,1,2,3\n"}, "trace", "line 4",
     "num_gpu is 8 (job '702cdd20-2862-18b8-48f4-ef125e9953d2'), which is not one of its "
     "GPU counts:"),
    ({"resnet50.csv": "global_batch_size,1,2,4,8\n256,1,2,3,x\n"}, "resnet50.csv",
     "line 2, column 5", "the throughput on 8 GPUs is 'x'"),
    ({"resnet50.csv": "global_batch_size,1,two\n"}, "resnet50.csv", "line 1, column 3",
     "'two' is not a GPU count"),
])
def test_a_table_that_does_not_serve_the_trace_is_named(
        tmp_path: Path, edit: dict[str, str], source: str, path: str | None,
        words: str) -> None:
    """A missing model, batch size or count, or a broken cell: the file, line and field.

    The trace's line is named for what its row asks that the tables lack; the table's
    line and column for a cell that is no throughput.
    """
    folder = tables(tmp_path, edit)
    with pytest.raises(InputError) as caught:
        itp_elastic_document(TRACE, throughputs=folder)
    error = caught.value
    assert error.source.endswith(TRACE.name if source == "trace" else source)
    assert words in error.message
    assert path is None or error.path == path


def test_elasticflow_caps_each_model_as_its_policy_does() -> None:
    """ElasticFlow's own cap per model and batch size (A100), for a policy reproducing it."""
    assert [elasticflow_max_gpus(m, b) for m, b in [
        ("bert", 64), ("bert", 128), ("gpt2", 128), ("gpt2", 256), ("deepspeech2", 32),
        ("inception3", 64), ("inception3", 128), ("resnet50", 64), ("resnet50", 256),
        ("vgg16", 64), ("vgg16", 128)]] == [8, 16, 16, 32, 32, 16, 32, 32, 64, 32, 64]
