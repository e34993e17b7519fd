"""An imported fleet (from Slurm or Kubernetes) as an instance file, with or without jobs.

:func:`fleet_document` takes the ``gpu_types``, ``nodes`` (and ``topology``) a cluster
reader found and either writes them alone, for the user to add jobs to, or puts them
under the jobs and objective of a file the user already has, which is then validated as
a whole instance.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from gpuplan.core.errors import InputError
from gpuplan.readers import load_data
from gpuplan.readers.instance_file import (
    GpuTypeSpec,
    NodeSpec,
    TopologySpec,
    instance_from_data,
)


def _optional(fleet: dict[str, Any]) -> dict[str, Any]:
    """What the cluster gives beyond GPU types and nodes: its ``topology``, ``partitions``."""
    return {key: fleet[key] for key in ("topology", "partitions") if key in fleet}


def fleet_document(fleet: dict[str, Any], source: str, name: str,
                   jobs_file: str | Path | None = None,
                   node_resources: bool = False) -> dict[str, Any]:
    """The instance document of ``fleet``: alone (``jobs: []``), or with a file's jobs.

    Parameters
    ----------
    fleet
        ``gpu_types`` and ``nodes``, and ``topology`` and ``partitions`` when the cluster
        has them, as the cluster readers return them.
    source
        The cluster file, for messages.
    name
        The instance's name when there is no jobs file.
    jobs_file
        An instance file (JSON or YAML) whose jobs, objective and other fields are kept and
        whose ``gpu_types``, ``nodes`` (and ``topology`` and ``partitions``, when the
        fleet has them) are replaced by the fleet's; a GPU type it also defines keeps its
        capacity, price and sharing from it.
    node_resources
        Keep the nodes' CPUs and memory (``cpu_milli``, ``memory_mib``), which jobs'
        ``node_demand`` draws on; an instance whose jobs draw none plans as the GPUs alone.

    Raises
    ------
    InputError
        For a fleet entry the format refuses, or (with ``jobs_file``) a file that does not
        read or whose jobs do not fit the fleet (say, a GPU type it does not have), naming
        the file and field.
    """
    if not node_resources:
        fleet = {**fleet, "nodes": [{k: v for k, v in node.items() if k != "resources"}
                                    for node in fleet["nodes"]]}
    if jobs_file is None:
        for key, spec in (("gpu_types", GpuTypeSpec), ("nodes", NodeSpec)):
            for k, entry in enumerate(fleet[key]):
                try:
                    spec.model_validate(entry)
                except ValidationError as exc:
                    error = exc.errors()[0]
                    raise InputError(source, f"{key}[{k}]", f"{entry.get('id')!r}: "
                                     f"{error['msg']}") from None
        try:
            if "topology" in fleet:
                TopologySpec.model_validate(fleet["topology"])
        except ValidationError as exc:
            raise InputError(source, "topology.levels", exc.errors()[0]["msg"]) from None
        return {"name": name, "gpu_types": fleet["gpu_types"], "nodes": fleet["nodes"],
                **_optional(fleet), "jobs": []}
    data = load_data(Path(jobs_file))
    if not isinstance(data, dict):
        raise InputError(str(jobs_file), "", "an instance file holds one object")
    known = {t.get("id"): t for t in data.get("gpu_types", []) if isinstance(t, dict)}
    types = [{**t, **{k: v for k, v in known.get(t["id"], {}).items() if k != "id"}}
             for t in fleet["gpu_types"]]
    document = {**data, "gpu_types": types, "nodes": fleet["nodes"], **_optional(fleet)}
    instance_from_data(document, f"{jobs_file} with the fleet of {source}")
    return document
