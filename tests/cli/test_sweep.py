"""gpuplan sweep: points run, written whole, tabulated, and skipped when rerun."""

from __future__ import annotations

import csv
from pathlib import Path

from conftest import GAVEL

from cli.conftest import Gpuplan
from gpuplan.schedule import Schedule

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
