"""The installed ``gpuplan`` command end to end: outputs, exit codes, no partial files."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import DATA, INSTANCES, run_cli

from gpuplan import cli
from gpuplan.cli import main

QUICKSTART = INSTANCES / "quickstart.json"
SCHEDULE_KEYS = {
    "status", "objective", "bound", "gap", "method", "solver", "wall_time_s", "seed",
    "gpuplan_version", "placements", "unplaced", "verification",
}


def test_solve_then_check(tmp_path: Path) -> None:
    """The README path: solve the quickstart instance, then check the schedule; both exit 0."""
    out = tmp_path / "s.json"
    solved = run_cli("solve", QUICKSTART, "-o", out)
    assert solved.returncode == 0, solved.stderr
    assert "verified" in solved.stderr
    document = json.loads(out.read_text())
    assert set(document) >= SCHEDULE_KEYS
    assert document["verification"]["ok"] is True
    assert len(document["placements"]) == 20
    checked = run_cli("check", QUICKSTART, out)
    assert checked.returncode == 0, checked.stderr


def test_json_to_stdout() -> None:
    """``-o -`` writes pure JSON on stdout; the summary goes to stderr."""
    result = run_cli("solve", QUICKSTART, "-o", "-", "--objective", "weighted-completion")
    assert result.returncode == 0
    document = json.loads(result.stdout)
    assert document["objective_kind"] == "weighted-completion"
    assert "status" in result.stderr


def test_check_reports_violations(tmp_path: Path) -> None:
    """A tampered schedule fails the check with exit 1 and one line per violation."""
    out = tmp_path / "s.json"
    assert run_cli("solve", QUICKSTART, "-o", out).returncode == 0
    document = json.loads(out.read_text())
    document["placements"][0]["end_s"] += 1.0
    document["placements"].pop()
    out.write_text(json.dumps(document))
    result = run_cli("check", QUICKSTART, out)
    assert result.returncode == 1
    assert "[duration]" in result.stderr
    assert "[unplaced]" in result.stderr


def test_infeasible_instance_exits_1_and_says_why(tmp_path: Path) -> None:
    """An unmeetable deadline: exit 1, the job and its chain named, a verified file."""
    raw = json.loads((DATA / "valid_small.json").read_text())
    raw["jobs"][2]["deadline_s"] = 1250
    instance = tmp_path / "tight.json"
    instance.write_text(json.dumps(raw))
    out = tmp_path / "s.json"
    result = run_cli("solve", instance, "-o", out)
    assert result.returncode == 1
    assert "job 'eval' cannot meet its deadline 1250 s" in result.stderr
    assert "'prep' -> 'train' -> 'eval'" in result.stderr
    assert json.loads(out.read_text())["status"] == "infeasible"


def test_bad_input_leaves_no_file(tmp_path: Path) -> None:
    """Invalid input: exit 2, no new output file, an existing one untouched."""
    out = tmp_path / "s.json"
    result = run_cli("solve", DATA / "bad" / "dependency_cycle.json", "-o", out)
    assert result.returncode == 2
    assert not out.exists()
    out.write_text("keep me")
    assert run_cli("solve", DATA / "bad" / "zero_gang.json", "-o", out).returncode == 2
    assert out.read_text() == "keep me"
    assert [p.name for p in tmp_path.iterdir()] == ["s.json"]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["solve", QUICKSTART, "--objective", "fastest"], "unknown objective 'fastest'"),
        (["solve", QUICKSTART, "--time-limit", "-3"], "expected a positive number"),
        (["solve", QUICKSTART, "--method", "magic"], "invalid choice: 'magic'"),
        (["solve", QUICKSTART, "-o", "/no/such/dir/s.json"], "'/no/such/dir' does not exist"),
        (["check", QUICKSTART, DATA / "valid_small.json"], "instance: required field"),
    ],
)
def test_command_line_errors(args: list[str | Path], words: str) -> None:
    """Wrong arguments give exit 2 and say what is wrong, never a traceback."""
    result = run_cli(*args)
    assert "Traceback" not in result.stderr
    assert result.returncode == 2
    assert words in result.stderr


def test_objective_override_needing_costs(tmp_path: Path) -> None:
    """``--objective`` that needs prices the file lacks is bad input, named as such."""
    raw = json.loads((DATA / "valid_small.json").read_text())
    del raw["gpu_types"][0]["cost_per_hour"]
    instance = tmp_path / "no_price.json"
    instance.write_text(json.dumps(raw))
    result = run_cli("solve", instance, "--objective", "min-gpu-cost")
    assert result.returncode == 2
    assert "gpu_types[0].cost_per_hour: objective 'min-gpu-cost' needs a price" in result.stderr


def test_help_and_schema() -> None:
    """Every command has --help; ``schema`` prints JSON Schema."""
    for command in ([], ["solve"], ["validate"], ["check"], ["schema"]):
        result = run_cli(*command, "--help")
        assert result.returncode == 0 and "usage: gpuplan" in result.stdout
    for which in ("instance", "schedule"):
        result = run_cli("schema", which)
        assert result.returncode == 0
        assert json.loads(result.stdout)["type"] == "object"


def test_debug_shows_the_traceback() -> None:
    """``--debug`` re-raises so developers see where an error came from."""
    result = run_cli("--debug", "validate", DATA / "bad" / "zero_gang.json")
    assert result.returncode != 0
    assert "Traceback" in result.stderr


def test_validate_describes_instances() -> None:
    """``validate`` accepts several files and summarises each."""
    result = run_cli("validate", QUICKSTART, DATA / "valid_small.json")
    assert result.returncode == 0
    assert "20 jobs" in result.stderr and "5 jobs" in result.stderr


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--seed", "-1"], "a whole number from 0 to 2147483647"),
        (["--seed", str(2**70)], "a whole number from 0 to 2147483647"),
        (["--threads", "0"], "a whole number from 1 to"),
        (["--threads", "-1"], "a whole number from 1 to"),
        (["--threads", "1000"], "a whole number from 1 to"),
        (["--tick", "0"], "a positive number of seconds"),
        (["--tick", "nan"], "a positive number of seconds"),
        (["--time-limit", "inf"], "a positive number of seconds up to 1e+09"),
        (["--round", "-1"], "a positive number of seconds"),
        (["--iterations", "0"], "a whole number from 1"),
        (["--partitions", "1" + "0" * 5000], "a whole number from 1"),
    ],
)
def test_every_number_is_checked(args: list[str], words: str,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Out-of-range seeds, threads, ticks, rounds and limits are exit 2, before any work."""
    with pytest.raises(SystemExit) as stopped:
        main(["solve", str(QUICKSTART), *args])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err


def test_names_are_printed_not_styled(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An instance named like a console style tag is printed as it is, after a normal solve."""
    document = json.loads((DATA / "valid_small.json").read_text())
    document["name"] = "[/oops]"
    path = tmp_path / "oops.json"
    path.write_text(json.dumps(document))
    assert main(["solve", str(path), "-o", str(tmp_path / "s.json")]) == 0
    assert "[/oops]: 5 jobs" in capsys.readouterr().err


def test_library_warnings_stay_off_the_terminal(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A numpy RuntimeWarning raised inside a command is logged for --debug, not printed."""
    def validate(_: object) -> int:
        np.log(np.zeros(1))
        return 0
    monkeypatch.setattr(cli, "_cmd_validate", validate)
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        assert cli.main(["validate", str(QUICKSTART)]) == 0
    assert "divide by zero" not in capsys.readouterr().err


@pytest.mark.parametrize(("spec", "words"), [("milp:threads=1000", "threads 1000 is out of range"),
                                             ("sa:seed=-1", "seed -1 is out of range"),
                                             ("cp:tick_s=0", "tick 0.0 is out of range")])
def test_bench_specs_are_range_checked(spec: str, words: str,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """A method spec's settings meet the same ranges as the flags, before any run."""
    assert main(["bench", str(INSTANCES), "--methods", spec]) == 2
    assert words in capsys.readouterr().err


def test_library_options_are_range_checked() -> None:
    """The API refuses what the command line refuses: a seed below 0 names --seed."""
    from gpuplan.errors import InputError
    from gpuplan.solvers import SolveOptions

    with pytest.raises(InputError, match="--seed: -1 is out of range"):
        SolveOptions(seed=-1)
