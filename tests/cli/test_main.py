"""The ``gpuplan`` entry point: help, exit codes, errors without tracebacks, quiet warnings."""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import DATA, INSTANCES, Gpuplan, run_cli

from gpuplan.cli import COMMANDS, ExitCode, build_parser, validate

QUICKSTART = INSTANCES / "quickstart.json"


def test_every_command_has_help(gpuplan: Gpuplan) -> None:
    """``gpuplan --help`` and every command's ``--help`` print usage and exit 0."""
    top = gpuplan("--help")
    assert top.code == 0 and "usage: gpuplan" in top.out
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert len(commands.choices) >= len(COMMANDS)
    for name in commands.choices:
        assert name in top.out
        shown = gpuplan(name, "--help")
        assert shown.code == 0 and f"usage: gpuplan {name}" in shown.out, name


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["solve", QUICKSTART, "--objective", "fastest"], "unknown objective 'fastest'"),
        (["solve", QUICKSTART, "--time-limit", "-3"], "--time-limit: -3.0 is out of range"),
        (["solve", QUICKSTART, "--method", "magic"], "invalid choice: 'magic'"),
        (["solve", QUICKSTART, "-o", "/no/such/dir/s.json"], "'/no/such/dir' does not exist"),
        (["check", QUICKSTART, DATA / "valid_small.json"], "instance: required field"),
    ],
)
def test_command_line_errors(args: list[str | Path], words: str) -> None:
    """Wrong arguments give exit 2 and say what is wrong, never a traceback."""
    result = run_cli(*args)
    assert "Traceback" not in result.stderr
    assert result.returncode == ExitCode.BAD_INPUT
    assert words in result.stderr


def test_debug_shows_the_traceback() -> None:
    """``--debug`` re-raises so developers see where an error came from."""
    result = run_cli("--debug", "validate", DATA / "bad" / "zero_gang.json")
    assert result.returncode != 0
    assert "Traceback" in result.stderr


def test_library_warnings_stay_off_the_terminal(
        monkeypatch: pytest.MonkeyPatch, gpuplan: Gpuplan) -> None:
    """A numpy RuntimeWarning raised inside a command is logged for --debug, not printed."""
    def noisy(_: object) -> int:
        np.log(np.zeros(1))
        return 0
    monkeypatch.setattr(validate, "validate", noisy)
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        result = gpuplan("validate", QUICKSTART)
    assert result.code == 0
    assert "divide by zero" not in result.err
