"""GPU packing: share pods onto used GPUs, then free GPUs of used nodes, then idle nodes.

FGD's ``GpuPackingScore`` in integers: on a node whose GPUs are all free the score is
``33 - free GPUs``; otherwise the pod takes GPUs with room in ascending free milli and scores
``max(50 - fully free GPUs taken, 33)`` if it needs a fully free GPU, else
``max(100 - (sum of free percent of the GPUs taken) / 10, 50)``. CPU-only pods score 0
everywhere (so they go to the tie rank's first feasible node). The GPU of a share pod is the
best-fitting one.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from gpuplan.core.instance import IntArray
from gpuplan.core.options import NoOptions
from gpuplan.sharing import ShareContext
from gpuplan.sharing.cluster import GPU_MILLI, ClusterState


class GpuPackingPolicy:
    """FGD's GpuPacking policy (see the module docstring)."""

    name: ClassVar[str] = "gpu-packing"
    options_type: ClassVar[type[Any]] = NoOptions
    description: ClassVar[str] = "pack onto used GPUs, then used nodes (FGD's GpuPacking)"

    def __init__(self, context: ShareContext) -> None:
        del context  # a pure function of the node state

    def score(self, state: ClusterState, pod: int, feasible: IntArray) -> IntArray:
        """FGD's three-tier packing score of each feasible node."""
        milli, gang = int(state.pod_milli[pod]), int(state.pod_gang[pod])
        if milli <= 0:
            return np.zeros(len(feasible), dtype=np.int64)
        free = np.sort(state.gpu_free[feasible], axis=1)   # ascending, as FGD walks them
        fully = (free == GPU_MILLI).sum(axis=1)
        idle = fully == state.n_gpus[feasible]
        roomy = free >= milli
        taken = roomy & (np.cumsum(roomy, axis=1) <= gang)
        fresh = (taken & (free == GPU_MILLI)).sum(axis=1)
        percent = (np.where(taken, free, 0) * 100 // GPU_MILLI).sum(axis=1)
        scores: IntArray = np.where(
            idle, np.maximum(33 - fully, fully),
            np.where(fresh > 0, np.maximum(50 - fresh, 33),
                     np.maximum(100 - percent // 10, 50))).astype(np.int64)
        return scores

    def share_gpu(self, state: ClusterState, pod: int, node: int) -> int:
        """The best-fitting GPU."""
        return state.best_fit_gpu(node, int(state.pod_milli[pod]))
