"""gpuplan hpc TRACE.swf: the protocol's report, and what it refuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import BENCHMARKS, DATA, Gpuplan

LUBLIN = BENCHMARKS / "hpc-traces" / "lublin_256.swf.gz"


def test_protocol_report_has_bounded_slowdown_and_utilization(gpuplan: Gpuplan,
                                                              tmp_path: Path) -> None:
    """The report gives per-sequence and mean bsld and utilization, every run verified."""
    out = tmp_path / "report.json"
    ran = gpuplan("hpc", LUBLIN, "--policy", "f1", "-o", out)
    assert ran.code == 0, ran.err
    report = json.loads(out.read_text())
    assert round(report["bounded_slowdown"], 2) == 258.37
    assert round(report["utilization"], 3) == 0.816
    assert len(report["runs"]) == 10 and all(r["verified"] for r in report["runs"])
    assert report["runs"][0]["start_index"] == 1981 and "258.37" in ran.err


def test_sequences_length_and_seed_flags_shape_the_protocol(gpuplan: Gpuplan,
                                                            tmp_path: Path) -> None:
    """--sequences, --length and --seed choose other sequences; --backfill is recorded."""
    out = tmp_path / "r.json"
    ran = gpuplan("hpc", LUBLIN, "--policy", "sjf",
                  "--sequences", "2", "--length", "200", "--seed", "5", "--backfill", "-o", out)
    assert ran.code == 0, ran.err
    report = json.loads(out.read_text())
    assert (report["sequences"], report["length"], report["seed"], report["backfill"]) == (
        2, 200, 5, True)
    assert len(report["runs"]) == 2


@pytest.mark.parametrize(("args", "words"), [
    (("--policy", "las"), "unknown queue policy 'las'"),
    (("--policy", "sjf", "--mode", "round"), "unrecognized arguments: --mode round"),
    (("--policy", "sjf", "--time-limit", "2"), "--time-limit: is a flag of --policy replan"),
    (("--policy", "sjf", "--length", "6000"), "sequences of 6000 need more"),
    ((), "the following arguments are required: --policy"),
])
def test_hpc_refuses_flags_it_does_not_take(gpuplan: Gpuplan, args: tuple[str, ...],
                                            words: str) -> None:
    """Engine flags, unknown policies and impossible lengths are exit 2, named."""
    ran = gpuplan("hpc", LUBLIN, *args)
    assert ran.code == 2 and words in ran.err, ran.err


def test_each_command_takes_its_own_inputs(gpuplan: Gpuplan) -> None:
    """An SWF trace under simulate points to hpc; hpc takes SWF files only."""
    ran = gpuplan("simulate", LUBLIN, "--policy", "fifo")
    assert ran.code == 2 and "gpuplan hpc TRACE --policy NAME" in ran.err
    small = DATA / "valid_small.json"
    ran = gpuplan("simulate", small, "--backfill")
    assert ran.code == 2 and "unrecognized arguments: --backfill" in ran.err
    ran = gpuplan("hpc", small, "--policy", "fifo")
    assert ran.code == 2 and "gpuplan hpc takes an SWF trace" in ran.err


def test_bad_swf_line_is_exit_2_and_writes_nothing(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """A malformed job line names the file, the line and the field; no report is written."""
    trace = tmp_path / "bad.swf"
    trace.write_text("; MaxNodes: 4\n1 0 0 10 1 -1 -1 1 x -1 1 1 1 1 1 1 -1 -1\n")
    out = tmp_path / "r.json"
    ran = gpuplan("hpc", trace, "--policy", "fifo", "-o", out)
    assert ran.code == 2 and "line 2" in ran.err and "field 9 (requested time)" in ran.err
    assert not out.exists()
