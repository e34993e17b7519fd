"""What a run meets that its policy does not plan for: failures, checkpoints, actual durations."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import DATA, Gpuplan, one_gpu

from gpuplan.core.errors import InputError
from gpuplan.core.instance import Instance, Outage
from gpuplan.core.schedule import Schedule
from gpuplan.simulate.engine import Failures, SimulationConfig
from gpuplan.simulate.policy import Mode
from gpuplan.simulate.run import RunSpec, simulate, simulate_run
from gpuplan.verify import verify_schedule


def _jobs(*durations: float, preemptible: bool = True) -> list[dict[str, Any]]:
    return [{"id": f"j{k}", "gpus": 1, "duration_s": d, "preemptible": preemptible}
            for k, d in enumerate(durations)]


def test_a_failure_loses_the_work_since_the_last_checkpoint() -> None:
    """Hand-computed: a 10,000 s job, checkpoints every 3,000 s, its GPU fails at 7,000 s.

    It did 7,000 s, loses the 1,000 s since the checkpoint at 6,000 s, waits for the GPU
    to come back at 8,000 s, and resumes with 30 s of restore: it ends at 8,000 + 30 +
    4,000 s. No job is lost or run twice; the verifier accepts the log.
    """
    instance = one_gpu(_jobs(10_000))
    down = Outage(np.array([0]), 7_000.0, 8_000.0, "test")
    log = simulate(instance, RunSpec(scheduler="fifo", failures=Failures(
        (down,), checkpoint_s=3_000.0)))
    assert log.verification is not None and log.verification.ok
    first, second = log.segments
    assert (first.end_s, first.lost) == (7_000.0, pytest.approx(0.1))
    assert (second.start_s, second.restore_s, second.end_s) == (8_000.0, 30.0, 12_030.0)
    assert log.run is not None and log.run.checkpoint_s == 3_000.0
    assert [(f.start_s, f.end_s) for f in log.run.failures] == [(7_000.0, 8_000.0)]


def test_a_job_that_is_not_preemptible_starts_again_from_nothing() -> None:
    """A failure stops a job run whole: it loses all it did and reruns its whole duration."""
    instance = one_gpu(_jobs(1_000, preemptible=False))
    down = Outage(np.array([0]), 400.0, 500.0, "test")
    log = simulate(instance, RunSpec(scheduler="fifo", failures=Failures((down,))))
    assert log.verification is not None and log.verification.ok
    first, second = log.segments
    assert first.lost == pytest.approx(first.work if first.work is not None else 0.4)
    assert (second.start_s, second.end_s, second.restore_s) == (500.0, 1_500.0, 0.0)


def test_drawn_failures_are_seeded_and_every_run_verifies() -> None:
    """One node down per day on average: the same seed gives the same failures."""
    instance = one_gpu(_jobs(*([40_000.0] * 6)), gpus=2)
    spec = RunSpec(scheduler="las", failures=Failures(per_day=2.0, down_s=3_600.0,
                                                      checkpoint_s=1_800.0, seed=4))
    a, b = simulate(instance, spec), simulate(instance, spec)
    assert a.run is not None and b.run is not None and a.run.failures == b.run.failures
    assert a.run.failures and a.verification is not None and a.verification.ok
    assert {s.job for s in a.segments} == {f"j{k}" for k in range(6)}


def test_the_verifier_holds_lost_work_to_the_checkpoints_and_failures() -> None:
    """A log that claims other lost work, or hides its failures, is rejected."""
    instance = one_gpu(_jobs(10_000))
    down = Outage(np.array([0]), 7_000.0, 8_000.0, "test")
    log = simulate(instance, RunSpec(scheduler="fifo", failures=Failures(
        (down,), checkpoint_s=3_000.0)))
    assert log.run is not None
    wrong = log.model_copy(update={"segments": [log.segments[0].model_copy(
        update={"lost": 0.2, "work": 0.8}), log.segments[1]]})
    assert "since its last checkpoint" in str(verify_schedule(instance, wrong).violations)
    hidden = log.model_copy(update={"run": log.run.model_copy(update={"failures": []})})
    assert "no GPU of it fails then" in str(verify_schedule(instance, hidden).violations)


def test_the_policy_sees_estimates_and_the_run_takes_actual_durations() -> None:
    """Sjf orders by estimate; the run lasts what the jobs actually take.

    j0 is estimated shorter than j1 but actually takes three times longer: sjf still runs
    it first, and both end at their actual times.
    """
    instance = one_gpu(_jobs(100, 200))
    log = simulate(instance, RunSpec(scheduler="sjf", duration_scale=np.array([3.0, 1.0])))
    assert [(s.job, s.start_s, s.end_s) for s in log.segments] == [
        ("j0", 0.0, 300.0), ("j1", 300.0, 500.0)]
    assert log.run is not None and log.run.duration_scale == [3.0, 1.0]
    assert log.verification is not None and log.verification.ok


def test_replan_with_a_disruption_price_keeps_running_jobs() -> None:
    """A large price keeps running jobs where they run: no preemption to start a shorter one.

    Without it, shortest-remaining-first planning preempts the long job for each short one.
    """
    jobs = [{"id": "long", "gpus": 1, "duration_s": 10_000, "preemptible": True}] + [
        {"id": f"s{k}", "gpus": 1, "duration_s": 100, "release_s": 500.0 * (k + 1),
         "preemptible": True} for k in range(3)]
    instance = one_gpu(jobs)
    free = simulate_run(instance, RunSpec(scheduler="replan"))
    kept = simulate_run(instance, RunSpec(scheduler="replan", options={
        "replan_disruption": 1e6}))
    assert free.run is not None and kept.run is not None
    assert free.run.metrics["preemptions_per_job"] > 0
    assert kept.run.metrics["preemptions_per_job"] == 0
    assert kept.run.solver_s is not None and kept.run.solver_s >= 0


def test_simulate_flags_for_failures_and_actual_durations(gpuplan: Gpuplan,
                                                          tmp_path: Path) -> None:
    """--failures, --checkpoint and --actual give a run that gpuplan check accepts."""
    instance = tmp_path / "w.json"
    instance.write_text(json.dumps({
        "gpu_types": [{"id": "G", "capacity": {"compute": 1.0}}],
        "nodes": [{"id": "n", "gpus": {"G": 2}}], "jobs": _jobs(5_000, 6_000, 7_000),
        "objective": "makespan"}))
    failures = tmp_path / "failures.yaml"
    failures.write_text("failures:\n  - {node: n, gpus: [n/0], at_s: 1000, for_s: 500}\n")
    run = tmp_path / "run.json"
    done = gpuplan("simulate", instance, "--policy", "las", "--failures", failures,
                   "--checkpoint", "600", "--actual", "lognormal:0.3", "--seed", "5",
                   "-o", run)
    assert done.code == 0, done.err
    log = Schedule.read(run)
    assert log.run is not None and len(log.run.failures) == 1
    assert gpuplan("check", instance, run).code == 0
    lonely = gpuplan("simulate", instance, "--checkpoint", "600", "-o", tmp_path / "x.json")
    assert lonely.code == 2 and "--checkpoint" in lonely.err
    stray = tmp_path / "stray.yaml"
    stray.write_text("failures:\n  - {node: nowhere, at_s: 10}\n")
    bad = gpuplan("simulate", instance, "--failures", stray, "-o", tmp_path / "y.json")
    assert bad.code == 2 and "failures[0].node" in bad.err
    assert not (tmp_path / "y.json").exists()


@pytest.mark.parametrize("mode", ["event", "round"])
def test_a_failure_for_good_that_leaves_a_job_no_node_is_exit_2(
        gpuplan: Gpuplan, tmp_path: Path, mode: str) -> None:
    """n1 failing for good while 'train' (4 A100 on one node, only n1 has them) is unfinished.

    The run could never finish: exit 2 naming --failures, the node, the job and what it
    needs, and no run log. It used to bring n1 back at t=inf, end 'train' there and stop
    with an internal error on the NaN metrics that gave.
    """
    failures = tmp_path / "failures.yaml"
    failures.write_text("failures: [{node: n1, at_s: 500}]\n")
    run = tmp_path / "run.json"
    ran = gpuplan("simulate", DATA / "valid_small.json", "--failures", failures,
                  "--mode", mode, "-o", run)
    assert ran.code == 2, ran.err
    assert ran.err.strip() == (
        "error: --failures: n1 failed for good at t=500 s, after which no node left holds job "
        "'train', which needs 4 GPU(s) of A100 on one node: the run could never finish; give "
        "that failure an end (for_s) or leave the job out")
    assert not run.exists()


def test_a_failure_for_good_names_the_first_job_left_and_how_many() -> None:
    """Every job that no node left holds counts; the first by arrival is named."""
    instance = one_gpu(_jobs(1_000, 2_000, 3_000), gpus=1)
    down = Outage(np.array([0]), 500.0, np.inf, "test")
    with pytest.raises(InputError) as caught:
        simulate(instance, RunSpec(scheduler="fifo", failures=Failures((down,))))
    assert caught.value.source == "`failures`"
    assert "no node left holds job 'j0' (and 2 other job(s)), which needs 1 GPU(s) of G on " \
        "one node" in caught.value.message


@pytest.mark.parametrize("mode", [Mode.EVENT, Mode.ROUND])
def test_a_failure_for_good_that_leaves_room_ends_with_finite_metrics(small: Instance,
                                                                      mode: Mode) -> None:
    """GPUs down for good that every job can do without: the run ends, verified, all finite.

    n2's two A100s fail for good at 100 s; every job still has n1 (and sweep-b n2's L4s).
    """
    a100 = np.flatnonzero((small.gpu_node == small.node_index["n2"])
                          & (small.gpu_type == small.type_ids.index("A100")))
    down = Outage(a100, 100.0, np.inf, "test")
    log = simulate(small, RunSpec(scheduler="fifo", failures=Failures((down,)),
                                  config=SimulationConfig(mode=mode)))
    assert log.verification is not None and log.verification.ok
    assert log.run is not None and [f.end_s for f in log.run.failures] == [None]
    assert all(np.isfinite(v) for v in log.run.metrics.values())
    assert max(s.end_s for s in log.segments) < 10_000
