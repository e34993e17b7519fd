"""Rounding fractional type shares to placements, and the improvement step after it.

A rounding turns an LP's ``(J, T)`` shares into an integral placement that respects
per-GPU capacity: it fixes an order and a type preference per job, and best-fit packing
(:func:`~gpuplan.parts.construct.best_fit_decreasing`) does the rest, falling back to the
next preferred type when one is full (capacity-aware repair). :data:`ROUNDINGS` is the
registry behind ``gpuplan solve --method lp --rounding NAME``.

Every rounding, repair and improvement here takes a :class:`~gpuplan.core.budget.Budget` and
reads it as it goes; what is not done when it is spent is left as it is.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpuplan.core.budget import Budget
from gpuplan.core.instance import BoolArray, FloatArray, Instance, IntArray
from gpuplan.core.result import Result, better
from gpuplan.models.assignment import job_value
from gpuplan.parts.construct import best_fit_decreasing, job_size

#: A rounding: (instance, shares, seed, budget) -> placement result.
Rounding = Callable[[Instance, FloatArray, int, Budget], Result]
#: Jobs (or GPUs) handled between two readings of the clock.
CLOCK_EVERY = 32


def _tie_break(instance: Instance) -> FloatArray:
    """A small preference for better objective value among types of equal share."""
    value = job_value(instance)
    sign = -1.0 if instance.objective.sense == "max" else 1.0
    spread = np.abs(value).max() or 1.0
    return 1e-6 * sign * value / spread


def _base_rank(instance: Instance, shares: FloatArray) -> FloatArray:
    """Types by decreasing share, ties to the better objective value; ineligible last."""
    return np.where(instance.eligible, -shares + _tie_break(instance), np.inf)


def _pack(instance: Instance, shares: FloatArray, rank: FloatArray,
          budget: Budget) -> Result:
    """Best-fit packing with the surest jobs first and the given type preference.

    Jobs the LP puts wholly on one type come first (largest share, then size), so that
    fractional jobs, the ones the LP itself was unsure of, adapt to what is left; jobs the
    LP leaves out entirely (when dropping is allowed) come last.
    """
    confidence = shares.max(axis=1)
    order = np.lexsort((np.arange(instance.n_jobs), -job_size(instance), -confidence))
    return best_fit_decreasing(instance, order=order, type_rank=rank, budget=budget)


def largest_share(instance: Instance, shares: FloatArray, seed: int,
                  budget: Budget) -> Result:
    """Each job prefers its types by decreasing LP share; the surest jobs are placed first."""
    return _pack(instance, shares, _base_rank(instance, shares), budget)


def randomized(instance: Instance, shares: FloatArray, seed: int,
               budget: Budget) -> Result:
    """Raghavan-Thompson style: draw each job's first type with probability = its share.

    Eight seeded draws are packed and the best plan is kept (fewer when the budget is spent
    first; the first draw is always packed); within a draw a job falls back to its other
    types, by share, when the drawn one is full.
    """
    rng = np.random.default_rng(seed)
    total = shares.sum(axis=1, keepdims=True)
    cumulative = np.cumsum(shares / np.where(total > 0, total, 1.0), axis=1)
    base = _base_rank(instance, shares)
    best: Result | None = None
    for k in range(8):
        if k and budget.spent():
            break
        draw = rng.random(instance.n_jobs)[:, None] < cumulative
        jobs = np.flatnonzero(draw.any(axis=1))
        rank = base.copy()
        rank[jobs, draw[jobs].argmax(axis=1)] = -2.0
        result = _pack(instance, shares, rank, budget)
        # The better plan, the earlier on a tie; until a draw has a plan, the latest draw.
        best = (result if best is None or not best.status.has_plan
                else better(instance, best, result))
    assert best is not None
    return best


ROUNDINGS: dict[str, Rounding] = {"largest-share": largest_share, "randomized": randomized}


def _copy_with_residual(
    instance: Instance, placed: dict[int, IntArray]
) -> tuple[dict[int, IntArray], FloatArray]:
    """A copy of a placement, and the ``(G, R)`` capacity each GPU has left under it."""
    gpu_type = instance.gpu_type
    residual = instance.packing_capacity[gpu_type].copy()
    for j, gpus in placed.items():
        residual[gpus] -= instance.packing_demand[j, gpu_type[gpus]]
    return {j: g.copy() for j, g in placed.items()}, residual


class _NodeRoom:
    """What each node has left of its node resources as single-GPU jobs move.

    Every check passes on an instance whose jobs draw nothing on nodes.
    """

    def __init__(self, instance: Instance, placed: dict[int, IntArray]) -> None:
        self.instance = instance
        self.active = bool(instance.node_demand.any())
        self.left = instance.node_capacity.copy()
        if self.active:
            for j, gpus in placed.items():
                self.left[np.unique(instance.gpu_node[gpus])] -= instance.node_demand[j]

    def fits(self, j: int, freed: tuple[int, int] | None = None) -> BoolArray:
        """``(G,)`` whether job ``j`` fits the node of each GPU.

        ``freed`` is a (job, GPU) whose draw counts as gone from that GPU's node.
        """
        instance = self.instance
        if not self.active:
            return np.ones(instance.n_gpus, dtype=bool)
        left = self.left.copy()
        if freed is not None:
            left[instance.gpu_node[freed[1]]] += instance.node_demand[freed[0]]
        room: BoolArray = (left - instance.node_demand[j]
                           >= -1e-9 * instance.node_capacity).all(axis=1)
        return room[instance.gpu_node]

    def move(self, j: int, source: int | None, target: int) -> None:
        """Job ``j`` leaves GPU ``source`` (None: it was not placed) for GPU ``target``."""
        if not self.active:
            return
        node = self.instance.gpu_node
        if source is not None:
            self.left[node[source]] += self.instance.node_demand[j]
        self.left[node[target]] -= self.instance.node_demand[j]


def _after_swap(nodes: _NodeRoom, j: int, k: int, g: int) -> BoolArray:
    """``(G,)`` where job ``k`` fits once it has left GPU ``g`` and job ``j`` has taken it."""
    if not nodes.active:
        return np.ones(nodes.instance.n_gpus, dtype=bool)
    instance = nodes.instance
    left = nodes.left.copy()
    node = instance.gpu_node[g]
    left[node] += instance.node_demand[k] - instance.node_demand[j]
    room: BoolArray = (left - instance.node_demand[k]
                       >= -1e-9 * instance.node_capacity).all(axis=1)
    return room[instance.gpu_node]


def improve_by_moves(
    instance: Instance, placed: dict[int, IntArray], budget: Budget
) -> tuple[dict[int, IntArray], int]:
    """Shift single-GPU jobs to better GPUs with room (and insert dropped ones) until stuck.

    Applies to the objectives that sum a value per (job, type): each pass moves every
    single-GPU job to the GPU with the largest improvement that still fits, and, when jobs
    may be dropped, inserts unplaced ones wherever they fit. Gang jobs stay where they are.

    Parameters
    ----------
    instance
        The instance (assignment-value objective).
    placed
        Job to GPUs; not modified.
    budget
        Read between passes and every :data:`CLOCK_EVERY` jobs.

    Returns
    -------
    tuple
        The improved placement and the number of moves made.
    """
    gpu_type = instance.gpu_type
    capacity = instance.packing_capacity[gpu_type]
    placed, residual = _copy_with_residual(instance, placed)
    nodes = _NodeRoom(instance, placed)
    sign = -1.0 if instance.objective.sense == "max" else 1.0
    cost = sign * job_value(instance)  # lower is better
    moves = 0
    improved = True
    while improved and not budget.spent():
        improved = False
        for j in range(instance.n_jobs):
            if j % CLOCK_EVERY == 0 and budget.spent():
                break
            if instance.gang[j] != 1:
                continue
            demand = instance.packing_demand[j][gpu_type]
            current = placed.get(j)
            free = residual + (demand * (np.arange(instance.n_gpus) == current[0])[:, None]
                               if current is not None else 0.0)
            fits = instance.eligible[j][gpu_type] & (
                free - demand >= -1e-9 * capacity
            ).all(axis=1) & nodes.fits(j, None if current is None else (j, int(current[0])))
            if current is None:
                # Only max-weight plans leave jobs out; inserting one with weight helps.
                if not fits.any() or instance.weight[j] <= 0:
                    continue
                gain = np.where(fits, -cost[j, gpu_type], -np.inf)
            else:
                gain = np.where(fits, cost[j, gpu_type[current[0]]] - cost[j, gpu_type], -np.inf)
            target = int(np.argmax(gain))
            if current is None or gain[target] > 1e-9:
                if current is not None:
                    residual[current] += demand[current]
                residual[target] -= demand[target]
                nodes.move(j, None if current is None else int(current[0]), target)
                placed[j] = np.array([target])
                moves += 1
                improved = True
    return placed, moves


def repair_by_ejection(
    instance: Instance, placed: dict[int, IntArray], budget: Budget
) -> dict[int, IntArray]:
    """Place left-out single-GPU jobs by moving one blocking job elsewhere.

    These are ejection chains of depth one; each left-out job takes the cheapest such pair
    of moves.

    Parameters
    ----------
    instance
        The instance (static objective).
    placed
        Job to GPUs; not modified.
    budget
        Read before each left-out job and every :data:`CLOCK_EVERY` GPUs.

    Returns
    -------
    dict
        The placement with as many left-out jobs placed as the moves allow.
    """
    gpu_type = instance.gpu_type
    capacity = instance.packing_capacity[gpu_type]
    placed, residual = _copy_with_residual(instance, placed)
    nodes = _NodeRoom(instance, placed)
    on_gpu: list[list[int]] = [[] for _ in range(instance.n_gpus)]
    for j, gpus in placed.items():
        if instance.gang[j] == 1:
            on_gpu[int(gpus[0])].append(j)
    sign = -1.0 if instance.objective.sense == "max" else 1.0
    cost = sign * job_value(instance)
    slack = 1e-9 * capacity
    missing = [j for j in np.argsort(-job_size(instance)) if j not in placed
               and instance.gang[j] == 1]
    for j in missing:
        if budget.spent():
            break
        need = instance.packing_demand[j][gpu_type]
        eligible = instance.eligible[j][gpu_type]
        fits = eligible & (residual - need >= -slack).all(axis=1) & nodes.fits(int(j))
        if fits.any():
            target = int(np.argmin(np.where(fits, cost[j, gpu_type], np.inf)))
            best: tuple[float, int, int, int] | None = (0.0, target, -1, -1)
        else:
            best = None
            for i, g in enumerate(np.flatnonzero(eligible).tolist()):
                if i % CLOCK_EVERY == 0 and budget.spent():
                    break
                for k in on_gpu[g]:
                    freed = residual[g] + instance.packing_demand[k, gpu_type[g]]
                    if (freed - need[g] < -slack[g]).any() or not nodes.fits(
                            int(j), (k, g))[g]:
                        continue
                    other = instance.packing_demand[k][gpu_type]
                    # k moves away (its draw leaves g's node), then j takes g.
                    room = instance.eligible[k][gpu_type] & (
                        residual - other >= -slack
                    ).all(axis=1) & _after_swap(nodes, int(j), k, g)
                    room[g] = False
                    if not room.any():
                        continue
                    h = int(np.argmin(np.where(room, cost[k, gpu_type], np.inf)))
                    delta = cost[j, gpu_type[g]] + cost[k, gpu_type[h]] - cost[k, gpu_type[g]]
                    if best is None or delta < best[0]:
                        best = (float(delta), g, k, h)
        if best is None:
            continue
        _, to, ejected, moved_to = best
        if ejected >= 0:
            residual[to] += instance.packing_demand[ejected, gpu_type[to]]
            residual[moved_to] -= instance.packing_demand[ejected, gpu_type[moved_to]]
            on_gpu[to].remove(ejected)
            on_gpu[moved_to].append(ejected)
            nodes.move(ejected, to, moved_to)
            placed[ejected] = np.array([moved_to])
        nodes.move(int(j), None, to)
        residual[to] -= need[to]
        on_gpu[to].append(int(j))
        placed[int(j)] = np.array([to])
    return placed
