"""FGD: fragmentation gradient descent (Weng et al., ATC'23), as its simulator scores it.

A node scores ``int64(sigmoid((F - F') / 1000) * 100)`` where ``F`` is its fragmentation
(:mod:`gpuplan.sharing.frag`) now and ``F'`` after the pod. A share pod is tried on every GPU
with room, in index order, and takes the first GPU of the highest (integer) score, which is
also FGD's GPU choice (``-gpusel FGD``); any other pod takes the CPU and, in ascending free
milli, the first GPUs with room.

A node's score for a pod depends only on the node's state and the pod's shape (CPU, per-GPU
milli, GPU count), so scores are cached per shape and recomputed only for nodes whose
:attr:`~gpuplan.sharing.cluster.ClusterState.version` moved since.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from gpuplan.core.instance import IntArray
from gpuplan.core.options import NoOptions
from gpuplan.sharing import ShareContext
from gpuplan.sharing.cluster import ClusterState
from gpuplan.sharing.frag import NodeFrag, frag_amount, frag_parts

#: Kubernetes' ``MaxNodeScore``.
MAX_SCORE = 100.0


class _ShapeCache:
    """Scores and GPU choices of every node for one pod shape, with the node versions seen."""

    def __init__(self, n_nodes: int) -> None:
        self.version = np.full(n_nodes, -1, dtype=np.int64)
        self.score = np.zeros(n_nodes, dtype=np.int64)
        self.gpu = np.full(n_nodes, -1, dtype=np.int64)


def _scores(drop: np.ndarray) -> IntArray:
    """FGD's integer score of fragmentation drops (in milli-GPUs)."""
    return (1.0 / (1.0 + np.exp(-(drop / 1000.0))) * MAX_SCORE).astype(np.int64)


class FGDPolicy:
    """FGD's policy (see the module docstring)."""

    name: ClassVar[str] = "fgd"
    options_type: ClassVar[type[Any]] = NoOptions
    description: ClassVar[str] = ("least expected fragmentation over the typical pods "
                                  "(FGD, ATC'23)")

    def __init__(self, context: ShareContext) -> None:
        self.frag: NodeFrag = context.frag
        self._cache: dict[tuple[int, int, int], _ShapeCache] = {}

    def _shape(self, state: ClusterState, pod: int) -> _ShapeCache:
        """The cache of the pod's shape, with every node current (fresh nodes recomputed)."""
        key = (int(state.pod_cpu[pod]), int(state.pod_milli[pod]), int(state.pod_gang[pod]))
        cache = self._cache.get(key)
        if cache is None:
            cache = self._cache[key] = _ShapeCache(state.n_nodes)
        return cache

    def _update(self, state: ClusterState, pod: int, nodes: IntArray,
                cache: _ShapeCache) -> None:
        """Recompute the cached score (and GPU) of ``nodes`` that changed since cached."""
        nodes = nodes[cache.version[nodes] != state.version[nodes]]
        if not len(nodes):
            return
        self.frag.refresh()
        cpu = state.cpu_free[nodes] - state.pod_cpu[pod]
        milli, gang = int(state.pod_milli[pod]), int(state.pod_gang[pod])
        before = self.frag.amount[nodes]
        typical = self.frag.typical
        if state.pod_share[pod]:
            # One candidate state per GPU with room: the pod's milli taken from that GPU.
            free = state.gpu_free[nodes]
            row, slot = np.nonzero(free >= milli)
            after_gpu = free[row]
            after_gpu[np.arange(len(row)), slot] -= milli
            after = frag_amount(frag_parts(typical, cpu[row], after_gpu,
                                           state.node_type[nodes][row]))
            scores = np.full(free.shape, -1, dtype=np.int64)
            scores[row, slot] = _scores(before[row] - after)
            cache.gpu[nodes] = np.argmax(scores, axis=1)
            cache.score[nodes] = scores.max(axis=1)
        else:
            free = np.sort(state.gpu_free[nodes], axis=1)
            roomy = free >= milli
            free = free - milli * (roomy & (np.cumsum(roomy, axis=1) <= gang))
            after = frag_amount(frag_parts(typical, cpu, free, state.node_type[nodes]))
            cache.score[nodes] = _scores(before - after)
        cache.version[nodes] = state.version[nodes]

    def score(self, state: ClusterState, pod: int, feasible: IntArray) -> IntArray:
        """FGD's score of each feasible node."""
        cache = self._shape(state, pod)
        self._update(state, pod, feasible, cache)
        return cache.score[feasible]

    def share_gpu(self, state: ClusterState, pod: int, node: int) -> int:
        """The GPU whose use raises fragmentation least (first of the best integer score)."""
        cache = self._shape(state, pod)
        self._update(state, pod, np.array([node], dtype=np.int64), cache)
        return int(cache.gpu[node])
