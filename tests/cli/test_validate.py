"""``gpuplan validate``: several files, each described in one line."""

from __future__ import annotations

from conftest import DATA, INSTANCES, run_cli


def test_validate_describes_instances() -> None:
    """``validate`` accepts several files and summarises each."""
    result = run_cli("validate", INSTANCES / "quickstart.json", DATA / "valid_small.json")
    assert result.returncode == 0
    assert "20 jobs" in result.stderr and "5 jobs" in result.stderr
