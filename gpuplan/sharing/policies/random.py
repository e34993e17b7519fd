"""Random: a uniformly random feasible node and a random GPU on it (FGD's baseline).

FGD's ``RandomScore`` draws ``rand.Intn(#feasible)`` from Go's global source in PreScore and
gives that node the top score; its ``random`` GPU selection walks the GPUs with room in index
order and keeps each with probability ``1/count`` (reservoir sampling, one ``Intn`` per GPU).
FGD lists the feasible nodes in the order its parallel filter finds them, which no one can
reproduce; here they are in node order, so the draws match FGD's in distribution only.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from gpuplan.core.instance import IntArray
from gpuplan.core.options import NoOptions
from gpuplan.sharing import ShareContext
from gpuplan.sharing.cluster import ClusterState

#: Kubernetes' ``MaxNodeScore``.
MAX_SCORE = 100


class RandomPolicy:
    """FGD's Random policy (see the module docstring)."""

    name: ClassVar[str] = "random"
    options_type: ClassVar[type[Any]] = NoOptions
    description: ClassVar[str] = "a uniformly random feasible node and GPU (FGD's Random)"

    def __init__(self, context: ShareContext) -> None:
        self.rng = context.rng

    def score(self, state: ClusterState, pod: int, feasible: IntArray) -> IntArray:
        """Top score for one feasible node drawn with Go's ``Intn``, 0 for the others."""
        scores = np.zeros(len(feasible), dtype=np.int64)
        scores[self.rng.intn(len(feasible))] = MAX_SCORE
        return scores

    def share_gpu(self, state: ClusterState, pod: int, node: int) -> int:
        """A GPU with room drawn by FGD's reservoir walk."""
        chosen = -1
        roomy = np.flatnonzero(state.gpu_free[node] >= state.pod_milli[pod])
        for seen, gpu in enumerate(roomy.tolist(), start=1):
            if self.rng.intn(seen) == 0:
                chosen = gpu
        return chosen
