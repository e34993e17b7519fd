"""``best-fit``: resume where the job ran before, else the tightest nodes that hold the gang.

A preempted job whose previous GPUs are all free again, and of the granted type, gets them
back (where its nodes still have room for its node demand): no migration, so it pays only
the restore overhead. Otherwise each node of its gang is one with the fewest free GPUs of
the type that still holds its share (ties: the lowest node index), on the lowest-index
free GPUs there, which keeps the large free blocks whole for large gangs.
"""

from __future__ import annotations

from typing import Any, ClassVar

from gpuplan.core.instance import IntArray
from gpuplan.core.options import NoOptions
from gpuplan.simulate.policy import ClusterView, PolicyContext


def previous_gpus(cluster: ClusterView, job: int, gpu_type: int) -> IntArray | None:
    """The job's last GPUs when they are all free, of ``gpu_type`` and with node room."""
    before = cluster.previous[job]
    if (before is None or before.size == 0
            or int(cluster.instance.gpu_type[before[0]]) != gpu_type
            or not cluster.fits(job, before)):
        return None
    return before


class BestFit:
    """Previous GPUs if free, else the fullest nodes that still hold the gang."""

    name: ClassVar[str] = "best-fit"
    description: ClassVar[str] = ("resume on the previous GPUs when free, else the nodes "
                                  "with the fewest free GPUs that hold the gang")
    options_type: ClassVar[type[Any]] = NoOptions

    def __init__(self, context: PolicyContext) -> None:
        del context

    def place(self, cluster: ClusterView, job: int, gpu_type: int) -> IntArray | None:
        """The previous GPUs, or the gang on the tightest nodes; None if none hold it."""
        before = previous_gpus(cluster, job, gpu_type)
        if before is not None:
            return before
        return cluster.gang(job, gpu_type, cluster.free[:, gpu_type].astype(float))
