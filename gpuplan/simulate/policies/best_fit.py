"""``best-fit``: resume where the job ran before, else the tightest node that holds the gang.

A preempted job whose previous GPUs are all free again, and of the granted type, gets them
back: no migration, so it pays only the restore overhead. Otherwise the job goes to the
node with the fewest free GPUs of the type that still holds its whole gang (ties: the
lowest node index), on the lowest-index free GPUs there, which keeps the large free
blocks whole for large gangs.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from gpuplan.core.instance import IntArray
from gpuplan.core.options import NoOptions
from gpuplan.simulate.policy import ClusterView, PolicyContext


def previous_gpus(cluster: ClusterView, job: int, gpu_type: int) -> IntArray | None:
    """The job's last GPUs when they are all free and of ``gpu_type``; else None."""
    before = cluster.previous[job]
    if (before is None or before.size == 0
            or int(cluster.instance.gpu_type[before[0]]) != gpu_type
            or (cluster.owner[before] != -1).any()):
        return None
    return before


def gpus_on(cluster: ClusterView, node: int, gpu_type: int, job: int) -> IntArray:
    """The job's gang on ``node``: its lowest-index free GPUs of ``gpu_type``."""
    gpus: IntArray = cluster.free_gpus(node, gpu_type)[:int(cluster.instance.gang[job])]
    return gpus


#: Free count of a node that cannot hold the gang (never the fewest).
_NO_ROOM = np.iinfo(np.int64).max


class BestFit:
    """Previous GPUs if free, else the fullest node that still holds the gang."""

    name: ClassVar[str] = "best-fit"
    description: ClassVar[str] = ("resume on the previous GPUs when free, else the node "
                                  "with the fewest free GPUs that holds the gang")
    options_type: ClassVar[type[Any]] = NoOptions

    def __init__(self, context: PolicyContext) -> None:
        del context

    def place(self, cluster: ClusterView, job: int, gpu_type: int) -> IntArray | None:
        """The previous GPUs, or the gang on the tightest node; None if no node holds it."""
        before = previous_gpus(cluster, job, gpu_type)
        if before is not None:
            return before
        free = cluster.free[:, gpu_type]
        # Nodes too small rank last; argmin takes the lowest index among equals.
        fill = np.where(free >= cluster.instance.gang[job], free, _NO_ROOM)
        node = int(np.argmin(fill))
        if free[node] < cluster.instance.gang[job]:
            return None
        return gpus_on(cluster, node, gpu_type, job)
