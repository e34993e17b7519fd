"""The cluster as simulators hold it: holders, free GPUs per node and type, node room."""

from __future__ import annotations

from typing import Any

import numpy as np

from gpuplan.core.instance import Instance
from gpuplan.core.sim import DOWN, FREE, GpuCluster
from gpuplan.readers.instance_file import instance_from_data


def fleet(jobs: list[dict[str, Any]], *, room: bool = False, racks: bool = False) -> Instance:
    """Three 4-GPU nodes of type A (n0, n1 in rack r1; n2 in r2), optionally with 8 CPUs."""
    nodes: list[dict[str, Any]] = [{"id": f"n{k}", "gpus": {"A": 4}} for k in range(3)]
    for k, node in enumerate(nodes):
        if room:
            node["resources"] = {"cpus": 8}
        if racks:
            node["topology"] = {"rack": "r1" if k < 2 else "r2"}
    document: dict[str, Any] = {
        "name": "cluster", "gpu_types": [{"id": "A", "capacity": {"memory_gib": 16}}],
        "nodes": nodes, "objective": "makespan",
        "jobs": [{"id": f"j{k}", "duration_s": 10, **spec} for k, spec in enumerate(jobs)]}
    if racks:
        document["topology"] = {"levels": ["rack"]}
    return instance_from_data(document, "cluster.json")


def test_a_gang_goes_to_the_best_ranked_node_on_its_lowest_free_gpus() -> None:
    """Broken, best-fit would not fill the tightest node, or would skip its free GPUs."""
    cluster = GpuCluster(fleet([{"gpus": 2}, {"gpus": 1}, {"gpus": 4}]))
    cluster.hold(1, np.array([4]))          # n1 has 3 free
    np.testing.assert_array_equal(cluster.free[:, 0], [4, 3, 4])
    tightest = cluster.free[:, 0].astype(float)
    np.testing.assert_array_equal(cluster.gang(0, 0, tightest), [5, 6])
    np.testing.assert_array_equal(cluster.gang(2, 0, tightest), [0, 1, 2, 3])
    cluster.hold(2, np.array([0, 1, 2, 3]))
    cluster.hold(0, np.array([8, 9]))
    assert cluster.gang(2, 0, cluster.free[:, 0].astype(float)) is None
    assert cluster.owner[[0, 4, 8, 10]].tolist() == [2, 1, 0, FREE]
    cluster.give_back(2, np.array([0, 1, 2, 3]))
    np.testing.assert_array_equal(cluster.free[:, 0], [4, 3, 2])
    np.testing.assert_array_equal(cluster.free_gpus(2, 0), [10, 11])


def test_a_multi_node_gang_takes_its_share_on_each_node_within_one_rack() -> None:
    """Broken, a rack-bound gang of 8 could be split over racks or uneven nodes."""
    instance = fleet([{"gpus": 8, "gpus_per_node": 4, "topology": {"required": "rack"}},
                      {"gpus": 1}], racks=True)
    cluster = GpuCluster(instance)
    rank = np.array([2.0, 1.0, 0.0])        # n2 ranks best, but r2 has one node only
    np.testing.assert_array_equal(np.sort(cluster.gang(0, 0, rank)), np.arange(8))
    cluster.hold(1, np.array([0]))
    assert cluster.gang(0, 0, rank) is None
    cluster.hold(0, np.arange(4, 12))       # the engine checks shapes; the cluster counts
    np.testing.assert_array_equal(cluster.free[:, 0], [3, 0, 0])


def test_node_room_decides_where_a_job_fits() -> None:
    """Broken, two 6-CPU jobs would share an 8-CPU node that has free GPUs."""
    cluster = GpuCluster(fleet([{"gpus": 1, "node_demand": {"cpus": 6}}] * 2, room=True))
    assert cluster.room is not None
    first = cluster.gang(0, 0, np.zeros(3))
    np.testing.assert_array_equal(first, [0])
    cluster.hold(0, np.array([0]))
    assert cluster.room[:, 0].tolist() == [2.0, 8.0, 8.0]
    assert not cluster.fits(1, np.array([1]))
    np.testing.assert_array_equal(cluster.gang(1, 0, np.zeros(3)), [4])
    cluster.give_back(0, np.array([0]))
    assert cluster.fits(1, np.array([1]))


def test_gpus_that_fail_are_held_by_no_one_until_they_are_up() -> None:
    """Broken, a placement would start a job on a GPU that is down."""
    cluster = GpuCluster(fleet([{"gpus": 1}]))
    cluster.hold(0, np.array([0]))
    cluster.down(np.arange(4))              # the holder's GPU stays its until stopped
    assert cluster.owner[:4].tolist() == [0, DOWN, DOWN, DOWN]
    assert cluster.free[0, 0] == 0
    cluster.give_back(0, np.array([0]))
    cluster.down(np.array([0]))
    cluster.up(np.arange(4))
    assert cluster.owner[:4].tolist() == [FREE] * 4
    assert cluster.free[0, 0] == 4
