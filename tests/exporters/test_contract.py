"""Every registered exporter: the same command shape, files a shell takes, its options."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gpuplan.core.options import option_fields
from gpuplan.exporters import EXPORTERS
from tests.conftest import DATA, Gpuplan

SLEEPERS = DATA / "slurm" / "sleepers.json"


@pytest.mark.parametrize("name", list(EXPORTERS))
def test_every_exporter_writes_the_sleepers_plan(gpuplan: Gpuplan, tmp_path: Path,
                                                 name: str) -> None:
    """Each exporter writes its files for a verified plan (or the fleet) and says so.

    Its scripts are executable and bash parses them.
    """
    exporter = EXPORTERS[name]
    flags = [f.metadata["flag"] for f in option_fields(exporter.options_type)]
    args: list[str | Path] = ["export", name]
    if exporter.needs_schedule:
        args.append(DATA / "slurm" / "sleepers_plan.json")
    args += ["--instance", SLEEPERS, "-o", tmp_path]
    if "--epoch" in flags:
        args += ["--epoch", "2026-12-07T06:00:00+00:00"]
    if "--rehearse" in flags:
        args += ["--rehearse", "true"]
    outcome = gpuplan(*args)
    assert outcome.code == 0, outcome.err
    assert f"({name})" in outcome.err
    assert any(tmp_path.iterdir())
    for script in tmp_path.rglob("*.sh"):
        assert script.stat().st_mode & 0o100
        assert subprocess.run(["bash", "-n", str(script)]).returncode == 0


@pytest.mark.parametrize("name", list(EXPORTERS))
def test_every_option_has_a_flag_and_help(name: str) -> None:
    """Each option of each exporter is a documented flag of its sub-command."""
    for f in option_fields(EXPORTERS[name].options_type):
        assert f.metadata["flag"].startswith("--")
        assert f.metadata["help"]
