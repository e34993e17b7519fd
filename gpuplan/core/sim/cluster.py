"""The cluster as a simulator holds it: who has each GPU, and what each node has left.

GPUs are numbered node by node and, within a node, type by type
(:attr:`~gpuplan.core.instance.Instance.gpu_ids`), so the GPUs of one type on one node are
a contiguous range, and a gang is ``gpus_per_node`` GPUs of one type on each of its
``gang_nodes`` nodes. :class:`GpuCluster` keeps, as jobs take and give back GPUs, the
holder of each GPU, the free GPUs of each type on each node and what each node has left of
its node resources; placements read it to choose a gang (:meth:`GpuCluster.gang`), and the
simulator changes it (:meth:`GpuCluster.hold`, :meth:`GpuCluster.give_back`,
:meth:`GpuCluster.down`, :meth:`GpuCluster.up`).
"""

from __future__ import annotations

import numpy as np

from gpuplan.core.instance import BoolArray, FloatArray, Instance, IntArray

#: The holder of a free GPU.
FREE = -1
#: The holder of a GPU that is down (failed).
DOWN = -2
#: Relative slack within which a node demand counts as fitting.
ROOM_EPS = 1e-9


class GpuCluster:
    """Whole GPUs by type on nodes, node resources, and the GPUs each job held last.

    Parameters
    ----------
    instance
        The cluster (nodes, GPUs, node capacities) and the jobs' gangs and node demands.

    Attributes
    ----------
    owner
        ``(G,)`` the job holding each GPU, :data:`FREE` or :data:`DOWN`.
    free
        ``(N, T)`` free GPUs of each type on each node.
    first
        ``(N, T)`` index of the first GPU of each type on each node.
    previous
        Per job, the GPUs of its last run (None before it first ran): resuming there is
        no migration.
    room
        ``(N, Q)`` what each node has left of its node resources; None when no job draws
        on them.
    """

    def __init__(self, instance: Instance) -> None:
        self.instance = instance
        self.owner: IntArray = np.full(instance.n_gpus, FREE, dtype=np.int64)
        self.free: IntArray = instance.node_gpus.astype(np.int64).copy()
        first = np.concatenate(([0], np.cumsum(instance.node_gpus.ravel())[:-1]))
        self.first: IntArray = first.reshape(instance.node_gpus.shape).astype(np.int64)
        self.previous: list[IntArray | None] = [None] * instance.n_jobs
        self.room: FloatArray | None = (instance.node_capacity.astype(float).copy()
                                        if instance.node_demand.any() else None)

    # -- what placements read ---------------------------------------------------------

    def hosts(self, job: int, gpu_type: int) -> BoolArray:
        """``(N,)`` the nodes that can take the job's share of its gang of ``gpu_type`` now.

        See :meth:`~gpuplan.core.instance.Instance.gang_hosts`.
        """
        return self.instance.gang_hosts(job, gpu_type, self.free[:, gpu_type], self.room)

    def gang(self, job: int, gpu_type: int, rank: FloatArray) -> IntArray | None:
        """The job's gang on the nodes that can take it, lowest ``rank`` first; None if none.

        ``gpus_per_node`` lowest-index free GPUs on each of ``gang_nodes`` nodes, in one
        domain of its required level (:meth:`~gpuplan.core.instance.Instance.pick_nodes`).
        """
        instance = self.instance
        per_node = int(instance.gpus_per_node[job])
        if (instance.gang_nodes[job] == 1 and self.room is None
                and not (instance.levels and instance.required_level[job] >= 0)):
            # One node, free GPUs alone decide: the best-ranked node with enough of them
            # (argmin takes the lowest index of those tied, as pick_nodes does).
            ranked = np.where(self.free[:, gpu_type] >= max(per_node, 1), rank, np.inf)
            node = int(np.argmin(ranked))
            if ranked[node] == np.inf:
                return None
            return self.free_gpus(node, gpu_type)[:per_node]
        nodes = instance.pick_nodes(job, self.hosts(job, gpu_type), rank)
        if nodes is None:
            return None
        gpus: IntArray = np.concatenate([self.free_gpus(int(n), gpu_type)[:per_node]
                                         for n in nodes.tolist()])
        return gpus

    def fits(self, job: int, gpus: IntArray) -> bool:
        """Whether the job could take exactly these GPUs now (free, with node room)."""
        if (self.owner[gpus] != FREE).any():
            return False
        if self.room is None:
            return True
        nodes = np.unique(self.instance.gpu_node[gpus])
        return bool((self.room[nodes] - self.instance.node_demand[job] >= -ROOM_EPS
                     * np.maximum(self.instance.node_capacity[nodes], 1.0)).all())

    def free_gpus(self, node: int, gpu_type: int) -> IntArray:
        """The free GPUs of ``gpu_type`` on ``node``, lowest index first."""
        start = int(self.first[node, gpu_type])
        stop = start + int(self.instance.node_gpus[node, gpu_type])
        mine: IntArray = start + np.flatnonzero(self.owner[start:stop] == FREE)
        return mine

    # -- what the simulator changes ---------------------------------------------------

    def hold(self, job: int, gpus: IntArray) -> None:
        """``job`` takes ``gpus`` (one type, its gang's shape) and its node demand."""
        self._count(job, gpus, -1)
        self.owner[gpus] = job

    def give_back(self, job: int, gpus: IntArray) -> None:
        """``job`` frees ``gpus`` and its node demand."""
        self.owner[gpus] = FREE
        self._count(job, gpus, 1)

    def _count(self, job: int, gpus: IntArray, sign: int) -> None:
        instance = self.instance
        kind = int(instance.gpu_type[gpus[0]])
        if instance.gang_nodes[job] == 1:
            node = int(instance.gpu_node[gpus[0]])
            self.free[node, kind] += sign * gpus.size
            if self.room is not None:
                self.room[node] += sign * instance.node_demand[job]
            return
        nodes = np.unique(instance.gpu_node[gpus])
        self.free[nodes, kind] += sign * int(instance.gpus_per_node[job])
        if self.room is not None:
            self.room[nodes] += sign * instance.node_demand[job]

    def down(self, gpus: IntArray) -> None:
        """Free GPUs among ``gpus`` go down (the caller has stopped their holders)."""
        fresh = gpus[self.owner[gpus] == FREE]
        self.owner[fresh] = DOWN
        instance = self.instance
        np.subtract.at(self.free, (instance.gpu_node[fresh], instance.gpu_type[fresh]), 1)

    def up(self, gpus: IntArray) -> None:
        """GPUs among ``gpus`` that are down come back."""
        back = gpus[self.owner[gpus] == DOWN]
        self.owner[back] = FREE
        instance = self.instance
        np.add.at(self.free, (instance.gpu_node[back], instance.gpu_type[back]), 1)
