"""The package stays ruff- and mypy-clean and keeps its import layers (pyproject.toml)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT


def test_ruff_clean() -> None:
    """``ruff check`` finds nothing in gpuplan/, tests/ or scripts/."""
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "gpuplan", "tests", "scripts"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_clean() -> None:
    """``mypy`` (strict, configured in pyproject.toml) finds nothing in gpuplan/.

    gpuplan.rl is typed against the optional extra's libraries, so the check needs them.
    """
    from gpuplan.rl import INSTALL, missing

    if missing():
        pytest.skip(f"mypy checks gpuplan.rl against the optional extra 'rl' "
                    f"({', '.join(missing())} not installed): {INSTALL}")
    result = subprocess.run(
        [sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_import_layers_hold() -> None:
    """import-linter's contracts (pyproject.toml) hold: no import runs back up a layer.

    core <- readers, models, verify <- backends <- parts <- methods <- planning <- simulate,
    sharing, exporters <- harness <- cli; methods never import one another; sharing uses
    core types, programs and backends only; no cycle inside a package.
    """
    result = subprocess.run(
        [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports; "
         "sys.exit(lint_imports(no_cache=True, no_logo=True))"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_a_method_importing_another_breaks_the_contracts(tmp_path: Path) -> None:
    """The contracts do catch a method importing another (the check is not a formality)."""
    package = tmp_path / "gpuplan"
    shutil.copytree(ROOT / "gpuplan", package)
    greedy = package / "methods" / "greedy.py"
    greedy.write_text(greedy.read_text() + "\nfrom gpuplan.methods import sa  # noqa\n")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    result = subprocess.run(
        [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports; "
         "sys.exit(lint_imports(no_cache=True, no_logo=True))"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
    )
    assert result.returncode != 0
    assert "gpuplan.methods.greedy -> gpuplan.methods.sa" in result.stdout
