"""Re-seating single-GPU jobs in the fullest racks keeps every time and fills few racks."""

from __future__ import annotations

import dataclasses

import numpy as np
from conftest import INSTANCES, instance_from

from gpuplan import Schedule, read_instance, verify_schedule
from gpuplan.core.instance import Outage
from gpuplan.core.result import Result
from gpuplan.parts.compact import compact
from gpuplan.parts.construct import list_schedule


def test_compaction_fills_the_fewest_racks_and_keeps_the_plan() -> None:
    """On the NVL72 scenario: 21 racks, the least that hold 1,500 jobs running together.

    List scheduling alone touches 22 (an earlier job finds a rack full of GPUs promised to
    later ones); after compaction every start, end and the gang's GPUs are unchanged and
    the plan verifies. If this broke, small jobs would scatter over the racks large gangs
    need whole.
    """
    instance = read_instance(INSTANCES / "scenarios" / "nvl72-racks.json")
    listed = list_schedule(instance)
    packed = compact(instance, listed)
    assert np.array_equal(packed.start, listed.start) and np.array_equal(packed.end, listed.end)
    gang = instance.job_index["pretrain-64"]
    k = int(np.flatnonzero(listed.job == gang)[0])
    assert np.array_equal(packed.gpus[k], listed.gpus[k])

    def racks(result: Result) -> int:
        single = [g[0] for g, j in zip(result.gpus, result.job, strict=True) if j != gang]
        return int(np.unique(instance.node_domain[instance.gpu_node[single], 0]).size)

    assert racks(listed) > racks(packed) == 21
    schedule = Schedule.from_result(instance, packed, "greedy", 0.0, 0)
    assert verify_schedule(instance, schedule).ok


def test_without_topology_nothing_moves() -> None:
    """An instance without topology levels keeps its plan as list scheduling made it."""
    instance = read_instance(INSTANCES / "quickstart.json")
    listed = list_schedule(instance)
    assert compact(instance, listed) is listed


def test_a_job_is_never_re_seated_on_a_gpu_that_is_down() -> None:
    """A GPU held by an outage (a failure, a re-plan's running work) takes no re-seated job.

    Rack r1's second GPU is down for the first 500 s: the fuller rack r1 would otherwise
    take the short job beside the long one. If this broke, greedy would plan a job on a
    failed GPU and its re-plans would fail verification.
    """
    data = {"topology": {"levels": ["rack"]},
            "gpu_types": [{"id": "H100", "capacity": {"memory_gib": 80}}],
            "nodes": [{"id": n, "gpus": {"H100": 2}, "topology": {"rack": r}}
                      for n, r in (("a1", "r1"), ("b1", "r2"))],
            "jobs": [{"id": "long", "gpus": 1, "duration_s": 1000},
                     {"id": "short", "gpus": 1, "duration_s": 100},
                     {"id": "late", "gpus": 1, "duration_s": 50, "release_s": 5000}],
            "objective": "makespan"}
    instance = dataclasses.replace(instance_from(data), outages=(
        Outage(np.array([1]), 0.0, 500.0, "a1/1 is down"),))
    packed = compact(instance, list_schedule(instance))
    short = int(np.flatnonzero(packed.job == instance.job_index["short"])[0])
    assert packed.gpus[short].tolist() != [1]
    schedule = Schedule.from_result(instance, packed, "greedy", 0.0, 0)
    assert verify_schedule(instance, schedule).ok
