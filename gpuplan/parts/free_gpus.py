"""Where and when a job can start on whole GPUs: the state list scheduling keeps.

GPUs are grouped per (node, type); each group keeps its GPUs' free times sorted (a GPU is
free from the end of the last job placed on it: jobs are appended, never slotted into an
earlier gap). A job of type ``t`` needs ``gpus_per_node`` GPUs on each of ``gang_nodes``
groups of that type, all in one domain of its required topology level, and its node
demand on each of those nodes for its whole run: node resources are kept as a step
function of time per node (:class:`StepUsage`), since jobs on one node's GPUs start and
end at different times. A job in a partition takes groups of the partition's nodes only,
and the GPUs held by the jobs of each account or QOS with a GPU limit (and by the work
held before that counts against it) are kept as a step function of time too: a job starts
only when each limit it is under has room for its gang for its whole run.

:meth:`FreeGpus.earliest` finds the earliest start of a job on a type (and the groups),
:meth:`FreeGpus.take` books it. A gang that prefers a topology level is tried within one
of its domains at its duration, and across them at its spread slowdown; the earlier end
wins. Among groups that start a job equally early, an instance with topology takes the
one whose domains (widest first) and node have the fewest GPUs free then (best fit, as
Kueue's topology-aware scheduling fills the fullest domain that fits), so that small jobs
fill few racks and leave others whole for large gangs; without topology, the lowest
group.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np

from gpuplan.core.instance import FloatArray, Instance, IntArray

#: Relative slack within which a node demand counts as fitting (as the greedy's GPUs).
FIT_EPS = 1e-9


class StepUsage:
    """What the jobs placed so far draw on each of some capacities, as a step function of time.

    The capacities are each node's resources, or each GPU limit's GPUs.

    Parameters
    ----------
    capacity
        ``(K, Q)`` each key's capacity (a node's, per node resource; a GPU limit's, one
        column).
    """

    def __init__(self, capacity: FloatArray) -> None:
        self.capacity = capacity
        n, q = capacity.shape
        # Per key: breakpoints (the first is -inf) and the usage from each until the next.
        self.times: list[list[float]] = [[-np.inf] for _ in range(n)]
        self.usage: list[FloatArray] = [np.zeros((1, q)) for _ in range(n)]
        self.slack = FIT_EPS * np.maximum(capacity, 1.0)

    def earliest(self, key: int, start: float, length: float, draw: FloatArray) -> float:
        """The earliest time from ``start`` at which ``draw`` fits ``length`` seconds long.

        ``inf`` if it never does (it needs more than the key's capacity).
        """
        capacity = self.capacity[key]
        if (draw > capacity + self.slack[key]).any():
            return np.inf
        if not draw.any():
            return start
        times = self.times[key]
        over = np.flatnonzero((self.usage[key] + draw > capacity + self.slack[key])
                              .any(axis=1))
        at = start
        while True:
            # The first step from the one holding ``at`` on that has no room.
            k = int(np.searchsorted(over, bisect.bisect_right(times, at) - 1))
            if k == over.size or times[over[k]] >= at + length:
                return at
            step = int(over[k])
            if step + 1 >= len(times):
                return np.inf
            at = times[step + 1]

    def add(self, key: int, start: float, end: float, draw: FloatArray) -> None:
        """Book ``draw`` on the key over ``[start, end)``."""
        if not draw.any():
            return
        times, usage = self.times[key], self.usage[key]
        for at in (start, end):
            k = bisect.bisect_right(times, at)
            if times[k - 1] != at:
                times.insert(k, at)
                usage = np.insert(usage, k, usage[k - 1], axis=0)
        first, last = times.index(start), times.index(end)
        usage[first:last] += draw
        self.usage[key] = usage


@dataclass(frozen=True)
class Slot:
    """Where and when a job runs: its start and end, type, GPUs (sorted) and first node.

    ``seats`` says, per group, how many of its first GPUs (in free-time order) up to
    which the job's are (for :meth:`FreeGpus.take`); None: find them by id.
    """

    start: float
    end: float
    gpu_type: int
    gpus: IntArray
    node: int
    seats: tuple[tuple[int, int, int], ...] | None = None


class FreeGpus:
    """Each GPU's free time and each node's usage: list scheduling's view of the fleet.

    Parameters
    ----------
    instance
        The instance; GPUs are free from :attr:`~gpuplan.core.instance.Instance.ready_at`.
    """

    def __init__(self, instance: Instance) -> None:
        self.instance = instance
        n_types = instance.n_types
        counts = instance.node_gpus.ravel()
        groups = np.flatnonzero(counts)
        self.group_type: IntArray = groups % n_types
        self.group_node: IntArray = groups // n_types
        self.group_size: IntArray = counts[groups]
        width = int(self.group_size.max(initial=1))
        # Free times of each group's GPUs, kept sorted per row; +inf pads short rows.
        self.free: FloatArray = np.full((groups.size, width), np.inf)
        self.members: IntArray = np.full((groups.size, width), -1, dtype=np.int64)
        first_gpu = np.r_[0, np.cumsum(counts)][groups]
        ready_at = instance.ready_at
        self.gpu_group: IntArray = np.full(instance.n_gpus, -1, dtype=np.int64)
        for q, (first, size) in enumerate(zip(first_gpu, self.group_size, strict=True)):
            mine = np.arange(first, first + size)
            by_ready = np.argsort(ready_at[mine], kind="stable")
            self.free[q, :size] = ready_at[mine][by_ready]
            self.members[q, :size] = mine[by_ready]
            self.gpu_group[mine] = q
        #: Per (type, GPUs per node, level, partition): the groups that can take such a share.
        self._options: dict[tuple[int, int, int, int], IntArray] = {}
        self.usage = (StepUsage(instance.node_capacity)
                      if instance.node_resources and instance.node_demand.any() else None)
        if self.usage is not None:
            # Node resources held by work planned before (a re-plan's running jobs).
            for outage in instance.outages:
                for n in outage.nodes.tolist():
                    self.usage.add(n, outage.start_s, outage.end_s, outage.draw)
        #: (G, L) each group's domain per topology level, for best fit; None without.
        self.domain = (instance.node_domain[self.group_node] if instance.levels else None)
        #: The GPUs each GPU limit's jobs hold over time; None without limits.
        self.limits = (StepUsage(np.array([[limit.gpus] for limit in instance.gpu_limits],
                                          dtype=float)) if instance.gpu_limits else None)
        if self.limits is not None:
            # GPUs held by work planned before (a re-plan's running jobs) count against
            # their account's and QOS's limits.
            for outage in instance.outages:
                for k in outage.limits(instance):
                    self.limits.add(k, outage.start_s, outage.end_s,
                                    np.array([float(outage.gpus.size)]))

    def earliest(self, j: int, t: int, ready: float) -> Slot | None:
        """The earliest slot of job ``j`` on type ``t`` from ``ready``; None if none.

        Without slot: no set of groups can hold the gang (too few nodes up, or its node
        demand never fits).
        """
        instance = self.instance
        seconds = float(instance.duration[j, t])
        required = int(instance.required_level[j]) if instance.levels else -1
        preferred = int(instance.preferred_level[j]) if instance.levels else -1
        if preferred < 0 or instance.gang_nodes[j] < 2:
            return self._slot(j, t, ready, seconds, required)
        # Within one preferred domain at its duration, or across them at its slowdown.
        compact = self._slot(j, t, ready, seconds, preferred)
        spread = self._slot(j, t, ready, seconds * float(instance.spread_slowdown[j]),
                            required)
        if compact is None or (spread is not None and spread.end < compact.end):
            return spread
        return compact

    def _slot(self, j: int, t: int, ready: float, seconds: float, level: int) -> Slot | None:
        """The earliest slot running ``seconds`` within one domain of ``level`` (-1: any)."""
        instance = self.instance
        k, m = int(instance.gpus_per_node[j]), int(instance.gang_nodes[j])
        partition = int(instance.job_partition[j]) if instance.partition_ids else -1
        options = self._groups_for(t, k, level, partition)
        if options.size < m:
            return None
        # When each group has k GPUs free: their k-th earliest free time.
        gpu_ready = np.maximum(ready, self.free[options, k - 1]) if k else np.full(
            options.size, ready)
        draw = instance.node_demand[j] if self.usage is not None else None
        at = gpu_ready
        # Each round starts no earlier than the last, at the end of some booking or a
        # group's free time, so the rounds end: when every chosen group can start then.
        while True:
            if draw is not None:
                usage = self.usage
                assert usage is not None
                at = np.array([usage.earliest(int(self.group_node[q]), float(r), seconds, draw)
                               for q, r in zip(options.tolist(), at.tolist(), strict=True)])
            chosen = self._choose(options, at, m, level)
            if chosen is None:
                return None
            start = float(at[chosen].max())
            allowed = start if self.limits is None else self._within_limits(j, start, seconds)
            if allowed > start:
                # Its account or QOS is at its limit then: no group can start it before.
                at = np.maximum(at, allowed)
                continue
            if draw is None or (at[chosen] == start).all():
                break
            # A node free earlier may be busy at the later start: ask every group again.
            at = np.maximum(at, start)
        groups = options[chosen].tolist()
        # The k GPUs of each group that became free last by the start: taking those keeps
        # GPUs free since earlier open for jobs that fit there sooner.
        seats = tuple((q, last - k, last) for q in groups
                      for last in [int(np.searchsorted(self.free[q], start, side="right"))])
        gpus = (np.sort(np.concatenate([self.members[q, lo:hi] for q, lo, hi in seats]))
                if k else np.zeros(0, dtype=np.int64))
        nodes = self.group_node[groups]
        slow = instance.spread_factor(j, nodes) if m > 1 else 1.0
        return Slot(start, start + float(instance.duration[j, t]) * slow, t, gpus,
                    int(nodes.min()) if m > 1 else int(nodes[0]), seats if k else None)

    def _groups_for(self, t: int, k: int, level: int, partition: int) -> IntArray:
        """The groups of type ``t`` with ``k`` GPUs, labelled at ``level`` (-1: any).

        On the nodes of ``partition`` only (-1: any node).
        """
        key = (t, k, level, partition)
        options = self._options.get(key)
        if options is None:
            options = np.flatnonzero((self.group_type == t) & (self.group_size >= k))
            if level >= 0:
                assert self.domain is not None
                options = options[self.domain[options, level] >= 0]
            if partition >= 0:
                inside = self.instance.partition_nodes[partition, self.group_node[options]]
                options = options[inside]
            self._options[key] = options
        return options

    def _within_limits(self, j: int, start: float, seconds: float) -> float:
        """The earliest time from ``start`` at which every GPU limit of job ``j`` has room.

        Room for its gang for ``seconds``; ``start`` itself for a job under none.
        """
        mine = self.instance.job_limits[j]
        if not mine:
            return start
        assert self.limits is not None
        draw = np.array([float(self.instance.gang[j])])
        at = start
        while True:
            later = max(self.limits.earliest(k, at, seconds, draw) for k in mine)
            if later <= at:
                return at
            at = later

    def _choose(self, options: IntArray, at: FloatArray, m: int, level: int) -> IntArray | None:
        """Positions in ``options`` of the ``m`` groups that start the job earliest.

        All in one domain of ``level`` (-1: anywhere); None if no domain has ``m`` that
        ever can. Ties go to the best fit (see the module).
        """
        if m == 1 and level < 0 and self.domain is None:
            # The earliest; ties go to the lowest group (options are in increasing order).
            best = int(np.argmin(at))
            return np.array([best]) if np.isfinite(at[best]) else None
        finite = np.isfinite(at)
        if int(finite.sum()) < m:
            return None
        key = self._fit_key(options, at)
        if level < 0:
            order = np.lexsort((*key, at))
            return order[:m] if finite[order[m - 1]] else None
        assert self.domain is not None
        domain = self.domain[options, level]
        order = np.lexsort((*key, at, domain))
        domain = domain[order]
        starts = np.flatnonzero(np.r_[True, domain[1:] != domain[:-1]])
        sizes = np.diff(np.r_[starts, domain.size])
        able = starts[sizes >= m]
        if not able.size:
            return None
        # Each able domain's start is its m-th earliest group's; the earliest domain wins.
        mth = at[order[able + m - 1]]
        rank = [k[order[able]] for k in key]
        best = int(np.lexsort((*rank, mth))[0])
        if not np.isfinite(mth[best]):
            return None
        first = int(able[best])
        chosen: IntArray = order[first:first + m]
        return chosen

    def _fit_key(self, options: IntArray, at: FloatArray) -> tuple[IntArray, ...]:
        """Tie-break keys for :func:`numpy.lexsort`, least significant first.

        The group's index; with topology, before it the GPUs free at the earliest start
        on its node, then in its domain of each level, narrowest first (fewer first).
        """
        keys: list[IntArray] = [options]
        if self.domain is None:
            return tuple(keys)
        finite = at[np.isfinite(at)]
        moment = float(finite.min()) if finite.size else 0.0
        free_now = (self.free <= moment).sum(axis=1)
        keys.append(free_now[options])
        for level in range(self.domain.shape[1] - 1, -1, -1):
            domain = self.domain[:, level]
            labelled = domain >= 0
            total = np.bincount(domain[labelled], weights=free_now[labelled],
                                minlength=int(domain.max(initial=0)) + 1)
            mine = domain[options]
            # An unlabelled node is a domain of its own: its own free GPUs.
            keys.append(np.where(mine >= 0, total[np.maximum(mine, 0)], free_now[options])
                        .astype(np.int64))
        return tuple(keys)

    def kept(self, j: int, gpus: IntArray, start: float, ready: float) -> Slot | None:
        """Job ``j`` on its previous GPUs from its previous start, if that still fits.

        It fits when the GPUs are all up, on nodes of its partition and of one type the job
        may use, free by then (its node demand too, for its whole run, and room within its
        GPU limits), the job may start then (released, predecessors done) and ends by its
        deadline. A CPU-only job has no GPUs to keep.
        """
        instance = self.instance
        groups = self.gpu_group[gpus]
        if not gpus.size or (groups < 0).any() or start < ready - 1e-9:
            return None
        allowed = instance.allowed_nodes(j)
        if allowed is not None and not allowed[self.group_node[groups]].all():
            return None
        t = int(instance.gpu_type[gpus[0]])
        if (instance.gpu_type[gpus] != t).any() or not instance.eligible[j, t]:
            return None
        nodes = np.unique(self.group_node[groups])
        seconds = float(instance.duration[j, t]) * instance.spread_factor(j, nodes)
        if start + seconds > instance.deadline[j]:
            return None
        # Its previous start, or the float noise later its GPUs come free.
        begin = max(start, ready)
        for q in np.unique(groups).tolist():
            free = self.free[q, np.isin(self.members[q], gpus)]
            if (free > start + 1e-9).any():
                return None
            begin = max(begin, float(free.max()))
        if self.usage is not None and any(
                self.usage.earliest(int(n), begin, seconds, instance.node_demand[j]) > begin
                for n in nodes.tolist()):
            return None
        if self._within_limits(j, begin, seconds) > begin:
            return None
        return Slot(begin, begin + seconds, t, np.sort(gpus), int(nodes.min()))

    def take(self, j: int, slot: Slot) -> None:
        """Book job ``j`` in ``slot``: its GPUs busy until its end, its node demand drawn."""
        if slot.seats is not None:
            for q, lo, hi in slot.seats:
                self.free[q, lo:hi] = slot.end
                self._resort(q)
        else:
            for q in np.unique(self.gpu_group[slot.gpus]).tolist():
                self.free[q, np.isin(self.members[q], slot.gpus)] = slot.end
                self._resort(q)
        if self.usage is not None:
            nodes = (np.unique(self.instance.gpu_node[slot.gpus]) if slot.gpus.size
                     else np.array([slot.node]))
            for n in nodes.tolist():
                self.usage.add(n, slot.start, slot.end, self.instance.node_demand[j])
        if self.limits is not None:
            gang = np.array([float(self.instance.gang[j])])
            for k in self.instance.job_limits[j]:
                self.limits.add(k, slot.start, slot.end, gang)

    def _resort(self, q: int) -> None:
        """Keep group ``q``'s GPUs in free-time order after a booking."""
        resort = np.argsort(self.free[q], kind="stable")
        self.free[q], self.members[q] = self.free[q, resort], self.members[q, resort]
