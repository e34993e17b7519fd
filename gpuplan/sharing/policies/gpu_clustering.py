"""GPU clustering: put pods of the same GPU shape together, fuller nodes first.

FGD's ``GpuClusteringScore``: a GPU pod's affinity is ``share-gpu`` or ``<n>-gpu``; a node's
affinities are those of the GPU pods on it. The score is ``25 * (8000 - free milli) / 8000``
(integer division) plus 75 if the node holds only the pod's affinity, 50 if it holds it among
others, 25 if it holds no GPU pod and 0 otherwise. CPU-only pods score 0 everywhere. The GPU
of a share pod is the best-fitting one.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from gpuplan.core.instance import IntArray
from gpuplan.core.options import NoOptions
from gpuplan.sharing import ShareContext
from gpuplan.sharing.cluster import MAX_SPEC_GPU, ClusterState


class GpuClusteringPolicy:
    """FGD's GpuClustering policy (see the module docstring)."""

    name: ClassVar[str] = "gpu-clustering"
    options_type: ClassVar[type[Any]] = NoOptions
    description: ClassVar[str] = "group pods of one GPU shape on fuller nodes (FGD's GpuClustering)"

    def __init__(self, context: ShareContext) -> None:
        del context  # a pure function of the node state

    def score(self, state: ClusterState, pod: int, feasible: IntArray) -> IntArray:
        """Affinity tier plus fullness of each feasible node."""
        tag = int(state.pod_affinity[pod])
        if tag < 0:
            return np.zeros(len(feasible), dtype=np.int64)
        counts = state.affinity[feasible]
        kinds = (counts > 0).sum(axis=1)
        mine = counts[:, tag] > 0
        tier = np.where(mine, np.where(kinds == 1, 75, 50), np.where(kinds == 0, 25, 0))
        fullness = 25 * (MAX_SPEC_GPU - state.gpu_free[feasible].sum(axis=1)) // MAX_SPEC_GPU
        scores: IntArray = (fullness + tier).astype(np.int64)
        return scores

    def share_gpu(self, state: ClusterState, pod: int, node: int) -> int:
        """The best-fitting GPU."""
        return state.best_fit_gpu(node, int(state.pod_milli[pod]))
