"""``gpuplan schema``: the file formats as JSON Schema on stdout."""

from __future__ import annotations

import json

import pytest
from conftest import Gpuplan


@pytest.mark.parametrize("which", ["instance", "schedule"])
def test_schema_prints_json_schema(gpuplan: Gpuplan, which: str) -> None:
    """``schema instance|schedule`` prints a JSON Schema object on stdout and nothing else."""
    result = gpuplan("schema", which)
    assert result.code == 0
    assert json.loads(result.out)["type"] == "object"


def test_instance_schema_shows_partitions_accounts_and_qos(gpuplan: Gpuplan) -> None:
    """The published instance format has the partitions, accounts and QOS and each job's."""
    schema = json.loads(gpuplan("schema", "instance").out)
    assert {"partitions", "accounts", "qos"} <= set(schema["properties"])
    assert {"partition", "account", "qos"} <= set(schema["$defs"]["JobSpec"]["properties"])
    limit = schema["$defs"]["GpuLimitSpec"]["properties"]["gpus"]
    assert "GrpTRES=gres/gpu=N" in limit["description"]
