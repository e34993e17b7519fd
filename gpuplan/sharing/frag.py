"""FGD's typical pods and its fragmentation measure, vectorised over nodes.

A node's fragmentation (FGD, ATC'23, section 4; ``pkg/utils/frag.go``) is the GPU milli it is
expected to leave unusable for the next pod, drawn from the trace's *typical pods*: the most
frequent pod shapes covering 95% of the pods, each weighted by its frequency. For a shape that
fits on the node (CPU, type and enough GPUs with room), only the milli on GPUs too small for it
is fragment; for a shape that does not fit (or a CPU-only shape, which uses no GPU) all the
node's free GPU milli is. The measure keeps FGD's seven categories and its float summation
order, so scores that FGD truncates to integers come out the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from gpuplan.core.instance import BoolArray, FloatArray, Instance, IntArray
from gpuplan.sharing.cluster import ClusterState

#: FGD's fragment categories, in its order (``FragRatioDataMap``): GPU and CPU short, GPU
#: short, satisfied, CPU short, CPU-only shape fits, CPU-only shape short of CPU, wrong type.
PARTS = ("q1_lack_both", "q2_lack_gpu", "q3_satisfied", "q4_lack_cpu", "xl_satisfied",
         "xr_lack_cpu", "no_access")
Q1, Q2, Q3, Q4, XL, XR, NA = range(len(PARTS))
#: The categories that count as fragment (all but q3), in FGD's summation order.
FRAGMENT = (Q1, Q2, Q4, XL, XR, NA)

#: FGD's default: typical shapes cover at least this percent of the pods.
POPULARITY_PERCENT = 95
#: From this many node states on, :func:`frag_parts` computes each distinct state once.
DEDUPLICATE_FROM = 64


@dataclass(frozen=True)
class TypicalPods:
    """The typical pod shapes, most frequent first, and their probabilities.

    Attributes
    ----------
    cpu, milli, gang
        ``(K,)`` CPU milli, per-GPU milli and GPU count of each shape.
    spec
        The ``gpu_spec`` string of each shape (empty: any model).
    allowed
        ``(K, T)`` the instance's GPU types each shape may use.
    count
        ``(K,)`` pods of each shape in the trace.
    prob
        ``(K,)`` probability of each shape (FGD's renormalised frequency; sums to 1).
    coverage
        Share of the trace's pods the shapes account for.
    """

    cpu: IntArray
    milli: IntArray
    gang: IntArray
    spec: tuple[str, ...]
    allowed: BoolArray
    count: IntArray
    prob: FloatArray
    coverage: float

    @cached_property
    def levels(self) -> tuple[IntArray, IntArray]:
        """The distinct per-GPU milli of the shapes and each shape's index among them."""
        levels, level_of = np.unique(self.milli, return_inverse=True)
        return levels, level_of.ravel()


def pod_specs(instance: Instance) -> tuple[str, ...]:
    """Each job's ``gpu_spec`` string as FGD keys typical pods by it, rebuilt from eligibility.

    A GPU job eligible on every type some node could hold its gang on had no constraint
    (``""``); otherwise its eligible types joined by ``|`` in id order, which is how the
    trace writes them. A spec that repeats a model (``V100M16|V100M32|V100M32``) cannot be
    rebuilt; pass the file's strings to :func:`typical_pods` where that matters.
    """
    most = (instance.node_gpus.max(axis=0) if instance.n_nodes
            else np.zeros(instance.n_types, dtype=np.int64))
    specs = []
    for j in range(instance.n_jobs):
        gang = int(instance.gang[j])
        reachable = most >= max(gang, 1)
        if gang == 0 or (instance.eligible[j] == reachable).all():
            specs.append("")
        else:
            specs.append("|".join(t for t, ok in zip(instance.type_ids, instance.eligible[j],
                                                     strict=True) if ok))
    return tuple(specs)


def _allowed(instance: Instance, spec: str) -> BoolArray:
    """Types a spec string admits (FGD's ``IsNodeAccessibleToPodByType``)."""
    names = {name for name in spec.split("|") if name}
    if not names:
        return np.ones(instance.n_types, dtype=bool)
    return np.array([t in names for t in instance.type_ids], dtype=bool)


def typical_pods(instance: Instance, specs: Sequence[str] | None = None,
                 percent: int = POPULARITY_PERCENT) -> TypicalPods:
    """FGD's typical pods of a trace (``GetTypicalPods`` with CPU-only pods, weight 1, step 1).

    Shapes are (CPU milli, per-GPU milli, GPU count, spec string); memory is not part of a
    shape. They are counted over all the instance's jobs, sorted by count then by the shape,
    both descending, and taken from the top until their count reaches ``percent`` of the
    pods; each probability is its count over the taken total (in FGD's float operations).

    Parameters
    ----------
    instance
        The original trace (FGD computes typical pods before inflating it).
    specs
        Each job's ``gpu_spec`` string; default :func:`pod_specs`.
    percent
        The coverage threshold in percent.
    """
    specs = pod_specs(instance) if specs is None else tuple(specs)
    if len(specs) != instance.n_jobs:
        raise ValueError(f"{len(specs)} specs for {instance.n_jobs} jobs")
    gang = instance.gang.astype(np.int64)
    milli = np.where(gang > 0, np.rint(instance.demand[:, :, 0].max(axis=1, initial=0)), 0)
    cpu = np.rint(instance.node_demand[:, 0]).astype(np.int64)
    counts: dict[tuple[int, int, int, str], int] = {}
    for j in range(instance.n_jobs):
        key = (int(cpu[j]), int(milli[j]), int(gang[j]), specs[j] if gang[j] else "")
        counts[key] = counts.get(key, 0) + 1
    # Go sorts by (count, cpu, milli, gang, spec) ascending, then reverses.
    ranked = sorted(counts.items(), key=lambda item: (item[1], item[0]), reverse=True)
    total = float(instance.n_jobs)
    expected = float(percent) * total / 100.0
    taken, cumulative = 0, 0.0
    while cumulative < expected and taken < len(ranked):
        cumulative += float(ranked[taken][1])
        taken += 1
    keys = [key for key, _ in ranked[:taken]]
    frequency = [count / total for _, count in ranked[:taken]]
    prob = (frequency if taken == len(ranked)
            else [f / (cumulative / total) for f in frequency])
    return TypicalPods(
        cpu=np.array([k[0] for k in keys], dtype=np.int64),
        milli=np.array([k[1] for k in keys], dtype=np.int64),
        gang=np.array([k[2] for k in keys], dtype=np.int64),
        spec=tuple(k[3] for k in keys),
        allowed=np.array([_allowed(instance, k[3]) for k in keys], dtype=bool).reshape(
            taken, instance.n_types),
        count=np.array([count for _, count in ranked[:taken]], dtype=np.int64),
        prob=np.array(prob, dtype=np.float64),
        coverage=cumulative / total,
    )


def frag_parts(typical: TypicalPods, cpu_free: IntArray, gpu_free: IntArray,
               node_type: IntArray) -> FloatArray:
    """``(M, 7)`` FGD's fragment amounts by category for ``M`` node states.

    The measure depends on a state's free CPU, type and free GPU milli as a multiset, so
    many states are equal (idle nodes of one model, say): above :data:`DEDUPLICATE_FROM`
    states each distinct one is computed once.

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
    if len(cpu_free) < DEDUPLICATE_FROM:
        return _parts(typical, cpu_free, gpu_free, node_type)
    keys = np.column_stack((cpu_free, node_type, np.sort(gpu_free, axis=1)))
    distinct, inverse = np.unique(keys, axis=0, return_inverse=True)
    parts: FloatArray = _parts(typical, distinct[:, 0], distinct[:, 2:],
                               distinct[:, 1])[inverse.ravel()]
    return parts


def _parts(typical: TypicalPods, cpu_free: IntArray, gpu_free: IntArray,
           node_type: IntArray) -> FloatArray:
    """:func:`frag_parts` of every state, without looking for equal ones."""
    total = gpu_free.sum(axis=1)
    # GPUs with room per distinct per-GPU milli of the shapes (far fewer than the shapes).
    levels, level_of = typical.levels
    roomy = gpu_free[:, :, None] >= levels[None, None, :]                  # (M, G, U)
    hosts = roomy.sum(axis=1)[:, level_of] >= typical.gang[None, :]       # (M, K)
    short = np.where(roomy, 0, gpu_free[:, :, None]).sum(axis=1)[:, level_of]
    cpu_ok = cpu_free[:, None] >= typical.cpu[None, :]
    access = typical.allowed[:, node_type].T
    gpu_shape = (typical.milli > 0)[None, :]
    prob = typical.prob[None, :]
    whole = prob * total[:, None]   # Go: freq * float64(gpuMilliLeftTotal)
    fits = gpu_shape & access & hosts & cpu_ok
    add = np.zeros((len(PARTS), *whole.shape))
    add[Q1] = np.where(gpu_shape & access & ~hosts & ~cpu_ok, whole, 0.0)
    add[Q2] = np.where(fits, prob * short,
                       np.where(gpu_shape & access & ~hosts & cpu_ok, whole, 0.0))
    add[Q3] = np.where(fits, prob * (total[:, None] - short), 0.0)
    add[Q4] = np.where(gpu_shape & access & hosts & ~cpu_ok, whole, 0.0)
    add[XL] = np.where(~gpu_shape & cpu_ok, whole, 0.0)
    add[XR] = np.where(~gpu_shape & ~cpu_ok, whole, 0.0)
    add[NA] = np.where(gpu_shape & ~access, whole, 0.0)
    # Shape by shape, as Go accumulates: accumulate is sequential (a sum would be pairwise),
    # and adding 0.0 leaves a sum unchanged.
    if add.shape[2] == 0:
        return np.zeros((len(total), len(PARTS)))
    parts: FloatArray = np.add.accumulate(add, axis=2)[:, :, -1].T
    return parts


def frag_amount(parts: FloatArray) -> FloatArray:
    """Fragment milli of each state: its categories but q3, summed in FGD's order."""
    amount = np.zeros(parts.shape[:-1])
    for part in FRAGMENT:
        amount = amount + parts[..., part]
    return amount


class NodeFrag:
    """Every node's fragmentation, kept current as the cluster changes.

    Parameters
    ----------
    typical
        The typical pods.
    state
        The cluster; nodes whose :attr:`ClusterState.version` moved are recomputed by
        :meth:`refresh`.
    """

    def __init__(self, typical: TypicalPods, state: ClusterState) -> None:
        self.typical = typical
        self.state = state
        self.parts = frag_parts(typical, state.cpu_free, state.gpu_free, state.node_type)
        self.amount = frag_amount(self.parts)
        self._seen = state.version.copy()

    def refresh(self) -> None:
        """Recompute the nodes that changed since the last call."""
        state = self.state
        stale = np.flatnonzero(self._seen != state.version)
        if len(stale):
            self.parts[stale] = frag_parts(self.typical, state.cpu_free[stale],
                                           state.gpu_free[stale], state.node_type[stale])
            self.amount[stale] = frag_amount(self.parts[stale])
            self._seen[stale] = state.version[stale]

    def cluster(self) -> tuple[float, float]:
        """The cluster's fragment milli and idle GPU milli (FGD's ``ClusterGpuFragReport``)."""
        self.refresh()
        parts = self.parts.sum(axis=0)
        return float(frag_amount(parts)), float(parts.sum())
