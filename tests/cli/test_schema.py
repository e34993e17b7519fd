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
