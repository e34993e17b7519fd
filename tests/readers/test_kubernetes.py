"""Reading the fleet of a Kubernetes cluster from ``kubectl get nodes -o json``."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from gpuplan.core.errors import InputError
from gpuplan.readers.kubernetes import parse_level_labels, quantity, read_kubernetes_fleet
from tests.conftest import INSTANCES

NODES = INSTANCES / "clusters" / "nodes.json"


def test_gpu_nodes_read_with_their_product_and_allocatable() -> None:
    """GPU nodes only, typed by NVIDIA's or GKE's label, allocatable before capacity."""
    fleet = read_kubernetes_fleet(NODES)
    nodes = {n["id"]: n for n in fleet["nodes"]}
    assert list(nodes) == ["gke-pool-a100-1", "dgx-h100-7"]
    assert nodes["dgx-h100-7"]["gpus"] == {"NVIDIA-H100-80GB-HBM3": 8}
    assert nodes["dgx-h100-7"]["resources"] == {"cpu_milli": 223500,
                                                "memory_mib": 2047 * 1024}
    assert nodes["gke-pool-a100-1"]["gpus"] == {"nvidia-tesla-a100": 1}


@pytest.mark.parametrize(("text", "value"), [("7500m", "7.5"), ("32Gi", str(32 * 2**30)),
                                             ("1e3", "1000"), ("8", "8"), ("2k", "2000")])
def test_quantities_parse_as_kubernetes_writes_them(text: str, value: str) -> None:
    """Decimal and binary suffixes, milli-units and exponents."""
    assert quantity(text, "f", "p") == Decimal(value)


def _node(**status: Any) -> dict[str, Any]:
    return {"kind": "List", "items": [{"kind": "Node", "metadata": {"name": "n1"},
                                       "status": status}]}


@pytest.mark.parametrize(("document", "path", "problem"), [
    ({"kind": "Pod"}, "kind", "expected a Node or a List of Nodes"),
    (_node(allocatable={"nvidia.com/gpu": "1.5", "cpu": "1", "memory": "1Gi"}),
     "items[0].status.allocatable.nvidia.com/gpu", "not a GPU count"),
    (_node(allocatable={"nvidia.com/gpu": "2", "cpu": "lots", "memory": "1Gi"}),
     "items[0].status.allocatable.cpu", "not a Kubernetes quantity"),
    (_node(allocatable={"nvidia.com/gpu": "2", "cpu": "4"}),
     "items[0].status.allocatable.memory", "missing"),
    (_node(allocatable={"cpu": "4", "memory": "1Gi"}), "", "no node has nvidia.com/gpu"),
])
def test_bad_node_lists_name_the_json_path(tmp_path: Path, document: dict[str, Any],
                                           path: str, problem: str) -> None:
    """Not a node list, a fractional GPU count, a bad quantity, no GPU: path and problem."""
    (tmp_path / "nodes.json").write_text(json.dumps(document))
    with pytest.raises(InputError) as error:
        read_kubernetes_fleet(tmp_path / "nodes.json")
    assert error.value.path == path
    assert problem in str(error.value)


def _labelled(*labels: dict[str, str]) -> dict[str, Any]:
    return {"kind": "List", "items": [
        {"kind": "Node", "metadata": {"name": f"n{k}", "labels": node},
         "status": {"allocatable": {"nvidia.com/gpu": "8", "cpu": "64", "memory": "512Gi"}}}
        for k, node in enumerate(labels, start=1)]}


BLOCK, RACK = "cloud.provider.com/topology-block", "cloud.provider.com/topology-rack"


def test_topology_labels_become_levels(tmp_path: Path) -> None:
    """Each node's labels at the levels, widest first, down to the first it lacks."""
    (tmp_path / "nodes.json").write_text(json.dumps(_labelled(
        {BLOCK: "b1", RACK: "r1"}, {BLOCK: "b1"}, {RACK: "r9"}, {})))
    fleet = read_kubernetes_fleet(tmp_path / "nodes.json", parse_level_labels(
        f"block={BLOCK},rack={RACK}"))
    assert fleet["topology"] == {"levels": ["block", "rack"]}
    assert [n.get("topology") for n in fleet["nodes"]] == [
        {"block": "b1", "rack": "r1"}, {"block": "b1"}, None, None]


@pytest.mark.parametrize(("text", "problem"), [
    ("rack", "expected LEVEL=LABEL"),
    ("rack=a b", "'a b' is not a Kubernetes label key"),
    ("rack=x,rack=y", "level 'rack' is named twice"),
    (f"rack={'x' * 64}", "is not a Kubernetes label key"),
])
def test_bad_level_labels_say_what_is_wrong(text: str, problem: str) -> None:
    """Not LEVEL=KEY, a key Kubernetes refuses, a level named twice."""
    with pytest.raises(ValueError, match=re.escape(problem)):
        parse_level_labels(text)


def test_a_topology_label_no_node_has_is_refused(tmp_path: Path) -> None:
    """A label no GPU node carries is a typo, not a topology: refused, naming it."""
    (tmp_path / "nodes.json").write_text(json.dumps(_labelled({BLOCK: "b1"})))
    with pytest.raises(InputError, match=r"no GPU node has the label 'acme\.io/rack'"):
        read_kubernetes_fleet(tmp_path / "nodes.json", (("rack", "acme.io/rack"),))
