"""Every method plans the cluster's own model (or refuses it, saying what it cannot plan).

``tests/data/racks_small.json``: four 8-GPU nodes in two racks with CPUs and memory,
multi-node gangs (one bound to a rack, one preferring one), jobs that draw CPUs, a
CPU-only job.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import DATA, instance_from

from gpuplan import InputError, ObjectiveKind, RunSettings, Status, plan, read_instance
from gpuplan.core.instance import Feature, Instance
from gpuplan.methods import METHODS

SETTINGS = RunSettings(time_limit_s=1, seed=0)


#: The jobs of racks_small.json that fit the fleet all at once (static objectives that
#: place every job): the rack gang, and small jobs whose CPUs fit beside it.
AT_ONCE = ("train-rack", "eval-1", "embed", "preprocess")


def racks(objective: ObjectiveKind, cpu_only: bool = True) -> Instance:
    """racks_small.json under ``objective``, with or without its CPU-only job.

    Under a static objective that places every job, only the jobs that fit at once; each
    job's profit is its GPU count.
    """
    document: dict[str, Any] = json.loads((DATA / "racks_small.json").read_text())
    document["objective"] = objective.value
    jobs = document["jobs"]
    if objective.is_static and not objective.allows_unplaced:
        jobs = [j for j in jobs if j["id"] in AT_ONCE]
    if not cpu_only:
        jobs = [j for j in jobs if j.get("gpus", 1) > 0]
    for job in jobs:
        job["profit"] = float(job.get("gpus", 1))
    document["jobs"] = jobs
    return instance_from(document)


CASES = [(name, objective) for name, method in METHODS.items()
         for objective in sorted(method.objectives, key=lambda k: k.value)
         if objective is not ObjectiveKind.MIN_MAX_LOAD]


@pytest.mark.parametrize(("name", "objective"), CASES,
                         ids=[f"{n}-{k.value}" for n, k in CASES])
def test_each_method_plans_the_racks_or_names_what_it_does_not_plan(
        name: str, objective: ObjectiveKind) -> None:
    """A verified plan where the method declares every feature the instance uses.

    Elsewhere exit 2 naming the first feature it does not plan, where the file sets it,
    and the methods that do: never a plan that breaks the cluster's shape.
    """
    instance = racks(objective)
    method = METHODS[name]
    missing = sorted(instance.features - method.features(objective))
    if missing:
        with pytest.raises(InputError) as refused:
            plan(instance, name, settings=SETTINGS)
        assert missing[0].value in refused.value.message
        assert f"which method {name!r} does not plan" in refused.value.message
        return
    schedule = plan(instance, name, settings=SETTINGS)
    assert schedule.verification is not None and schedule.verification.ok
    assert schedule.status.has_plan


def test_cp_proves_the_racks_optimum() -> None:
    """The whole-fleet gang and the rack gang cannot overlap: 1800 + 3600 s, proven.

    If this broke, cp's bound or its multi-node model would be wrong on a real cluster.
    """
    schedule = plan(racks(ObjectiveKind.MAKESPAN), "cp",
                    settings=RunSettings(time_limit_s=20, seed=0))
    assert schedule.status is Status.OPTIMAL
    assert schedule.objective == pytest.approx(5400.0)


def test_milp_places_the_most_jobs_at_once_within_cpus_and_racks() -> None:
    """max-weight: the rack gang and three small jobs fit at once (not eight 40-CPU pairs).

    The two 40-CPU jobs need two nodes, the 300 GiB job shares one of them; the whole-fleet
    and the second 16-GPU gang find no room. 4 is proven optimal.
    """
    schedule = plan(racks(ObjectiveKind.MAX_WEIGHT, cpu_only=False), "milp",
                    settings=RunSettings(time_limit_s=20, seed=0))
    assert schedule.status is Status.OPTIMAL and schedule.objective == pytest.approx(4.0)
    placed = {s.job: s for s in schedule.segments}
    assert {"eval-1", "eval-2", "embed"} <= set(placed)
    assert placed["eval-1"].node != placed["eval-2"].node


def test_sa_refuses_node_resources_for_static_objectives_only() -> None:
    """Static sa refuses node resources; over time it decodes keys by list scheduling.

    Its static block encoding prices GPU loads only, so max-weight with CPUs is refused,
    naming node resources and the methods that plan them, while makespan is planned.
    """
    static = racks(ObjectiveKind.MAX_WEIGHT, cpu_only=False)
    with pytest.raises(InputError) as refused:
        plan(static, "sa", settings=SETTINGS)
    assert "node resources" in refused.value.message
    assert "greedy, milp, lp" in refused.value.message
    timed = plan(racks(ObjectiveKind.MAKESPAN), "sa", settings=SETTINGS)
    assert timed.verification is not None and timed.verification.ok


def test_static_search_places_multi_node_gangs_in_one_rack() -> None:
    """The static search (sa, ga) keeps the rack-bound gang in one rack, whatever the order.

    The nodes are listed with the racks interleaved (a1, b1, a2, b2), as a fleet read from
    ``kubectl get nodes`` may be: the blocks the static search moves jobs between must
    still hold a rack's nodes together. Without node resources; every job placed.
    """
    document: dict[str, Any] = json.loads((DATA / "racks_small.json").read_text())
    nodes = {node["id"]: node for node in document["nodes"]}
    document["nodes"] = [nodes[n] for n in ("a1", "b1", "a2", "b2")]
    document["jobs"] = [dict(job, node_demand={}) for job in document["jobs"]
                        if job["id"] in AT_ONCE and job.get("gpus", 1) > 0]
    document["objective"] = ObjectiveKind.MIN_GPUS.value
    instance = instance_from(document)
    for name in ("sa", "ga"):
        schedule = plan(instance, name, settings=SETTINGS)
        assert schedule.verification is not None and schedule.verification.ok
        (rack,) = [s for s in schedule.segments if s.job == "train-rack"]
        assert {g[0] for g in rack.gpu_ids} in ({"a"}, {"b"}), name


def test_whole_gpus_are_never_shared_by_any_method() -> None:
    """Two small jobs on a one-GPU fleet held whole run one after the other, by every method.

    The issue's first complaint: a per-GPU demand that leaves out compute counted as 0 and
    jobs were stacked on one GPU. Declared sharing packs them.
    """
    document: dict[str, Any] = {
        "gpu_types": [{"id": "H100", "capacity": {"memory_gib": 80}}],
        "nodes": [{"id": "n", "gpus": {"H100": 1}}],
        "jobs": [{"id": "a", "demand": {"memory_gib": 10}, "duration_s": 100},
                 {"id": "b", "demand": {"memory_gib": 10}, "duration_s": 100}],
        "objective": "makespan",
    }
    for name, method in METHODS.items():
        if ObjectiveKind.MAKESPAN not in method.objectives:
            continue
        schedule = plan(instance_from(document), name, settings=SETTINGS)
        assert schedule.objective == pytest.approx(200.0), name
    document["gpu_types"][0]["sharing"] = True
    shared = plan(instance_from(document), "cp", settings=SETTINGS)
    assert shared.objective == pytest.approx(100.0)


def test_racks_small_reads_as_the_cluster_it_describes() -> None:
    """Features, gang shapes and domains as the file states them."""
    instance = read_instance(DATA / "racks_small.json")
    assert instance.features == frozenset({Feature.NODE_RESOURCES, Feature.CPU_ONLY,
                                           Feature.MULTI_NODE, Feature.TOPOLOGY})
    assert instance.gang_nodes.tolist() == [2, 4, 2, 1, 1, 1, 1]
    assert instance.domain_ids == (("r1", "r2"),)
    assert not instance.shared.any()
