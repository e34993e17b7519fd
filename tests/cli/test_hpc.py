"""gpuplan simulate TRACE.swf --protocol rlscheduler: the report, and what it refuses."""

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
    ran = gpuplan("simulate", LUBLIN, "--protocol", "rlscheduler", "--policy", "f1", "-o", out)
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
    ran = gpuplan("simulate", LUBLIN, "--protocol", "rlscheduler", "--policy", "sjf",
                  "--sequences", "2", "--length", "200", "--seed", "5", "--backfill", "-o", out)
    assert ran.code == 0, ran.err
    report = json.loads(out.read_text())
    assert (report["sequences"], report["length"], report["seed"], report["backfill"]) == (
        2, 200, 5, True)
    assert len(report["runs"]) == 2


@pytest.mark.parametrize(("args", "words"), [
    (("--policy", "sjf"), "runs under --protocol rlscheduler"),
    (("--protocol", "rlscheduler", "--policy", "las"), "unknown queue policy 'las'"),
    (("--protocol", "rlscheduler", "--mode", "round"), "--mode is a flag of the GPU"),
    (("--protocol", "rlscheduler", "--placement", "first-fit"), "--placement is a flag"),
    (("--protocol", "rlscheduler", "--length", "6000"), "sequences of 6000 need more"),
])
def test_protocol_refuses_flags_it_does_not_take(gpuplan: Gpuplan, args: tuple[str, ...],
                                                 words: str) -> None:
    """Engine flags, unknown policies and impossible lengths are exit 2, named."""
    ran = gpuplan("simulate", LUBLIN, *args)
    assert ran.code == 2 and words in ran.err, ran.err


def test_engine_refuses_protocol_flags_and_instances_under_protocol(gpuplan: Gpuplan) -> None:
    """--backfill is not a GPU-simulator flag; --protocol takes SWF files only."""
    small = DATA / "valid_small.json"
    ran = gpuplan("simulate", small, "--backfill")
    assert ran.code == 2 and "is a flag of --protocol" in ran.err
    ran = gpuplan("simulate", small, "--protocol", "rlscheduler")
    assert ran.code == 2 and "takes an SWF trace" in ran.err


def test_bad_swf_line_is_exit_2_and_writes_nothing(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """A malformed job line names the file, the line and the field; no report is written."""
    trace = tmp_path / "bad.swf"
    trace.write_text("; MaxNodes: 4\n1 0 0 10 1 -1 -1 1 x -1 1 1 1 1 1 1 -1 -1\n")
    out = tmp_path / "r.json"
    ran = gpuplan("simulate", trace, "--protocol", "rlscheduler", "-o", out)
    assert ran.code == 2 and "line 2" in ran.err and "field 9 (requested time)" in ran.err
    assert not out.exists()
