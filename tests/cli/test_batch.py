"""``gpuplan batch``: the method's options from a file, checked before any work."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import INSTANCES, Gpuplan


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
