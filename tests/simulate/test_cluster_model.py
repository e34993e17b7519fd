"""The simulator runs the planning model's cluster: gangs across nodes, racks, node resources."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import DATA, instance_from

from gpuplan import InputError
from gpuplan.core.instance import Instance
from gpuplan.simulate.run import RunSpec, simulate


def racks(preemptible: bool) -> Instance:
    """racks_small.json without its CPU-only job, every job preemptible or none."""
    document: dict[str, Any] = json.loads((DATA / "racks_small.json").read_text())
    document["jobs"] = [dict(j, preemptible=preemptible) for j in document["jobs"]
                        if j.get("gpus", 1) > 0]
    return instance_from(document)


@pytest.mark.parametrize("scheduler", ["fifo", "sjf", "srtf", "las"])
def test_runs_keep_gangs_racks_and_node_resources(scheduler: str) -> None:
    """Every run log verifies: gangs on whole nodes, the rack gang in one rack, CPUs kept.

    If this broke, a simulated run would place jobs the planner's model forbids.
    """
    instance = racks(preemptible=scheduler in ("srtf", "las"))
    log = simulate(instance, RunSpec(scheduler=scheduler))
    assert log.verification is not None and log.verification.ok, log.verification
    for segment in log.segments:
        nodes = {g.split("/")[0] for g in segment.gpu_ids}
        assert len(nodes) == instance.gang_nodes[instance.job_index[segment.job]]
        if segment.job == "train-rack":
            assert nodes in ({"a1", "a2"}, {"b1", "b2"})


def test_first_fit_takes_the_first_nodes_of_a_rack() -> None:
    """A 2-node gang bound to a rack takes the first two nodes with room in one rack."""
    instance = instance_from({
        "topology": {"levels": ["rack"]},
        "gpu_types": [{"id": "G", "capacity": {"memory_gib": 80}}],
        "nodes": [{"id": n, "gpus": {"G": 4}, "topology": {"rack": r}}
                  for n, r in (("n0", "r0"), ("n1", "r1"), ("n2", "r1"))],
        "jobs": [{"id": "gang", "gpus": 8, "gpus_per_node": 4, "duration_s": 100,
                  "topology": {"required": "rack"}}],
        "objective": "weighted-completion",
    })
    for placement in ("first-fit", "best-fit"):
        log = simulate(instance, RunSpec(scheduler="fifo", placement=placement))
        (segment,) = log.segments
        assert {g.split("/")[0] for g in segment.gpu_ids} == {"n1", "n2"}


def test_cpu_only_jobs_are_refused_by_name() -> None:
    """The simulator runs jobs on GPUs: a CPU-only job is exit-2 input, named."""
    with pytest.raises(InputError, match=r"job 'preprocess' is CPU-only"):
        simulate(instance_from(json.loads((DATA / "racks_small.json").read_text())))
