"""The fleet of a Kubernetes cluster, from ``kubectl get nodes -o json``.

Each node with ``nvidia.com/gpu`` becomes a node of an instance file: its GPU type is its
GPU product label (GPU Feature Discovery's ``nvidia.com/gpu.product``, else GKE's
``cloud.google.com/gke-accelerator``), its resources its CPU (``cpu_milli``) and memory
(``memory_mib``). What the scheduler can hand out counts: ``status.allocatable``, else
``status.capacity``.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from gpuplan.core.errors import InputError
from gpuplan.core.files import parse_json, read_text
from gpuplan.readers.slurm import IMPORTED_CAPACITY, UNTYPED

#: The extended resource of NVIDIA's device plugin.
GPU_RESOURCE = "nvidia.com/gpu"
#: Node labels naming the GPU product, in the order they are looked for.
PRODUCT_LABELS = ("nvidia.com/gpu.product", "cloud.google.com/gke-accelerator")
_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$")
_SUFFIX: dict[str, Decimal] = {
    "": Decimal(1), "m": Decimal("0.001"),
    **{k: Decimal(10) ** (3 * p) for p, k in enumerate("kMGTPE", start=1)},
    **{f"{k}i": Decimal(2) ** (10 * p) for p, k in enumerate("KMGTPE", start=1)}}


def quantity(text: Any, source: str, where: str) -> Decimal:
    """A Kubernetes quantity (``7500m``, ``32Gi``, ``1e3``, ``8``) as a number.

    Raises
    ------
    InputError
        Naming ``where`` when the text is no quantity.
    """
    match = _QUANTITY.match(text) if isinstance(text, str) else None
    if match is None or match.group(2) not in _SUFFIX:
        raise InputError(source, where, f"{text!r} is not a Kubernetes quantity (such as "
                         "8, 7500m or 32Gi)")
    try:
        return Decimal(match.group(1)) * _SUFFIX[match.group(2)]
    except InvalidOperation:
        raise InputError(source, where, f"{text!r} is not a number") from None


def _field(data: Any, path: list[str | int], source: str) -> Any:
    here: Any = data
    for key in path:
        if isinstance(key, int):
            ok = isinstance(here, list) and key < len(here)
        else:
            ok = isinstance(here, dict) and key in here
        if not ok:
            shown = "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in path)
            raise InputError(source, shown.lstrip("."), "missing")
        here = here[key]
    return here


def read_kubernetes_fleet(path: str | Path) -> dict[str, Any]:
    """The GPU nodes of a ``kubectl get nodes -o json`` file as ``gpu_types`` and ``nodes``.

    Nodes without ``nvidia.com/gpu`` are left out. A GPU node without a product label
    gets the type :data:`~gpuplan.readers.slurm.UNTYPED`.

    Raises
    ------
    InputError
        Naming the file and JSON path: not a Node or a List of Nodes, a missing name, a
        quantity that does not parse, a fractional GPU count, or no GPU node at all.
    """
    source = str(path)
    data = parse_json(read_text(Path(path)), source)
    if isinstance(data, dict) and data.get("kind") == "Node":
        items, prefix = [data], ""
    elif isinstance(data, dict) and data.get("kind") in ("List", "NodeList"):
        items, prefix = _field(data, ["items"], source), "items"
        if not isinstance(items, list):
            raise InputError(source, "items", "expected a list of Nodes")
    else:
        raise InputError(source, "kind", "expected a Node or a List of Nodes (kubectl get "
                         "nodes -o json)")
    types: set[str] = set()
    nodes = []
    for k, item in enumerate(items):
        where = f"{prefix}[{k}]" if prefix else ""
        if not isinstance(item, dict) or item.get("kind", "Node") != "Node":
            raise InputError(source, f"{where}.kind".lstrip("."), "expected a Node")
        name = _field(item, ["metadata", "name"], source)
        status = item.get("status", {})
        counts = status.get("allocatable") or status.get("capacity") or {}
        key = "allocatable" if status.get("allocatable") else "capacity"
        at = f"{where}.status.{key}".lstrip(".")
        if not isinstance(counts, dict) or GPU_RESOURCE not in counts:
            continue
        gpus = quantity(counts[GPU_RESOURCE], source, f"{at}.{GPU_RESOURCE}")
        if gpus != gpus.to_integral_value() or gpus < 0:
            raise InputError(source, f"{at}.{GPU_RESOURCE}", f"{gpus} is not a GPU count")
        if gpus == 0:
            continue
        labels = item.get("metadata", {}).get("labels", {}) or {}
        gpu_type = next((labels[label] for label in PRODUCT_LABELS if label in labels),
                        UNTYPED)
        types.add(gpu_type)
        node: dict[str, Any] = {"id": name, "gpus": {gpu_type: int(gpus)}, "resources": {}}
        for resource, unit, scale in (("cpu", "cpu_milli", 1000), ("memory", "memory_mib",
                                                                     Decimal(1) / 2**20)):
            if resource not in counts:
                raise InputError(source, f"{at}.{resource}", "missing")
            amount = quantity(counts[resource], source, f"{at}.{resource}") * scale
            node["resources"][unit] = int(amount)
        nodes.append(node)
    if not nodes:
        raise InputError(source, "", f"no node has {GPU_RESOURCE} in its allocatable or "
                         "capacity")
    return {"gpu_types": [{"id": t, "capacity": dict(IMPORTED_CAPACITY)}
                          for t in sorted(types)],
            "nodes": nodes}
