"""A live run's log checked: what ran verified, and the log's own claims re-derived."""

from __future__ import annotations

import json
from pathlib import Path

from gpuplan import read_instance
from gpuplan.live.runlog import check_log, figures, in_force, verify_run
from gpuplan.live.state import RunState
from tests.conftest import DATA, Gpuplan

LIVE = DATA / "live"
LOG = LIVE / "run_failure.json"


def _tampered(tmp_path: Path, change: str) -> Path:
    """The run log with one record changed."""
    data = json.loads(LOG.read_text())
    if change == "credit":
        data["jobs"]["p1"]["attempts"][0]["decided_by"] = "slurm"
    elif change == "outage":
        data["down"] = []
    elif change == "order":
        data["jobs"]["p5"]["attempts"][-1]["start_s"] = 10.0
        data["jobs"]["p5"]["attempts"][-1]["end_s"] = 15.0
    path = tmp_path / f"{change}.json"
    path.write_text(json.dumps(data))
    return path


def test_a_run_with_a_failed_node_verifies_and_its_figures_follow(gpuplan: Gpuplan) -> None:
    """The shipped run log checks clean: lost work on the failed node, every job completed."""
    done = gpuplan("check", LIVE / "tiny.json", LOG)
    assert done.code == 0, done.err
    text = done.out + done.err
    assert "8 of 8 jobs completed" in text and "every constraint holds" in text
    instance = read_instance(LIVE / "tiny.json")
    state = RunState.read(LOG)
    schedule, verification = verify_run(instance, state)
    lost = [s for s in schedule.segments if s.lost > 0]
    assert sorted(s.job for s in lost) == ["p0", "p2", "p6"]
    assert verification.objective == 20.0
    found = figures(instance, state)
    assert (found.makespan, found.completed, found.replans) == (20.0, 8, 1)
    assert found.by_plan == 11 and found.by_slurm == 0


def test_a_start_credited_to_the_wrong_side_is_caught(tmp_path: Path, gpuplan: Gpuplan
                                                      ) -> None:
    """Crediting a planned start to Slurm contradicts the plan in force: exit 1, named."""
    done = gpuplan("check", LIVE / "tiny.json", _tampered(tmp_path, "credit"))
    assert done.code == 1
    assert "job p1" in done.out + done.err and "credited to slurm" in done.out + done.err


def test_lost_work_without_the_outage_and_a_broken_dependency_are_caught(
        tmp_path: Path, gpuplan: Gpuplan) -> None:
    """A tampered log of what ran fails verification, naming the job.

    Without the node's outage the lost segments have no cause; p5 before p2 ends breaks
    the dependency.
    """
    done = gpuplan("check", LIVE / "tiny.json", _tampered(tmp_path, "outage"))
    assert done.code == 1 and "no GPU of it fails then" in done.out + done.err
    done = gpuplan("check", LIVE / "tiny.json", _tampered(tmp_path, "order"))
    assert done.code == 1 and "p5" in done.out + done.err


def test_the_log_must_be_of_the_instance_given() -> None:
    """A log checked against another instance says so."""
    other = read_instance(DATA / "valid_small.json")
    problems = check_log(other, RunState.read(LOG))
    assert any("is of instance 'live-tiny'" in p for p in problems)


def test_eta_answers_from_the_live_plan(gpuplan: Gpuplan) -> None:
    """`gpuplan eta` on a run log: when the job ran (here), with the run's clock time."""
    done = gpuplan("eta", LIVE / "tiny.json", LOG, "p5", "--json")
    assert done.code == 0
    found = json.loads(done.out)
    assert (found["start_s"], found["end_s"]) == (15.0, 20.0)
    assert found["epoch"] == RunState.read(LOG).epoch.isoformat()


def test_the_plan_in_force_puts_running_jobs_to_their_predicted_end() -> None:
    """A job still running is read to its start plus its duration on its type."""
    instance = read_instance(LIVE / "tiny.json")
    state = RunState.read(LOG)
    last = state.jobs["p5"].attempts[-1]
    last.state, last.end_s = "RUNNING", None
    state.jobs["p5"].outcome = None
    (segment,) = [s for s in in_force(instance, state).segments if s.job == "p5"]
    assert segment.start_s == 15.0 and segment.end_s > 15.0
