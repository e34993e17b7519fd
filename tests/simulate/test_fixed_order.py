"""The engine's own decisions for fifo and sjf start exactly what the schedulers' would.

A scheduler that offers GPUs in a fixed order and never preempts lets the engine decide
itself, by job shape, in time that does not grow with the queue
(``Scheduler.decides_in_fixed_order``). The same scheduler deciding through its
``decide`` (the flag off) must give the very same run, to the last bit: on multi-GPU
Gavel workloads near saturation, with failures (jobs stopped, GPUs down and back), on
multi-node gangs in racks with node resources, in event and round mode.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from conftest import DATA

from gpuplan.core.instance import Instance
from gpuplan.core.result import Result
from gpuplan.readers.gavel import read_throughputs
from gpuplan.readers.generate import gavel_document
from gpuplan.readers.instance_file import instance_from_data
from gpuplan.simulate.engine import Engine, Failures, SimulationConfig
from gpuplan.simulate.policies import build_parts
from gpuplan.simulate.policies.fifo import Fifo
from gpuplan.simulate.policies.sjf import ShortestJobFirst
from gpuplan.simulate.policy import Mode, PolicyContext

THROUGHPUTS = DATA / "benchmarks" / "gpu-traces" / "gavel" / "simulation_throughputs.json"


def workloads() -> dict[str, Instance]:
    """Small workloads that exercise every path: gangs, types, node room, racks."""
    rates = read_throughputs(Path(THROUGHPUTS))
    found = {
        "gavel-multi": gavel_document(rates, {"v100": 16, "p100": 16, "k80": 16}, 300, 6.0,
                                      seed=3, multi_gpu=True, gpus_per_node=8),
        "gavel-single": gavel_document(rates, {"v100": 8, "p100": 8, "k80": 8}, 200, 3.0,
                                       seed=4),
    }
    racks: dict[str, Any] = json.loads((DATA / "racks_small.json").read_text())
    racks["jobs"] = [dict(job, release_s=50.0 * k) for k, job in
                     enumerate(j for j in racks["jobs"] if j.get("gpus", 1) > 0)] * 1
    found["racks"] = racks
    return {name: instance_from_data(doc, name).online() for name, doc in found.items()}


def run(instance: Instance, scheduler: type[Fifo], config: SimulationConfig,
        failures: Failures | None) -> Result:
    """One run of the engine under ``scheduler`` with best-fit placement."""
    context = PolicyContext(instance, config.mode, config.round_s, 0,
                            restart_overhead_s=config.restart_overhead_s)
    _, placement, admission = build_parts(
        {"scheduler": "fifo", "placement": "best-fit", "admission": "all"}, {}, context)
    return Engine(instance, config, scheduler(context), placement, admission,
                  failures=failures).run()


@pytest.mark.parametrize("base", [Fifo, ShortestJobFirst], ids=["fifo", "sjf"])
@pytest.mark.parametrize("mode", [Mode.EVENT, Mode.ROUND], ids=["event", "round"])
def test_the_engines_decisions_are_the_schedulers(base: type[Fifo], mode: Mode) -> None:
    """Every segment (job, GPUs, start, end, work) the same with and without the flag.

    If this broke, fifo and sjf runs would change with the engine's shortcut: a
    published reproduction or a user's run would no longer be what the policy says.
    """

    class Deciding(base):  # type: ignore[valid-type, misc]
        decides_in_fixed_order: ClassVar[bool] = False

    config = SimulationConfig(mode=mode, round_s=360.0)
    for name, instance in workloads().items():
        for failures in (None, Failures(per_day=30.0, down_s=1800.0, checkpoint_s=600.0,
                                        seed=2)):
            if failures is not None and mode is Mode.ROUND:
                continue
            fast = run(instance, base, config, failures)
            slow = run(instance, Deciding, config, failures)
            label = f"{name}, failures {failures is not None}"
            assert fast.n_segments == slow.n_segments, label
            for column in ("job", "gpu_type", "start", "end", "work", "restore_s",
                           "migrate_s"):
                assert np.array_equal(getattr(fast, column), getattr(slow, column)), (
                    label, column)
            assert all(np.array_equal(a, b) for a, b in zip(fast.gpus, slow.gpus,
                                                            strict=True)), label
