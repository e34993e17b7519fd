"""Shared fixtures: test data paths, a small instance, and the installed CLI."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gpuplan import Instance, read_instance
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


def run_cli(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run the installed ``gpuplan`` entry point, as a user would."""
    # Prefer the script beside this interpreter, so an unactivated venv works too.
    beside = Path(sys.executable).parent / "gpuplan"
    exe = str(beside) if beside.exists() else shutil.which("gpuplan")
    assert exe is not None, "the gpuplan entry point is not installed (pip install -e .)"
    return subprocess.run(
        [exe, *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=120
    )
