"""Shared fixtures: test data paths, a small instance, the CLI in this process and installed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gpuplan import Instance, read_instance
from gpuplan.backends import highs
from gpuplan.cli import main
from gpuplan.core.budget import Limits
from gpuplan.models.linear import LinearProgram
from gpuplan.readers.instance_file import build_instance, parse_document

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
INSTANCES = ROOT / "instances"
#: Published benchmark files the known-answer tests need, copied from ../shared/benchmarks
#: in the same layout (sources and licences in its SOURCES.md).
BENCHMARKS = DATA / "benchmarks"
#: OR-Library's gap1-12 files.
ORLIB_GAP = BENCHMARKS / "gap" / "orlib"
#: Gavel's measured throughputs and physical-cluster traces.
GAVEL = BENCHMARKS / "gpu-traces" / "gavel"


@pytest.fixture
def small() -> Instance:
    """The small valid instance every unit test starts from (makespan objective)."""
    return read_instance(DATA / "valid_small.json")


def instance_from(document: dict[str, Any]) -> Instance:
    """Validate and index an instance document held in memory."""
    return build_instance(parse_document(document, "<test>"), "<test>")


def one_gpu(jobs: list[dict[str, Any]], gpus: int = 1) -> Instance:
    """Jobs on ``gpus`` GPUs of one type, makespan objective."""
    return instance_from({
        "gpu_types": [{"id": "G", "capacity": {"compute": 1.0}, "cost_per_hour": 1.0}],
        "nodes": [{"id": "n", "gpus": {"G": gpus}}],
        "jobs": jobs,
        "objective": "makespan",
    })


def run_cli(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run the installed ``gpuplan`` entry point, as a user would."""
    # Prefer the script beside this interpreter, so an unactivated venv works too.
    beside = Path(sys.executable).parent / "gpuplan"
    exe = str(beside) if beside.exists() else shutil.which("gpuplan")
    assert exe is not None, "the gpuplan entry point is not installed (pip install -e .)"
    return subprocess.run(
        [exe, *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=120
    )


@dataclass(frozen=True)
class HighsSolve:
    """One ``solve_program`` call on HiGHS: the thread, the program and how it was run."""

    thread: str
    program: LinearProgram
    threads: int
    seed: int
    gap: float
    started: bool
    offered: bool

    def same_solve(self, other: HighsSolve) -> bool:
        """Whether both hand HiGHS the same program with the same settings."""
        a, b = self.program, other.program
        return ((self.threads, self.seed, self.gap, self.started, self.offered)
                == (other.threads, other.seed, other.gap, other.started, other.offered)
                and a.sense == b.sense and all(
                    np.array_equal(getattr(a, name), getattr(b, name))
                    for name in ("cost", "col_lower", "col_upper", "integer", "row_lower",
                                 "row_upper", "row_start", "col_index", "value")))


@pytest.fixture
def highs_solves(monkeypatch: pytest.MonkeyPatch) -> list[HighsSolve]:
    """Every HiGHS ``solve_program`` call made while the test runs, in order."""
    calls: list[HighsSolve] = []
    solve = highs.HighsBackend.solve_program

    def record(backend: highs.HighsBackend, program: LinearProgram, limits: Limits,
               start: Any = None) -> Any:
        calls.append(HighsSolve(threading.current_thread().name, program, limits.threads,
                                limits.seed, limits.gap, start is not None,
                                backend.offer is not None))
        return solve(backend, program, limits, start)

    monkeypatch.setattr(highs.HighsBackend, "solve_program", record)
    return calls


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


@pytest.fixture(scope="session")
def clusters() -> Path:
    """The folder of the running emulated Slurm clusters; skip (fail under CI) without it."""
    from tests.exporters.live_slurm import cluster_folder

    folder, problem = cluster_folder()
    if folder is None:
        if os.environ.get("GPUPLAN_REQUIRE_SLURM") == "1":
            pytest.fail(f"{problem} (GPUPLAN_REQUIRE_SLURM=1: CI runs these tests)")
        pytest.skip(problem)
    return folder
