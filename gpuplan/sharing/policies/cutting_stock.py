"""Cutting-stock fit: gpuplan's own online placement for GPU sharing (issue 18).

Under FGD's protocol (each pod placed on arrival, knowing the pods so far and the trace's
typical pods), every feasible node, and for a share pod every GPU on it with room, gets a cost
in milli-GPUs; the cheapest wins. The cost has three parts:

- **Stranded capacity** (:func:`stranded`): the rise in the node's free GPU milli that repeated pods
  of each typical shape could not use, weighted by the shapes' probabilities. It is FGD's measure
  (GPUs too small for a shape, wrong model) except that it counts how many pods of a shape the
  node's CPU still admits against how many its GPUs hold: FGD asks only whether *one* pod fits, so a
  node with eight free GPUs and 12 CPUs left looks unfragmented to it although seven of its GPUs
  are stranded for 11-CPU pods.
- **Gap prices** (share pods, :class:`GapPrices`): the dual prices of the cutting-stock LP that
  packs the typical share pods into GPUs (solved once with HiGHS by column generation) give each
  pod size a value in GPUs, and a GPU gap of ``g`` milli the most a set of sizes fitting in it is
  worth. Putting a pod of size ``s`` into a gap ``g`` loses ``V(g) - V(g - s) - v(s)`` GPUs: zero
  when the pod is part of a best completion of the gap (a 470 beside a 470), positive when it
  spoils one (a 320 beside a 470 leaves 210 that only rare small pods fill). Weighted by
  :data:`GAP_WEIGHT`, this decides the GPU before the other parts do.
- **Fill order**: a node later in the node-name order costs up to :data:`ORDER_WEIGHT` more, so the
  cluster fills as a front moving through a random mix of node models (first fit), with the two
  other parts choosing among nearby nodes. Measured, this is the single largest gain: without it
  the cheapest node for each pod spreads pods of one kind over the nodes that suit them now, and
  the front no longer mixes the pods that complete each other.

Costs depend on the node's state and the pod's shape (CPU, per-GPU milli, GPU count) only, so they
are cached per shape and recomputed for nodes whose
:attr:`~gpuplan.sharing.cluster.ClusterState.version` moved since. On openb_pod_list_default
(seeds 42..51) it allocates more of the GPUs than FGD at 100% and at 130% arrived, and less
without either the gap prices or the fill order (docs/benchmarks.md, "gpuplan's own online
placement beats FGD: `cutting-stock`").
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

import numpy as np

from gpuplan.backends import backend_for
from gpuplan.backends.base import Capabilities
from gpuplan.core.budget import Budget, Limits
from gpuplan.core.instance import FloatArray, IntArray
from gpuplan.core.options import NoOptions
from gpuplan.models.linear import LazyNames, RowBuilder
from gpuplan.sharing import ShareContext
from gpuplan.sharing.cluster import GPU_MILLI, ClusterState
from gpuplan.sharing.frag import TypicalPods

logger = logging.getLogger(__name__)

#: Milli-GPUs a share pod's cost rises per GPU of gap value it loses: large enough that the gap
#: prices choose the GPU (their steps are 1/12 GPU and more) and stranded capacity only breaks
#: their ties; 10, 30 and 100 measured the same.
GAP_WEIGHT = 30.0 * GPU_MILLI
#: Milli-GPUs the last node of the fill order costs more than the first (linear in between).
ORDER_WEIGHT = 5000.0
#: Cost units per integer score step (scores are int64 for the replay's tie rule).
SCORE_STEPS = 1000.0
#: A pattern improves the cutting-stock LP when its priced value exceeds one GPU by this.
IMPROVES = 1e-9
#: Column generation stops after this many rounds (a few dozen suffice on the openb traces).
MAX_ROUNDS = 500


def stranded(typical: TypicalPods, cpu_free: IntArray, gpu_free: IntArray,
             node_type: IntArray) -> FloatArray:
    """Free GPU milli of each node state that repeated typical pods could not use.

    For each GPU shape ``k`` (CPU-only shapes use no GPU and add nothing): on a model the shape
    may not use, all the free milli; on a node whose GPUs hold no pod of the shape, all of it;
    otherwise the milli on GPUs too small for the shape, plus, when the CPU admits only ``P``
    of the ``N`` pods the GPUs hold, the share ``1 - P/N`` of the milli on the GPUs with room.
    The states' values are these amounts weighted by the shapes' probabilities.

    Parameters
    ----------
    typical
        The typical pods.
    cpu_free
        ``(M,)`` free CPU milli of each state.
    gpu_free
        ``(M, G)`` free milli per GPU slot (0 for missing slots).
    node_type
        ``(M,)`` GPU type index of each state's node.
    """
    total = gpu_free.sum(axis=1).astype(float)[:, None]
    milli = np.maximum(typical.milli, 1)
    roomy = gpu_free[:, None, :] >= typical.milli[None, :, None]                  # (M, K, G)
    short = np.where(roomy, 0, gpu_free[:, None, :]).sum(axis=2)
    share = (typical.gang == 1) & (typical.milli < GPU_MILLI)
    held = np.where(share[None, :], (gpu_free[:, None, :] // milli[None, :, None]).sum(axis=2),
                    roomy.sum(axis=2) // np.maximum(typical.gang, 1)[None, :])
    admitted = cpu_free[:, None] // np.maximum(typical.cpu, 1)[None, :]
    cut = np.clip(1.0 - admitted / np.maximum(held, 1), 0.0, 1.0)
    amount = np.where(held > 0, short + (total - short) * cut, total)
    amount = np.where(typical.allowed[:, node_type].T, amount, total)
    amount = np.where(typical.milli[None, :] > 0, amount, 0.0)
    values: FloatArray = amount @ typical.prob
    return values


def _best_fill(sizes: IntArray, prices: FloatArray) -> tuple[FloatArray, IntArray]:
    """Unbounded knapsack over a GPU: the best priced fill of every gap 0..1000 milli.

    Returns the value of each gap and the size index added last at each gap (-1: the gap one
    milli smaller has the same fill), from which :func:`_pattern` rebuilds the fill.
    """
    value = np.zeros(GPU_MILLI + 1)
    last = np.full(GPU_MILLI + 1, -1, dtype=np.int64)
    for gap in range(1, GPU_MILLI + 1):
        value[gap], fits = value[gap - 1], np.flatnonzero(sizes <= gap)
        if len(fits):
            gains = value[gap - sizes[fits]] + prices[fits]
            best = int(np.argmax(gains))
            if gains[best] > value[gap]:
                value[gap], last[gap] = gains[best], fits[best]
    return value, last


def _pattern(sizes: IntArray, last: IntArray) -> IntArray:
    """How many pods of each size the best fill of a whole GPU holds."""
    counts = np.zeros(len(sizes), dtype=np.int64)
    gap = GPU_MILLI
    while gap > 0:
        if last[gap] < 0:
            gap -= 1
        else:
            counts[last[gap]] += 1
            gap -= int(sizes[last[gap]])
    return counts


class GapPrices:
    """Values of share pod sizes and GPU gaps from the cutting-stock LP of the typical pods.

    The LP packs ``count[s]`` pods of each size ``s`` into as few GPUs as possible, a GPU
    taking any multiset of sizes up to 1000 milli (a *pattern*). Column generation starts from
    the one-size patterns and adds the best priced pattern (an unbounded knapsack at the LP's
    dual prices) while it is worth more than one GPU. At the optimum the duals ``v(s)`` say how
    much of a GPU a pod of size ``s`` is worth, and the knapsack value ``V(g)`` how much the
    best set of sizes fitting in a gap of ``g`` milli is.

    Parameters
    ----------
    sizes
        ``(S,)`` distinct share pod sizes in milli (1..999).
    count
        ``(S,)`` pods of each size.

    Attributes
    ----------
    gap_value
        ``(1001,)`` ``V(g)`` for ``g`` = 0..1000 milli.
    size_value
        ``(1001,)`` ``v(s)`` by size: the dual price of the LP's sizes, ``V(s)`` for the others
        (what the gap the pod fills could otherwise hold).
    rounds
        Column generation rounds.

    Raises
    ------
    RuntimeError
        If HiGHS does not solve the LP to optimality (it always has one).
    """

    def __init__(self, sizes: IntArray, count: IntArray) -> None:
        sizes = np.asarray(sizes, dtype=np.int64)
        prices = np.zeros(len(sizes))
        self.rounds = 0
        if len(sizes):
            prices = self._solve(sizes, np.asarray(count, dtype=float))
        self.gap_value, _ = _best_fill(sizes, prices)
        self.size_value = self.gap_value.copy()
        self.size_value[sizes] = prices

    def _solve(self, sizes: IntArray, count: FloatArray) -> FloatArray:
        """The LP's dual prices of the sizes, by column generation."""
        n = len(sizes)
        rows = RowBuilder()
        alone = GPU_MILLI // sizes
        rows.add(np.arange(n), np.arange(n), alone.astype(float), count, np.full(n, np.inf),
                 LazyNames(n, lambda i: f"pods of size {sizes[i]}"))
        program = rows.program("min", np.ones(n), np.zeros(n), np.full(n, np.inf),
                               np.zeros(n, dtype=bool), LazyNames(n, lambda j: f"pattern {j}"))
        budget = Budget()
        session = backend_for(Capabilities(incremental=True)).open(program, Limits(budget))
        while True:
            duals = session.solve(budget).duals
            if duals is None:   # the LP is feasible and bounded: a HiGHS failure
                raise RuntimeError("the backend did not solve the cutting-stock LP of the typical "
                                   "share pods to optimality")
            prices: FloatArray = np.maximum(duals, 0.0)
            value, last = _best_fill(sizes, prices)
            self.rounds += 1
            if value[GPU_MILLI] <= 1.0 + IMPROVES or self.rounds >= MAX_ROUNDS:
                logger.debug("cutting-stock LP: %d sizes, %d rounds", n, self.rounds)
                return prices
            pattern = _pattern(sizes, last)
            used = np.flatnonzero(pattern)
            session.add_columns(np.ones(1), np.full(1, np.inf), np.array([0, len(used)]),
                                used, pattern[used].astype(float))

    def loss(self, gap: IntArray, size: int) -> FloatArray:
        """GPUs of value lost by putting a pod of ``size`` milli into gaps of ``gap >= size``.

        Never negative: a gap's best fill is at least the pod's value plus the best fill of
        what the pod leaves (the knapsack value is superadditive); the floor only absorbs
        rounding.
        """
        lost: FloatArray = np.maximum(self.gap_value[gap] - self.gap_value[gap - size]
                                      - self.size_value[size], 0.0)
        return lost


def share_sizes(typical: TypicalPods) -> tuple[IntArray, IntArray]:
    """The distinct per-GPU milli of the typical share pods and how many pods have each."""
    share = (typical.gang == 1) & (typical.milli > 0) & (typical.milli < GPU_MILLI)
    sizes, inverse = np.unique(typical.milli[share], return_inverse=True)
    count: IntArray = np.bincount(inverse.ravel(), weights=typical.count[share],
                                  minlength=len(sizes)).astype(np.int64)
    return sizes.astype(np.int64), count


class _ShapeCosts:
    """Costs (and best GPUs) of every node for one pod shape, with the node versions seen."""

    def __init__(self, n_nodes: int) -> None:
        self.version = np.full(n_nodes, -1, dtype=np.int64)
        self.cost = np.zeros(n_nodes)
        self.gpu = np.full(n_nodes, -1, dtype=np.int64)


class CuttingStockPolicy:
    """gpuplan's cutting-stock fit (see the module docstring)."""

    name: ClassVar[str] = "cutting-stock"
    options_type: ClassVar[type[Any]] = NoOptions
    description: ClassVar[str] = ("gpuplan's own: GPU gaps priced by a cutting-stock LP, "
                                  "CPU-aware stranded capacity, first fit in node order")

    def __init__(self, context: ShareContext) -> None:
        self.typical = context.frag.typical
        self.prices = GapPrices(*share_sizes(self.typical))
        self._shapes: dict[tuple[int, int, int], _ShapeCosts] = {}
        n_nodes = context.frag.state.n_nodes
        self._now = np.zeros(n_nodes)
        self._now_version = np.full(n_nodes, -1, dtype=np.int64)

    def _stranded_now(self, state: ClusterState, nodes: IntArray) -> FloatArray:
        """:func:`stranded` of the nodes as they are, cached by node version."""
        stale = nodes[self._now_version[nodes] != state.version[nodes]]
        if len(stale):
            self._now[stale] = stranded(self.typical, state.cpu_free[stale],
                                        state.gpu_free[stale], state.node_type[stale])
            self._now_version[stale] = state.version[stale]
        now: FloatArray = self._now[nodes]
        return now

    def _costs(self, state: ClusterState, pod: int, nodes: IntArray) -> _ShapeCosts:
        """The pod shape's costs, recomputed for the ``nodes`` that changed since cached."""
        key = (int(state.pod_cpu[pod]), int(state.pod_milli[pod]), int(state.pod_gang[pod]))
        costs = self._shapes.get(key)
        if costs is None:
            costs = self._shapes[key] = _ShapeCosts(state.n_nodes)
        nodes = nodes[costs.version[nodes] != state.version[nodes]]
        if not len(nodes):
            return costs
        before = self._stranded_now(state, nodes)
        cpu = state.cpu_free[nodes] - state.pod_cpu[pod]
        milli, gang = int(state.pod_milli[pod]), int(state.pod_gang[pod])
        free = state.gpu_free[nodes]
        if state.pod_share[pod]:
            # One candidate state per GPU with room: the pod's milli taken from that GPU.
            row, slot = np.nonzero(free >= milli)
            after_gpu = free[row]
            after_gpu[np.arange(len(row)), slot] -= milli
            after = stranded(self.typical, cpu[row], after_gpu, state.node_type[nodes][row])
            cost = np.full(free.shape, np.inf)
            cost[row, slot] = (after - before[row]
                               + GAP_WEIGHT * self.prices.loss(free[row, slot], milli))
            costs.gpu[nodes] = np.argmin(cost, axis=1)
            costs.cost[nodes] = cost.min(axis=1)
        else:
            # Whole-GPU pods take the lowest-index fully free GPUs (the replay's choice);
            # CPU-only pods (gang 0) take none.
            whole = free == GPU_MILLI
            taken = whole & (np.cumsum(whole, axis=1) <= gang)
            after = stranded(self.typical, cpu, np.where(taken, 0, free),
                             state.node_type[nodes])
            costs.cost[nodes] = after - before
        costs.version[nodes] = state.version[nodes]
        return costs

    def score(self, state: ClusterState, pod: int, feasible: IntArray) -> IntArray:
        """Minus each feasible node's cost, in integer steps of 1/1000 milli."""
        costs = self._costs(state, pod, feasible)
        cost = costs.cost[feasible] + ORDER_WEIGHT * state.rank[feasible] / state.n_nodes
        scores: IntArray = np.rint(-cost * SCORE_STEPS).astype(np.int64)
        return scores

    def share_gpu(self, state: ClusterState, pod: int, node: int) -> int:
        """The GPU of least cost on the node (the first on ties)."""
        costs = self._costs(state, pod, np.array([node], dtype=np.int64))
        return int(costs.gpu[node])
