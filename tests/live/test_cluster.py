"""What gpuplan run reads of Slurm: ``scontrol -o -d show job`` and ``sinfo -N``."""

from __future__ import annotations

from datetime import UTC, datetime

from gpuplan.live.cluster import parse_jobs, parse_nodes
from tests.conftest import DATA

LIVE = DATA / "live"


def test_jobs_are_read_with_their_nodes_gpu_indices_and_times() -> None:
    """A running gang's nodes and GPU indices, a pending job, a completed one's times."""
    jobs = {job.name: job for job in parse_jobs(
        (LIVE / "scontrol_jobs.txt").read_text(), "scontrol").values()}
    gang = jobs["gang"]
    assert gang.state == "RUNNING"
    assert gang.nodes == ("l4-0", "l4-1")
    assert gang.gpus == {"l4-0": (0, 1, 2, 3), "l4-1": (0, 1, 2, 3)}
    assert gang.start is not None and gang.start.tzinfo is UTC and gang.end is None
    later = jobs["later"]
    assert later.state == "PENDING" and later.start is None and later.nodes == ()
    quick = jobs["quick"]
    assert quick.state == "COMPLETED" and quick.nodes == ("a100-0",)
    assert quick.start is not None and quick.end is not None and quick.end >= quick.start
    assert quick.gpus == {}  # Slurm drops the indices once a job has ended
    assert quick.end < datetime(2100, 1, 1, tzinfo=UTC)


def test_nodes_that_take_no_new_job_are_down_drained_or_not_responding() -> None:
    """``down*`` and ``drained`` nodes are unavailable; mixed and idle ones are not."""
    assert parse_nodes((LIVE / "sinfo.txt").read_text()) == {"a100-0", "l4-0"}
    assert parse_nodes("n1|idle*\nn2|allocated\nn3|draining\n") == {"n1", "n3"}
