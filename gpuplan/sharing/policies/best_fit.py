"""Best fit: the node left with the least free CPU and GPU after the pod.

FGD's ``BestFitScore``: ``v = (free CPU - CPU) / 128000 * 0.5 + (free GPU milli - GPU milli) /
8000 * 0.5`` and the score ``int64((1 - v) * 100)``, then Kubernetes-style min-max
normalisation over the feasible nodes in integers, ``(s - lo) * 100 / (hi - lo)`` (all 0 when
every node scores the same), which merges near scores into ties. The GPU of a share pod is the
best-fitting one.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from gpuplan.core.instance import IntArray
from gpuplan.core.options import NoOptions
from gpuplan.sharing import ShareContext
from gpuplan.sharing.cluster import MAX_SPEC_CPU, MAX_SPEC_GPU, ClusterState


def normalize(scores: IntArray) -> IntArray:
    """FGD's ``NormalizeScore``: min-max to 0..100 in integer arithmetic."""
    low, high = scores.min(), scores.max()
    if high == low:
        return np.zeros_like(scores)
    scaled: IntArray = (scores - low) * 100 // (high - low)
    return scaled


class BestFitPolicy:
    """FGD's BestFit policy (see the module docstring)."""

    name: ClassVar[str] = "best-fit"
    options_type: ClassVar[type[Any]] = NoOptions
    description: ClassVar[str] = "least free CPU and GPU left on the node (FGD's BestFit)"

    def __init__(self, context: ShareContext) -> None:
        del context  # a pure function of the node state

    def score(self, state: ClusterState, pod: int, feasible: IntArray) -> IntArray:
        """Normalised best-fit score of each feasible node."""
        cpu_left = state.cpu_free[feasible] - state.pod_cpu[pod]
        gpu_left = state.gpu_free[feasible].sum(axis=1) - state.pod_gang[pod] * state.pod_milli[pod]
        waste = cpu_left / MAX_SPEC_CPU * 0.5 + gpu_left / MAX_SPEC_GPU * 0.5
        return normalize(((1.0 - waste) * 100.0).astype(np.int64))

    def share_gpu(self, state: ClusterState, pod: int, node: int) -> int:
        """The best-fitting GPU."""
        return state.best_fit_gpu(node, int(state.pod_milli[pod]))
