"""A mutable GPU-sharing cluster: free CPU, memory and per-GPU milli of every node, by index.

The replay engine, the policies, migration and the time replay all work on one
:class:`ClusterState`. Every array is indexed by node (``N``) and GPU slot on the node (``G``,
the most GPUs any node has); a node with fewer GPUs has its missing slots at 0 free milli, which
no GPU pod can use (every GPU pod asks for more than 0) and which adds nothing to any sum, so
no mask is needed. Pods are the instance's jobs, by index: a job with ``gang`` 0 is CPU-only,
a job with ``gang`` 1 and less than a whole GPU is a *share* pod (it takes ``milli`` on one
GPU), any other GPU job takes ``gang`` whole free GPUs.
"""

from __future__ import annotations

import numpy as np

from gpuplan.core.instance import BoolArray, Instance, IntArray

#: Milli-GPUs of one whole GPU (openb's ``gpu_milli`` unit).
GPU_MILLI = 1000
#: FGD's largest node spec, which its scores normalise by (``MaxSpecCpu``, ``MaxSpecGpu``).
MAX_SPEC_CPU = 128000
MAX_SPEC_GPU = 8000


def _node_type(instance: Instance) -> IntArray:
    """The one GPU type of every node; a node mixing models is refused."""
    types_per_node = (instance.node_gpus > 0).sum(axis=1)
    if (types_per_node != 1).any():
        bad = instance.node_ids[int(np.flatnonzero(types_per_node != 1)[0])]
        raise ValueError(f"node {bad!r} does not have exactly one GPU model; GPU sharing "
                         "replays need one model per node")
    types: IntArray = np.argmax(instance.node_gpus > 0, axis=1).astype(np.int64)
    return types


class ClusterState:
    """Free resources of every node and where every placed pod is.

    Parameters
    ----------
    instance
        The fleet (one GPU model per node, ``node_resources`` starting with CPU then memory)
        and the pods as jobs.

    Attributes
    ----------
    node_type
        ``(N,)`` GPU type index of each node.
    n_gpus
        ``(N,)`` number of GPUs of each node.
    cpu_free, mem_free
        ``(N,)`` free CPU milli and memory MiB.
    gpu_free
        ``(N, G)`` free milli of every GPU slot (0 for slots the node does not have).
    rank
        ``(N,)`` tie rank: among nodes of equal score the smallest rank wins. Defaults to the
        lexicographic rank of the node ids; the FGD replay sets its node-name permutation.
    gpu_offset
        ``(N,)`` instance index of each node's first GPU.
    version
        ``(N,)`` count of changes to each node, so caches of per-node values can tell stale.
    pod_cpu, pod_mem, pod_gang, pod_milli
        ``(J,)`` each job's CPU milli, memory MiB, GPU count and per-GPU milli.
    pod_eligible
        ``(J, T)`` GPU types each job may use.
    pod_share
        ``(J,)`` whether the job is a share pod (one GPU, less than a whole one).
    pod_node
        ``(J,)`` node of each placed job, -1 if not placed.
    pod_gpus
        ``(J, gang_max)`` GPU slots of each placed job on its node, -1 padded.
    affinity
        ``(N, A)`` GPU pods on each node by affinity class (:attr:`pod_affinity`).
    pod_affinity
        ``(J,)`` affinity class of each job (GPU clustering's tags): 0 for a share pod,
        ``gang`` for a whole-GPU pod, -1 for a CPU-only pod.
    """

    def __init__(self, instance: Instance) -> None:
        if tuple(instance.node_resources[:2]) != ("cpu_milli", "memory_mib"):
            raise ValueError("GPU sharing replays need node resources cpu_milli and memory_mib, "
                             f"got {instance.node_resources!r}")
        self.instance = instance
        self.node_type = _node_type(instance)
        self.n_gpus = instance.node_gpus.sum(axis=1).astype(np.int64)
        n_nodes, slots = instance.n_nodes, int(self.n_gpus.max())
        self.cpu_free = np.rint(instance.node_capacity[:, 0]).astype(np.int64)
        self.mem_free = np.rint(instance.node_capacity[:, 1]).astype(np.int64)
        self.gpu_free = np.where(np.arange(slots)[None, :] < self.n_gpus[:, None],
                                 GPU_MILLI, 0).astype(np.int64)
        self.rank = np.empty(n_nodes, dtype=np.int64)
        self.rank[sorted(range(n_nodes), key=instance.node_ids.__getitem__)] = np.arange(n_nodes)
        self.gpu_offset = np.concatenate(([0], np.cumsum(self.n_gpus)[:-1])).astype(np.int64)
        self.version = np.zeros(n_nodes, dtype=np.int64)

        self.pod_cpu = np.rint(instance.node_demand[:, 0]).astype(np.int64)
        self.pod_mem = np.rint(instance.node_demand[:, 1]).astype(np.int64)
        self.pod_gang = instance.gang.astype(np.int64)
        milli = instance.demand[:, :, 0].max(axis=1) if instance.n_jobs else np.zeros(0)
        self.pod_milli = np.where(self.pod_gang > 0, np.rint(milli), 0).astype(np.int64)
        self.pod_eligible: BoolArray = instance.eligible
        self.pod_share = (self.pod_gang == 1) & (self.pod_milli < GPU_MILLI)
        self.pod_affinity = np.where(self.pod_gang == 0, -1,
                                     np.where(self.pod_share, 0, self.pod_gang))
        gang_max = max(int(self.pod_gang.max(initial=0)), 1)
        self.pod_node = np.full(instance.n_jobs, -1, dtype=np.int64)
        self.pod_gpus = np.full((instance.n_jobs, gang_max), -1, dtype=np.int64)
        self.affinity = np.zeros((n_nodes, gang_max + 1), dtype=np.int64)

    @property
    def n_nodes(self) -> int:
        """Number of nodes ``N``."""
        return len(self.cpu_free)

    @property
    def used_gpu_milli(self) -> int:
        """GPU milli held by placed pods, over the whole cluster."""
        return int(GPU_MILLI * self.n_gpus.sum() - self.gpu_free.sum())

    def fits(self, pod: int) -> BoolArray:
        """``(N,)`` nodes that pass FGD's filters for ``pod`` now.

        CPU and memory must fit; a GPU pod also needs a node of an eligible type with ``gang``
        GPUs of at least ``milli`` free each (one for a share pod, whole free ones otherwise).
        """
        ok: BoolArray = ((self.cpu_free >= self.pod_cpu[pod])
                         & (self.mem_free >= self.pod_mem[pod]))
        gang = int(self.pod_gang[pod])
        if gang > 0:
            ok &= self.pod_eligible[pod][self.node_type]
            ok &= (self.gpu_free >= self.pod_milli[pod]).sum(axis=1) >= gang
        return ok

    def feasible(self, pod: int) -> IntArray:
        """Indices of the nodes that pass the filters for ``pod``, ascending."""
        nodes: IntArray = np.flatnonzero(self.fits(pod))
        return nodes

    def pick(self, feasible: IntArray, scores: IntArray) -> int:
        """The node of highest score, ties to the smallest :attr:`rank` (FGD's patched rule)."""
        tied = feasible[scores == scores.max()]
        return int(tied[np.argmin(self.rank[tied])])

    def whole_gpus(self, node: int, count: int) -> IntArray:
        """The ``count`` lowest-index fully free GPU slots of ``node`` (FGD's exclusive pick)."""
        gpus: IntArray = np.flatnonzero(self.gpu_free[node] == GPU_MILLI)[:count]
        return gpus

    def best_fit_gpu(self, node: int, milli: int) -> int:
        """The GPU with the least free milli that still holds ``milli`` (lowest index on ties)."""
        free = self.gpu_free[node]
        return int(np.argmin(np.where(free >= milli, free, GPU_MILLI + 1)))

    def place(self, pod: int, node: int, gpus: IntArray) -> None:
        """Put ``pod`` on ``node`` using the GPU slots ``gpus`` (empty for a CPU-only pod).

        Raises
        ------
        ValueError
            If the pod is already placed or does not fit there (a policy bug, never input).
        """
        gpus = np.asarray(gpus, dtype=np.int64)
        milli = int(self.pod_milli[pod])
        if (self.pod_node[pod] >= 0 or len(gpus) != self.pod_gang[pod]
                or len(set(gpus.tolist())) != len(gpus)):
            raise ValueError(f"pod {pod} cannot be placed on node {node} with GPUs {gpus}")
        if (self.cpu_free[node] < self.pod_cpu[pod] or self.mem_free[node] < self.pod_mem[pod]
                or (self.gpu_free[node, gpus] < milli).any()):
            raise ValueError(f"pod {pod} does not fit on node {node} with GPUs {gpus}")
        self.cpu_free[node] -= self.pod_cpu[pod]
        self.mem_free[node] -= self.pod_mem[pod]
        self.gpu_free[node, gpus] -= milli
        self.pod_node[pod] = node
        self.pod_gpus[pod, :len(gpus)] = gpus
        if self.pod_affinity[pod] >= 0:
            self.affinity[node, self.pod_affinity[pod]] += 1
        self.version[node] += 1

    def remove(self, pod: int) -> tuple[int, IntArray]:
        """Take ``pod`` off its node; return that node and the GPU slots it freed.

        Raises
        ------
        ValueError
            If the pod is not placed.
        """
        node = int(self.pod_node[pod])
        if node < 0:
            raise ValueError(f"pod {pod} is not placed")
        gpus = self.pod_gpus[pod, :self.pod_gang[pod]].copy()
        self.cpu_free[node] += self.pod_cpu[pod]
        self.mem_free[node] += self.pod_mem[pod]
        self.gpu_free[node, gpus] += self.pod_milli[pod]
        self.pod_node[pod] = -1
        self.pod_gpus[pod] = -1
        if self.pod_affinity[pod] >= 0:
            self.affinity[node, self.pod_affinity[pod]] -= 1
        self.version[node] += 1
        return node, gpus

    def global_gpus(self, node: int, gpus: IntArray) -> IntArray:
        """Instance GPU indices (:attr:`~gpuplan.core.instance.Instance.gpu_ids`) of slots."""
        index: IntArray = self.gpu_offset[node] + np.asarray(gpus, dtype=np.int64)
        return index
