"""Every registered scheduler x placement x mode, on seeded random workloads.

The contract of a simulator part, whatever it is: its run log verifies, the same seed gives
the same run, and an option it does not take is refused (exit 2 from the command line)
before anything runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import Gpuplan, instance_from

from gpuplan.core.errors import InputError
from gpuplan.core.instance import Instance
from gpuplan.core.options import option_fields
from gpuplan.core.settings import RunSettings
from gpuplan.readers.generate import generate_document
from gpuplan.simulate import Mode, RunSpec, SimulationConfig, simulate
from gpuplan.simulate.policies import PLACEMENTS, SCHEDULERS, option_takers

SEEDS = (0, 1)
RUNS = [(scheduler, placement, mode) for scheduler, cls in SCHEDULERS.items()
        for placement in PLACEMENTS for mode in sorted(cls.modes)]


def workload(seed: int) -> Instance:
    """A small seeded batch of preemptible gangs, three types on three nodes, over an hour."""
    document = generate_document(jobs=12, nodes=3, seed=seed, gpus_per_node=4,
                                 arrival_window_s=3600.0, objective="weighted-completion")
    # Preemptible, so that the preemptive parts preempt, resume and move.
    for job in document["jobs"]:
        job["preemptible"] = True
    return instance_from(document)


def spec(scheduler: str, placement: str, mode: Mode, seed: int) -> RunSpec:
    """A run with overheads (so preemptions and moves cost), a solver limit, a seed."""
    return RunSpec(scheduler=scheduler, placement=placement,
                   config=SimulationConfig(mode=mode, round_s=600.0, restart_overhead_s=20.0,
                                           migration_overhead_s=10.0),
                   seed=seed, settings=RunSettings(time_limit_s=5.0, threads=1))


def comparable(text: str) -> dict[str, object]:
    """A run log without what varies between two runs of the same seed: the wall times."""
    document: dict[str, Any] = json.loads(text)
    document.pop("wall_time_s", None)
    document["run"].pop("solver_s", None)
    return document


@pytest.mark.parametrize(("scheduler", "placement", "mode"), RUNS)
def test_every_part_runs_verify_and_repeat_for_the_same_seed(
        scheduler: str, placement: str, mode: Mode) -> None:
    """The run log verifies on every workload, and a second run with its seed is the same."""
    for seed in SEEDS:
        instance = workload(seed)
        first = simulate(instance, spec(scheduler, placement, mode, seed))
        assert first.verification is not None and first.verification.ok
        assert first.run is not None and first.run.metrics["jobs"] == instance.n_jobs
        again = simulate(instance, spec(scheduler, placement, mode, seed))
        assert comparable(again.to_json()) == comparable(first.to_json())


def _option_not_taken(scheduler: str) -> str:
    """A flag of some registered part that ``scheduler`` does not take."""
    own = {f.metadata["flag"] for f in option_fields(SCHEDULERS[scheduler].options_type)}
    return next(flag for flag in option_takers() if flag not in own)


@pytest.mark.parametrize("scheduler", sorted(SCHEDULERS))
def test_an_option_the_part_does_not_take_is_refused(scheduler: str, gpuplan: Gpuplan,
                                                       tmp_path: Path) -> None:
    """An input error naming the setting (API), exit 2 naming the flag (command line)."""
    flag = _option_not_taken(scheduler)
    name = option_takers()[flag][0].name
    given = {name: "1"}
    mode = min(SCHEDULERS[scheduler].modes)
    with pytest.raises(InputError, match=f"`{name}`"):
        simulate(workload(0), RunSpec(scheduler=scheduler, options=given,
                                      config=SimulationConfig(mode=mode)))
    path = tmp_path / "w.json"
    path.write_text(json.dumps(generate_document(jobs=4, nodes=1, seed=0, gpus_per_node=4)))
    out = tmp_path / "run.json"
    refused = gpuplan("simulate", path, "--policy", scheduler, "--mode", mode.value, flag, "1",
                      "-o", out)
    assert refused.code == 2
    assert flag in refused.err and "Traceback" not in refused.err
    assert not out.exists()
