"""``gpuplan validate``: several files, each described in one line."""

from __future__ import annotations

from conftest import DATA, INSTANCES, Gpuplan, run_cli


def test_validate_describes_instances() -> None:
    """``validate`` accepts several files and summarises each."""
    result = run_cli("validate", INSTANCES / "quickstart.json", DATA / "valid_small.json")
    assert result.returncode == 0
    assert "20 jobs" in result.stderr and "5 jobs" in result.stderr


def test_validate_describes_partitions_accounts_and_qos(gpuplan: Gpuplan) -> None:
    """Each partition with its node count, each account and QOS with its GPU limit if any."""
    result = gpuplan("validate", DATA / "quotas.json")
    assert result.code == 0
    assert ("partitions train (2 nodes), infer (2 nodes), mixed (2 nodes); accounts nlp (at "
            "most 4 GPUs at once), vision (at most 2 GPUs at once), ops; QOS urgent (at most "
            "2 GPUs at once)") in " ".join(result.err.split())
