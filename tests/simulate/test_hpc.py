"""The HPC protocol: RLScheduler's machine, sequences and metrics, each run verified."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import BENCHMARKS

from gpuplan.core.errors import InputError, VerificationError
from gpuplan.readers.swf import read_swf
from gpuplan.simulate.hpc import (
    QUEUE_POLICIES,
    HpcSimulator,
    HpcWorkload,
    Protocol,
    legacy_gym_rng,
    play,
    run_protocol,
    sequence_instance,
    verified_sequence,
)

LUBLIN = BENCHMARKS / "hpc-traces" / "lublin_256.swf.gz"

#: RLScheduler's published mean bounded slowdown and utilization on Lublin-1
#: (DIR-LAB/deep-batch-scheduler @ cd433e3, README): (policy, backfill) -> (bsld, util).
#: (scripts/bench_rl.py --part reproduce checks all 40 of the four traces.)
PUBLISHED = {
    ("fifo", False): (7273.77, 0.657), ("sjf", False): (277.35, 0.762),
    ("f1", False): (258.37, 0.816), ("wfp3", True): (133.87, 0.864),
    ("sjf", True): (73.31, 0.778), ("f1", True): (75.07, 0.840),
}


@pytest.fixture(scope="module")
def lublin() -> HpcWorkload:
    """Lublin-1 as RLScheduler reads it."""
    return HpcWorkload.from_trace(read_swf(LUBLIN))


def test_legacy_seeding_draws_rlschedulers_sequences(lublin: HpcWorkload) -> None:
    """Seed 1 gives the start indices RLScheduler's evaluation used (gym's old hashing)."""
    assert Protocol().starts(lublin) == [1981, 2756, 4299, 8850, 3316, 2714, 5228, 7762,
                                         4022, 7085]
    assert legacy_gym_rng(1).randint(10) == legacy_gym_rng(1).randint(10)


@pytest.mark.parametrize(("policy", "backfill"), list(PUBLISHED))
def test_reproduces_rlscheduler_published_table(lublin: HpcWorkload, policy: str,
                                                backfill: bool) -> None:
    """Every heuristic, with and without backfilling, gives RLScheduler's published means."""
    report = run_protocol(lublin, Protocol(backfill=backfill), QUEUE_POLICIES[policy])
    bsld, util = PUBLISHED[policy, backfill]
    assert round(report.bounded_slowdown, 2) == bsld
    assert round(report.utilization, 3) == util
    assert len(report.runs) == 10 and all(r.decisions >= 1 for r in report.runs)


def test_schedule_respects_the_machine_and_the_verifier_checks_it(lublin: HpcWorkload) -> None:
    """No sequence overbooks nodes or starts a job early; a tampered start is caught."""
    sim = play(lublin, 1981, 300, QUEUE_POLICIES["sjf"], backfill=True)
    run = verified_sequence(lublin, sim, "test")
    jobs = np.arange(1981, 2281)
    assert (run.start >= lublin.submit[jobs]).all()
    sim.started[1990] = int(lublin.submit[1990]) - 100
    with pytest.raises(VerificationError, match="release"):
        verified_sequence(lublin, sim, "tampered")


def test_sequence_instance_is_the_machine_as_one_node(lublin: HpcWorkload) -> None:
    """The machine's nodes are one node's devices; gangs are node counts."""
    instance = sequence_instance(lublin, 100, 50)
    assert instance.n_gpus == 256 and instance.n_jobs == 50
    assert instance.gang.tolist() == lublin.nodes[100:150].tolist()


def test_a_job_that_does_not_fit_waits_and_blocks_without_backfilling() -> None:
    """A picked job too big for the free nodes starts when they free up; none passes it."""
    trace = read_swf(write_trace([(0, 100, 4), (1, 50, 4), (2, 10, 1)]))
    workload = HpcWorkload.from_trace(trace)
    sim = HpcSimulator(workload, 0, 3)
    sim.schedule(0)
    assert sim.queue == [1]
    sim.schedule(1)  # waits for job 0; job 2 arrives meanwhile
    assert sim.started[1] == 100 and sim.queue == [2]
    sim.schedule(2)
    assert sim.done and sim.started[2] == 150


def test_backfilling_starts_a_job_that_ends_before_the_reservation() -> None:
    """With backfilling, a small short job runs in the hole before a blocked big one."""
    workload = HpcWorkload.from_trace(read_swf(write_trace(
        [(0, 100, 2), (1, 50, 4), (2, 10, 1)])))
    sim = HpcSimulator(workload, 0, 3, backfill=True)
    sim.schedule(0)
    sim.schedule(1)  # blocked until 100; job 2 arrives at 2 and fits in the hole
    assert sim.started == {0: 0, 2: 2, 1: 100} and sim.done


def test_too_big_a_job_and_a_headerless_trace_are_refused(tmp_path: Path) -> None:
    """A job wider than the machine names its line; no MaxNodes names the file."""
    with pytest.raises(InputError, match="wants 8 processors; the machine has 4"):
        HpcWorkload.from_trace(read_swf(write_trace([(0, 10, 8)])))
    headless = tmp_path / "h.swf"
    headless.write_text("1 0 0 10 1 -1 -1 1 10 -1 1 1 1 1 1 1 -1 -1\n")
    with pytest.raises(InputError, match="MaxNodes"):
        HpcWorkload.from_trace(read_swf(headless))


def write_trace(jobs: list[tuple[int, int, int]], nodes: int = 4) -> Path:
    """An SWF file of (submit, run, processors) jobs on ``nodes`` nodes, in a temp folder."""
    import tempfile

    folder = Path(tempfile.mkdtemp())
    lines = [f"; MaxNodes: {nodes}"]
    for k, (submit, run, procs) in enumerate(jobs, start=1):
        lines.append(f"{k} {submit} 0 {run} {procs} -1 -1 {procs} {run} -1 1 1 1 1 1 1 -1 -1")
    path = folder / "t.swf"
    path.write_text("\n".join(lines) + "\n")
    return path
