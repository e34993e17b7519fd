"""gpuplan simulate writes all of its outputs or none: a failed run leaves nothing behind.

A run that fails (the verifier rejects it: exit 1; bad input found after the output
checks, or a picture that cannot be written: exit 2) with ``-o RUN.json --plot DIR``
writes no run log, no instance and no picture, and removes the ``--plot`` folder it made
(never one the user had).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import DATA, Gpuplan

import gpuplan.cli.simulate as cli_simulate
import gpuplan.simulate.run as simulate_run
from gpuplan.core.errors import InputError

SMALL = DATA / "valid_small.json"


def left_in(folder: Path) -> list[str]:
    """Everything under ``folder``, as paths relative to it."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.fixture
def rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every run's log is rejected by the run checker (as an engine bug would be)."""
    monkeypatch.setattr(simulate_run, "check_run",
                        lambda instance, log, result: ["a forged problem"])


def test_a_rejected_run_leaves_no_log_and_no_picture_folder(
        gpuplan: Gpuplan, tmp_path: Path, rejected: None) -> None:
    """Exit 1 with -o and a new --plot folder (two levels deep): nothing is left.

    If this broke, a user whose run failed would find an empty picture folder (or a log
    of the failed run) and take it for a result.
    """
    ran = gpuplan("simulate", SMALL, "-o", tmp_path / "run.json", "--write-instance",
                  tmp_path / "simulated.json", "--plot", tmp_path / "plots" / "run1")
    assert ran.code == 1 and "a forged problem" in ran.err and "nothing written" in ran.err
    assert left_in(tmp_path) == []


def test_a_rejected_run_keeps_the_users_folder_as_it_was(
        gpuplan: Gpuplan, tmp_path: Path, rejected: None) -> None:
    """A --plot folder the user had stays, with its files and no new picture.

    If this broke, a failed run would delete the user's folder, or replace last run's
    pictures with none.
    """
    folder = tmp_path / "plots"
    folder.mkdir()
    (folder / "timeline.png").write_bytes(b"last run's picture")
    ran = gpuplan("simulate", SMALL, "-o", tmp_path / "run.json", "--plot", folder)
    assert ran.code == 1
    assert left_in(tmp_path) == ["plots", "plots/timeline.png"]
    assert (folder / "timeline.png").read_bytes() == b"last run's picture"


@pytest.mark.parametrize(("args", "said"), [
    (["--actual", "lognormal:9"], "--actual: lognormal:9 needs a sigma in (0, 5]"),
    (["--failures", "missing.yaml"], "missing.yaml"),
], ids=["bad-actual", "missing-failures-file"])
def test_bad_input_found_after_the_output_checks_leaves_nothing(
        gpuplan: Gpuplan, tmp_path: Path, args: list[str], said: str) -> None:
    """Exit 2 for input read after --plot was checked (and made): the folder goes again.

    If this broke, each mistyped flag would leave an empty picture folder behind.
    """
    ran = gpuplan("simulate", SMALL, *args, "-o", tmp_path / "run.json",
                  "--plot", tmp_path / "plots")
    assert ran.code == 2 and said in ran.err
    assert left_in(tmp_path) == []


def test_a_cpu_only_job_is_exit_2_and_leaves_nothing(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """A workload the simulator does not model is refused with nothing left behind."""
    path = tmp_path / "in" / "w.json"
    path.parent.mkdir()
    path.write_text(json.dumps({
        "gpu_types": [{"id": "A", "capacity": {"m": 16}}],
        "nodes": [{"id": "n1", "gpus": {"A": 2}, "resources": {"cpu": 8}}],
        "jobs": [{"id": "a", "gpus": 0, "demand": {"m": 1}, "duration_s": {"A": 100},
                  "node_demand": {"cpu": 1}}],
        "objective": "makespan"}))
    ran = gpuplan("simulate", path, "-o", tmp_path / "run.json", "--plot",
                  tmp_path / "out" / "plots")
    assert ran.code == 2 and "is CPU-only" in ran.err
    assert left_in(tmp_path) == ["in", "in/w.json"]


def test_a_picture_that_cannot_be_written_leaves_no_run_log(
        gpuplan: Gpuplan, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pictures are drawn before the run log is written: if they fail, neither is kept.

    If this broke, a run whose pictures failed (exit 2) would still leave its run log,
    and a rerun could not tell the two apart.
    """
    def cannot(figure: object, out: Path, title: str = "") -> None:
        raise InputError(str(out), "", "cannot write the picture: disk full")

    monkeypatch.setattr(cli_simulate, "write_figure", cannot)
    ran = gpuplan("simulate", SMALL, "-o", tmp_path / "run.json", "--plot",
                  tmp_path / "plots")
    assert ran.code == 2 and "disk full" in ran.err
    assert left_in(tmp_path) == []


def test_a_run_that_succeeds_writes_everything_and_no_temporary(
        gpuplan: Gpuplan, tmp_path: Path) -> None:
    """The run log, the instance and both pictures, and no staging folder left over."""
    ran = gpuplan("simulate", SMALL, "-o", tmp_path / "run.json", "--write-instance",
                  tmp_path / "simulated.json", "--plot", tmp_path / "plots")
    assert ran.code == 0, ran.err
    assert left_in(tmp_path) == ["plots", "plots/jct_cdf.png", "plots/timeline.png",
                                 "run.json", "simulated.json"]
    assert "pictures:" in ran.err
    assert gpuplan("check", tmp_path / "simulated.json", tmp_path / "run.json").code == 0
