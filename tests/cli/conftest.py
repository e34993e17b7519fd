"""Fixtures of the command-line tests: the command run in this process."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from gpuplan.cli import main


@dataclass(frozen=True)
class Outcome:
    """What a user sees of one command: its exit code, stdout and stderr."""

    code: int
    out: str
    err: str


#: Runs ``gpuplan ARGS...`` in this process.
Gpuplan = Callable[..., Outcome]


@pytest.fixture
def gpuplan(capsys: pytest.CaptureFixture[str]) -> Gpuplan:
    """Run ``gpuplan ARGS...`` in this process, argparse's own exits included."""
    def run(*args: str | Path) -> Outcome:
        capsys.readouterr()
        try:
            code = main([str(a) for a in args])
        except SystemExit as stopped:
            code = int(stopped.code or 0)
        captured = capsys.readouterr()
        return Outcome(code, captured.out, captured.err)
    return run
