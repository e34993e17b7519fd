"""Fixtures of the live-run tests: the emulated cluster ``live`` of ``.ci/slurm-up``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.exporters.live_slurm import cluster_folder


@pytest.fixture(scope="session")
def live_cluster() -> Path:
    """The folder of the emulated cluster ``live``; skip (fail under CI) without it."""
    folder, problem = cluster_folder()
    if folder is None:
        if os.environ.get("GPUPLAN_REQUIRE_SLURM") == "1":
            pytest.fail(f"{problem} (GPUPLAN_REQUIRE_SLURM=1: CI runs these tests)")
        pytest.skip(problem)
    return folder / "live"
