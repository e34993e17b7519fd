"""Defragmentation by migration: when a pod fits nowhere, move a few running pods so it does.

A :class:`Defragmenter` is called by the replay for a pod that no node can take. It looks
for a *target* node where taking a few resident pods off makes the pod fit, holds the target
for the pod, and puts every taken pod back where the replay's policy places it (another node
or other GPUs of the same one) through the same filters. A taken pod that fits nowhere may in
turn take pods off a node of its own (a chain, up to ``depth`` levels), all within
``max_moves`` moves per failing pod and a global budget of ``budget`` moves per arrived pod.

Every set of up to ``max_moves`` pods on one node is checked at once with numpy (a node holds
at most a few dozen pods). Sets are tried smallest first; among equal sizes, those whose pods
all fit elsewhere as things stand, then those moving the least GPU milli and CPU (small pods
are the cheapest to restart), then the node's tie rank; where no chain is left, only sets
whose pods all fit elsewhere are tried. The cluster is changed only through
:meth:`ClusterState.remove` and :meth:`ClusterState.place`, journaled, and a plan that gets
stuck is undone step by step, so a pod is never lost or duplicated and a failed rescue leaves
the cluster as it found it. A rescue's moves run together (the moved pods stop, then start at
their targets, so two pods may trade places); ``one_at_a_time`` keeps only rescues whose moves
can run pod by pod.

On openb's default trace under FGD, rescues with up to two moves allocate only a little
more at 100% arrived (docs/benchmarks.md, "Defragmentation by migration"): once the
cluster is nearly full its free GPU milli lies in slivers next to pods too large to share
them, which a few moves cannot merge.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from itertools import combinations
from typing import Protocol

import numpy as np

from gpuplan.core.instance import BoolArray, IntArray
from gpuplan.sharing import SharePolicy
from gpuplan.sharing.cluster import GPU_MILLI, ClusterState

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Move:
    """One running pod moved so that a failing pod fits.

    Attributes
    ----------
    pod
        The moved pod's index.
    source, target
        Its node before and after (equal for a move between GPUs of one node).
    source_gpus, target_gpus
        Its GPU slots on those nodes (empty for a CPU-only pod).
    rescued
        The failing pod the move made room for.
    """

    pod: int
    source: int
    source_gpus: IntArray
    target: int
    target_gpus: IntArray
    rescued: int


class Rescue(Protocol):
    """What the replay calls for a pod that fits on no node."""

    def __call__(self, state: ClusterState, pod: int, policy: SharePolicy) -> list[Move]:
        """Move running pods so that ``pod`` fits somewhere; return the moves made.

        An empty list means the cluster is unchanged. ``pod`` itself is left unplaced: the
        replay then places it as any other pod.
        """


def choose(state: ClusterState, pod: int, policy: SharePolicy,
           feasible: IntArray | None = None) -> tuple[int, IntArray] | None:
    """Node and GPU slots where ``policy`` puts ``pod`` now; None if no node fits.

    The replay's rule: the highest score among the feasible nodes (no scoring when only one
    is), ties to the smallest rank; the policy's GPU for a share pod, the lowest-index free
    GPUs otherwise. ``feasible``: the pod's feasible nodes when the caller has them.
    """
    if feasible is None:
        feasible = state.feasible(pod)
    if not len(feasible):
        return None
    node = (int(feasible[0]) if len(feasible) == 1
            else state.pick(feasible, policy.score(state, pod, feasible)))
    return node, gpus_on(state, pod, node, policy)


def gpus_on(state: ClusterState, pod: int, node: int, policy: SharePolicy) -> IntArray:
    """The GPU slots ``pod`` takes on ``node`` (see :func:`choose`)."""
    if state.pod_share[pod]:
        return np.array([policy.share_gpu(state, pod, node)], dtype=np.int64)
    return state.whole_gpus(node, int(state.pod_gang[pod]))


@dataclass(frozen=True)
class Shapes:
    """The distinct pod shapes of a cluster's instance: what the filters look at.

    Attributes
    ----------
    of
        ``(J,)`` shape of each pod.
    cpu, mem, gang, milli
        ``(S,)`` CPU milli, memory MiB, GPU count and per-GPU milli of each shape.
    allowed
        ``(S, N)`` nodes whose GPU model each shape may use (all nodes for CPU-only shapes).
    """

    of: IntArray
    cpu: IntArray
    mem: IntArray
    gang: IntArray
    milli: IntArray
    allowed: BoolArray

    @classmethod
    def of_state(cls, state: ClusterState) -> Shapes:
        """The shapes of ``state``'s pods."""
        keys = np.column_stack((state.pod_cpu, state.pod_mem, state.pod_gang, state.pod_milli,
                                state.pod_eligible))
        distinct, of = np.unique(keys.astype(np.int64), axis=0, return_inverse=True)
        cpu, mem, gang, milli = (distinct[:, i].astype(np.int64) for i in range(4))
        allowed = distinct[:, 4:].astype(bool)[:, state.node_type] | (gang == 0)[:, None]
        return cls(of=of.ravel().astype(np.int64), cpu=cpu, mem=mem, gang=gang, milli=milli,
                   allowed=allowed)

    def fits(self, state: ClusterState, shapes: IntArray) -> BoolArray:
        """``(len(shapes), N)`` nodes passing the filters for each shape, now."""
        # A node has g GPUs with room for milli m iff its g-th roomiest GPU has m free.
        roomiest = -np.sort(-state.gpu_free, axis=1)
        kth = np.concatenate((np.full((state.n_nodes, 1), GPU_MILLI), roomiest), axis=1)
        fits: BoolArray = ((state.cpu_free >= self.cpu[shapes, None])
                           & (state.mem_free >= self.mem[shapes, None])
                           & self.allowed[shapes]
                           & (kth.T[self.gang[shapes]] >= self.milli[shapes, None]))
        return fits

    def elsewhere(self, state: ClusterState, pods: IntArray) -> BoolArray:
        """Whether each placed pod passes the filters on some node other than its own, now."""
        present, which = np.unique(self.of[pods], return_inverse=True)
        fits = self.fits(state, present)
        which = which.ravel()
        others: BoolArray = fits.sum(axis=1)[which] - fits[which, state.pod_node[pods]] > 0
        return others


@functools.cache
def _local_combinations(count: int, size: int) -> IntArray:
    """``(C, size)`` every ``size``-subset of ``range(count)``."""
    return np.array(list(combinations(range(count), size)), dtype=np.int64).reshape(-1, size)


def _combinations(sizes: IntArray, size: int) -> tuple[IntArray, IntArray]:
    """Every ``size``-subset of positions within groups of the given sizes.

    Returns
    -------
    tuple
        ``(group, offsets)``: the group of each subset and its ``(S, size)`` positions
        within the group.
    """
    groups, offsets = [np.zeros(0, dtype=np.int64)], [np.zeros((0, size), dtype=np.int64)]
    for count in np.unique(sizes[sizes >= size]).tolist():
        local = _local_combinations(count, size)
        members = np.flatnonzero(sizes == count)
        groups.append(np.repeat(members, len(local)))
        offsets.append(np.tile(local, (len(members), 1)))
    return np.concatenate(groups), np.concatenate(offsets)


def eviction_sets(state: ClusterState, shapes: Shapes, pod: int, size: int,
                  pinned: BoolArray, direct_only: bool) -> tuple[IntArray, IntArray]:
    """Every set of ``size`` unpinned pods on one node whose removal lets ``pod`` fit there.

    With ``direct_only``, only pods that fit on another node as things stand are taken.

    Returns
    -------
    tuple
        ``(nodes, pods)``: the node of each set and its ``(S, size)`` pods, best first (see
        the module docstring).
    """
    shape = int(shapes.of[pod])
    candidate = shapes.allowed[shape] & (state.n_gpus >= shapes.gang[shape])
    resident = np.flatnonzero((state.pod_node >= 0) & ~pinned)
    resident = resident[candidate[state.pod_node[resident]]]
    resident = resident[np.argsort(state.pod_node[resident], kind="stable")]
    on = state.pod_node[resident]
    if direct_only and size > 1:   # fewer pods to pair up
        keep = shapes.elsewhere(state, resident)
        resident, on = resident[keep], on[keep]
    start = np.flatnonzero(np.diff(on, prepend=-1))
    sizes = np.diff(start, append=len(on))
    group, offsets = _combinations(sizes, size)
    position = start[group][:, None] + offsets
    pods, node = resident[position], on[start[group]]
    ok = (state.cpu_free[node] + state.pod_cpu[pods].sum(axis=1) >= shapes.cpu[shape]) & (
        state.mem_free[node] + state.pod_mem[pods].sum(axis=1) >= shapes.mem[shape])
    gang, milli = int(shapes.gang[shape]), int(shapes.milli[shape])
    if gang > 0:
        slots = state.pod_gpus[pods]                                   # (S, size, gang_max)
        held = slots >= 0
        width = state.gpu_free.shape[1]
        cell = (np.arange(len(pods))[:, None, None] * width + slots)[held]
        given = np.broadcast_to(state.pod_milli[pods][:, :, None], slots.shape)[held]
        free = state.gpu_free[node] + np.bincount(
            cell, weights=given, minlength=len(pods) * width).reshape(len(pods), width)
        ok &= ((free >= milli).any(axis=1) if state.pod_share[pod]
               else (free == GPU_MILLI).sum(axis=1) >= gang)
    pods, node = pods[ok], node[ok]
    direct: BoolArray = np.all(shapes.elsewhere(state, pods.ravel()).reshape(pods.shape), axis=1)
    if direct_only:
        pods, node, direct = pods[direct], node[direct], direct[direct]
    moved_milli = (state.pod_milli[pods] * state.pod_gang[pods]).sum(axis=1)
    order = np.lexsort((state.rank[node], state.pod_cpu[pods].sum(axis=1), moved_milli, ~direct))
    return node[order], pods[order]


class _Journal:
    """Places and removals on a cluster, in order, so that any suffix can be undone."""

    def __init__(self, state: ClusterState) -> None:
        self.state = state
        # (pod, node, GPU slots) of a removal; (pod, -1, slots) of a placement.
        self.log: list[tuple[int, int, IntArray]] = []

    def place(self, pod: int, node: int, gpus: IntArray) -> None:
        """Place ``pod`` and record it."""
        self.state.place(pod, node, gpus)
        self.log.append((pod, -1, gpus))

    def remove(self, pod: int) -> None:
        """Remove ``pod`` and record where it was."""
        node, gpus = self.state.remove(pod)
        self.log.append((pod, node, gpus))

    def rollback(self, mark: int) -> None:
        """Undo, newest first, everything recorded after the first ``mark`` entries."""
        while len(self.log) > mark:
            pod, node, gpus = self.log.pop()
            if node < 0:
                self.state.remove(pod)
            else:
                self.state.place(pod, node, gpus)


def _net_moves(journal: _Journal, rescued: int) -> list[Move]:
    """The moves the journal made, net.

    Each pod it touched (but ``rescued``) from where it first was to where it is now, if
    the two differ, in the order the pods were first taken.
    """
    state = journal.state
    first: dict[int, tuple[int, IntArray]] = {}
    for pod, node, gpus in journal.log:
        if node >= 0 and pod != rescued and pod not in first:
            first[pod] = (node, gpus)
    moves = []
    for pod, (node, gpus) in first.items():
        now = state.pod_gpus[pod, :state.pod_gang[pod]].copy()
        if int(state.pod_node[pod]) != node or set(now.tolist()) != set(gpus.tolist()):
            moves.append(Move(pod, node, gpus, int(state.pod_node[pod]), now, rescued))
    return moves


def _one_at_a_time(journal: _Journal, moves: list[Move]) -> list[Move] | None:
    """The moves in an order that runs them one pod at a time, or None if there is none.

    The moved pods go back where they were, then each move runs as soon as its target has
    room: a pod leaves its node only for a place it fits right then. A swap (two pods each
    needing the other's room) has no such order. The cluster ends as it was when called.
    """
    state, mark = journal.state, len(journal.log)
    for move in moves:
        journal.remove(move.pod)
    for move in moves:
        journal.place(move.pod, move.source, move.source_gpus)
    pending, ordered = list(moves), []
    while pending:
        for move in pending:
            journal.remove(move.pod)
            if (state.cpu_free[move.target] >= state.pod_cpu[move.pod]
                    and state.mem_free[move.target] >= state.pod_mem[move.pod]
                    and (state.gpu_free[move.target, move.target_gpus]
                         >= state.pod_milli[move.pod]).all()):
                journal.place(move.pod, move.target, move.target_gpus)
                ordered.append(move)
                pending.remove(move)
                break
            journal.place(move.pod, move.source, move.source_gpus)
        else:
            journal.rollback(mark)
            return None
    return ordered


class Defragmenter:
    """Rescue a failing pod by moving a bounded number of running pods (a :class:`Rescue`).

    Parameters
    ----------
    max_moves
        Most pods moved for one failing pod.
    budget
        Most moves in all, as a share of the pods arrived so far (pods are indexed in
        arrival order, as in the replay); None for no global limit.
    depth
        Longest chain below the failing pod (1: the moved pods must fit somewhere as
        they are; 2: a moved pod may itself move pods off one node; ...). Default
        ``max_moves``.
    tries
        Eviction sets tried per size and level before a larger size is searched.
    one_at_a_time
        Keep only rescues whose moves can run one pod at a time, each pod leaving its node
        only for a place that has room right then (live migration; no swaps), and list
        them in such an order. Default: a rescue's moves run together, the moved pods stop
        and then start at their targets (checkpoint and restart), so swaps are allowed.

    Attributes
    ----------
    moves
        Every move made, in order.
    rescued
        The pods rescued, in order.
    """

    def __init__(self, max_moves: int = 2, budget: float | None = None,
                 depth: int | None = None, tries: int = 8, one_at_a_time: bool = False) -> None:
        depth = max_moves if depth is None else depth
        if min(max_moves, depth, tries) < 1 or (budget is not None and budget < 0):
            raise ValueError(f"max_moves {max_moves}, depth {depth} and tries {tries} must "
                             f"be at least 1, budget {budget} not negative")
        self.max_moves = max_moves
        self.budget = budget
        self.depth = depth
        self.tries = tries
        self.one_at_a_time = one_at_a_time
        self.moves: list[Move] = []
        self.rescued: list[int] = []
        self._shapes: tuple[ClusterState, Shapes] | None = None
        # (shape, allowance) -> the cluster's change count when a rescue last failed: the
        # search is a function of the two, so an unchanged cluster fails again.
        self._failed: dict[tuple[int, int], int] = {}

    def allowance(self, pod: int) -> int:
        """Moves allowed for ``pod``: ``max_moves``, or less if the budget is nearly spent."""
        if self.budget is None:
            return self.max_moves
        left = int(np.floor(self.budget * (pod + 1) + 1e-9)) - len(self.moves)
        return max(0, min(self.max_moves, left))

    def __call__(self, state: ClusterState, pod: int, policy: SharePolicy) -> list[Move]:
        """Move at most :meth:`allowance` pods so that ``pod`` fits; [] if no plan works."""
        allowance = self.allowance(pod)
        if allowance == 0:
            return []
        if self._shapes is None or self._shapes[0] is not state:
            self._shapes = (state, Shapes.of_state(state))
        shapes = self._shapes[1]
        key = (int(shapes.of[pod]), allowance)
        if self._failed.get(key) == int(state.version.sum()):
            return []
        journal = _Journal(state)
        pinned = np.zeros(len(state.pod_node), dtype=bool)
        found: list[list[Move]] = []

        def accept() -> bool:
            """Take the plan if its moves can run (one at a time, if asked)."""
            journal.remove(pod)   # the replay places it, as any pod
            moves: list[Move] | None = _net_moves(journal, pod)
            if self.one_at_a_time and moves is not None:
                moves = _one_at_a_time(journal, moves)
            if moves is not None:
                found.append(moves)
            return moves is not None

        if self._evict_for(journal, shapes, pod, allowance, self.depth, pinned, policy,
                           accept) is None:
            self._failed[key] = int(state.version.sum())
            return []
        moves = found[-1]
        self.moves.extend(moves)
        self.rescued.append(pod)
        logger.debug("pod %d rescued by %d moves", pod, len(moves))
        return moves

    def _fit(self, journal: _Journal, shapes: Shapes, pod: int, allowance: int, depth: int,
             pinned: BoolArray, policy: SharePolicy) -> int | None:
        """Place ``pod`` by the policy, else by moving pods; the moves used, None if stuck."""
        where = choose(journal.state, pod, policy)
        if where is not None:
            journal.place(pod, *where)
            return 0
        if allowance == 0 or depth == 0:
            return None
        return self._evict_for(journal, shapes, pod, allowance, depth, pinned, policy)

    def _evict_for(self, journal: _Journal, shapes: Shapes, pod: int, allowance: int,
                   depth: int, pinned: BoolArray, policy: SharePolicy,
                   accept: Callable[[], bool] | None = None) -> int | None:
        """Place ``pod`` on a node after moving at most ``allowance`` pods (None if stuck).

        ``pinned`` pods (those already moving in this rescue) are not taken again; a plan
        that places every pod is undone, and the next one tried, when ``accept`` says no.
        """
        state = journal.state
        pinned[pod] = True
        before = pinned.copy()
        for size in range(1, allowance + 1):
            # Without a chain left, the taken pods must fit elsewhere as things stand.
            nodes, sets = eviction_sets(state, shapes, pod, size, pinned,
                                        depth == 1 or size == allowance)
            for node, taken in zip(nodes[:self.tries].tolist(), sets[:self.tries].tolist(),
                                   strict=True):
                mark = len(journal.log)
                for q in taken:
                    journal.remove(q)
                journal.place(pod, node, gpus_on(state, pod, node, policy))
                pinned[taken] = True
                used = self._rehome(journal, shapes, taken, allowance - size, depth - 1,
                                    pinned, policy)
                if used is not None and (accept is None or accept()):
                    return size + used
                pinned[:] = before
                journal.rollback(mark)
        pinned[pod] = False
        return None

    def _rehome(self, journal: _Journal, shapes: Shapes, taken: list[int], allowance: int,
                depth: int, pinned: BoolArray, policy: SharePolicy) -> int | None:
        """Place the taken pods where the policy puts them, moving others if need be.

        Largest first: the small ones fit in what the large ones leave. Returns the further
        moves used, None if a pod is stuck.
        """
        state = journal.state
        used = 0
        for q in sorted(taken, key=lambda q: -int(state.pod_gang[q] * state.pod_milli[q]
                                                   + state.pod_cpu[q])):
            more = self._fit(journal, shapes, q, allowance - used, depth, pinned, policy)
            if more is None:
                return None
            used += more
        return used
