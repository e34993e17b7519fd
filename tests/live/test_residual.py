"""The live residual: running jobs pinned where they run, done jobs gone, durations corrected."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import numpy as np
import pytest

from gpuplan import read_instance
from gpuplan.core.instance import Instance
from gpuplan.core.settings import RunSettings
from gpuplan.live.residual import (
    MIN_LEFT_S,
    Running,
    build,
    corrections,
    plan_residual,
    stuck,
)
from gpuplan.live.state import Attempt, JobRecord, RunState
from gpuplan.verify import verify_schedule
from tests.conftest import DATA


@pytest.fixture
def tiny() -> Instance:
    """The live tests' batch."""
    return read_instance(DATA / "live" / "tiny.json")


def _state(instance: Instance, **records: JobRecord) -> RunState:
    return RunState(instance="tiny.json", instance_name=instance.name,
                    epoch=datetime(2026, 1, 1, tzinfo=UTC), slurm_conf=None, method="cp",
                    time_limit_s=1.0, tolerance_s=5.0,
                    jobs={job: records.get(job, JobRecord()) for job in instance.job_ids})


def _ran(start: float, end: float | None, gpu_type: str, gpus: list[str]) -> Attempt:
    return Attempt(slurm_id=str(int(start)), submitted_s=0.0, nodes=[gpus[0].split("/")[0]],
                   gpu_type=gpu_type, begin_s=start, state="COMPLETED" if end else "RUNNING",
                   start_s=start, end_s=end, ran_on=[gpus[0].split("/")[0]], gpu_ids=gpus)


def test_a_running_job_holds_its_gpus_and_its_successor_waits_for_it(tiny: Instance) -> None:
    """p2 runs on a100-0/0-1 from 2 s: its GPUs are held to its end, and p5 waits for it."""
    state = _state(tiny)
    p2 = tiny.job_index["p2"]
    gpus = np.array([tiny.gpu_index["a100-0/0"], tiny.gpu_index["a100-0/1"]])
    free = [j for j in range(tiny.n_jobs) if j != p2]
    live = build(tiny, state, 4.0, free, {p2: Running(0, gpus, np.array([0]), 2.0)}, set(),
                 set(), 60.0, 2.0)
    assert live.ends[p2] == pytest.approx(2.0 + 8.0)
    (held,) = live.instance.outages
    assert sorted(held.gpus.tolist()) == sorted(gpus.tolist())
    assert held.start_s == 0.0 and held.end_s == pytest.approx(6.0)
    k = int(np.flatnonzero(live.jobs == tiny.job_index["p5"])[0])
    assert live.instance.release[k] == pytest.approx(6.0)
    schedule = plan_residual(live, "cp", None, RunSettings(time_limit_s=2))
    assert verify_schedule(live.instance, schedule).ok
    placed = {s.job: s for s in schedule.segments}
    assert placed["p5"].start_s >= 6.0 - 1e-9
    assert not any(set(s.gpu_ids) & {"a100-0/0", "a100-0/1"} and s.start_s < 6.0 - 1e-9
                   for s in schedule.segments)


def test_a_job_past_its_estimate_is_predicted_to_run_on_a_little(tiny: Instance) -> None:
    """p0 (6 s on A100) started at 0 and still runs at 30 s: it holds its GPU past now."""
    p0 = tiny.job_index["p0"]
    live = build(tiny, _state(tiny), 30.0, [], {p0: Running(
        0, np.array([tiny.gpu_index["a100-1/0"]]), np.array([1]), 0.0)}, set(), set(),
        60.0, 2.0)
    assert live.ends[p0] == pytest.approx(30.0 + MIN_LEFT_S)


def test_a_down_node_is_out_and_durations_follow_what_ran(tiny: Instance) -> None:
    """A100 jobs ran 1.5x their estimate: the free jobs' A100 durations are 1.5x too."""
    state = _state(tiny, p0=JobRecord(attempts=[_ran(0, 9, "A100", ["a100-1/0"])],
                                      outcome="completed"))
    factor = corrections(tiny, state)
    assert factor[tiny.type_index["A100"]] == pytest.approx(1.5)
    assert factor[tiny.type_index["L4"]] == pytest.approx(1.5)  # no L4 job ran: the mean
    free = [j for j in range(tiny.n_jobs) if tiny.job_ids[j] != "p0"]
    live = build(tiny, state, 10.0, free, {}, {tiny.job_index["p0"]}, {0}, 60.0, 2.0)
    k = int(np.flatnonzero(live.jobs == tiny.job_index["p1"])[0])
    assert live.instance.duration[k, 0] == pytest.approx(1.5 * 5)
    schedule = plan_residual(live, "greedy", None, RunSettings())
    assert not any(g.startswith("a100-0/") for s in schedule.segments for g in s.gpu_ids)


def test_jobs_no_node_that_is_up_can_run_wait_with_their_successors(tiny: Instance) -> None:
    """With both A100 nodes down, p3 (8 A100 GPUs) waits, and so does p7 after it."""
    free = list(range(tiny.n_jobs))
    waiting = stuck(tiny, free, {tiny.node_index["a100-0"], tiny.node_index["a100-1"]})
    assert {tiny.job_ids[j] for j in waiting} == {"p3", "p7"}
    assert "predecessor p3" in waiting[tiny.job_index["p7"]]
    assert stuck(tiny, free, {tiny.node_index["a100-0"]}) == {}


def test_a_re_plan_turns_deadlines_into_due_dates(tiny: Instance) -> None:
    """Online a missed deadline is tardiness, not a batch without a plan."""
    tight = dataclasses.replace(tiny, deadline=np.full(tiny.n_jobs, 1.0))
    live = build(tight, _state(tight), 0.0, list(range(tiny.n_jobs)), {}, set(), set(),
                 60.0, 2.0, online=True)
    assert np.isinf(live.instance.deadline).all() and (live.instance.due == 1.0).all()
    assert plan_residual(live, "greedy", None, RunSettings()).status.has_plan


@pytest.mark.parametrize("method", ["greedy", "cp"])
def test_running_jobs_count_against_their_account(method: str) -> None:
    """quotas.json at 600 s: nlp-1 and nlp-2 run on a1 to 3600 s, holding nlp's 4 GPUs.

    Their held GPUs name nlp, so nlp-3 and nlp-4 wait for them (a2's A100s are idle
    before), and the plan verifies with them counted.
    """
    quotas = read_instance(DATA / "quotas.json")
    running = {quotas.job_index[job]: Running(
        quotas.type_index["A100"], np.array([quotas.gpu_index[f"a1/{k}"] for k in pair]),
        np.array([quotas.node_index["a1"]]), 0.0)
        for job, pair in (("nlp-1", (0, 1)), ("nlp-2", (2, 3)))}
    free = [j for j in range(quotas.n_jobs) if j not in running]
    live = build(quotas, _state(quotas), 600.0, free, running, set(), set(), 60.0, 2.0)
    nlp = quotas.account_ids.index("nlp")
    assert [(o.account, o.end_s) for o in live.instance.outages] == [(nlp, 3000.0)] * 2
    schedule = plan_residual(live, method, None, RunSettings(time_limit_s=2, seed=0))
    assert verify_schedule(live.instance, schedule).ok
    starts = {s.job: s.start_s for s in schedule.segments}
    assert starts["nlp-3"] >= 3000.0 - 1e-9 and starts["nlp-4"] >= 3000.0 - 1e-9
    assert starts["vision-1"] == 0.0
