"""gpuplan sweep: points run, written whole, tabulated, and skipped when rerun."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import GAVEL, Gpuplan

from gpuplan.core.schedule import ResultSchedule, RunSummary, Schedule

THROUGHPUTS = GAVEL / "simulation_throughputs.json"


def sweep_args(out: Path, *more: str) -> list[str | Path]:
    """A tiny sweep: 2 policies x 2 rates x 1 seed, 12 jobs on 2:2:2."""
    return ["sweep", "--policies", "fifo,las", "--rates", "2,6", "--seeds", "0", "--jobs",
            "12", "--cluster", "2:2:2", "--throughputs", THROUGHPUTS, "--workers", "1",
            "-o", out, *more]


def test_sweep_writes_every_run_and_the_table_and_a_rerun_skips_them(
        gpuplan: Gpuplan, tmp_path: Path) -> None:
    """Four points give four verified run logs, a CSV and Markdown table and the load curve.

    Run again with the same settings, every point is up to date and no log is rewritten.
    """
    out = tmp_path / "sweep"
    ran = gpuplan(*sweep_args(out, "--preset", "gavel"))
    assert ran.code == 0, ran.err
    logs = sorted(out.glob("*_rate*_seed*.json"))
    assert [p.name for p in logs] == ["fifo_rate2_seed0.json", "fifo_rate6_seed0.json",
                                      "las_rate2_seed0.json", "las_rate6_seed0.json"]
    assert all(Schedule.read(p).verification is not None for p in logs)
    rows = list(csv.DictReader((out / "results.csv").open()))
    assert [(r["policy"], r["rate"]) for r in rows] == [
        ("fifo", "2.0"), ("fifo", "6.0"), ("las", "2.0"), ("las", "6.0")]
    assert all(r["status"] == "ok" and float(r["mean_jct_h"]) > 0 and float(r["peak_mib"]) > 0
               for r in rows)
    assert (out / "results.md").read_text().count("| ok |") == 4
    assert (out / "load_curve.png").read_bytes()[:4] == b"\x89PNG"
    written = {p: p.stat().st_mtime_ns for p in logs}
    again = gpuplan(*sweep_args(out, "--preset", "gavel"))
    assert again.code == 0 and "4 up to date" in again.err
    assert {p: p.stat().st_mtime_ns for p in logs} == written
    changed = gpuplan(*sweep_args(out))  # the default overheads: other points
    assert changed.code == 0 and "0 up to date" in changed.err


def test_sweep_refuses_bad_input_before_any_point(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """An unknown policy, a flag no policy part takes or a window past --jobs: exit 2, no run."""
    out = tmp_path / "sweep"
    unknown = gpuplan(*[a if a != "fifo,las" else "fifo,lass" for a in sweep_args(out)])
    assert unknown.code == 2 and "lass" in unknown.err and "fifo" in unknown.err
    stray = gpuplan(*sweep_args(out, "--thresholds", "1,2"))
    assert stray.code == 2 and "--thresholds" in stray.err
    window = gpuplan(*sweep_args(out, "--window", "5:40"))
    assert window.code == 2 and "--window" in window.err
    assert not out.exists()


@pytest.mark.parametrize(("after_the_log", "kept"), [(False, 1), (True, 2)],
                         ids=["between-key-and-log", "after-the-log"])
def test_an_interrupted_sweep_leaves_whole_files_and_a_rerun_completes_it(
        gpuplan: Gpuplan, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        after_the_log: bool, kept: int) -> None:
    """Ctrl-C while the second point is written: exit 130, whole files, the table says which.

    Interrupted after its key but before its log, or after its log but before its row, the
    folder holds only whole, verified logs, each listed in results.csv, and no temporary
    file. A rerun simulates only the points missing and completes the table.
    """
    out = tmp_path / "sweep"

    real_write = ResultSchedule.write

    def interrupted(log: ResultSchedule, path: str | Path,
                    before_commit: Callable[[bytes], None] | None = None) -> None:
        second = Path(path).name == "fifo_rate6_seed0.json" and Path(path).parent == out

        def key_then_stop(digest: bytes) -> None:
            assert before_commit is not None
            before_commit(digest)
            raise KeyboardInterrupt

        stop_early = second and not after_the_log
        real_write(log, path, key_then_stop if stop_early else before_commit)
        if second:
            raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        # A point's log is written with its key through ResultSchedule.write: the key once
        # the log is whole, then the log is put in place.
        patch.setattr(ResultSchedule, "write", interrupted)
        stopped = gpuplan(*sweep_args(out))
    assert stopped.code == 130, stopped.err
    logs = sorted(p.name for p in out.glob("*_rate*_seed*.json"))
    assert logs == ["fifo_rate2_seed0.json", "fifo_rate6_seed0.json"][:kept]
    rows = list(csv.DictReader((out / "results.csv").open()))
    assert [Path(r["file"]).name for r in rows] == logs
    assert all(r["status"] == "ok" for r in rows)
    for path in out.rglob("*"):
        assert not path.name.endswith(".tmp"), f"temporary file left: {path}"
        if path.suffix == ".json":
            json.loads(path.read_text())
    for name in logs:
        verification = Schedule.read(out / name).verification
        assert verification is not None and verification.ok
    again = gpuplan(*sweep_args(out))
    assert again.code == 0, again.err
    assert f"4 points, 4 simulated and verified, {kept} up to date" in again.err
    rows = list(csv.DictReader((out / "results.csv").open()))
    assert len(rows) == 4 and all(r["status"] == "ok" for r in rows)


def test_a_metrics_only_sweep_writes_summaries_and_resumes_from_them(
        gpuplan: Gpuplan, tmp_path: Path) -> None:
    """--metrics-only writes one verified run summary per point, no log; a rerun takes them.

    Broken, a large sweep would write gigabytes of logs the user asked not to keep, or
    start over on every rerun.
    """
    out = tmp_path / "sweep"
    first = gpuplan(*sweep_args(out, "--metrics-only"))
    assert first.code == 0, first.err
    summaries = sorted(out.glob("*.metrics.json"))
    assert len(summaries) == 4 and not [p for p in out.glob("*_seed0.json")]
    assert all(RunSummary.read(p).verification.ok for p in summaries)
    rows = list(csv.DictReader((out / "results.csv").open()))
    by_file = {Path(r["file"]).name: r for r in rows}
    for path in summaries:
        run = RunSummary.read(path).run
        assert float(by_file[path.name]["mean_jct_h"]) == pytest.approx(
            run.metrics["mean_jct_h"])
    again = gpuplan(*sweep_args(out, "--metrics-only"))
    assert "4 points, 4 simulated and verified, 4 up to date" in again.err
