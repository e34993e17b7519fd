"""A record of what ran, for an elastic job: it took longer, so it did more work than planned."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import instance_from

from gpuplan.core.schedule import Schedule, Segment
from gpuplan.core.status import Status
from gpuplan.hybrid.residual import as_ran, verify_previous


def document() -> dict[str, Any]:
    """An elastic job of 1000 iterations at 1 it/s per GPU (10 s to start) asking for 4 GPUs."""
    return {"name": "ran", "gpu_types": [{"id": "A100", "capacity": {"memory_gib": 80}}],
            "nodes": [{"id": "n0", "gpus": {"A100": 8}}],
            "jobs": [{"id": "a", "gpus": 4, "elastic": {
                "gpus": [1, 2, 4, 8], "work": 1000, "rescale_s": 10,
                "speed": {"A100": {"1": 1.0, "2": 2.0, "4": 4.0, "8": 8.0}}}}],
            "objective": "makespan"}


def test_an_elastic_job_that_ran_long_did_more_iterations() -> None:
    """Done in 320 s on 4 GPUs where 260 s were planned: its work becomes 4 x 310 = 1240.

    The record then verifies against the instance as it ran.
    """
    record = Schedule(
        instance="ran", objective_kind="makespan", status=Status.FEASIBLE, objective=None,
        bound=None, gap=None, method="sacct", solver="sacct", wall_time_s=0.0, seed=0,
        gpuplan_version="test", unplaced=[], segments=[Segment(
            job="a", node="n0", gpu_type="A100", gpu_ids=[f"n0/{k}" for k in range(4)],
            start_s=0.0, end_s=320.0, restore_s=10.0)])
    ran, took = as_ran(document(), "ran.json", record, 1000.0)
    assert took == {"a": pytest.approx(1.24)}
    assert ran["jobs"][0]["elastic"]["work"] == pytest.approx(1240.0)
    assert document()["jobs"][0]["elastic"]["work"] == 1000
    assert verify_previous(instance_from(ran), record).ok
