"""Reading instances: YAML and JSON agree, shorthands expand, defaults are derived."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from conftest import DATA

from gpuplan import InputError, Instance, ObjectiveKind, read_instance
from gpuplan.readers import instance_file
from gpuplan.readers.instance_file import write_documents


def test_yaml_equals_json(small: Instance, tmp_path: Path) -> None:
    """The same document as YAML gives the same instance."""
    path = tmp_path / "small.yaml"
    document = json.loads((DATA / "valid_small.json").read_text())
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    other = read_instance(path)
    for field in ("capacity", "node_gpus", "gang", "demand", "duration", "eligible", "cost"):
        np.testing.assert_array_equal(getattr(other, field), getattr(small, field))
    assert other.predecessors == small.predecessors


def test_indexing_and_defaults(small: Instance) -> None:
    """Ids map to indices; scalars spread to every type; cost defaults from the price."""
    assert small.type_ids == ("A100", "L4") and small.resources == ("memory_gib", "compute")
    assert small.gpu_ids == ("n1/0", "n1/1", "n1/2", "n1/3", "n2/0", "n2/1", "n2/2", "n2/3")
    assert small.type_ids[small.gpu_type[small.gpu_index["n2/2"]]] == "L4"
    b = small.job_index["sweep-b"]
    # duration_s 300 for every type, but only L4 is allowed.
    assert small.duration[b].tolist() == [300.0, 300.0]
    assert small.eligible[b].tolist() == [False, True]
    train = small.job_index["train"]
    assert np.isnan(small.duration[train, 1]) and not small.eligible[train, 1]
    assert small.cost[train, 0] == pytest.approx(1000 / 3600 * 4 * 3.0)
    assert small.deadline[train] == 2000 and np.isinf(small.deadline[b])
    assert small.predecessors[small.job_index["eval"]] == (train,)
    order = small.topological_order.tolist()
    assert order.index(small.job_index["prep"]) < order.index(train) < order.index(
        small.job_index["eval"]
    )


def test_objective_object_form(tmp_path: Path) -> None:
    """``{"kind": ...}`` and the plain string mean the same objective."""
    raw = json.loads((DATA / "valid_small.json").read_text())
    raw["objective"] = {"kind": "tardiness"}
    path = tmp_path / "o.json"
    path.write_text(json.dumps(raw))
    assert read_instance(path).objective is ObjectiveKind.TARDINESS
    assert read_instance(path, objective=ObjectiveKind.COST).objective is ObjectiveKind.COST


def _named(document: dict[str, Any], name: str) -> dict[str, Any]:
    """The document under another name."""
    return {**document, "name": name}


def test_write_documents_writes_each_as_named(tmp_path: Path) -> None:
    """Each document becomes OUT/<name>.json, loads as it is, and the paths come back."""
    document = json.loads((DATA / "valid_small.json").read_text())
    documents = [_named(document, "first"), _named(document, "second")]
    written = write_documents(documents, "<converted>", tmp_path, [DATA / "valid_small.json"])
    assert written == [tmp_path / "first.json", tmp_path / "second.json"]
    for path, expected in zip(written, documents, strict=True):
        assert json.loads(path.read_text()) == expected
        assert read_instance(path).name == expected["name"]


def test_write_documents_writes_nothing_when_one_is_bad(tmp_path: Path) -> None:
    """A bad document, or a target that is an input, stops the whole write up front."""
    document = json.loads((DATA / "valid_small.json").read_text())
    cycle = json.loads((DATA / "bad" / "dependency_cycle.json").read_text())
    with pytest.raises(InputError, match=r"^<converted>: .*cycle"):
        write_documents([_named(document, "good"), _named(cycle, "bad")], "<converted>",
                        tmp_path, [])
    assert not list(tmp_path.iterdir())
    source = tmp_path / "input.json"
    source.write_text("{}")
    with pytest.raises(InputError, match="input"):
        write_documents([_named(document, "good"), _named(document, "input")], "<converted>",
                        tmp_path, [source])
    assert [p.name for p in tmp_path.iterdir()] == ["input.json"]


def _many_jobs(count: int) -> dict[str, Any]:
    """Two GPU types, one node each, and ``count`` varied jobs, some depending on others."""
    return {
        "gpu_types": [{"id": "A", "capacity": {"memory_gib": 16}},
                      {"id": "B", "capacity": {"memory_gib": 40}}],
        "nodes": [{"id": "a", "gpus": {"A": 4}}, {"id": "b", "gpus": {"B": 2}}],
        "jobs": [{"id": f"j{k}", "gpus": 1 + k % 2,
                  "duration_s": {"A": 100 + k, "B": 60 + k} if k % 3 else 50 + k,
                  "demand": {"memory_gib": {"A": 8, "B": 20} if k % 4 else 4},
                  "release_s": 7 * k, "weight": 1 + k % 5, "preemptible": k % 2 == 0,
                  **({"depends_on": [f"j{k - 3}"]} if k % 7 == 6 else {}),
                  **({"allowed_types": ["B"]} if k % 11 == 10 else {})}
                 for k in range(count)],
        "objective": "weighted-completion",
    }


def test_chunked_jobs_build_the_same_instance(monkeypatch: pytest.MonkeyPatch) -> None:
    """Jobs validated a chunk at a time give the instance a whole document gives.

    Broken, a large instance file (whose jobs are read in chunks to bound memory) would
    plan or simulate other jobs than a small one with the same content.
    """
    data = _many_jobs(50)
    whole = instance_file.build_instance(instance_file.parse_document(data, "w"), "w")
    monkeypatch.setattr(instance_file, "JOB_CHUNK", 7)
    chunked = instance_file.instance_from_data(data, "w")
    for name in ("gang", "duration", "demand", "eligible", "cost", "weight", "release",
                 "deadline", "due", "preemptible"):
        assert np.array_equal(getattr(whole, name), getattr(chunked, name), equal_nan=True)
    assert whole.job_ids == chunked.job_ids and whole.predecessors == chunked.predecessors


@pytest.mark.parametrize(("change", "where"), [
    (lambda jobs: jobs[33].update(gpus="two"), "jobs[33].gpus (job 'j33')"),
    (lambda jobs: jobs[40].update(id="j2"), "jobs[40].id"),
    (lambda jobs: jobs[45].update(depends_on=["nobody"]), "jobs[45].depends_on[0]"),
    (lambda jobs: jobs[29].update(gpus=9), "jobs[29].gpus"),
])
def test_a_bad_job_in_a_later_chunk_is_named_by_its_place(
        monkeypatch: pytest.MonkeyPatch, change: Any, where: str) -> None:
    """A problem in a job past the first chunk names that job's JSON path and id.

    Broken, the error of a large file would point at the wrong job.
    """
    data = _many_jobs(50)
    change(data["jobs"])
    monkeypatch.setattr(instance_file, "JOB_CHUNK", 7)
    with pytest.raises(InputError) as raised:
        instance_file.instance_from_data(data, "big.json")
    assert where in str(raised.value) and "big.json" in str(raised.value)


def test_partitions_accounts_and_qos_read_as_index_arrays() -> None:
    """quotas.json's partitions become node masks, its accounts and QOS GPU limits per job.

    A job's partition narrows the types it may use to those its nodes hold (vision-1 runs
    in the L4 partition, nlp-1 in the A100 one); an account without a limit caps nothing.
    """
    instance = read_instance(DATA / "quotas.json")
    assert instance.partition_ids == ("train", "infer", "mixed")
    assert instance.partition_nodes.tolist() == [[True, True, False, False],
                                                 [False, False, True, True],
                                                 [False, True, True, False]]
    job = instance.job_index
    assert instance.job_partition[job["vision-1"]] == 1
    assert instance.job_partition[job["batch-1"]] == -1
    assert instance.eligible[job["vision-1"]].tolist() == [False, True]
    assert instance.eligible[job["nlp-1"]].tolist() == [True, False]
    assert instance.account_ids == ("nlp", "vision", "ops")
    assert instance.account_gpus.tolist() == [4, 2, -1]
    assert instance.qos_gpus.tolist() == [2]
    assert [(str(limit), limit.gpus, [instance.job_ids[j] for j in limit.jobs])
            for limit in instance.gpu_limits] == [
        ("account 'nlp'", 4, ["nlp-1", "nlp-2", "nlp-3", "nlp-4"]),
        ("account 'vision'", 2, ["vision-1", "vision-2", "vision-3"]),
        ("QOS 'urgent'", 2, ["ops-1", "ops-2"])]
