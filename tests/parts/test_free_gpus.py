"""List scheduling's view of the fleet: node resources over time, gangs across nodes, racks."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import DATA, instance_from

from gpuplan import read_instance, verify_schedule
from gpuplan.core.schedule import Schedule
from gpuplan.parts.construct import list_schedule
from gpuplan.parts.free_gpus import FreeGpus, Slot, StepUsage


def test_node_usage_finds_the_first_time_a_draw_fits() -> None:
    """A draw waits for the step that makes room, for its whole length."""
    usage = StepUsage(np.array([[10.0]]))
    usage.add(0, 0.0, 100.0, np.array([6.0]))
    usage.add(0, 150.0, 200.0, np.array([8.0]))
    assert usage.earliest(0, 0.0, 50.0, np.array([4.0])) == 0.0
    assert usage.earliest(0, 0.0, 50.0, np.array([5.0])) == 100.0
    # 100-150 is too short for 60 s of 5 (8 comes back at 150): after 200.
    assert usage.earliest(0, 0.0, 60.0, np.array([5.0])) == 200.0
    assert usage.earliest(0, 0.0, 1.0, np.array([11.0])) == np.inf


def planned(instance: Any) -> Schedule:
    """List scheduling's plan, verified."""
    result = list_schedule(instance)
    schedule = Schedule.from_result(instance, result, "greedy", 0.0, 0)
    verification = verify_schedule(instance, schedule)
    assert verification.ok, verification.violations
    return schedule


def test_list_scheduling_plans_the_racks_instance() -> None:
    """Gangs across nodes, a rack-bound gang in one rack, node CPUs kept: a verified plan.

    If this broke, greedy (and sa, ga, cp's start) could not plan a real cluster's batch.
    """
    instance = read_instance(DATA / "racks_small.json")
    schedule = planned(instance)
    by_job = {s.job: s for s in schedule.segments}
    rack = {g.split("/")[0] for g in by_job["train-rack"].gpu_ids}
    assert rack in ({"a1", "a2"}, {"b1", "b2"})
    assert len({g.split("/")[0] for g in by_job["train-fleet"].gpu_ids}) == 4
    assert by_job["preprocess"].gpu_ids == []


def fleet(racks: int, nodes: int, gpus: int, jobs: list[dict[str, Any]]) -> Any:
    """``racks`` racks of ``nodes`` nodes of ``gpus`` GPUs of type G (makespan)."""
    return instance_from({
        "topology": {"levels": ["rack"]},
        "gpu_types": [{"id": "G", "capacity": {"memory_gib": 80}}],
        "nodes": [{"id": f"r{r}n{n}", "gpus": {"G": gpus}, "topology": {"rack": f"r{r}"}}
                  for r in range(racks) for n in range(nodes)],
        "jobs": jobs,
        "objective": "makespan",
    })


def test_small_jobs_fill_the_fullest_rack_first() -> None:
    """Among equally early slots, a job takes the rack (then node) with the fewest free GPUs.

    Six 1-GPU jobs on two racks of two 4-GPU nodes touch one rack, leaving the other whole
    for the 8-GPU gang that arrives later.
    """
    jobs = [{"id": f"s{k}", "duration_s": 1000} for k in range(6)]
    jobs.append({"id": "gang", "gpus": 8, "gpus_per_node": 4, "duration_s": 500,
                 "release_s": 10, "topology": {"required": "rack"}})
    schedule = planned(fleet(2, 2, 4, jobs))
    by_job = {s.job: s for s in schedule.segments}
    small_racks = {by_job[f"s{k}"].node[:2] for k in range(6)}
    assert len(small_racks) == 1
    assert by_job["gang"].start_s == 10.0
    assert {g[:2] for g in by_job["gang"].gpu_ids} != small_racks


def test_a_gang_that_prefers_a_rack_spreads_when_that_is_sooner() -> None:
    """Spread over racks it runs 1.2 times longer; that beats waiting 2000 s for a rack.

    One node of each rack is held until 2000 s: the gang starts at once on the two free
    nodes and ends at 1200 s, rather than at 3000 s within a rack.
    """
    jobs = [{"id": "hold-r0", "gpus": 4, "duration_s": 2000},
            {"id": "hold-r1", "gpus": 4, "duration_s": 2000},
            {"id": "gang", "gpus": 8, "gpus_per_node": 4, "duration_s": 1000,
             "topology": {"preferred": "rack", "spread_slowdown": 1.2}}]
    instance = fleet(2, 2, 4, jobs)
    free = FreeGpus(instance)
    for j, node in ((0, "r0n0"), (1, "r1n0")):
        gpus = np.array([instance.gpu_index[f"{node}/{k}"] for k in range(4)])
        free.take(j, Slot(0.0, 2000.0, 0, gpus, instance.node_index[node]))
    slot = free.earliest(2, 0, 0.0)
    assert slot is not None and slot.start == 0.0 and slot.end == pytest.approx(1200.0)
    assert {instance.gpu_ids[g][:4] for g in slot.gpus} == {"r0n1", "r1n1"}
    # Within a rack (no slowdown) it would wait for a held node: not chosen.
    compact = free._slot(2, 0, 0.0, 1000.0, 0)
    assert compact is not None and compact.end == pytest.approx(3000.0)


def test_a_kept_gang_keeps_its_nodes() -> None:
    """A previous multi-node slot is kept where its GPUs are free by its previous start."""
    instance = read_instance(DATA / "racks_small.json")
    fleet_gpus = FreeGpus(instance)
    gpus = np.array([instance.gpu_index[f"b{n}/{k}"] for n in (1, 2) for k in range(8)])
    train = instance.job_index["train-rack"]
    slot = fleet_gpus.kept(train, gpus, 100.0, 0.0)
    assert slot is not None and slot.start == 100.0 and slot.end == 3700.0
    assert slot.node == instance.node_index["b1"]


def test_a_gang_waits_out_any_number_of_alternating_bookings() -> None:
    """Two nodes busy in turns (100 bookings): the 2-node gang starts when both are free.

    Each later start found on one node is busy on the other; the search keeps moving the
    start until both are free at once, at 1,000 s. If this broke, greedy would leave a job
    out saying no node has room for it.
    """
    instance = instance_from({
        "gpu_types": [{"id": "H100", "capacity": {"memory_gib": 80}}],
        "nodes": [{"id": n, "gpus": {"H100": 8}, "resources": {"cpus": 64}} for n in "ab"],
        "jobs": [{"id": "gang", "gpus": 16, "gpus_per_node": 8, "duration_s": 5,
                  "node_demand": {"cpus": 64}}],
        "objective": "makespan"})
    fleet = FreeGpus(instance)
    assert fleet.usage is not None
    for w in range(100):
        fleet.usage.add(w % 2, 10.0 * w, 10.0 * w + 10.0, np.array([64.0]))
    slot = fleet.earliest(0, 0, 0.0)
    assert slot is not None and slot.start == 1000.0 and slot.gpus.size == 16
