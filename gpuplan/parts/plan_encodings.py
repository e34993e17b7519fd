"""What the metaheuristics search over: two encodings, their decoders and operators.

- :class:`AssignmentState` (static objectives): one *block* per job, a block being ``k``
  GPUs of one type on one node for a gang of ``k`` (aligned: GPUs ``[i*k, (i+1)*k)`` of
  the node's GPUs of that type, as NVLink topologies favour), or none where the objective
  lets jobs go unplaced. The state keeps per-GPU loads and prices every shift and swap
  at once in numpy tables (:class:`MoveTable`); capacity is a penalty (the summed
  relative excess) that the search weighs adaptively, and only plans without excess are
  kept as results.
- :class:`PriorityEncoding` (time-based objectives): one random key per job, decoded by the
  list scheduler (:func:`~gpuplan.parts.construct.list_schedule`) into a plan that respects
  dependencies and capacity; jobs that would miss their deadline are left out and counted.

:data:`CROSSOVERS` and :data:`MOVES` are the named operator registries that
``--crossover`` and ``--moves`` choose from.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpuplan.core.instance import BoolArray, Feature, FloatArray, Instance, IntArray
from gpuplan.core.keep import Keep
from gpuplan.core.objectives import ObjectiveKind
from gpuplan.core.options import option
from gpuplan.core.result import Result
from gpuplan.core.status import Status
from gpuplan.parts.construct import (
    best_fit_decreasing,
    list_order,
    list_schedule,
    repair_keys,
)
from gpuplan.parts.static_plans import static_result


def encoding_features(objective: ObjectiveKind) -> frozenset[Feature]:
    """What the encodings plan of the cluster model: all but elastic jobs over time, less static.

    Over time the list scheduler decodes the keys (at the GPU counts jobs ask for: elastic
    jobs are planned by greedy and cp); the static block encoding places multi-node gangs
    in blocks within a domain and prices GPU loads only, not node resources.
    """
    if objective.is_static:
        return frozenset({Feature.MULTI_NODE, Feature.TOPOLOGY})
    return frozenset(Feature) - {Feature.ELASTIC}


def parse_moves(text: str) -> tuple[str, ...]:
    """``shift,swap`` as a tuple of known move names."""
    names = tuple(v for v in text.split(",") if v)
    unknown = [v for v in names if v not in MOVES]
    if unknown or not names:
        raise ValueError(f"expected moves from {', '.join(MOVES)}, got {text!r}")
    return names


def moves_option(what: str) -> Any:
    """The ``--moves`` option of the methods that search by moves."""
    return option(MOVES, "--moves", f"{what}: neighbourhood moves ({', '.join(MOVES)}; "
                  "default: all)", parse=parse_moves, metavar="NAME,...")


#: A crossover: two parents (rows) to one child, with the generator.
Crossover = Callable[[np.ndarray, np.ndarray, np.random.Generator], np.ndarray]


def _uniform(a: np.ndarray, b: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Each gene from the first parent with probability 0.7 (biased, as in BRKGA)."""
    child: np.ndarray = np.where(rng.random(a.shape) < 0.7, a, b)
    return child


def _one_point(a: np.ndarray, b: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Genes before a random cut from the first parent, the rest from the second."""
    cut = int(rng.integers(1, max(a.size, 2)))
    child: np.ndarray = np.r_[a[:cut], b[cut:]]
    return child


def _two_point(a: np.ndarray, b: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The second parent's genes between two random cuts, the first's elsewhere."""
    low, high = np.sort(rng.integers(0, a.size + 1, size=2))
    child = a.copy()
    child[low:high] = b[low:high]
    return child


#: Crossover operators by name (``--crossover``).
CROSSOVERS: dict[str, Crossover] = {
    "uniform": _uniform, "one-point": _one_point, "two-point": _two_point,
}

#: Neighbourhood moves by name (``--moves``): ``shift`` gives one job another block (or
#: another key), ``swap`` exchanges two jobs' blocks (or keys).
MOVES = ("shift", "swap")


#: Jobs whose swaps (with every job) a step prices, drawn at random when more are placed:
#: on GAP C and D, fewer rows gave more steps and lower gaps than more rows
#: (docs/benchmarks.md, "GAP types C, D and E, 10 s").
SWAP_ROWS = 32
#: Relative capacity excess below this counts as none.
NO_EXCESS = 1e-9


@dataclass(frozen=True)
class MoveTable:
    """Every move of one kind from the current plan, priced all at once.

    Row ``r`` moves job ``rows[r]``. In a ``shift`` table column ``c`` gives it gene
    ``columns[c]`` (a block, or -1: left out); in a ``swap`` table it trades blocks with
    job ``columns[c]``. ``value`` and ``excess`` are the changes of the minimised value
    and of the relative capacity excess; both are ``inf`` where a move is not allowed or
    changes nothing.
    """

    kind: str
    rows: IntArray
    columns: IntArray
    value: FloatArray
    excess: FloatArray


@dataclass(frozen=True)
class _Group:
    """The aligned blocks of one gang size, and the jobs whose gang takes them."""

    size: int
    blocks: IntArray  # (B_k,) block ids
    gpus: IntArray  # (B_k, size) their GPUs
    jobs: IntArray  # (J_k,)


def _over(load: FloatArray, capacity: FloatArray, scale: FloatArray) -> FloatArray:
    """Relative excess of each load over its capacity (0 where it fits)."""
    excess: FloatArray = np.maximum(load - capacity, 0.0) * scale
    return excess


def _blocks(instance: Instance, gang: int, per_node: int) -> list[IntArray]:
    """The aligned blocks of a gang shape: ``per_node`` GPUs on each of its nodes.

    A one-node gang's blocks are GPUs ``[i*k, (i+1)*k)`` of each node's GPUs of a type; a
    multi-node gang's take slot ``i`` on each of ``m`` consecutive nodes holding the type,
    the nodes in topology order (by their domains, widest level first, then as listed), so
    that each domain's nodes are consecutive and its own windows exist.
    """
    gpu_type, gpu_node = instance.gpu_type, instance.gpu_node
    m = gang // per_node
    order = (np.lexsort((np.arange(instance.n_nodes), *instance.node_domain.T[::-1]))
             if instance.levels else np.arange(instance.n_nodes))
    blocks: list[IntArray] = []
    for t in range(instance.n_types):
        hosts = [np.flatnonzero((gpu_node == n) & (gpu_type == t)) for n in order.tolist()]
        hosts = [members for members in hosts if members.size >= per_node]
        for first in range(len(hosts) - m + 1):
            window = hosts[first:first + m]
            slots = min(members.size for members in window) // per_node
            blocks += [np.concatenate([members[i * per_node:(i + 1) * per_node]
                                       for members in window]) for i in range(slots)]
    return blocks


def _within(instance: Instance, blocks: list[IntArray]) -> BoolArray:
    """``(J, B)`` whether each block lies within one domain of each job's required level."""
    within: BoolArray = np.ones((instance.n_jobs, len(blocks)), dtype=bool)
    if not instance.levels or not (instance.required_level >= 0).any():
        return within
    for level in np.unique(instance.required_level[instance.required_level >= 0]).tolist():
        one = np.array([bool((d := instance.node_domain[instance.gpu_node[b], level])[0] >= 0
                             and (d == d[0]).all()) for b in blocks], dtype=bool)
        within[instance.required_level == level] = one
    return within


class AssignmentState:
    """A static plan under search: the block of each job, per-GPU loads, value and excess.

    Moves are priced in :class:`MoveTable` s, every shift and swap at once with numpy
    (a few broadcast operations over jobs x blocks), so that a search step can choose
    among all of them rather than try one at random.

    Parameters
    ----------
    instance
        A static-objective instance.
    """

    def __init__(self, instance: Instance) -> None:
        self.instance = instance
        objective = instance.objective
        gpu_type, gpu_node = instance.gpu_type, instance.gpu_node
        blocks: list[IntArray] = []
        self.groups: list[_Group] = []
        shapes = np.unique(np.column_stack([instance.gang, instance.gpus_per_node]), axis=0)
        for k, per_node in shapes.tolist():
            first = len(blocks)
            blocks += _blocks(instance, k, per_node)
            ids = np.arange(first, len(blocks), dtype=np.int64)
            self.groups.append(_Group(k, ids, np.array(blocks[first:], dtype=np.int64)
                                      .reshape(ids.size, k),
                                      np.flatnonzero((instance.gang == k)
                                                     & (instance.gpus_per_node == per_node))))
        self.block_gpus = blocks
        self.block_type = np.array([gpu_type[b[0]] for b in blocks], dtype=np.int64)
        size = np.array([b.size for b in blocks], dtype=np.int64)
        spans = np.array([np.unique(gpu_node[b]).size for b in blocks], dtype=np.int64)
        #: (jobs, blocks): whether a job may take a block (type allowed, gang shape, within
        #: one domain of its required topology level).
        self.allowed = (instance.eligible[:, self.block_type]
                        & (instance.gang[:, None] == size[None, :])
                        & (instance.gang_nodes[:, None] == spans[None, :])
                        & _within(instance, blocks))
        #: Per job, the blocks it may take.
        self.options = [np.flatnonzero(row) for row in self.allowed]
        self._group_of_job = np.zeros(instance.n_jobs, dtype=np.int64)
        self._row_of_block = np.zeros(len(blocks), dtype=np.int64)
        for g, group in enumerate(self.groups):
            self._group_of_job[group.jobs] = g
            self._row_of_block[group.blocks] = np.arange(group.blocks.size)
        self.may_drop = objective.allows_unplaced
        self.sign = -1.0 if objective.sense == "max" else 1.0
        per_type = np.zeros((instance.n_jobs, instance.n_types))
        if objective is ObjectiveKind.ASSIGN_COST:
            per_type = np.nan_to_num(instance.cost, nan=0.0)
        elif objective is ObjectiveKind.ASSIGN_PROFIT:
            per_type = -np.nan_to_num(instance.profit, nan=0.0)
        elif objective is ObjectiveKind.MAX_WEIGHT:
            per_type = -np.repeat(instance.weight[:, None], instance.n_types, axis=1)
        #: (jobs, blocks): minimised value of a job on a block (additive objectives).
        self.gene_value = per_type[:, self.block_type]
        gpu_price = {ObjectiveKind.MIN_GPUS: np.ones(instance.n_gpus),
                     ObjectiveKind.MIN_GPU_COST: np.nan_to_num(instance.price_per_hour)[gpu_type]}
        #: Value of opening each GPU (GPU-count objectives), else None.
        self.gpu_value = gpu_price.get(objective)
        #: Whether the value is the fleet's peak relative load (not additive over jobs).
        self.peak = objective is ObjectiveKind.MIN_MAX_LOAD
        self.capacity = instance.packing_capacity[gpu_type]
        self.scale = 1.0 / np.where(self.capacity > 0, self.capacity, 1.0)
        self.choice = np.full(instance.n_jobs, -1, dtype=np.int64)
        self.load = np.zeros_like(self.capacity)
        self.count = np.zeros(instance.n_gpus, dtype=np.int64)
        self.value = 0.0
        self.excess = 0.0
        #: Best-fit decreasing's plan, once :meth:`greedy` has run.
        self.start: Result | None = None

    # -- whole plans -----------------------------------------------------------------

    def set(self, choice: IntArray) -> None:
        """Take a whole genome (block per job, -1 for none) and recompute everything."""
        self.choice = np.full(self.instance.n_jobs, -1, dtype=np.int64)
        self.load[:] = 0.0
        self.count[:] = 0
        self._move([(j, b) for j, b in enumerate(choice.tolist()) if b >= 0])

    def _move(self, changes: list[tuple[int, int]]) -> None:
        """Give each job of ``changes`` its new gene, then recompute value and excess.

        The totals are recomputed rather than updated, so that no drift can ever let an
        over-full plan pass as one without excess.
        """
        demand = self.instance.packing_demand
        for j, new in changes:
            for b, sign in ((int(self.choice[j]), -1), (new, 1)):
                if b >= 0:
                    gpus = self.block_gpus[b]
                    self.load[gpus] += sign * demand[j, self.block_type[b]]
                    self.count[gpus] += sign
            self.choice[j] = new
        self.value = self._total_value()
        self.excess = float(_over(self.load, self.capacity, self.scale).sum())

    def _total_value(self) -> float:
        placed = np.flatnonzero(self.choice >= 0)
        value = float(self.gene_value[placed, self.choice[placed]].sum())
        if self.gpu_value is not None:
            value += float(self.gpu_value[self.count > 0].sum())
        if self.peak:
            value += float((self.load * self.scale).max(initial=0.0))
        return value

    def objective(self) -> float:
        """The plan's objective as the verifier computes it (with the file's sign)."""
        return self.sign * self.value

    def greedy(self) -> IntArray:
        """Take best-fit decreasing's plan: its blocks where they are aligned blocks.

        A gang the greedy put on unaligned GPUs goes to the option that adds least excess
        (then least value) instead. Leaves the state at that plan and returns its genome.
        """
        start = best_fit_decreasing(self.instance)
        self.start = start
        genome = np.full(self.instance.n_jobs, -1, dtype=np.int64)
        block_of = {tuple(b.tolist()): i for i, b in enumerate(self.block_gpus)}
        for j, gpus in zip(start.job.tolist(), start.gpus, strict=True):
            genome[j] = block_of.get(tuple(np.sort(gpus).tolist()), -1)
        self.set(genome)
        if not self.may_drop:
            for j in np.flatnonzero(genome < 0).tolist():
                table = self.shift_table(np.array([j], dtype=np.int64))
                k = int(np.lexsort((table.value[0], table.excess[0]))[0])
                if np.isfinite(table.excess[0, k]):
                    self.make(table, 0, k)
        return self.choice.copy()

    def random(self, rng: np.random.Generator) -> IntArray:
        """A genome with a uniformly random option per job."""
        return np.array([opts[int(rng.integers(opts.size))] if opts.size else -1
                         for opts in self.options], dtype=np.int64)

    def result(self, solver: str, bound: float | None) -> Result:
        """The current plan as a result (the caller ensures there is no excess)."""
        placed = {j: np.sort(self.block_gpus[b]) for j, b in enumerate(self.choice.tolist())
                  if b >= 0}
        return static_result(self.instance, placed, Status.FEASIBLE, self.objective(), bound,
                             solver, "left out by the search")

    # -- moves -----------------------------------------------------------------------

    def tables(self, moves: list[str], rng: np.random.Generator) -> list[MoveTable]:
        """The priced tables of ``moves`` (names of :data:`MOVES`) from the current plan.

        Swaps are priced for :data:`SWAP_ROWS` placed jobs drawn at random (all of them
        when there are no more), each against every job.
        """
        out = []
        if "shift" in moves:
            out.append(self.shift_table(np.arange(self.instance.n_jobs)))
        if "swap" in moves:
            placed = np.flatnonzero(self.choice >= 0)
            rows = (placed if placed.size <= SWAP_ROWS
                    else np.sort(rng.choice(placed, SWAP_ROWS, replace=False)))
            out.append(self.swap_table(rows))
        return out

    def changes(self, table: MoveTable, r: int, c: int) -> list[tuple[int, int]]:
        """The (job, new gene) pairs of the move in row ``r``, column ``c`` of ``table``."""
        j = int(table.rows[r])
        if table.kind == "shift":
            return [(j, int(table.columns[c]))]
        k = int(table.columns[c])
        return [(j, int(self.choice[k])), (k, int(self.choice[j]))]

    def touched(self, changes: list[tuple[int, int]]) -> frozenset[int]:
        """The GPUs whose load the changes alter (old and new blocks)."""
        gpus: list[int] = []
        for j, new in changes:
            for b in (int(self.choice[j]), new):
                if b >= 0:
                    gpus += self.block_gpus[b].tolist()
        return frozenset(gpus)

    def make(self, table: MoveTable, r: int, c: int) -> None:
        """Make the move in row ``r``, column ``c`` of ``table``."""
        self._move(self.changes(table, r, c))

    def make_all(self, changes: list[tuple[int, int]]) -> None:
        """Make several moves' changes at once.

        They must touch disjoint jobs and GPUs, so that each one's price from the tables
        still holds.
        """
        self._move(changes)

    def _peaks(self) -> tuple[FloatArray, BoolArray, float]:
        """For ``min-max-load``: each block's hold on the fleet's highest relative loads.

        Returns the relative loads of the ``K`` most loaded GPUs (``K`` = two blocks of the
        largest gang, plus one, so that whatever two blocks a move touches, one of them
        lies elsewhere), whether each block contains each of them (blocks x K), and the
        peak now. The peak of the GPUs a move leaves alone is then the first of these
        loads outside its blocks.
        """
        relative = (self.load * self.scale).max(axis=1)
        k = min(relative.size, 2 * int(self.instance.gang.max()) + 1)
        top = np.argsort(-relative, kind="stable")[:k]
        holds = np.zeros((len(self.block_gpus), k), dtype=bool)
        for group in self.groups:
            holds[group.blocks] = (group.gpus[:, :, None] == top[None, None, :]).any(axis=1)
        return relative[top], holds, float(relative.max(initial=0.0))

    @staticmethod
    def _rest(top: FloatArray, excluded: BoolArray) -> FloatArray:
        """The highest of ``top`` not ``excluded`` (last axis), 0 if none."""
        rest: FloatArray = np.where(excluded, 0.0, top).max(axis=-1)
        return rest

    def _leaving(self, rows: IntArray, over_gpu: FloatArray
                 ) -> tuple[FloatArray, FloatArray, FloatArray]:
        """What taking each job of ``rows`` off its block changes.

        Returns the excess change, the value change, and the highest relative load left
        on the block (all 0 for jobs not placed).
        """
        excess, value, peak = np.zeros(rows.size), np.zeros(rows.size), np.zeros(rows.size)
        current = self.choice[rows]
        for g, group in enumerate(self.groups):
            at = np.flatnonzero((self._group_of_job[rows] == g) & (current >= 0))
            if not at.size:
                continue
            held = current[at]
            gpus = group.gpus[self._row_of_block[held]]  # (A, k)
            after = self.load[gpus] - self.instance.packing_demand[rows[at], self.block_type[held]][
                :, None, :]
            excess[at] = (_over(after, self.capacity[gpus], self.scale[gpus]).sum(axis=(1, 2))
                          - over_gpu[gpus].sum(axis=1))
            value[at] = -self.gene_value[rows[at], held]
            if self.gpu_value is not None:
                value[at] -= (self.gpu_value * (self.count == 1))[gpus].sum(axis=1)
            peak[at] = (after * self.scale[gpus]).max(axis=(1, 2))
        return excess, value, peak

    def shift_table(self, rows: IntArray) -> MoveTable:
        """Every gene for each job of ``rows``, priced.

        The columns are the blocks, then -1 (left out) where the objective allows it.
        """
        n_blocks = len(self.block_gpus)
        width = n_blocks + int(self.may_drop)
        d_value, d_excess = np.full((rows.size, width), np.inf), np.full((rows.size, width),
                                                                         np.inf)
        over_gpu = _over(self.load, self.capacity, self.scale).sum(axis=1)
        leave_excess, leave_value, leave_peak = self._leaving(rows, over_gpu)
        current = self.choice[rows]
        if self.peak:
            top, holds, peak_now = self._peaks()
            held = np.where((current >= 0)[:, None], holds[np.maximum(current, 0)], False)
        for g, group in enumerate(self.groups):
            at = np.flatnonzero(self._group_of_job[rows] == g)
            if not at.size or not group.blocks.size:
                continue
            jobs = rows[at]
            need = self.instance.packing_demand[jobs][:, self.block_type[group.blocks]]  # (J, B, R)
            grown = self.load[group.gpus][None] + need[:, :, None, :]  # (J, B, k, R)
            capacity, scale = self.capacity[group.gpus], self.scale[group.gpus]
            arrive = (_over(grown, capacity, scale).sum(axis=(2, 3))
                      - over_gpu[group.gpus].sum(axis=1)[None, :])
            ix = np.ix_(at, group.blocks)
            d_excess[ix] = arrive + leave_excess[at, None]
            if self.peak:
                rest = self._rest(top, holds[group.blocks][None] | held[at][:, None])
                d_value[ix] = np.maximum(np.maximum(rest, (grown * scale).max(axis=(2, 3))),
                                         leave_peak[at, None]) - peak_now
                continue
            value = self.gene_value[jobs][:, group.blocks] + leave_value[at, None]
            if self.gpu_value is not None:
                value += (self.gpu_value * (self.count == 0))[group.gpus].sum(axis=1)[None, :]
            d_value[ix] = value
        placed = np.flatnonzero(current >= 0)
        if self.may_drop:
            d_excess[placed, -1] = leave_excess[placed]
            d_value[placed, -1] = (np.maximum(self._rest(top, held[placed]), leave_peak[placed])
                                   - peak_now if self.peak else leave_value[placed])
        shut = ~self.allowed[rows]
        shut[placed, current[placed]] = True
        d_value[:, :n_blocks][shut] = np.inf
        d_excess[:, :n_blocks][shut] = np.inf
        genes = np.r_[np.arange(n_blocks), -1] if self.may_drop else np.arange(n_blocks)
        return MoveTable("shift", rows, genes.astype(np.int64), d_value, d_excess)

    def swap_table(self, rows: IntArray) -> MoveTable:
        """Every exchange of blocks between a job of ``rows`` and another job, priced.

        Only placed jobs of one gang size may trade, each onto a block it may take.
        """
        n = self.instance.n_jobs
        d_value, d_excess = np.full((rows.size, n), np.inf), np.full((rows.size, n), np.inf)
        over_gpu = _over(self.load, self.capacity, self.scale).sum(axis=1)
        demand = self.instance.packing_demand
        if self.peak:
            top, holds, peak_now = self._peaks()
        for g, group in enumerate(self.groups):
            at = np.flatnonzero((self._group_of_job[rows] == g) & (self.choice[rows] >= 0))
            cols = group.jobs[self.choice[group.jobs] >= 0]
            if not at.size or not cols.size:
                continue
            a = rows[at]
            ba, bb = self.choice[a], self.choice[cols]
            ta, tb = self.block_type[ba], self.block_type[bb]
            ga, gb = group.gpus[self._row_of_block[ba]], group.gpus[self._row_of_block[bb]]
            # Load change on a's block (b's job arrives, a's leaves) and on b's block.
            on_a = demand[cols][:, ta].transpose(1, 0, 2) - demand[a, ta][:, None, :]
            on_b = demand[a][:, tb] - demand[cols, tb][None, :, :]
            new_a = self.load[ga][:, None] + on_a[:, :, None, :]  # (A, C, k, R)
            new_b = self.load[gb][None] + on_b[:, :, None, :]
            cap_a, scale_a = self.capacity[ga][:, None], self.scale[ga][:, None]
            cap_b, scale_b = self.capacity[gb][None], self.scale[gb][None]
            excess = (_over(new_a, cap_a, scale_a).sum(axis=(2, 3))
                      - over_gpu[ga].sum(axis=1)[:, None]
                      + _over(new_b, cap_b, scale_b).sum(axis=(2, 3))
                      - over_gpu[gb].sum(axis=1)[None, :])
            if self.peak:
                rest = self._rest(top, holds[ba][:, None] | holds[bb][None])
                value = np.maximum.reduce([rest, (new_a * scale_a).max(axis=(2, 3)),
                                           (new_b * scale_b).max(axis=(2, 3))]) - peak_now
            else:
                value = (self.gene_value[a][:, bb] + self.gene_value[cols][:, ba].T
                         - self.gene_value[a, ba][:, None] - self.gene_value[cols, bb][None, :])
            ok = (self.allowed[a][:, bb] & self.allowed[cols][:, ba].T
                  & (ba[:, None] != bb[None, :]))
            ix = np.ix_(at, cols)
            d_value[ix] = np.where(ok, value, np.inf)
            d_excess[ix] = np.where(ok, excess, np.inf)
        return MoveTable("swap", rows, np.arange(n, dtype=np.int64), d_value, d_excess)


class PriorityEncoding:
    """Time-based plans as one key per job, decoded by the list scheduler.

    Parameters
    ----------
    instance
        A time-based-objective instance.
    keep
        A previous plan to stay close to (a re-plan): decoding keeps jobs in their
        previous slots where they fit, and the score adds what the moves cost; a plan
        moving more jobs than the cap counts as leaving one out.
    """

    def __init__(self, instance: Instance, keep: Keep | None = None) -> None:
        self.instance = instance
        self.keep = keep

    def decode(self, keys: FloatArray) -> tuple[tuple[int, float], Result]:
        """The plan of ``keys``, and its score: (jobs left out, objective); lower is better."""
        keep = self.keep
        result = list_schedule(self.instance, keys, keep=keep)
        value = result.objective if result.objective is not None else float(
            result.end.max(initial=0.0))
        if keep is None:
            return (len(result.unplaced), float(value)), result
        over = 0 if keep.allows(result) else 1
        return (len(result.unplaced) + over, float(value) + keep.cost(result)), result

    def greedy(self) -> FloatArray:
        """Keys that reproduce list scheduling's own priority order (the repair's, re-planning)."""
        if self.keep is not None:
            keys = repair_keys(self.instance, self.keep)
            return np.argsort(np.argsort(keys, kind="stable")) / max(self.instance.n_jobs, 1)
        keys = np.empty(self.instance.n_jobs)
        keys[np.array(list_order(self.instance), dtype=np.int64)] = np.arange(
            self.instance.n_jobs, dtype=float)
        return keys / max(self.instance.n_jobs, 1)

    def random(self, rng: np.random.Generator) -> FloatArray:
        """Uniform random keys."""
        keys: FloatArray = rng.random(self.instance.n_jobs)
        return keys

    @staticmethod
    def neighbour(keys: FloatArray, kind: str, rng: np.random.Generator) -> FloatArray:
        """``shift``: one job to a random place in the order; ``swap``: two jobs trade."""
        out = keys.copy()
        j = int(rng.integers(keys.size))
        if kind == "shift":
            out[j] = rng.random()
        else:
            k = int(rng.integers(keys.size))
            out[j], out[k] = keys[k], keys[j]
        return out

