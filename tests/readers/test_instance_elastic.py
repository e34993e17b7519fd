"""Elastic jobs in instance files: what the reader makes of their counts, work and speeds.

``tests/data/elastic.json`` (a copy of ``instances/elastic.json``): two 8 x A100 nodes, five
elastic jobs whose speeds are rows of ElasticFlow's A100 throughput tables, two rigid jobs,
objective deadlines-met. The defects each have a file in ``tests/data/bad/elastic_*``
(``test_instance_errors.py``).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import numpy as np
import pytest
from conftest import DATA, INSTANCES, instance_from, run_cli

from gpuplan import InputError, read_instance
from gpuplan.core.instance import Feature
from gpuplan.core.objectives import ObjectiveKind

ELASTIC = DATA / "elastic.json"


def base() -> dict[str, Any]:
    """The elastic test instance's document."""
    document: dict[str, Any] = json.loads(ELASTIC.read_text())
    return document


def test_the_shipped_example_is_the_test_copy() -> None:
    """``instances/elastic.json`` reads as the test copy does (same jobs, same arrays)."""
    shipped, copied = read_instance(INSTANCES / "elastic.json"), read_instance(ELASTIC)
    assert shipped.job_ids == copied.job_ids
    assert np.array_equal(shipped.speed, copied.speed)


def test_elastic_jobs_fill_the_instance_arrays() -> None:
    """Counts, speeds, work and rescale_s are read per job; rigid jobs have none.

    resnet50-b128 asks for 4 GPUs of 1, 2, 4, 8, 16 and does 60,000 iterations at 11.2242
    it/s on 4: run whole there it takes 30 + 60000 / 11.2242 s.
    """
    instance = read_instance(ELASTIC)
    assert instance.objective is ObjectiveKind.DEADLINES_MET
    assert Feature.ELASTIC in instance.features
    assert instance.counts.tolist() == [1, 2, 4, 8, 16]
    assert instance.elastic.tolist() == [True, True, False, True, True, True, False]
    assert instance.speed[0, 0].tolist() == [3.6554, 6.6195, 11.2242, 16.5341, 20.1556]
    # cifar10 lists counts up to 8: its 16 has no speed.
    assert instance.speed[5, 0, 4] == 0.0
    assert not instance.speed[2].any() and not instance.speed[6].any()
    assert instance.work.tolist() == [60000, 30000, 0, 120000, 50000, 80000, 0]
    assert instance.rescale_s[0] == 30.0
    assert instance.gang[0] == 4 and instance.gpus_per_node[0] == 4
    assert instance.duration[0, 0] == pytest.approx(30 + 60000 / 11.2242)
    assert instance.duration[2, 0] == 1800.0
    assert instance.eligible.all()


def test_a_range_of_counts_and_work_in_seconds() -> None:
    """``{"min": 1, "max": 3}`` is every count between; ``work_s`` is seconds at the reference.

    work_s 100 at 2 GPUs of 5 it/s is 500 iterations.
    """
    instance = instance_from({
        "gpu_types": [{"id": "G", "capacity": {"compute": 1.0}}],
        "nodes": [{"id": "n", "gpus": {"G": 4}}],
        "jobs": [{"id": "e", "gpus": 2, "elastic": {
            "gpus": {"min": 1, "max": 3}, "work_s": 100,
            "speed": {"G": {"1": 3.0, "2": 5.0, "3": 6.0}}}}],
        "objective": "makespan"})
    assert instance.counts.tolist() == [1, 2, 3]
    assert instance.work[0] == 500.0
    assert instance.rescale_s[0] == 0.0
    assert instance.duration[0, 0] == pytest.approx(100.0)


def test_pieces_span_one_node_or_whole_nodes() -> None:
    """On 8-GPU nodes a piece of up to 8 GPUs takes one node; 16 take two; 12 cannot be laid out."""
    instance = read_instance(ELASTIC)
    assert [instance.piece_nodes(0, c) for c in (1, 4, 8, 12, 16, 24, 32)] == [
        1, 1, 1, 0, 2, 0, 0]


def test_a_type_the_job_may_not_use_has_no_speed() -> None:
    """A type outside allowed_types keeps no speed at any count, though the table gives one."""
    document = base()
    document["gpu_types"].append({"id": "H100", "capacity": {"memory_gib": 80}})
    document["nodes"].append({"id": "h", "gpus": {"H100": 8}})
    job = document["jobs"][0]
    job["elastic"]["speed"]["H100"] = {c: 2 * v for c, v in
                                       job["elastic"]["speed"]["A100"].items()}
    job["allowed_types"] = ["A100"]
    instance = instance_from(document)
    assert not instance.speed[0, 1].any()
    assert instance.speed[0, 0].all()


def test_residual_instances_keep_each_jobs_work() -> None:
    """Half an elastic job left: half its work, its speeds, and rescale_s before the rest."""
    instance = read_instance(ELASTIC)
    taken = instance.take(np.array([0, 2]))
    assert taken.work.tolist() == [60000, 0] and taken.speed.shape == (2, 1, 5)
    left = taken.work_left(np.array([0.5, 0.5]), np.array([5.0, 5.0]))
    assert left.work.tolist() == [30000, 0]
    assert left.duration[0, 0] == pytest.approx(30 + 30000 / 11.2242)
    assert left.duration[1, 0] == pytest.approx(5 + 900)


@pytest.mark.parametrize(("mutate", "path", "words"), [
    (lambda d: d["jobs"][0]["elastic"].__setitem__("gpus", {"min": 4, "max": 2}),
     "jobs[0].elastic.gpus (job 'resnet50-b128')", "max 2 is below min 4"),
    (lambda d: d["jobs"][0]["elastic"].__setitem__("gpus", [1, 2, 2, 4, 8, 16]),
     "jobs[0].elastic (job 'resnet50-b128')", "gpus lists count 2 twice"),
    (lambda d: d["jobs"][0].pop("elastic"), "jobs[0].duration_s (job 'resnet50-b128')",
     "required field is missing"),
    (lambda d: d["jobs"][0].__setitem__("gpus_per_node", 4), "jobs[0] (job 'resnet50-b128')",
     "leave gpus_per_node out"),
    (lambda d: d["jobs"][0]["elastic"]["speed"].__setitem__("V100", {"1": 1.0}),
     "jobs[0].elastic.speed.V100", "unknown GPU type 'V100'"),
])
def test_more_elastic_defects_are_located(mutate: Any, path: str, words: str) -> None:
    """A bad range, a count twice, no work, a layout, an unknown type: each at its path."""
    document = copy.deepcopy(base())
    mutate(document)
    with pytest.raises(InputError) as caught:
        instance_from(document)
    assert caught.value.path == path
    assert words in caught.value.message


def test_validate_describes_the_elastic_jobs() -> None:
    """``gpuplan validate`` says how many jobs are elastic and over which counts."""
    result = run_cli("validate", ELASTIC)
    said = result.stdout + result.stderr
    assert result.returncode == 0
    assert "objective deadlines-met" in said
    assert "5 elastic jobs (on 1 to 16 GPUs)" in said


def test_the_schema_publishes_the_elastic_object() -> None:
    """``gpuplan schema instance`` has jobs[].elastic, with its counts, work and speed table."""
    schema = json.loads(run_cli("schema", "instance").stdout)
    elastic = schema["$defs"]["ElasticSpec"]
    assert {"gpus", "work", "work_s", "speed", "rescale_s"} <= set(elastic["properties"])
    assert "elastic" in schema["$defs"]["JobSpec"]["properties"]
    assert "deadlines-met" in schema["properties"]["objective"]["anyOf"][0]["enum"]
