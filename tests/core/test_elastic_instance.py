"""What an Instance says of its elastic jobs: run time per count, and work left in a residual."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import instance_from

from gpuplan.core.schedule import RunRecord


def fleet(jobs: list[dict[str, Any]]) -> dict[str, Any]:
    """Two nodes of 4 G GPUs and the jobs, objective makespan."""
    return {"gpu_types": [{"id": "G", "capacity": {"compute": 1.0}}],
            "nodes": [{"id": "a", "gpus": {"G": 4}}, {"id": "b", "gpus": {"G": 4}}],
            "jobs": jobs, "objective": "makespan"}


ELASTIC = {"id": "e", "gpus": 2, "preemptible": True,
           "elastic": {"gpus": [1, 2, 4, 8], "work": 800, "rescale_s": 20,
                       "speed": {"G": {"1": 1.0, "2": 2.0, "4": 4.0, "8": 5.0}}}}
RIGID = {"id": "r", "gpus": 1, "duration_s": 50}


def test_run_time_and_whole_time_per_count() -> None:
    """On 8 GPUs (two whole nodes) at 5 it/s the 800 iterations take 160 s, 180 s with the start.

    A rigid job takes its duration whatever the count; a count the elastic job has no
    speed for takes for ever.
    """
    instance = instance_from(fleet([ELASTIC, RIGID]))
    run = instance.run_seconds(np.array([0, 0, 1]), np.zeros(3, dtype=np.int64),
                               np.array([8, 3, 1]))
    assert run.tolist() == [160.0, np.inf, 50.0]
    assert instance.whole_seconds(0, 0, 8) == 180.0
    assert instance.whole_seconds(1, 0, 1) == 50.0
    assert instance.piece_nodes(0, 8) == 2 and instance.piece_speed(0, 0, 8) == 5.0
    assert instance.piece_speed(1, 0, 1) == 0.0


def test_a_run_met_slower_scales_an_elastic_job_by_its_speed() -> None:
    """A run whose jobs took twice their estimate: the elastic job's speeds halve, its work stays.

    Its duration at 2 GPUs becomes 20 + 2 x 400 s (the overhead is not slowed).
    """
    instance = instance_from(fleet([ELASTIC, RIGID]))
    record = RunRecord(scheduler="fifo", placement="first-fit", admission="all", mode="event",
                       round_s=None, restart_overhead_s=0.0, migration_overhead_s=0.0,
                       window=[0, 2], metrics={}, utilisation_by_type={},
                       duration_scale=[2.0, 2.0])
    actual = record.actual(instance)
    assert actual.speed[0, 0].tolist() == [0.5, 1.0, 2.0, 2.5]
    assert actual.work[0] == 800.0
    assert actual.duration[:, 0].tolist() == pytest.approx([820.0, 100.0])
