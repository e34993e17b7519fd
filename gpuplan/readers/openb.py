"""Alibaba's openb GPU-sharing trace (cluster-trace-gpu-v2023, the FGD paper's data).

A node list (``sn, cpu_milli, memory_mib, gpu, model``) becomes the fleet: one GPU type per
model, each GPU with ``gpu_milli`` capacity 1000, each node with ``cpu_milli`` and
``memory_mib`` capacities. A pod list (``name, cpu_milli, memory_mib, num_gpu, gpu_milli``
and optionally ``gpu_spec, qos, pod_phase, creation_time, deletion_time,
scheduled_time``) becomes the jobs, in file order: a gang of ``num_gpu`` GPUs (0 for a
CPU-only pod) each taking ``gpu_milli`` (a share of one GPU when ``num_gpu`` is 1, whole
GPUs otherwise), drawing its CPU and memory on its node, allowed on the ``|``-separated
models of ``gpu_spec`` (every model when empty). The objective is ``max-weight`` with a
pod's weight its GPU request in milli-GPUs, so a placement's value is the GPU capacity it
allocates. Times are seconds: a pod is released at ``creation_time`` and holds its
resources until ``deletion_time`` (at least one second, the trace's resolution).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gpuplan.core.errors import InputError
from gpuplan.core.files import read_text
from gpuplan.core.instance import Instance
from gpuplan.readers.instance_file import instance_from_data

#: Capacity of one GPU in milli-GPUs, the unit of ``gpu_milli``.
GPU_MILLI = 1000

#: Columns every node list has; ``num_gpu`` and ``gpu_type`` are accepted for ``gpu`` and
#: ``model``.
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
_NODE_ALIASES = {"num_gpu": "gpu", "gpu_type": "model"}

#: Columns every pod list has; the trace's variants drop the rest (``multigpu50``).
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")

#: Optional pod columns: a missing one means no type constraint and no times.
POD_OPTIONAL = ("gpu_spec", "qos", "pod_phase", "creation_time", "deletion_time",
                "scheduled_time")

#: Most GPUs one openb node or pod has; larger values are typos.
MAX_NODE_GPUS = 64


def _rows(path: Path, columns: tuple[str, ...], aliases: dict[str, str]) -> Iterator[
        tuple[int, dict[str, str]]]:
    """Each data row of a CSV file with its line number, after checking the header.

    Raises
    ------
    InputError
        At ``line 1`` for a file of blank lines only; at the header's line for a header
        without one of ``columns``; at the line of a row with another number of fields
        than the header, or that is not CSV.
    """
    reader = csv.reader(io.StringIO(read_text(path), newline=""))
    source = str(path)
    try:
        # Blank lines before the header are skipped, as between rows.
        first = next((row for row in reader if any(field.strip() for field in row)), [])
        if not first:
            raise InputError(source, "line 1", "the file is empty; expected a header with "
                             f"{', '.join(columns)}")
        header = [aliases.get(name.strip(), name.strip()) for name in first]
        missing = [c for c in columns if c not in header]
        if missing:
            raise InputError(source, f"line {reader.line_num}", f"missing column "
                             f"{', '.join(missing)} (the header has {', '.join(header)})")
        for row in reader:
            if not row:
                continue
            if len(row) != len(header):
                raise InputError(source, f"line {reader.line_num}", f"{len(row)} fields; "
                                 f"the header has {len(header)}")
            yield reader.line_num, dict(zip(header, (v.strip() for v in row), strict=True))
    except csv.Error as exc:
        raise InputError(source, f"line {reader.line_num}", f"not CSV: {exc}") from None


def _integer(source: str, line: int, row: dict[str, str], field: str, low: int,
             high: int) -> int:
    """A whole number in ``[low, high]`` from a row, or the error naming line and field."""
    text = row[field]
    try:
        value = int(text)
    except ValueError:
        raise InputError(source, f"line {line}", f"{field} is {text!r}; expected a whole "
                         "number") from None
    if not low <= value <= high:
        raise InputError(source, f"line {line}", f"{field} is {value}; expected "
                         f"{low} to {high}")
    return value


def _nodes(path: Path) -> list[dict[str, Any]]:
    """The node list as instance node entries."""
    source, nodes, seen = str(path), [], set()
    for line, row in _rows(path, NODE_COLUMNS, _NODE_ALIASES):
        name = row["sn"]
        if not name or name in seen:
            raise InputError(source, f"line {line}", f"sn {name!r} is "
                             + ("empty" if not name else "listed twice"))
        seen.add(name)
        gpus = _integer(source, line, row, "gpu", 0, MAX_NODE_GPUS)
        if gpus == 0 or not row["model"]:
            raise InputError(source, f"line {line}", f"node {name!r} has {gpus} GPUs of "
                             f"model {row['model']!r}: gpuplan's fleet holds GPU nodes "
                             "(use the trace's openb_node_list_gpu_node.csv)")
        nodes.append({
            "id": name,
            "gpus": {row["model"]: gpus},
            "resources": {field: _integer(source, line, row, field, 1, 10**9)
                          for field in ("cpu_milli", "memory_mib")},
        })
    if not nodes:
        raise InputError(source, "", "no nodes")
    return nodes


def _pod(source: str, line: int, row: dict[str, str], models: set[str]) -> dict[str, Any]:
    """One pod row as an instance job entry."""
    name = row["name"]
    if not name:
        raise InputError(source, f"line {line}", "name is empty")
    gpus = _integer(source, line, row, "num_gpu", 0, MAX_NODE_GPUS)
    milli = _integer(source, line, row, "gpu_milli", 0, GPU_MILLI)
    if gpus == 0 and milli != 0:
        raise InputError(source, f"line {line}", f"gpu_milli is {milli} but num_gpu is 0")
    if gpus >= 1 and milli == 0:
        raise InputError(source, f"line {line}", f"gpu_milli is 0 but num_gpu is {gpus}")
    if gpus > 1 and milli != GPU_MILLI:
        raise InputError(source, f"line {line}", f"gpu_milli is {milli} with num_gpu "
                         f"{gpus}: a multi-GPU pod takes whole GPUs ({GPU_MILLI})")
    job: dict[str, Any] = {
        "id": name,
        "gpus": gpus,
        "demand": {"gpu_milli": milli} if gpus else {},
        "node_demand": {field: _integer(source, line, row, field, 0, 10**9)
                        for field in ("cpu_milli", "memory_mib")},
        "weight": gpus * milli,
        "duration_s": 1.0,
    }
    spec = row.get("gpu_spec", "")
    if spec and spec.lower() != "nan":
        allowed = [m.strip() for m in spec.split("|")]
        unknown = [m for m in allowed if m not in models]
        if unknown:
            raise InputError(source, f"line {line}", f"gpu_spec names {', '.join(unknown)}, "
                             f"which no node has (models: {', '.join(sorted(models))})")
        job["allowed_types"] = allowed
    if row.get("creation_time", ""):
        created = _integer(source, line, row, "creation_time", 0, 10**9)
        deleted = _integer(source, line, row, "deletion_time", created, 10**9)
        if row.get("scheduled_time", ""):
            _integer(source, line, row, "scheduled_time", created, 10**9)
        job["release_s"] = float(created)
        job["duration_s"] = float(max(deleted - created, 1))
    return job


def gpu_specs(pods_csv: str | Path) -> tuple[str, ...]:
    """Each pod's ``gpu_spec`` exactly as the file writes it ("" for none or a CPU-only pod).

    FGD's typical pods are keyed by this text, so ``V100M16|V100M32|V100M32`` is a shape of
    its own although it allows what ``V100M16|V100M32`` allows; an exact replay needs it.

    Raises
    ------
    InputError
        As :func:`openb_document` for the header.
    """
    return tuple(row.get("gpu_spec", "") if row["num_gpu"] not in ("", "0") else ""
                 for _, row in _rows(Path(pods_csv), POD_COLUMNS, {}))


def openb_document(nodes_csv: str | Path, pods_csv: str | Path) -> dict[str, Any]:
    """An instance document for an openb node list and pod list.

    Its ``lines`` entry (not part of the instance format) gives each job's line in the pod
    list, for messages; :func:`read_openb` drops it.

    Raises
    ------
    InputError
        Naming the file, the line and the field of the first bad row.
    """
    nodes = _nodes(Path(nodes_csv))
    models = {model for node in nodes for model in node["gpus"]}
    path = Path(pods_csv)
    jobs, lines, seen = [], [], set()
    for line, row in _rows(path, POD_COLUMNS, {}):
        job = _pod(str(path), line, row, models)
        if job["id"] in seen:
            raise InputError(str(path), f"line {line}", f"pod {job['id']!r} listed twice")
        seen.add(job["id"])
        jobs.append(job)
        lines.append(line)
    if not jobs:
        raise InputError(str(path), "", "no pods")
    return {
        "name": path.stem,
        "description": f"openb pods {path.name} on nodes {Path(nodes_csv).name}",
        # Pods ask for milli-GPUs: a GPU is shared by the pods its 1000 milli hold.
        "gpu_types": [{"id": m, "capacity": {"gpu_milli": GPU_MILLI}, "sharing": True}
                      for m in sorted(models)],
        "nodes": nodes,
        "jobs": jobs,
        "objective": "max-weight",
        "lines": lines,
    }


def read_openb(nodes_csv: str | Path, pods_csv: str | Path) -> Instance:
    """Read an openb node list and pod list into an instance (see the module docstring).

    Raises
    ------
    InputError
        Naming the file, the line and the field of the first bad row. A pod no node can
        hold (more CPU than any node of its models) is kept: a replay fails it.
    """
    document = openb_document(nodes_csv, pods_csv)
    lines = document.pop("lines")
    source = str(pods_csv)
    try:
        return instance_from_data(document, source, document["name"])
    except InputError as error:
        # The builder locates jobs by index; a CSV user needs the line.
        if error.path.startswith("jobs["):
            index = int(error.path[5:error.path.index("]")])
            raise InputError(source, f"line {lines[index]}", error.message) from None
        raise
