"""Re-seating single-GPU jobs in the fullest racks keeps every time and fills few racks."""

from __future__ import annotations

import numpy as np
from conftest import INSTANCES

from gpuplan import Schedule, read_instance, verify_schedule
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
