"""``gpuplan batch``: options checked before any work, and what it says when interrupted."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import INSTANCES, Gpuplan

from gpuplan.readers.generate import generate_document


def test_batch_refuses_an_options_file_key_before_any_work(gpuplan: Gpuplan,
                                                            tmp_path: Path) -> None:
    """``batch --options`` with a key the method does not take: exit 2, nothing made.

    The message names the file and the key; the output folder is not created.
    """
    options = tmp_path / "o.yaml"
    options.write_text("sa:\n  temperature: 3\n")
    out = tmp_path / "out"
    result = gpuplan("batch", INSTANCES / "quickstart.json", "-o", out, "--method", "sa",
                     "--options", options)
    assert result.code == 2
    assert str(options) in result.err and "temperature" in result.err
    assert not out.exists()


def test_batch_plans_with_the_options_file(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """``batch --method sa --options FILE``: every instance planned and verified.

    The file is taken as solve takes it, and the summary says each plan verified.
    """
    options = tmp_path / "o.toml"
    options.write_text('moves = ["swap"]\n')
    out = tmp_path / "out"
    result = gpuplan("batch", INSTANCES / "quickstart.json", "-o", out, "--method", "sa",
                     "--options", options, "--iterations", "200", "--workers", "1")
    assert result.code == 0, result.err
    rows = json.loads((out / "summary.json").read_text())
    assert [row["verified"] for row in rows] == [True]


def test_a_batch_refused_after_its_folder_is_checked_leaves_no_folder(
        gpuplan: Gpuplan, tmp_path: Path) -> None:
    """A setting the method refuses, found once the output folder is made: exit 2, no folder.

    The parents the batch made go too.
    """
    out = tmp_path / "new" / "out"
    result = gpuplan("batch", INSTANCES / "quickstart.json", "-o", out, "--method", "greedy",
                     "--iterations", "5")
    assert result.code == 2 and "--iterations" in result.err
    assert not (tmp_path / "new").exists()


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_reports_what_was_done_and_what_is_left(tmp_path: Path) -> None:
    """SIGINT once a schedule is written: exit 130, the counts done and left, the summary.

    The summary lists the instances done, and a rerun plans the rest. It used to say only
    "interrupted".
    """
    inputs, out = tmp_path / "in", tmp_path / "out"
    inputs.mkdir()
    for seed in range(4):
        (inputs / f"g{seed}.json").write_text(json.dumps(
            generate_document(60, 6, seed=seed, dependencies=0.3, deadlines=0.3)))
    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "gpuplan"), "batch", str(inputs), "-o", str(out),
         "--workers", "1", "--method", "sa", "--time-limit", "0.3"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # A suite started in the background of a script inherits Ctrl-C ignored.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 30
        while not (out / "g0.json").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 130, err
    rows = json.loads((out / "summary.json").read_text())
    assert 1 <= len(rows) < 4 and all(row["verified"] for row in rows)
    assert (f"interrupted after {len(rows)} of 4 instances: {len(rows)} planned and verified, "
            f"0 up to date; {4 - len(rows)} left, which the same command plans (keeping what "
            f"is done); summary in {out / 'summary.json'}") in err
