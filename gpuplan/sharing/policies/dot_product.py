"""Dot product (Tetris): prefer the node whose free (CPU, GPU) vector aligns least with the pod.

FGD's ``DotProductScore`` with ``-dimext merge -norm max`` (the paper's run): the node's free
CPU and total free GPU milli and the pod's CPU and total GPU milli, each divided by the largest
node spec (128 CPUs, 8 GPUs), give the score ``int64(100 * (1 - dot / 2))``. The GPU of a share
pod is the best-fitting one (``-gpusel best``).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from gpuplan.core.instance import IntArray
from gpuplan.core.options import NoOptions
from gpuplan.sharing import ShareContext
from gpuplan.sharing.cluster import MAX_SPEC_CPU, MAX_SPEC_GPU, ClusterState


class DotProductPolicy:
    """FGD's DotProd policy (see the module docstring)."""

    name: ClassVar[str] = "dot-product"
    options_type: ClassVar[type[Any]] = NoOptions
    description: ClassVar[str] = "least aligned free (CPU, GPU) vector (Tetris, FGD's DotProd)"

    def __init__(self, context: ShareContext) -> None:
        del context  # a pure function of the node state

    def score(self, state: ClusterState, pod: int, feasible: IntArray) -> IntArray:
        """``int64(100 * (1 - (cpu_free*cpu + gpu_free*gpu) / 2))`` on normalised vectors."""
        pod_cpu = float(state.pod_cpu[pod]) / MAX_SPEC_CPU
        pod_gpu = float(state.pod_gang[pod] * state.pod_milli[pod]) / MAX_SPEC_GPU
        node_cpu = state.cpu_free[feasible] / MAX_SPEC_CPU
        node_gpu = state.gpu_free[feasible].sum(axis=1) / MAX_SPEC_GPU
        dot = node_cpu * pod_cpu + node_gpu * pod_gpu
        scores: IntArray = (100.0 * (1.0 - dot / 2.0)).astype(np.int64)
        return scores

    def share_gpu(self, state: ClusterState, pod: int, node: int) -> int:
        """The best-fitting GPU."""
        return state.best_fit_gpu(node, int(state.pod_milli[pod]))
