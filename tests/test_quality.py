"""The package stays ruff- and mypy-clean, as configured in pyproject.toml."""

from __future__ import annotations

import subprocess
import sys

from conftest import ROOT


def test_ruff_clean() -> None:
    """``ruff check`` finds nothing in gpuplan/, tests/ or scripts/."""
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "gpuplan", "tests", "scripts"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_clean() -> None:
    """``mypy`` (strict, configured in pyproject.toml) finds nothing in gpuplan/."""
    result = subprocess.run(
        [sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr
