"""What the metaheuristics search over: two encodings, their decoders and operators.

- :class:`AssignmentState` (static objectives): one *block* per job, a block being ``k``
  GPUs of one type on one node for a gang of ``k`` (aligned: GPUs ``[i*k, (i+1)*k)`` of
  the node's GPUs of that type, as NVLink topologies favour), or none where the objective
  lets jobs go unplaced. The state keeps per-GPU loads, so a move is priced from the few
  GPUs it touches; capacity is a penalty (the summed relative excess) that the search
  weighs adaptively, and only plans without excess are kept as results.
- :class:`PriorityEncoding` (time-based objectives): one random key per job, decoded by the
  list scheduler (:func:`~gpuplan.solvers.greedy.list_schedule`) into a plan that respects
  dependencies and capacity; jobs that would miss their deadline are left out and counted.

:data:`CROSSOVERS` and :data:`MOVES` are the named operator registries that
``--crossover`` and ``--moves`` choose from.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from gpuplan.instance import FloatArray, Instance, IntArray, ObjectiveKind
from gpuplan.schedule import Status
from gpuplan.solvers.assignment import static_result
from gpuplan.solvers.base import Result
from gpuplan.solvers.greedy import best_fit_decreasing, list_order, list_schedule

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


@dataclass
class Move:
    """A proposed change: jobs and their new genes, with its cost change."""

    jobs: tuple[int, ...]
    genes: tuple[int, ...]
    value: float
    excess: float


class AssignmentState:
    """A static plan under search: the block of each job, per-GPU loads, value and excess.

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
        for k in np.unique(instance.gang).tolist():
            for n in range(instance.n_nodes):
                for t in range(instance.n_types):
                    members = np.flatnonzero((gpu_node == n) & (gpu_type == t))
                    blocks += [members[i:i + k] for i in range(0, members.size - k + 1, k)]
        self.block_gpus = blocks
        self.block_type = np.array([gpu_type[b[0]] for b in blocks], dtype=np.int64)
        size = np.array([b.size for b in blocks], dtype=np.int64)
        allowed = (instance.eligible[:, self.block_type]
                   & (instance.gang[:, None] == size[None, :]))
        #: Per job, the blocks it may take.
        self.options = [np.flatnonzero(row) for row in allowed]
        self._options = [o.tolist() for o in self.options]
        self._allowed = [set(o) for o in self._options]
        # Per job, the GPUs of each option (options x gang); aligned blocks of one size
        # never overlap, so a job's options touch disjoint GPUs.
        self.option_gpus = [np.array([blocks[b] for b in opts], dtype=np.int64).reshape(
            opts.size, int(instance.gang[j])) for j, opts in enumerate(self.options)]
        #: Per GPU, the blocks that contain it.
        self.blocks_of_gpu: list[list[int]] = [[] for _ in range(instance.n_gpus)]
        for b, gpus in enumerate(blocks):
            for g in gpus.tolist():
                self.blocks_of_gpu[g].append(b)
        self.may_drop = objective.allows_unplaced
        sign = -1.0 if objective.sense == "max" else 1.0
        # Minimised value of each (job, block): additive objectives only.
        per_type = np.zeros((instance.n_jobs, instance.n_types))
        if objective is ObjectiveKind.ASSIGN_COST:
            per_type = np.nan_to_num(instance.cost, nan=0.0)
        elif objective is ObjectiveKind.ASSIGN_PROFIT:
            per_type = -np.nan_to_num(instance.profit, nan=0.0)
        elif objective is ObjectiveKind.MAX_WEIGHT:
            per_type = -np.repeat(instance.weight[:, None], instance.n_types, axis=1)
        self.sign = sign
        self.job_value = per_type
        gpu_price = {ObjectiveKind.MIN_GPUS: np.ones(instance.n_gpus),
                     ObjectiveKind.MIN_GPU_COST: np.nan_to_num(instance.price_per_hour)[gpu_type]}
        #: Value of opening each GPU (GPU-count objectives), else None.
        self.gpu_value = gpu_price.get(objective)
        self.capacity = instance.capacity[gpu_type]
        self.scale = 1.0 / np.where(self.capacity > 0, self.capacity, 1.0)
        # Python mirrors of the arrays that every proposal reads (see :meth:`price`).
        self._d = instance.demand.tolist()
        self._v = self.job_value.tolist()
        self._bg = [tuple(b.tolist()) for b in blocks]
        self._bt = self.block_type.tolist()
        self._c = self.capacity.tolist()
        self._s = self.scale.tolist()
        self._gv = None if self.gpu_value is None else self.gpu_value.tolist()
        self.choice = np.full(instance.n_jobs, -1, dtype=np.int64)
        self.load = np.zeros_like(self.capacity)
        self.count = np.zeros(instance.n_gpus, dtype=np.int64)
        self._l: list[list[float]] = self.load.tolist()
        self._n: list[int] = self.count.tolist()
        self.value = 0.0
        self.excess = 0.0
        #: Best-fit decreasing's plan, once :meth:`greedy` has run.
        self.start: Result | None = None

    # -- whole plans -----------------------------------------------------------------

    def set(self, choice: IntArray) -> None:
        """Take a whole genome (block per job, -1 for none) and recompute everything."""
        self.choice = choice.astype(np.int64).copy()
        self.load[:] = 0.0
        self.count[:] = 0
        for j, b in enumerate(self.choice.tolist()):
            if b >= 0:
                gpus = self.block_gpus[b]
                self.load[gpus] += self.instance.demand[j, self.block_type[b]]
                self.count[gpus] += 1
        self.value = self._total_value()
        self.excess = self._excess_of(np.arange(self.instance.n_gpus), self.load)
        self._l = self.load.tolist()
        self._n = self.count.tolist()

    def _total_value(self) -> float:
        placed = np.flatnonzero(self.choice >= 0)
        value = float(self.job_value[placed, self.block_type[self.choice[placed]]].sum())
        if self.gpu_value is not None:
            value += float(self.gpu_value[self.count > 0].sum())
        if self.instance.objective is ObjectiveKind.MIN_MAX_LOAD:
            value += self._peak(self.load)
        return value

    def _peak(self, load: FloatArray) -> float:
        return float((load * self.scale).max(initial=0.0))

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
                moves = [self.price((j,), (int(b),)) for b in self.options[j]]
                self.apply(min(moves, key=lambda m: (m.excess, m.value)))
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

    def _excess_of(self, gpus: IntArray, load: FloatArray) -> float:
        return float((np.maximum(load - self.capacity[gpus], 0.0) * self.scale[gpus]).sum())

    def price(self, jobs: tuple[int, ...], genes: tuple[int, ...]) -> Move:
        """The value and excess change of giving ``jobs`` the blocks ``genes``.

        Pure Python over the few GPUs touched: this runs for every proposal, and on one
        or two GPUs numpy's per-call overhead would cost ten times the arithmetic.
        """
        if self.instance.objective is ObjectiveKind.MIN_MAX_LOAD:
            return self._price_peak(jobs, genes)
        demand, values, block_gpus, block_type = self._d, self._v, self._bg, self._bt
        delta: dict[int, list[float]] = {}
        opened: dict[int, int] = {}
        d_value = 0.0
        for j, new in zip(jobs, genes, strict=True):
            old = int(self.choice[j])
            for b, sign in ((old, -1.0), (new, 1.0)):
                if b < 0:
                    continue
                t = block_type[b]
                need = demand[j][t]
                d_value += sign * values[j][t]
                for g in block_gpus[b]:
                    row = delta.setdefault(g, [0.0] * len(need))
                    for r, x in enumerate(need):
                        row[r] += sign * x
                    opened[g] = opened.get(g, 0) + int(sign)
        d_excess = 0.0
        loads, caps, scales, counts, worth = self._l, self._c, self._s, self._n, self._gv
        for g, row in delta.items():
            load, cap, scale = loads[g], caps[g], scales[g]
            for r, x in enumerate(row):
                if x:
                    before = load[r] - cap[r]
                    after = before + x
                    d_excess += ((after if after > 0 else 0.0)
                                 - (before if before > 0 else 0.0)) * scale[r]
            if worth is not None and opened[g]:
                was, now = counts[g] > 0, counts[g] + opened[g] > 0
                d_value += worth[g] * (now - was)
        return Move(jobs, genes, d_value, d_excess)

    def _price_peak(self, jobs: tuple[int, ...], genes: tuple[int, ...]) -> Move:
        """:meth:`price` for ``min-max-load``, whose value is the fleet's peak."""
        load = self.load.copy()
        demand = self.instance.demand
        for j, new in zip(jobs, genes, strict=True):
            old = int(self.choice[j])
            if old >= 0:
                load[self.block_gpus[old]] -= demand[j, self.block_type[old]]
            if new >= 0:
                load[self.block_gpus[new]] += demand[j, self.block_type[new]]
        d_excess = self._excess_of(np.arange(self.instance.n_gpus), load) - self.excess
        return Move(jobs, genes, self._peak(load) - self._peak(self.load), d_excess)

    def apply(self, move: Move) -> None:
        """Make the move (numpy arrays and their Python mirrors alike)."""
        demand = self.instance.demand
        for j, new in zip(move.jobs, move.genes, strict=True):
            old = int(self.choice[j])
            for b, sign in ((old, -1), (new, 1)):
                if b < 0:
                    continue
                need = demand[j, self.block_type[b]]
                gpus = self.block_gpus[b]
                self.load[gpus] += sign * need
                self.count[gpus] += sign
                for g in self._bg[b]:
                    self._l[g] = self.load[g].tolist()
                    self._n[g] += sign
            self.choice[j] = new
        self.value += move.value
        self.excess = max(0.0, self.excess + move.excess)
        if self.excess < 1e-9:
            # Recompute exactly at feasible points, so that drift never admits a plan.
            self.excess = float((np.maximum(self.load - self.capacity, 0.0)
                                 * self.scale).sum())

    def shift_options(self, j: int) -> tuple[IntArray, FloatArray, FloatArray]:
        """Every block job ``j`` could move to (and -1 where it may be left out), priced.

        Returns the genes and, per gene, the change of value and of excess, all options
        at once (the old block's share of the change is the same for each).
        """
        instance = self.instance
        opts, gpus = self.options[j], self.option_gpus[j]
        demand = instance.demand[j, self.block_type[opts]]  # (m, R)
        load, cap, scale = self.load[gpus], self.capacity[gpus], self.scale[gpus]
        grown = load + demand[:, None, :]
        d_excess = ((np.maximum(grown - cap, 0.0) - np.maximum(load - cap, 0.0))
                    * scale).sum(axis=(1, 2))
        d_value = self.job_value[j, self.block_type[opts]].copy()
        if self.gpu_value is not None:
            d_value += (self.gpu_value[gpus] * (self.count[gpus] == 0)).sum(axis=1)
        old = int(self.choice[j])
        leave_value, leave_excess = 0.0, 0.0
        if old >= 0:
            held = self.block_gpus[old]
            before = self.load[held]
            after = before - instance.demand[j, self.block_type[old]]
            leave_excess = float(((np.maximum(after - self.capacity[held], 0.0)
                                   - np.maximum(before - self.capacity[held], 0.0))
                                  * self.scale[held]).sum())
            leave_value = -float(self.job_value[j, self.block_type[old]])
            if self.gpu_value is not None:
                leave_value -= float((self.gpu_value[held] * (self.count[held] == 1)).sum())
            same = opts == old
            d_value[~same] += leave_value
            d_excess[~same] += leave_excess
            d_value[same], d_excess[same] = 0.0, 0.0
        genes = opts
        if self.may_drop:
            genes = np.r_[opts, -1]
            drop = old < 0
            d_value = np.r_[d_value, 0.0 if drop else leave_value]
            d_excess = np.r_[d_excess, 0.0 if drop else leave_excess]
        if instance.objective is ObjectiveKind.MIN_MAX_LOAD:
            # The peak is not additive: price each option on the whole fleet.
            d_value = np.array([0.0 if g == old else self.price((j,), (int(g),)).value
                                for g in genes.tolist()])
        return genes, d_value, d_excess

    def jobs_on(self, gpu: int) -> IntArray:
        """Jobs holding a block that contains ``gpu``."""
        jobs: IntArray = np.flatnonzero(np.isin(self.choice, self.blocks_of_gpu[gpu]))
        return jobs

    def propose(self, kind: str, u: float, v: float) -> Move | None:
        """A ``shift`` or ``swap`` drawn from uniforms ``u``, ``v``, priced; None if void.

        ``u`` and ``v`` are in [0, 1); a move that changes nothing or does not fit the
        jobs' options gives None. The caller draws the uniforms in batches: one numpy call
        per few thousand moves instead of two per move.
        """
        n = self.instance.n_jobs
        j = int(u * n)
        opts = self._options[j]
        current = int(self.choice[j])
        if kind == "shift":
            choices = len(opts) + (1 if self.may_drop else 0)
            pick = int(v * choices)
            gene = opts[pick] if pick < len(opts) else -1
            if gene == current:
                return None
            return self.price((j,), (gene,))
        other = int(v * n)
        b = int(self.choice[other])
        if other == j or current == b or current < 0 or b < 0:
            return None
        if b not in self._allowed[j] or current not in self._allowed[other]:
            return None
        return self.price((j, other), (b, current))

    def shift(self, j: int, gene: int) -> None:
        """Give job ``j`` the block ``gene`` (-1: leave it out)."""
        if gene != self.choice[j]:
            self.apply(self.price((j,), (gene,)))

    def repair(self, rng: np.random.Generator, deadline: float | None = None) -> None:
        """Move jobs off over-full GPUs, each to its option where the excess drops most.

        Stops when no excess is left, when a round over the over-full GPUs moves
        nothing, or at ``deadline`` (a ``time.perf_counter()`` value).
        """
        for _ in range(self.instance.n_jobs):
            if self.excess < 1e-9 or (deadline is not None and time.perf_counter() > deadline):
                return
            over = np.flatnonzero(((self.load - self.capacity) * self.scale > 1e-12).any(axis=1))
            moved = False
            for gpu in rng.permutation(over).tolist():
                for j in rng.permutation(self.jobs_on(gpu)).tolist():
                    genes, d_value, d_excess = self.shift_options(j)
                    k = int(np.lexsort((d_value, d_excess))[0])
                    if d_excess[k] < -1e-12:
                        self.shift(j, int(genes[k]))
                        moved = True
                        break
            if not moved:
                return

    def descend(self, steps: int, moves: list[str], rng: np.random.Generator,
                deadline: float | None = None) -> None:
        """Random descent: ``steps`` random moves, each made if it pays.

        A move pays if it lowers the excess, or keeps it and lowers the value. Stops early
        at ``deadline`` (a ``time.perf_counter()`` value).
        """
        for k, (pick, u, v) in enumerate(rng.random((steps, 3)).tolist()):
            if deadline is not None and k % 256 == 0 and time.perf_counter() > deadline:
                return
            move = self.propose(moves[int(pick * len(moves))], u, v)
            if move is not None and (move.excess < -1e-12 or (move.excess <= 1e-12
                                                              and move.value < -1e-12)):
                self.apply(move)


class PriorityEncoding:
    """Time-based plans as one key per job, decoded by the list scheduler.

    Parameters
    ----------
    instance
        A time-based-objective instance.
    """

    def __init__(self, instance: Instance) -> None:
        self.instance = instance

    def decode(self, keys: FloatArray) -> tuple[tuple[int, float], Result]:
        """The plan of ``keys``, and its score: (jobs left out, objective); lower is better."""
        result = list_schedule(self.instance, keys)
        value = result.objective if result.objective is not None else float(
            result.end.max(initial=0.0))
        return (len(result.unplaced), float(value)), result

    def greedy(self) -> FloatArray:
        """Keys that reproduce list scheduling's own priority order."""
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

