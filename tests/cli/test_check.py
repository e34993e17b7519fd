"""``gpuplan check``: a schedule file recomputed from its instance alone."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import INSTANCES, run_cli

QUICKSTART = INSTANCES / "quickstart.json"


def test_check_reports_violations(tmp_path: Path) -> None:
    """A tampered schedule fails the check with exit 1 and one line per violation."""
    out = tmp_path / "s.json"
    assert run_cli("solve", QUICKSTART, "-o", out).returncode == 0
    document = json.loads(out.read_text())
    document["segments"][0]["end_s"] += 1.0
    document["segments"].pop()
    out.write_text(json.dumps(document))
    result = run_cli("check", QUICKSTART, out)
    assert result.returncode == 1
    assert "[duration]" in result.stderr
    assert "[unplaced]" in result.stderr
