"""A run held as its columns (``simulate_run``): verified, written and read as the document."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

import numpy as np
from conftest import instance_from

from gpuplan.core.instance import Instance
from gpuplan.core.schedule import ResultSchedule, Schedule
from gpuplan.simulate import RunSpec, SimulationConfig, simulate_run
from gpuplan.verify import verify_schedule


def gangs() -> Instance:
    """Twelve gangs of 1-3 GPUs over nodes of 3 and 4 GPUs, arriving within 40 s."""
    return instance_from({
        "name": "gangs",
        "gpu_types": [{"id": "A", "capacity": {"memory_gib": 16}}],
        "nodes": [{"id": "n1", "gpus": {"A": 3}}, {"id": "n2", "gpus": {"A": 4}}],
        "jobs": [{"id": f"j{k}", "gpus": 1 + k % 3, "demand": {"memory_gib": 1},
                  "duration_s": {"A": 200.0 + 50 * (k % 4)}, "release_s": 10.0 * (k % 5),
                  "preemptible": True} for k in range(12)],
        "objective": "weighted-completion",
    })


def las_run() -> tuple[ResultSchedule, Schedule]:
    """The run as columns and as the whole document.

    LAS with low thresholds preempts and moves the gangs, so the log has every kind of
    segment and event.
    """
    log = simulate_run(gangs(), RunSpec(
        scheduler="las", options={"thresholds": [0.01, 0.05]},
        config=SimulationConfig(restart_overhead_s=5.0, migration_overhead_s=7.0)))
    return log, log.schedule()


def test_a_streamed_log_is_the_document_byte_for_byte(tmp_path: Path) -> None:
    """What ``write`` streams is what the whole document writes, and reads back equal.

    Broken, a run log written a segment at a time would differ from the plan gpuplan
    verified, or would not read back.
    """
    log, whole = las_run()
    assert sum(s.migrated_from is not None for s in whole.segments) > 5
    digests: list[bytes] = []
    log.write(tmp_path / "run.json", digests.append)
    written = (tmp_path / "run.json").read_bytes()
    assert written.decode() == whole.to_json()
    assert digests == [hashlib.sha256(written).digest()]
    assert Schedule.read(tmp_path / "run.json") == whole


def test_the_verifier_says_the_same_of_the_columns_and_of_the_document() -> None:
    """A broken segment is reported alike whether the run is read as columns or as a file.

    Broken, the simulator's own check of a long run would be weaker than gpuplan check's
    check of the file it writes.
    """
    log, _ = las_run()
    end = log.result.end.copy()
    end[3] += 40.0
    broken = ResultSchedule(log.head, log.instance, dataclasses.replace(log.result, end=end))
    as_columns = verify_schedule(log.instance, broken)
    as_document = verify_schedule(log.instance, broken.schedule())
    assert not as_columns.ok and as_columns == as_document
    assert verify_schedule(log.instance, log) == log.verification
    assert np.array_equal(log.result.end, las_run()[0].result.end)
