"""``gpuplan solve``: outputs, exit codes, no partial files, and flags from the registries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import DATA, INSTANCES, Gpuplan, run_cli

from gpuplan.backends import BACKENDS
from gpuplan.cli.solve import method_flags
from gpuplan.core.errors import InputError
from gpuplan.core.options import option_fields
from gpuplan.core.schedule import Schedule
from gpuplan.core.settings import RunSettings
from gpuplan.methods import METHODS

QUICKSTART = INSTANCES / "quickstart.json"
#: Small enough for every objective, static ones included.
SMALL = DATA / "valid_small.json"
SCHEDULE_KEYS = {
    "status", "objective", "bound", "gap", "method", "solver", "wall_time_s", "seed",
    "gpuplan_version", "segments", "unplaced", "verification",
}


def test_solve_then_check(tmp_path: Path) -> None:
    """The README path: solve the quickstart instance, then check the schedule; both exit 0."""
    out = tmp_path / "s.json"
    solved = run_cli("solve", QUICKSTART, "-o", out)
    assert solved.returncode == 0, solved.stderr
    assert "verified" in solved.stderr
    assert "20 of 20" in solved.stderr
    document = json.loads(out.read_text())
    assert set(document) >= SCHEDULE_KEYS
    assert document["verification"]["ok"] is True
    assert len(document["segments"]) == 20
    checked = run_cli("check", QUICKSTART, out)
    assert checked.returncode == 0, checked.stderr


def test_json_to_stdout() -> None:
    """``-o -`` writes pure JSON on stdout; the summary goes to stderr."""
    result = run_cli("solve", QUICKSTART, "-o", "-", "--objective", "weighted-completion")
    assert result.returncode == 0
    document = json.loads(result.stdout)
    assert document["objective_kind"] == "weighted-completion"
    assert "status" in result.stderr


def test_infeasible_instance_exits_1_and_says_why(tmp_path: Path) -> None:
    """An unmeetable deadline: exit 1, the job and its chain named, a verified file."""
    raw = json.loads(SMALL.read_text())
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


def test_objective_override_needing_costs(tmp_path: Path) -> None:
    """``--objective`` that needs prices the file lacks is bad input, named as such."""
    raw = json.loads(SMALL.read_text())
    del raw["gpu_types"][0]["cost_per_hour"]
    instance = tmp_path / "no_price.json"
    instance.write_text(json.dumps(raw))
    result = run_cli("solve", instance, "--objective", "min-gpu-cost")
    assert result.returncode == 2
    assert "gpu_types[0].cost_per_hour: objective 'min-gpu-cost' needs a price" in result.stderr


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--seed", "-1"], "--seed: -1 is out of range: expected from 0 to 2147483647"),
        (["--seed", str(2**70)], f"--seed: {2**70} is out of range"),
        (["--seed", "x"], "invalid int value: 'x'"),
        (["--threads", "0"], "--threads: 0 is out of range: expected from 1 to"),
        (["--threads", "-1"], "--threads: -1 is out of range"),
        (["--threads", "1000"], "--threads: 1000 is out of range"),
        (["--method", "cp", "--tick", "0"], "--tick: expected a number above 0"),
        (["--method", "cp", "--tick", "nan"], "--tick: expected a number above 0"),
        (["--time-limit", "inf"], "--time-limit: inf is out of range: expected above 0 to 1e+09"),
        (["--method", "balance", "--round", "-1"], "--round: expected a number above 0"),
        (["--iterations", "0"], "--iterations: 0 is out of range"),
        (["--method", "balance", "--partitions", "1" + "0" * 5000],
         "--partitions: expected a number from 1"),
    ],
)
def test_every_number_is_checked(gpuplan: Gpuplan, tmp_path: Path, args: list[str],
                                 words: str) -> None:
    """Out-of-range seeds, threads, ticks, rounds and limits are exit 2, before any work."""
    out = tmp_path / "s.json"
    result = gpuplan("solve", QUICKSTART, *args, "-o", out)
    assert result.code == 2
    assert words in result.err and "Traceback" not in result.err
    assert not out.exists()


def test_the_api_refuses_what_the_command_line_refuses() -> None:
    """The API refuses what the command line refuses: a seed below 0 names --seed."""
    with pytest.raises(InputError, match="`seed`: -1 is out of range"):
        RunSettings(seed=-1)


def test_names_are_printed_not_styled(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """An instance named like a console style tag is printed as it is, after a normal solve."""
    document = json.loads(SMALL.read_text())
    document["name"] = "[/oops]"
    path = tmp_path / "oops.json"
    path.write_text(json.dumps(document))
    result = gpuplan("solve", path, "-o", tmp_path / "s.json")
    assert result.code == 0
    assert "[/oops]: 5 jobs" in result.err


def test_help_lists_every_method_and_option_flag(gpuplan: Gpuplan) -> None:
    """``solve --help`` shows every registered method and every option of every method.

    Built from the registry: a method added later shows up without a change here.
    """
    shown = gpuplan("solve", "--help")
    assert shown.code == 0
    text = " ".join(shown.out.split())
    # Without spaces: argparse wraps lines, also after the hyphen of "assign-cost".
    packed = "".join(text.split())
    for name, method in METHODS.items():
        assert name in text and "".join(method.description.split()) in packed
        for field in option_fields(method.options_type):
            flag = field.metadata["flag"]
            assert flag in text, (name, flag)
            assert f"--method {name}" in text or f", {name}" in text, (name, flag)
    offered = text[text.index("--solver {") + len("--solver {"):].split("}")[0]
    assert set(offered.split(",")) == set(BACKENDS)


def test_each_option_flag_is_one_flag_for_every_method_taking_it() -> None:
    """A flag several methods take (``--solver``, ``--moves``) appears once in the help."""
    flags = method_flags()
    for method in METHODS.values():
        for field in option_fields(method.options_type):
            assert method.name in flags[field.metadata["flag"]]
    assert len(flags) == len({f.metadata["flag"] for m in METHODS.values()
                              for f in option_fields(m.options_type)})


def test_a_flag_the_method_does_not_take_is_refused(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """``--method greedy --policy min-cost --crossover one-point --tick 5`` is exit 2.

    The message names --policy, greedy and what greedy takes; nothing is written.
    """
    out = tmp_path / "s.json"
    result = gpuplan("solve", QUICKSTART, "--method", "greedy", "--policy", "min-cost",
                     "--crossover", "one-point", "--tick", "5", "-o", out)
    assert result.code == 2
    assert "--policy" in result.err and "'greedy'" in result.err
    assert "it takes --moldable" in result.err
    assert not out.exists()


def test_the_refusal_lists_what_the_method_takes(gpuplan: Gpuplan) -> None:
    """A balance flag given to sa: the message lists sa's own flags."""
    result = gpuplan("solve", QUICKSTART, "--method", "sa", "--round", "60")
    assert result.code == 2
    assert "--round" in result.err and "'sa'" in result.err and "--moves" in result.err


def test_a_backend_the_method_cannot_use(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """``--method balance --solver pyomo`` runs Pyomo, or is refused up front.

    Refused: exit 2 naming --solver and balance, before anything is solved or written.
    """
    out = tmp_path / "s.json"
    result = gpuplan("solve", INSTANCES / "gavel_makespan.json", "--method", "balance",
                     "--solver", "pyomo", "--time-limit", "60", "-o", out)
    if result.code == 0:
        assert "pyomo" in Schedule.read(out).solver.lower()
    else:
        assert result.code == 2, result.err
        assert "--solver" in result.err and "balance" in result.err
        assert not out.exists()


def test_an_objective_the_backend_cannot_plan(gpuplan: Gpuplan) -> None:
    """``--method milp --solver cpsat --objective min-max-load`` is never an internal error.

    It plans on CP-SAT, or is exit 2 naming --solver and milp.
    """
    result = gpuplan("solve", SMALL, "--method", "milp", "--solver", "cpsat",
                     "--objective", "min-max-load", "--time-limit", "20")
    assert "internal error" not in result.err
    if result.code != 0:
        assert result.code == 2
        assert "--solver" in result.err and "milp" in result.err


def test_load_balance_needs_shared_gpus(gpuplan: Gpuplan) -> None:
    """``--objective min-max-load`` on whole GPUs is exit 2 naming the type and ``sharing``.

    A GPU held whole is wholly in use: there is no load of shared GPUs to balance.
    """
    result = gpuplan("solve", QUICKSTART, "--objective", "min-max-load")
    assert result.code == 2
    assert "gpu_types[0].sharing" in result.err and "A100-80GB" in result.err


def test_cp_starts_from_a_schedule_file(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """``--method cp --warm-start S.json`` uses the start.

    cp's plan is at least as good as the file's, even with little time.
    """
    start = tmp_path / "start.json"
    assert gpuplan("solve", QUICKSTART, "--method", "sa", "--iterations", "2000",
                   "-o", start).code == 0
    out = tmp_path / "cp.json"
    result = gpuplan("solve", QUICKSTART, "--method", "cp", "--warm-start", start,
                     "--time-limit", "2", "-o", out)
    assert result.code == 0, result.err
    given, planned = Schedule.read(start), Schedule.read(out)
    assert given.objective is not None and planned.objective is not None
    assert planned.objective <= given.objective + 1e-9


def test_a_start_for_another_method_is_refused(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """A schedule file as a start for a method that takes none: exit 2 naming --warm-start."""
    start = tmp_path / "start.json"
    assert gpuplan("solve", QUICKSTART, "-o", start).code == 0
    result = gpuplan("solve", QUICKSTART, "--method", "sa", "--warm-start", start)
    assert result.code == 2 and "--warm-start" in result.err


def _options(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(("name", "text"), [
    ("o.toml", '[milp]\nbackend = "cpsat"\n'),
    ("o.toml", 'solver = "cpsat"\n'),
    ("o.yaml", "milp:\n  solver: cpsat\n"),
    ("o.yml", "backend: cpsat\n"),
])
def test_an_options_file_sets_the_method_options(gpuplan: Gpuplan, tmp_path: Path, name: str,
                                                 text: str) -> None:
    """``--options FILE`` sets milp's backend: the schedule names CP-SAT.

    TOML or YAML, flat or in a table per method, by field name or flag name.
    """
    out = tmp_path / "s.json"
    result = gpuplan("solve", SMALL, "--objective", "min-gpus", "--method", "milp",
                     "--options", _options(tmp_path, name, text), "--time-limit", "20", "-o", out)
    assert result.code == 0, result.err
    assert "cpsat" in Schedule.read(out).solver


def test_a_flag_overrides_the_options_file(gpuplan: Gpuplan, tmp_path: Path) -> None:
    """The file says CP-SAT, ``--solver highs`` says HiGHS: the flag wins."""
    out = tmp_path / "s.json"
    path = _options(tmp_path, "o.toml", '[milp]\nbackend = "cpsat"\n')
    result = gpuplan("solve", SMALL, "--objective", "min-gpus", "--method", "milp",
                     "--options", path, "--solver", "highs", "--time-limit", "20", "-o", out)
    assert result.code == 0, result.err
    assert "highs" in Schedule.read(out).solver


@pytest.mark.parametrize(("name", "text", "key"), [
    ("o.toml", '[milp]\nbackend = "cpsat"\nbackned = "highs"\n', "backned"),
    ("o.toml", 'polcy = "makespan"\n', "polcy"),
    ("o.yaml", "ga:\n  crossover: uniform\n  mutation: 0.1\n", "mutation"),
])
def test_an_unknown_key_in_the_options_file_is_refused(gpuplan: Gpuplan, tmp_path: Path,
                                                       name: str, text: str, key: str) -> None:
    """A key its method does not take, in any table of the file: exit 2, nothing solved.

    The message names the file and the key.
    """
    out = tmp_path / "s.json"
    path = _options(tmp_path, name, text)
    result = gpuplan("solve", QUICKSTART, "--method", "greedy" if "polcy" in key else "milp",
                     "--options", path, "-o", out)
    assert result.code == 2
    assert str(path) in result.err and key in result.err
    assert not out.exists()


@pytest.mark.parametrize(("name", "text", "words"), [
    ("o.toml", "[milp\n", "malformed TOML"),
    ("o.toml", '[balance]\nround = -1\n', "expected a number above 0"),
    ("o.toml", 'milp = {backend = {x = 1}}\n', "a table holds one method's settings"),
    ("o.json", "{}", "--options takes a .toml, .yaml or .yml file"),
    ("o.yaml", "- a\n- b\n", "expected a table of settings"),
])
def test_a_bad_options_file_is_refused(gpuplan: Gpuplan, tmp_path: Path, name: str, text: str,
                                       words: str) -> None:
    """A malformed options file, a bad value or a wrong shape: exit 2 naming the file."""
    path = _options(tmp_path, name, text)
    result = gpuplan("solve", QUICKSTART, "--method", "milp", "--options", path)
    assert result.code == 2
    assert str(path) in result.err and words in result.err
