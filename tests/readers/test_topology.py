"""Reading the cluster's shape: how GPUs are held, gangs over nodes, topology domains."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import DATA, INSTANCES, instance_from, run_cli

from gpuplan import RunSettings, plan, read_instance
from gpuplan.core.instance import WHOLE_GPU


def document(**fields: Any) -> dict[str, Any]:
    """Two blocks of two racks of one 4-GPU node each; one job."""
    nodes = [{"id": f"b{b}r{r}", "gpus": {"G": 4},
              "topology": {"block": f"b{b}", "rack": f"r{r}"}} for b in (1, 2) for r in (1, 2)]
    return {"topology": {"levels": ["block", "rack"]},
            "gpu_types": [{"id": "G", "capacity": {"memory_gib": 80}}],
            "nodes": nodes,
            "jobs": [{"id": "j", "gpus": 8, "gpus_per_node": 4, "duration_s": 10,
                      "topology": {"required": "block"}}],
            "objective": "makespan", **fields}


def test_a_domain_is_named_by_its_labels_down_from_the_widest() -> None:
    """Rack r1 of block b1 and rack r1 of block b2 are two racks (as Kueue's domains are)."""
    instance = instance_from(document())
    assert instance.levels == ("block", "rack")
    assert instance.domain_ids == (("b1", "b2"), ("b1/r1", "b1/r2", "b2/r1", "b2/r2"))
    assert instance.node_domain.tolist() == [[0, 0], [0, 1], [1, 2], [1, 3]]
    assert instance.eligible.all()


def test_gpus_are_held_whole_unless_a_type_shares() -> None:
    """Whole GPUs add the packing column; a shared fleet packs by its declared resources.

    If this broke, methods would stack jobs on GPUs nobody declared shareable.
    """
    whole = read_instance(INSTANCES / "quickstart.json")
    assert not whole.shared.any()
    assert whole.packing_resources == ("memory_gib", WHOLE_GPU)
    assert (whole.packing_demand[:, :, -1] == 1).all()
    shared = read_instance(DATA / "valid_small.json")
    assert shared.shared.all() and shared.packing_resources == shared.resources


def test_a_preferred_level_needs_labels_too(tmp_path: Path) -> None:
    """A job that prefers a level needs it on every node it may use (exit 2 otherwise)."""
    doc = document()
    doc["jobs"][0]["topology"] = {"preferred": "rack", "spread_slowdown": 1.1}
    doc["nodes"][3]["topology"] = {"block": "b2"}
    path = tmp_path / "topology.json"
    path.write_text(json.dumps(doc))
    result = run_cli("validate", path)
    assert result.returncode == 2
    assert "jobs[0].topology.preferred" in result.stderr and "b2r2" in result.stderr


def test_validate_says_how_gpus_are_held_and_the_cluster_shape() -> None:
    """``validate`` names the GPU mode, node resources, multi-node gangs and the topology."""
    result = run_cli("validate", DATA / "racks_small.json", DATA / "valid_small.json")
    assert result.returncode == 0, result.stderr
    first, second = result.stderr.strip().splitlines()
    assert ("GPUs held whole; node resources cpus, memory_gib; 3 multi-node gangs (up to 4 "
            "nodes); topology rack (2 racks)") in first
    assert "GPUs shared (jobs pack by memory_gib, compute)" in second



def test_a_labelled_fleet_whose_jobs_ask_nothing_of_it_plans_with_every_method() -> None:
    """An imported fleet with racks, and jobs with no topology request, plans and verifies.

    This is what ``import slurm --topology`` gives for jobs that name no level; every
    method and the verifier read the jobs' (absent) requests by job.
    """
    data = document()
    data["jobs"] = [{"id": "one", "gpus": 1, "duration_s": 10},
                    {"id": "wide", "gpus": 8, "gpus_per_node": 4, "duration_s": 10}]
    instance = instance_from(data)
    assert instance.required_level.tolist() == [-1, -1]
    assert instance.spread_slowdown.tolist() == [1.0, 1.0]
    for method in ("greedy", "cp", "sa", "ga"):
        schedule = plan(instance, method, settings=RunSettings(time_limit_s=1, seed=0))
        assert schedule.verification is not None and schedule.verification.ok, method
