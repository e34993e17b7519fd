"""Sweep points as tasks: resume keys, rows, and the results table."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest
from conftest import GAVEL
from core.test_files import at_most, pipe_in

from gpuplan.harness.batch import run_tasks
from gpuplan.harness.sweep import (
    SWEEP,
    SweepPoint,
    Workload,
    point_key,
    points,
    run_point,
    write_results,
)
from gpuplan.simulate import RunSpec

THROUGHPUTS = str(GAVEL / "simulation_throughputs.json")


def tiny(out: Path) -> list[SweepPoint]:
    """Policies fifo and srtf at two rates, seed 3, on 10 single-GPU jobs of 1:1:1."""
    workload = Workload(THROUGHPUTS, {"v100": 1, "p100": 1, "k80": 1}, 10, gpus_per_node=1)
    return points(["fifo", "srtf"], [1.0, 4.0], [3], workload, RunSpec(), out)


def test_each_point_is_its_policy_rate_and_seed(tmp_path: Path) -> None:
    """Points nest policy, rate, seed; each run and its workload take the point's seed."""
    sweep = tiny(tmp_path)
    assert [(p.policy, p.rate, p.seed) for p in sweep] == [
        ("fifo", 1.0, 3), ("fifo", 4.0, 3), ("srtf", 1.0, 3), ("srtf", 4.0, 3)]
    assert all(p.spec.settings.seed == 3 for p in sweep)
    assert len({p.target for p in sweep}) == 4


def test_the_key_changes_with_anything_that_defines_the_point(tmp_path: Path) -> None:
    """Rate, overheads or job count give another key; the same point the same key."""
    base = tiny(tmp_path)[0]
    assert point_key(base) == point_key(dataclasses.replace(base))
    other_rate = dataclasses.replace(base, rate=2.0)
    more_jobs = dataclasses.replace(base, workload=dataclasses.replace(base.workload, jobs=11))
    window = dataclasses.replace(base, spec=dataclasses.replace(base.spec, window=(0, 5)))
    keys = [point_key(p) for p in (base, other_rate, more_jobs, window)]
    assert all(k is not None for k in keys)
    assert len({json.dumps(k, sort_keys=True) for k in keys}) == 4


def test_a_point_is_resumed_only_from_its_own_untouched_log(tmp_path: Path) -> None:
    """A finished point is taken from disk; an edited log is simulated again."""
    point = tiny(tmp_path)[0]
    first = run_point(point)
    assert first["status"] == "ok" and not first["resumed"]
    again = run_point(point)
    assert again["resumed"] and again["mean_jct_h"] == first["mean_jct_h"]
    assert again["seconds"] == first["seconds"]
    Path(point.target).write_text(Path(point.target).read_text() + " ")
    assert not run_point(point)["resumed"]


def test_a_failing_point_is_its_row_and_the_table_says_why(tmp_path: Path) -> None:
    """A throughput file that is gone fails its points, not the sweep; the table shows it."""
    sweep = tiny(tmp_path)
    broken = dataclasses.replace(sweep[1], workload=dataclasses.replace(
        sweep[1].workload, throughputs=str(tmp_path / "gone.json")))
    rows = run_tasks([sweep[0], broken], SWEEP, 1)
    assert [r["status"] for r in rows] == ["ok", "error"] and "gone.json" in rows[1]["error"]
    as_csv, as_md = write_results(rows, tmp_path)
    assert as_csv.read_text().count("\n") == 3
    assert "error: " in as_md.read_text() and "gone.json" in as_md.read_text()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX named pipes")
def test_a_throughput_file_that_is_a_pipe_fails_its_point_at_once(tmp_path: Path) -> None:
    """A named pipe as the throughput file is the point's error row, saying so, at once.

    Hashing it for the resume key used to wait for a writer for ever (here until the
    alarm, whose TimeoutError the hashing took for an unreadable file).
    """
    point = tiny(tmp_path)[0]
    pipe = pipe_in(tmp_path, "throughputs.json")
    piped = dataclasses.replace(point, workload=dataclasses.replace(point.workload,
                                                                    throughputs=str(pipe)))
    with at_most(5):
        row = run_point(piped)
    assert row["status"] == "error" and row["seconds"] < 2
    assert row["error"] == f"{pipe}: not a regular file (it is a pipe)"
    assert not Path(point.target).exists()
