"""The left shift: every job as early as its plan's order allows, never later."""

from __future__ import annotations

import dataclasses

import numpy as np

from gpuplan import read_instance
from gpuplan.core.instance import Outage
from gpuplan.core.schedule import Schedule
from gpuplan.core.settings import RunSettings
from gpuplan.parts.left_shift import left_shift
from gpuplan.planning import plan
from gpuplan.verify import verify_schedule
from tests.conftest import DATA


def _delayed(schedule: Schedule, by: float) -> Schedule:
    return schedule.model_copy(update={"segments": [
        s.model_copy(update={"start_s": s.start_s + by, "end_s": s.end_s + by})
        for s in schedule.segments]})


def test_a_plan_started_late_is_pulled_back_with_its_gpus_and_order() -> None:
    """A plan delayed by 100 s comes back to its own times: same GPUs, same order."""
    instance = read_instance(DATA / "live" / "tiny.json")
    planned = plan(instance, "greedy", settings=RunSettings())
    shifted = left_shift(instance, _delayed(planned, 100.0))
    assert verify_schedule(instance, shifted).ok
    before = {s.job: s for s in planned.segments}
    for s in shifted.segments:
        assert s.gpu_ids == before[s.job].gpu_ids
        assert s.start_s <= before[s.job].start_s + 1e-9


def test_an_outage_holds_a_job_back_and_nothing_starts_later_than_planned() -> None:
    """GPUs held until 50 s keep their jobs after 50 s; no job is pushed later."""
    instance = read_instance(DATA / "live" / "tiny.json")
    gpus = np.flatnonzero(instance.gpu_node == instance.node_index["a100-1"])
    held = dataclasses.replace(instance, outages=(Outage(gpus, 0.0, 50.0, "held"),))
    planned = plan(held, "greedy", settings=RunSettings())
    shifted = left_shift(held, _delayed(planned, 30.0))
    assert verify_schedule(held, shifted).ok
    late = {s.job: s for s in _delayed(planned, 30.0).segments}
    for s in shifted.segments:
        assert s.start_s <= late[s.job].start_s + 1e-9
        if any(g.startswith("a100-1/") for g in s.gpu_ids):
            assert s.start_s >= 50.0 - 1e-9
