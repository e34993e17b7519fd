"""The fleet of a Kubernetes cluster, from ``kubectl get nodes -o json``.

Each node with ``nvidia.com/gpu`` becomes a node of an instance file: its GPU type is its
GPU product label (GPU Feature Discovery's ``nvidia.com/gpu.product``, else GKE's
``cloud.google.com/gke-accelerator``), its resources its CPU (``cpu_milli``) and memory
(``memory_mib``), and, when asked, its place in the network from the node labels that
name its topology domains (Kueue's topology levels, such as
``cloud.provider.com/topology-rack``). What the scheduler can hand out counts:
``status.allocatable``, else ``status.capacity``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
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
#: A Kubernetes label key: an optional DNS subdomain prefix and ``/``, and a name.
LABEL_KEY = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                       r"([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9]$")
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


def parse_level_labels(text: str) -> tuple[tuple[str, str], ...]:
    """``LEVEL=KEY,...`` (such as ``block=acme.io/block,rack=acme.io/rack``) as pairs.

    Raises
    ------
    ValueError
        For an item that is not ``LEVEL=KEY``, a key that is not a Kubernetes label key
        (at most 63 characters after an optional DNS prefix and ``/``), or a level or key
        named twice.
    """
    pairs: list[tuple[str, str]] = []
    for item in text.split(","):
        level, _, key = item.strip().partition("=")
        if not level or not key:
            raise ValueError(f"expected LEVEL=LABEL,..., got {item.strip()!r}")
        if LABEL_KEY.match(key) is None or len(key.rpartition("/")[0]) > 253:
            raise ValueError(f"{key!r} is not a Kubernetes label key")
        for other, other_key in pairs:
            if level == other or key == other_key:
                twice = f"level {level!r}" if level == other else f"label {key!r}"
                raise ValueError(f"{twice} is named twice")
        pairs.append((level, key))
    return tuple(pairs)


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


def read_kubernetes_fleet(path: str | Path,
                          topology: Sequence[tuple[str, str]] = ()) -> dict[str, Any]:
    """The GPU nodes of a ``kubectl get nodes -o json`` file as ``gpu_types`` and ``nodes``.

    Nodes without ``nvidia.com/gpu`` are left out. A GPU node without a product label
    gets the type :data:`~gpuplan.readers.slurm.UNTYPED`.

    Parameters
    ----------
    path
        The file.
    topology
        The topology levels, widest first, each with the node label that names a node's
        domain at it (:func:`parse_level_labels`); the fleet then has ``topology`` levels
        and each node its labels, down to the first level it has no label for (a domain
        is named by its label and every wider one's).

    Raises
    ------
    InputError
        Naming the file and JSON path: not a Node or a List of Nodes, a missing name, a
        quantity that does not parse, a fractional GPU count, no GPU node at all, or a
        topology label that no GPU node has.
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
    seen: set[str] = set()
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
        seen.update(key for _, key in topology if labels.get(key))
        place = {}
        for level, key in topology:
            if not labels.get(key):
                break
            place[level] = labels[key]
        if place:
            node["topology"] = place
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
    fleet: dict[str, Any] = {"gpu_types": [{"id": t, "capacity": dict(IMPORTED_CAPACITY)}
                                            for t in sorted(types)],
                             "nodes": nodes}
    for level, key in topology:
        if key not in seen:
            raise InputError(source, "", f"no GPU node has the label {key!r} of topology "
                             f"level {level!r}")
    if topology:
        fleet["topology"] = {"levels": [level for level, _ in topology]}
    return fleet
