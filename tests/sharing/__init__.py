"""Tests of :mod:`gpuplan.sharing`; :func:`openb_instance` writes small openb traces by hand."""

from __future__ import annotations

from pathlib import Path

from gpuplan.core.instance import Instance
from gpuplan.readers.openb import read_openb

#: A node row: ``sn, cpu_milli, memory_mib, gpu, model``.
Node = tuple[str, int, int, int, str]
#: A pod row: ``name, cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec``.
Pod = tuple[str, int, int, int, int, str]


def openb_instance(directory: Path, nodes: list[Node], pods: list[Pod]) -> Instance:
    """Write an openb node list and pod list into ``directory`` and read them back."""
    node_csv, pod_csv = directory / "nodes.csv", directory / "pods.csv"
    node_csv.write_text("sn,cpu_milli,memory_mib,gpu,model\n"
                        + "".join(",".join(map(str, row)) + "\n" for row in nodes))
    pod_csv.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
                       + "".join(",".join(map(str, row)) + "\n" for row in pods))
    return read_openb(node_csv, pod_csv)
