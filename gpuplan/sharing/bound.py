"""A proven upper bound on the GPU share any placement can allocate to a set of pods.

Every placement of the given pods (each on one node of a model it may use, CPU and memory
summed per node, a share pod on one GPU whose pods' milli sum to at most 1000, an n-GPU pod on
n whole GPUs of one node) allocates at most :attr:`AllocationBound.bound_milli` GPU milli.
Pods that ask for no GPU allocate nothing and only take room, so a placement without them
allocates as much: the bound leaves them out. Pods are aggregated into *shapes* (equal gang,
per-GPU milli, CPU, memory and models) and nodes into *kinds* (equal model, GPU count, CPU
and memory); the default openb trace has about 150 shapes and 15 kinds.

Two relaxations (:data:`RELAXATIONS`):

``fill``
    One LP over node kinds: how many pods of each shape a kind holds, and how many of its GPUs
    carry each *fill*, a maximal multiset of share-pod sizes that fits one GPU (Gilmore and
    Gomory's cutting patterns, for one GPU); whole-GPU pods and filled GPUs share the kind's
    GPUs, CPU and memory are summed over the kind's nodes, and a kind holds at most its node
    count times what one node can hold of each shape. A fraction of a second on the whole
    inflated default trace.
``configuration``
    Column generation over fillings of whole nodes, started from the fill LP's prices. The
    master LP chooses how many nodes of each kind take each filling; the pricing problem, a
    MILP per kind over shapes and GPU fills, finds the best filling of ONE node at the master's
    prices, CPU and memory per node included. Every round gives a Lagrangian bound (pod counts
    times the shape prices, plus each kind's node count times its best filling's value at
    those prices, as the pricing MILP proves it), valid whether or not the generation has
    converged, so a budget that runs out still leaves a proven bound; the smallest one found,
    the fill LP's included, is returned. Where it converges on the openb traces, it proves
    the fill LP's bound and nothing lower: per node, CPU and memory cost nothing more there.

The fill LP's bound is recomputed from its row prices by weak duality (:func:`dual_bound`),
so solver tolerances can make it weaker, never invalid.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

import numpy as np

from gpuplan.backends import backend_for
from gpuplan.backends.base import Capabilities, ProgramSolution, Session
from gpuplan.core.budget import Budget, Limits
from gpuplan.core.instance import BoolArray, FloatArray, Instance, IntArray
from gpuplan.core.status import OPTIMAL_GAP, Status
from gpuplan.models.linear import LazyNames, LinearProgram, RowBuilder
from gpuplan.sharing.cluster import GPU_MILLI, ClusterState
from gpuplan.sharing.replay import ARRIVED_PERCENT

logger = logging.getLogger(__name__)

#: The name of a relaxation.
Relaxation = Literal["fill", "configuration"]
#: The relaxations :func:`allocation_bound` solves (see the module docstring).
RELAXATIONS: tuple[Relaxation, ...] = ("fill", "configuration")

#: Most GPU fills enumerated. Beyond it, the two closest share-pod sizes are merged into the
#: smaller one (every pod of the larger size counts as the smaller), which only relaxes the
#: packing, until the fills fit; the openb traces have 1,871 fills of 20 sizes.
MAX_FILLS = 200_000

#: Share of its pricing weight a Wentges-smoothed round gives to the best prices so far.
SMOOTHING = 0.3

#: Reduced value (milli) above which a node filling improves the master.
IMPROVES = 1e-6


class BoundStatus(StrEnum):
    """How a bound computation ended."""

    #: The relaxation is solved: the bound is its optimum (column generation: the master's
    #: value is within :data:`gpuplan.core.status.OPTIMAL_GAP` of the bound).
    OPTIMAL = "optimal"
    #: The budget ran out first; the bound is the best one proven by then.
    TIME_LIMIT = "time_limit"


@dataclass(frozen=True)
class AllocationBound:
    """A proven upper bound on the GPU milli any placement of some pods allocates.

    Attributes
    ----------
    bound_milli
        No placement of the pods allocates more GPU milli.
    capacity_milli
        GPU milli of the whole cluster.
    requested_milli
        GPU milli the pods ask for in all (repeats counted).
    status
        Whether the relaxation was solved or the budget ran out.
    relaxation
        ``"fill"`` or ``"configuration"``.
    seconds
        Wall time.
    rounds
        Pricing rounds of the column generation (0 for the fill LP).
    master_milli
        Column generation: the master LP's last value, a placement of fractional node
        fillings; the configuration LP's optimum lies between it and the bound. None for
        the fill LP.
    """

    bound_milli: float
    capacity_milli: int
    requested_milli: int
    status: BoundStatus
    relaxation: Relaxation
    seconds: float
    rounds: int = 0
    master_milli: float | None = None

    @property
    def percent(self) -> float:
        """The bound as a percentage of the cluster's GPU capacity."""
        return 100.0 * self.bound_milli / self.capacity_milli


@dataclass(frozen=True)
class PodShapes:
    """Distinct GPU pods and how many of each there are.

    Attributes
    ----------
    count
        ``(S,)`` pods of each shape.
    gang, milli, cpu, mem
        ``(S,)`` GPUs, per-GPU milli, CPU milli and memory MiB of each shape.
    eligible
        ``(S, T)`` GPU models each shape may use.
    """

    count: IntArray
    gang: IntArray
    milli: IntArray
    cpu: IntArray
    mem: IntArray
    eligible: BoolArray

    def take(self, index: IntArray) -> PodShapes:
        """The shapes at ``index``."""
        return PodShapes(count=self.count[index], gang=self.gang[index], milli=self.milli[index],
                         cpu=self.cpu[index], mem=self.mem[index], eligible=self.eligible[index])

    @property
    def share(self) -> BoolArray:
        """``(S,)`` shapes that take part of one GPU (the rest take whole GPUs)."""
        share: BoolArray = (self.gang == 1) & (self.milli < GPU_MILLI)
        return share

    @property
    def weight(self) -> IntArray:
        """``(S,)`` GPU milli one pod of each shape allocates."""
        weight: IntArray = self.gang * self.milli
        return weight


def pod_shapes(state: ClusterState, jobs: IntArray) -> PodShapes:
    """The GPU pods among ``jobs`` (repeats counted), aggregated into shapes."""
    gpu_jobs = jobs[state.pod_gang[jobs] > 0]
    key = np.column_stack((state.pod_gang[gpu_jobs], state.pod_milli[gpu_jobs],
                           state.pod_cpu[gpu_jobs], state.pod_mem[gpu_jobs],
                           state.pod_eligible[gpu_jobs].astype(np.int64)))
    unique, count = np.unique(key.reshape(len(gpu_jobs), -1), axis=0, return_counts=True)
    return PodShapes(count=count.astype(np.int64), gang=unique[:, 0], milli=unique[:, 1],
                     cpu=unique[:, 2], mem=unique[:, 3], eligible=unique[:, 4:].astype(bool))


@dataclass(frozen=True)
class NodeKinds:
    """Distinct nodes and how many of each there are.

    Attributes
    ----------
    count
        ``(K,)`` nodes of each kind.
    gpu_type, gpus, cpu, mem
        ``(K,)`` GPU model index, GPU count, CPU milli and memory MiB of each kind.
    """

    count: IntArray
    gpu_type: IntArray
    gpus: IntArray
    cpu: IntArray
    mem: IntArray


def node_kinds(state: ClusterState) -> NodeKinds:
    """The cluster's nodes, aggregated into kinds."""
    capacity = np.rint(state.instance.node_capacity[:, :2]).astype(np.int64)
    key = np.column_stack((state.node_type, state.n_gpus, capacity))
    unique, count = np.unique(key, axis=0, return_counts=True)
    return NodeKinds(count=count.astype(np.int64), gpu_type=unique[:, 0], gpus=unique[:, 1],
                     cpu=unique[:, 2], mem=unique[:, 3])


def node_limits(shapes: PodShapes, kinds: NodeKinds) -> IntArray:
    """``(K, S)`` most pods of each shape one node of each kind holds (0: none at all).

    The least of what its CPU, its memory and its GPUs allow (a share pod: as many per GPU
    as fit in 1000 milli), and 0 on a model the shape may not use.
    """
    def by(capacity: IntArray, need: IntArray) -> IntArray:
        limit: IntArray = np.where(need > 0, capacity[:, None] // np.maximum(need, 1),
                                   np.iinfo(np.int64).max)
        return limit

    per_gpu = np.where(shapes.share, GPU_MILLI // np.maximum(shapes.milli, 1), 1)
    on_gpus = kinds.gpus[:, None] * per_gpu // np.where(shapes.share, 1, shapes.gang)
    limit = np.minimum(np.minimum(by(kinds.cpu, shapes.cpu), by(kinds.mem, shapes.mem)),
                       on_gpus)
    allowed: IntArray = np.where(shapes.eligible[:, kinds.gpu_type].T, limit, 0)
    return allowed


@dataclass(frozen=True)
class GpuFills:
    """The share-pod sizes one GPU is filled with, and its maximal fills.

    Attributes
    ----------
    sizes
        ``(V,)`` the distinct sizes, ascending, after any merging (:data:`MAX_FILLS`).
    """

    sizes: IntArray

    def level(self, milli: IntArray) -> IntArray:
        """Index in :attr:`sizes` of the size each pod size counts as (the largest not above)."""
        level: IntArray = np.searchsorted(self.sizes, milli, side="right") - 1
        return level

    def maximal(self, levels: IntArray) -> IntArray:
        """``(F, len(levels))`` the maximal fills with pods of the sizes at ``levels``.

        Each row counts the pods of each size on a GPU; adding any pod would overflow it.
        A subset of the sizes has no more fills than all of them, so this stays within
        :data:`MAX_FILLS`.
        """
        fills = _maximal_fills(self.sizes[np.sort(levels)], None)
        assert fills is not None  # no limit was given
        return fills


def gpu_fills(milli: IntArray) -> GpuFills:
    """The sizes of share pods of the given milli, merged until their fills are few enough.

    When the sizes have more than :data:`MAX_FILLS` partial fills (:func:`_maximal_fills`),
    the two closest sizes are merged into the smaller one and the count starts again.
    """
    sizes = np.unique(milli)
    while len(sizes) > 1 and _maximal_fills(sizes, MAX_FILLS) is None:
        closest = int(np.argmin(np.diff(sizes)))
        logger.debug("more than %d GPU fills: size %d counts as %d", MAX_FILLS,
                     sizes[closest + 1], sizes[closest])
        sizes = np.delete(sizes, closest + 1)
    return GpuFills(sizes=sizes)


def _maximal_fills(sizes: IntArray, limit: int | None) -> IntArray | None:
    """The maximal fills of one GPU with pods of ``sizes`` (ascending, distinct).

    Sizes are taken largest first, each partial fill branching on how many of the next size
    it takes; the smallest size only tops up (a maximal fill has less room left than it).
    None when more than ``limit`` partial fills arise.
    """
    fills = np.zeros((1, len(sizes)), dtype=np.int64)
    room = np.array([GPU_MILLI], dtype=np.int64)
    for v in range(len(sizes) - 1, 0, -1):
        branches = room // sizes[v] + 1
        if limit is not None and int(branches.sum()) > limit:
            return None
        parent = np.repeat(np.arange(len(room)), branches)
        taken = np.arange(len(parent)) - np.repeat(np.cumsum(branches) - branches, branches)
        fills = fills[parent]
        fills[:, v] = taken
        room = room[parent] - taken * sizes[v]
    if len(sizes):
        fills[:, 0] = room // sizes[0]
    return fills


@dataclass(frozen=True)
class _KindBlock:
    """The rows that keep one kind's columns within its nodes, for a set of shapes.

    Columns: one per shape in ``shapes`` (pods on the kind), then one per fill in ``fills``
    (GPUs carrying it). Rows: per share size, pods of that size within the fills' slots;
    fills plus whole GPUs within the GPUs; CPU; memory; all scaled by the node count.
    """

    shapes: IntArray
    fills: IntArray
    levels: IntArray

    @classmethod
    def build(cls, pods: PodShapes, fills: GpuFills, shapes: IntArray) -> _KindBlock:
        """The block of a kind for these shape indices."""
        share = shapes[pods.share[shapes]]
        levels = np.unique(fills.level(pods.milli[share]))
        return cls(shapes=shapes, fills=fills.maximal(levels) if len(levels) else np.zeros(
            (0, 0), dtype=np.int64), levels=levels)

    @property
    def n_cols(self) -> int:
        """Columns of the block."""
        return len(self.shapes) + len(self.fills)

    def add_rows(self, rows: RowBuilder, pods: PodShapes, fills: GpuFills, kinds: NodeKinds,
                 kind: int, nodes: int, first_col: int) -> None:
        """Add the block's rows for ``nodes`` nodes, its columns starting at ``first_col``."""
        pod_col = first_col + np.arange(len(self.shapes))
        fill_col = first_col + len(self.shapes) + np.arange(len(self.fills))
        share = np.flatnonzero(pods.share[self.shapes])
        n_levels = len(self.levels)
        pod_level = np.searchsorted(self.levels, fills.level(pods.milli[self.shapes[share]]))
        fill_at, level_at = np.nonzero(self.fills)
        whole = np.flatnonzero(~pods.share[self.shapes])
        gpu_row, cpu_row, mem_row = n_levels, n_levels + 1, n_levels + 2
        n_pods = len(self.shapes)
        row = np.concatenate((pod_level, level_at, np.full(len(self.fills) + len(whole), gpu_row),
                              np.full(n_pods, cpu_row), np.full(n_pods, mem_row)))
        col = np.concatenate((pod_col[share], fill_col[fill_at], fill_col, pod_col[whole],
                              pod_col, pod_col))
        value = np.concatenate((np.ones(len(share)), -self.fills[fill_at, level_at],
                                np.ones(len(self.fills)), pods.gang[self.shapes[whole]],
                                pods.cpu[self.shapes], pods.mem[self.shapes])).astype(float)
        upper = np.concatenate((np.zeros(n_levels), nodes * np.array(
            [kinds.gpus[kind], kinds.cpu[kind], kinds.mem[kind]])))
        sizes = fills.sizes[self.levels]
        names = LazyNames(n_levels + 3, lambda i: f"kind {kind} " + (
            f"milli {sizes[i]}" if i < n_levels else ("gpus", "cpu", "memory")[i - n_levels]))
        rows.add(row, col, value, np.full(n_levels + 3, -np.inf), upper, names)

    def col_upper(self, kinds: NodeKinds, kind: int, nodes: int, pods: IntArray) -> FloatArray:
        """Column bounds: ``pods`` per shape column, every GPU of the nodes per fill."""
        return np.concatenate((pods, np.full(len(self.fills), nodes * kinds.gpus[kind])))


def dual_bound(program: LinearProgram, prices: FloatArray) -> float:
    """Weak duality: an upper bound on a maximisation from any row prices.

    The program's rows are all ``A x <= b`` and its columns ``0 <= x <= u``; for prices
    ``y >= 0`` (negative ones are taken as 0), ``c x = y A x + (c - y A) x <= y b +
    sum(u * max(0, c - y A))`` for every feasible ``x``.

    Raises
    ------
    ValueError
        If a row has a lower bound or a column a non-zero lower bound.
    """
    if np.isfinite(program.row_lower).any() or (program.col_lower != 0).any():
        raise ValueError("weak duality here needs rows A x <= b and columns from 0")
    y = np.maximum(prices, 0.0)
    rows = np.repeat(np.arange(program.n_rows), np.diff(program.row_start))
    priced = np.bincount(program.col_index, weights=program.value * y[rows],
                         minlength=program.n_cols)
    gain = np.maximum(program.cost - priced, 0.0)
    return float(program.row_upper @ y + program.col_upper @ gain)


@dataclass(frozen=True)
class _Problem:
    """Shapes, kinds and what one node of each kind holds, for one bound."""

    pods: PodShapes
    kinds: NodeKinds
    limits: IntArray
    fills: GpuFills


def _fill_program(problem: _Problem) -> LinearProgram:
    """The fill LP (see the module docstring): shape rows first, then each kind's block."""
    pods, kinds = problem.pods, problem.kinds
    shapes = [np.flatnonzero(limit > 0) for limit in problem.limits]
    blocks = [_KindBlock.build(pods, problem.fills, chosen) for chosen in shapes]
    first = np.concatenate(([0], np.cumsum([block.n_cols for block in blocks])))
    rows, n_shapes = RowBuilder(), len(pods.count)
    rows.add(np.concatenate(shapes), np.concatenate(
        [first[k] + np.arange(len(chosen)) for k, chosen in enumerate(shapes)]),
        np.ones(sum(len(chosen) for chosen in shapes)), np.full(n_shapes, -np.inf),
        pods.count.astype(float),
        LazyNames(n_shapes, lambda s: f"shape {s}"))
    cost, upper = [], []
    for kind, (chosen, block) in enumerate(zip(shapes, blocks, strict=True)):
        nodes = int(kinds.count[kind])
        block.add_rows(rows, pods, problem.fills, kinds, kind, nodes, int(first[kind]))
        cost.append(np.concatenate((pods.weight[chosen], np.zeros(len(block.fills)))))
        upper.append(block.col_upper(kinds, kind, nodes, nodes * problem.limits[kind, chosen]))
    n_cols = int(first[-1])
    return rows.program("max", np.concatenate(cost), np.zeros(n_cols), np.concatenate(upper),
                        np.zeros(n_cols, dtype=bool), LazyNames(n_cols, lambda j: f"column {j}"))


def _fill_bound(problem: _Problem, budget: Budget) -> tuple[float, FloatArray, bool] | None:
    """The fill LP's bound, its shape prices and whether it was solved.

    Prices from a run the budget stopped still give a valid (weaker) bound; None when the
    run gave none.
    """
    program = _fill_program(problem)
    solution = _run(program, budget, presolve=True)
    if solution is None or solution.duals is None:
        return None
    prices = solution.duals
    return (dual_bound(program, prices), np.maximum(prices[:len(problem.pods.count)], 0.0),
            solution.status is Status.OPTIMAL)


def _pricing_program(problem: _Problem, kind: int, value: FloatArray) -> tuple[
        LinearProgram, IntArray]:
    """The pricing MILP of a kind: the best filling of one node when a pod is worth ``value``.

    Returns the program and the shape of each of its first columns (one per shape worth
    more than nothing; the rest are GPU fills).
    """
    pods, kinds = problem.pods, problem.kinds
    shapes = np.flatnonzero((problem.limits[kind] > 0) & (value > 0))
    block = _KindBlock.build(pods, problem.fills, shapes)
    rows = RowBuilder()
    block.add_rows(rows, pods, problem.fills, kinds, kind, 1, 0)
    n_cols = block.n_cols
    program = rows.program(
        "max", np.concatenate((value[shapes], np.zeros(len(block.fills)))), np.zeros(n_cols),
        block.col_upper(kinds, kind, 1, np.minimum(problem.limits[kind, shapes],
                                                   pods.count[shapes])),
        np.ones(n_cols, dtype=bool), LazyNames(n_cols, lambda j: f"column {j}"))
    return program, shapes


#: What the bound's programs need of a backend: LPs with their row duals (also of a run
#: stopped early), MILPs, settings for presolve and the LP algorithm, and a master LP held
#: open for column generation.
NEEDS = Capabilities(integer=True, continuous=True, duals=True, incremental=True)
#: Relative gap at which a pricing MILP stops: its proven bound enters the Lagrangian bound.
PRICING_GAP = 1e-6


def _run(program: LinearProgram, budget: Budget, presolve: bool) -> ProgramSolution | None:
    """Solve a program on one thread within the budget; None when no time is left.

    LPs by dual simplex (faster than interior point on the fill LP); the pricing MILPs
    without presolve, which on their many binary fill columns takes many times as long as
    the whole solve without it.
    """
    if budget.left() <= 0 or budget.stop():
        return None
    return backend_for(NEEDS).solve_program(program, Limits(
        budget, threads=1, seed=0, gap=PRICING_GAP, presolve=presolve, algorithm="simplex"))


def _solve_pricing(program: LinearProgram, budget: Budget) -> tuple[FloatArray | None,
                                                                   float] | None:
    """Solve a pricing MILP: its best solution (if any) and its proven bound, or None."""
    solution = _run(program, budget, presolve=False)
    if solution is None or solution.bound is None:
        return None
    return solution.values, solution.bound


@dataclass(frozen=True)
class _Round:
    """One pricing round: its Lagrangian bound and each kind's best node filling found."""

    bound: float
    fillings: list[tuple[int, IntArray]]


def _price_round(problem: _Problem, prices: FloatArray, budget: Budget) -> _Round | None:
    """Price every kind at ``prices``; None when the budget runs out before all are proven."""
    pods, kinds = problem.pods, problem.kinds
    value = pods.weight - prices
    bound = float(pods.count @ prices)
    fillings = []
    for kind in range(len(kinds.count)):
        program, shapes = _pricing_program(problem, kind, value)
        if not len(shapes):
            continue   # no pod is worth anything here: the empty node is best
        solved = _solve_pricing(program, budget)
        if solved is None:
            return None
        values, proven = solved
        bound += float(kinds.count[kind]) * max(proven, 0.0)
        if values is not None:
            filling = np.zeros(len(pods.count), dtype=np.int64)
            filling[shapes] = np.rint(values[:len(shapes)]).astype(np.int64)
            fillings.append((kind, filling))
    return _Round(bound, fillings)


class _Master:
    """The configuration LP over the node fillings found so far, held open in HiGHS.

    Rows: pods of each shape within their count, then nodes of each kind within theirs.
    It starts from one filling per kind and shape: as many pods of that shape alone as a
    node holds.
    """

    def __init__(self, problem: _Problem, budget: Budget) -> None:
        self.problem = problem
        pods, kinds = problem.pods, problem.kinds
        kind, shape = np.nonzero(problem.limits)
        seeds = np.zeros((len(kind), len(pods.count)), dtype=np.int64)
        seeds[np.arange(len(kind)), shape] = np.minimum(problem.limits[kind, shape],
                                                        pods.count[shape])
        n_shapes, n_cols = len(pods.count), len(kind)
        rows = RowBuilder()
        rows.add(np.concatenate((shape, n_shapes + kind)), np.tile(np.arange(n_cols), 2),
                 np.concatenate((seeds[np.arange(n_cols), shape], np.ones(n_cols))),
                 np.full(n_shapes + len(kinds.count), -np.inf),
                 np.concatenate((pods.count, kinds.count)).astype(float),
                 LazyNames(n_shapes + len(kinds.count), lambda i: f"row {i}"))
        program = rows.program("max", (seeds @ pods.weight).astype(float), np.zeros(n_cols),
                               kinds.count[kind].astype(float), np.zeros(n_cols, dtype=bool),
                               LazyNames(n_cols, lambda j: f"filling {j}"))
        self.session: Session = backend_for(NEEDS).open(program, Limits(budget))

    def add(self, fillings: list[tuple[int, IntArray]]) -> None:
        """Add node fillings as columns."""
        pods, kinds = self.problem.pods, self.problem.kinds
        index, value, start = [], [], [0]
        for kind, filling in fillings:
            shapes = np.flatnonzero(filling)
            index.append(np.append(shapes, len(pods.count) + kind))
            value.append(np.append(filling[shapes], 1.0))
            start.append(start[-1] + len(shapes) + 1)
        kind_of = np.array([kind for kind, _ in fillings], dtype=np.int64)
        self.session.add_columns(
            np.array([float(filling @ pods.weight) for _, filling in fillings]),
            kinds.count[kind_of].astype(float), np.array(start, dtype=np.int64),
            np.concatenate(index).astype(np.int64), np.concatenate(value).astype(float))

    def solve(self, budget: Budget) -> tuple[float, FloatArray, FloatArray] | None:
        """The master's value, shape prices and kind prices; None when out of time."""
        solution = self.session.solve(budget)
        duals = solution.duals
        if duals is None or solution.objective is None:
            return None
        n_shapes = len(self.problem.pods.count)
        duals = np.maximum(duals, 0.0)
        return solution.objective, duals[:n_shapes], duals[n_shapes:]


def _configuration(problem: _Problem, fill_bound: float, fill_prices: FloatArray,
                   budget: Budget) -> tuple[float, BoundStatus, int, float | None]:
    """Column generation over node fillings from the fill LP's prices (module docstring).

    Rounds price every kind, first at the fill LP's prices, then at the master's prices
    smoothed towards the best ones so far (Wentges). When a smoothed round finds no filling
    that improves the master, the next one prices at the master's own prices; when that
    finds none either, the master is optimal. Returns the best bound, the status, the rounds
    and the master's last value.
    """
    weight = problem.pods.weight
    best, center, prices, own = fill_bound, fill_prices, fill_prices, False
    master, master_value, rounds = _Master(problem, budget), None, 0
    duals: tuple[FloatArray, FloatArray] | None = None
    while True:
        priced = _price_round(problem, prices, budget)
        if priced is None:
            break
        rounds += 1
        if priced.bound < best:
            best, center = priced.bound, prices
        new = [(kind, filling) for kind, filling in priced.fillings if duals is None
               or (weight - duals[0]) @ filling - duals[1][kind] > IMPROVES]
        logger.debug("round %d: bound %.0f, master %s, %d new fillings", rounds, best,
                     master_value, len(new))
        if new:
            master.add(new)
        elif duals is not None:   # the master is solved with these columns already
            if own:
                break
            prices, own = duals[0], True
            continue
        solved = master.solve(budget)
        if solved is None:
            break
        master_value, shape_prices, kind_prices = solved
        duals = (shape_prices, kind_prices)
        if best - master_value <= OPTIMAL_GAP * best:
            break
        prices, own = SMOOTHING * center + (1 - SMOOTHING) * duals[0], False
    solved_to_gap = master_value is not None and best - master_value <= OPTIMAL_GAP * best
    return (best, BoundStatus.OPTIMAL if solved_to_gap else BoundStatus.TIME_LIMIT, rounds,
            master_value)


def allocation_bound(instance: Instance, jobs: IntArray, relaxation: Relaxation = "fill",
                     budget: Budget | None = None) -> AllocationBound:
    """A proven upper bound on the GPU milli any placement of ``jobs`` allocates.

    Parameters
    ----------
    instance
        An openb instance (:func:`gpuplan.readers.openb.read_openb`): one GPU model per node,
        node resources ``cpu_milli`` and ``memory_mib``.
    jobs
        Indices of the pods to place; an index may repeat (an inflated trace's copies).
    relaxation
        ``"fill"`` or ``"configuration"`` (module docstring).
    budget
        Time for the bound; when it runs out the best bound proven so far is returned (the
        GPU milli the pods ask for, capped at the capacity, if nothing else is proven yet).

    Raises
    ------
    ValueError
        For an unknown relaxation, a job index out of range, or an instance that is not a
        GPU-sharing cluster (:class:`~gpuplan.sharing.cluster.ClusterState`).
    """
    started = time.perf_counter()
    if relaxation not in RELAXATIONS:
        raise ValueError(f"relaxation {relaxation!r}; expected one of {', '.join(RELAXATIONS)}")
    budget = budget or Budget()
    jobs = np.asarray(jobs, dtype=np.int64)
    if jobs.size and (jobs.min() < 0 or jobs.max() >= instance.n_jobs):
        raise ValueError(f"job indices must lie in 0..{instance.n_jobs - 1}")
    state = ClusterState(instance)
    pods, kinds = pod_shapes(state, jobs), node_kinds(state)
    capacity = GPU_MILLI * int(state.n_gpus.sum())
    requested = int(pods.count @ pods.weight)
    limits = node_limits(pods, kinds)
    placeable = np.flatnonzero(limits.max(axis=0, initial=0) > 0)
    pods, limits = pods.take(placeable), limits[:, placeable]
    bound: float = min(float(pods.count @ pods.weight), float(capacity))
    status, rounds, master = BoundStatus.OPTIMAL, 0, None
    if bound > 0:
        problem = _Problem(pods, kinds, limits, gpu_fills(pods.milli[pods.share]))
        fill = _fill_bound(problem, budget)
        if fill is None:
            status = BoundStatus.TIME_LIMIT
        elif relaxation == "fill":
            bound = min(bound, fill[0])
            status = BoundStatus.OPTIMAL if fill[2] else BoundStatus.TIME_LIMIT
        else:
            found, status, rounds, master = _configuration(problem, fill[0], fill[1], budget)
            bound = min(bound, found)
    result = AllocationBound(bound_milli=bound, capacity_milli=capacity,
                             requested_milli=requested, status=status, relaxation=relaxation,
                             seconds=time.perf_counter() - started, rounds=rounds,
                             master_milli=master)
    logger.debug("%s bound %.0f milli (%.3f%%), %s, %.2f s", relaxation, bound, result.percent,
                 status, result.seconds)
    return result


def arrived_ends(instance: Instance, jobs: IntArray) -> IntArray:
    """How many of the arriving ``jobs`` each point of FGD's curves can have seen.

    FGD's curve point ``a`` (:data:`~gpuplan.sharing.replay.ARRIVED_PERCENT`) averages the
    rows whose arrived GPU demand, as a percent of capacity, rounds (Python's round, as
    :meth:`~gpuplan.sharing.replay.ReplayResult.curves`) to ``a``. Demand only grows, so those
    rows lie within the first ``ends[a]`` pods, and the bound of those pods holds them all.

    Returns
    -------
    numpy.ndarray
        ``(131,)`` ``ends[a]`` for ``a`` in 0..130.
    """
    state = ClusterState(instance)
    arrived = np.cumsum(state.pod_gang[jobs] * state.pod_milli[jobs])
    percent = np.array([round(milli / instance.n_gpus / 10) for milli in arrived.tolist()])
    ends: IntArray = np.searchsorted(percent, ARRIVED_PERCENT, side="right")
    return ends
