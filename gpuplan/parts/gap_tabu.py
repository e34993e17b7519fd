"""Tabu search with ejection chains for single-GPU assignment (GAP), after Yagiura et al.

Generalized assignment as gpuplan has it: every job takes one GPU, each (job, GPU) pair
has a value (``assign-cost``, ``assign-profit``, ``max-weight``) and a demand of each
resource, and each GPU a capacity. :class:`GapSearch` searches over one GPU per job (or
none, where the objective lets jobs go unplaced) in the spirit of Yagiura, Ibaraki and
Glover's ejection-chain tabu search (INFORMS J. Comput. 2004):

- capacity is relaxed into the objective with one adaptive weight per GPU, raised while
  its GPU is over-full and lowered while it is not (strategic oscillation around the
  boundary of feasibility, where the good GAP plans are; lowering the weights only while
  the whole plan fits gave a larger mean gap on C, D and E problems);
- each iteration prices every *shift* (a job to another GPU) at once in numpy, every
  *swap* of :data:`SWAP_ROWS` jobs (drawn at random) with every other job, and the
  *ejection chains* of length two grown from the best shifts (by penalised cost, and by
  value alone): a job moves to a GPU and one job there moves on to any GPU; the best of
  them is made. Without the swap table the chains reach too few exchanges: on
  Chu-Beasley C and D problems from greedy's start, the mean gap to best known was far
  larger without it;
- a job may not go back to the GPU it left for a random tenure (the tabu list), unless
  that gives a plan better than the best one that fits (aspiration);
- the search lives mostly beyond capacity (on Chu-Beasley d20100 nearly all of its
  iterations were on over-full plans), so each iteration also records the cheapest priced
  move whose plan fits, though it moves elsewhere: that lowered the mean gap to best
  known on Chu-Beasley and Yagiura problems, and a short search on d20100 now finds a
  plan that fits at every seed tried (docs/benchmarks.md, "Generalized assignment (GAP):
  MILP, LP and the peers");
- the best plans that fit form an elite pool; when the search stalls it walks from one
  elite plan to another (path relinking) and restarts from the best point on the way.

Only plans that fit every capacity are returned; the caller turns them into results,
which the verifier checks. ``milp`` runs it in its LP-guided lane where the MIP over the
LP's split jobs finds no plan, ``sa --search tabu`` on its own.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from gpuplan.core.budget import Budget
from gpuplan.core.instance import BoolArray, FloatArray, Instance, IntArray
from gpuplan.core.objectives import ObjectiveKind
from gpuplan.models.assignment import job_value

logger = logging.getLogger(__name__)

#: Objectives whose value is a sum over placed jobs, which the search prices.
ADDITIVE = frozenset({ObjectiveKind.ASSIGN_COST, ObjectiveKind.ASSIGN_PROFIT,
                      ObjectiveKind.MAX_WEIGHT})
#: Jobs x GPUs x resources above which the dense move tables would not pay.
MAX_CELLS = 4_000_000
#: Best shifts grown into ejection chains per iteration.
CHAIN_STARTS = 10
#: Jobs whose swaps with every other job an iteration prices (drawn at random when more).
SWAP_ROWS = 64
#: Tabu tenure: a job stays off the GPU it left for TENURE + rand(TENURE_SPAN) iterations.
TENURE, TENURE_SPAN = 7, 10
#: Per-GPU penalty weights: x PENALTY_UP each iteration the GPU is over-full, x
#: PENALTY_DOWN each iteration it is not; within PENALTY_RANGE of the start either way.
PENALTY_UP, PENALTY_DOWN, PENALTY_RANGE = 1.05, 0.98, 1e4
#: Plans kept in the elite pool for path relinking.
ELITE = 8
#: Iterations without a new best plan (at least, and per job) before path relinking.
STALL_MIN, STALL_PER_JOB = 300, 2
#: Iterations between two readings of the budget.
CHECK_EVERY = 8
#: Relative excess below this counts as none.
NO_EXCESS = 1e-9


def applies(instance: Instance) -> bool:
    """Whether the search can plan the instance: single-GPU jobs, an additive objective.

    Node-level capacities, gangs and the GPU-count or load objectives are left to the
    other methods, as is an instance whose move tables would be too large.
    """
    return (instance.objective in ADDITIVE and bool(np.all(instance.gang == 1))
            and instance.node_capacity.size == 0
            and instance.n_jobs * (instance.n_gpus + 1) * len(instance.packing_resources)
            <= MAX_CELLS)


@dataclass(frozen=True)
class Found:
    """What a search found: the best plan that fits (GPU per job, -1: none) and its value.

    ``plan`` is None when no plan that fits was found; ``value`` is in the objective's
    own sense (as the verifier computes it).
    """

    plan: IntArray | None
    value: float
    iterations: int
    relinks: int


class GapSearch:
    """Tabu search with ejection chains over one GPU per job (see the module docstring).

    Parameters
    ----------
    instance
        An instance the search :func:`applies` to.
    """

    def __init__(self, instance: Instance) -> None:
        if not applies(instance):
            raise ValueError("the GAP search needs single-GPU jobs and an additive objective")
        self.instance = instance
        gpu_type = instance.gpu_type
        self.sign = -1.0 if instance.objective.sense == "max" else 1.0
        capacity = instance.packing_capacity[gpu_type]  # (m, R)
        demand = instance.packing_demand[:, gpu_type, :]  # (n, m, R)
        with np.errstate(divide="ignore", invalid="ignore"):
            relative = np.where(capacity[None] > 0, demand / capacity[None],
                                np.where(demand > 0, np.inf, 0.0))
        allowed = instance.eligible[:, gpu_type] & np.all(relative <= 1.0, axis=2)
        cost = self.sign * job_value(instance)[:, gpu_type]
        #: The last agent, when jobs may go unplaced, is "none": no value, no demand.
        self.may_drop = instance.objective.allows_unplaced
        if self.may_drop:
            relative = np.concatenate([relative, np.zeros((instance.n_jobs, 1,
                                                           relative.shape[2]))], axis=1)
            allowed = np.concatenate([allowed, np.ones((instance.n_jobs, 1), bool)], axis=1)
            cost = np.concatenate([cost, np.zeros((instance.n_jobs, 1))], axis=1)
        self.relative: FloatArray = np.where(allowed[:, :, None], relative, 0.0)
        self.allowed: BoolArray = allowed
        #: Minimised value of each job on each agent (0 where not allowed: masked).
        self.cost: FloatArray = np.where(allowed, cost, 0.0)
        self.n_agents = allowed.shape[1]
        spread = np.array([np.ptp(c[a]) if a.sum() > 1 else 0.0
                           for c, a in zip(self.cost, allowed, strict=True)])
        need = self.relative[allowed]
        #: The start weight of a unit of relative excess: a typical value difference per
        #: typical demand, so that neither capacity nor value dominates at first.
        self.penalty0 = (float(spread.mean()) if spread.any() else 1.0) / max(
            float(need.mean()) if need.size else 1.0, 1e-9)

    # -- plans ---------------------------------------------------------------------------

    def agents(self, placed: dict[int, IntArray]) -> IntArray:
        """The search's genome of a placement (job to GPUs); unplaced jobs get "none".

        A job without a GPU on an instance that must place it goes to its cheapest
        allowed GPU (the penalty then weighs its excess).
        """
        n = self.instance.n_jobs
        genome = np.full(n, self.n_agents - 1 if self.may_drop else -1, dtype=np.int64)
        for j, gpus in placed.items():
            genome[j] = int(gpus[0])
        for j in np.flatnonzero(genome < 0).tolist():
            genome[j] = int(np.flatnonzero(self.allowed[j])[
                np.argmin(self.cost[j, self.allowed[j]])])
        return genome

    def placed(self, genome: IntArray) -> dict[int, IntArray]:
        """The placement of a genome: job to its one GPU (jobs on "none" left out)."""
        m = self.instance.n_gpus
        return {j: np.array([g], dtype=np.int64) for j, g in enumerate(genome.tolist())
                if g < m}

    def cheapest(self) -> IntArray:
        """Each job on its cheapest allowed GPU, capacity aside (a start for the search)."""
        genome: IntArray = np.argmin(np.where(self.allowed, self.cost, np.inf), axis=1)
        return genome.astype(np.int64)

    def value(self, genome: IntArray) -> float:
        """The genome's objective, in the objective's own sense."""
        return self.sign * float(self.cost[np.arange(genome.size), genome].sum())

    def fits(self, genome: IntArray) -> bool:
        """Whether the genome keeps every GPU within every capacity (exact, absolute units)."""
        instance = self.instance
        m = instance.n_gpus
        placed = np.flatnonzero(genome < m)
        if not np.all(self.allowed[placed, genome[placed]]):
            return False
        gpus = genome[placed]
        load = np.zeros((m, len(instance.packing_resources)))
        np.add.at(load, gpus, instance.packing_demand[placed, instance.gpu_type[gpus]])
        return bool(np.all(load <= instance.packing_capacity[instance.gpu_type]))

    # -- the search ------------------------------------------------------------------------

    def run(
        self,
        start: IntArray,
        budget: Budget,
        rng: np.random.Generator,
        on_improvement: Callable[[IntArray, float], None] | None = None,
    ) -> Found:
        """Search from ``start`` until the budget is spent (its time, iterations or stop).

        Parameters
        ----------
        start
            A genome (:meth:`agents`); it need not fit.
        budget
            The search's budget; its ``iterations``, when given, count moves.
        rng
            The seeded generator (tenures, relinking pairs).
        on_improvement
            Called with each better plan that fits and its value (the objective's sense).
        """
        return _Run(self, start, rng, on_improvement).search(budget)


class _Run:
    """One search's state: the genome, per-agent loads and penalty weights, tabu, elites."""

    def __init__(self, space: GapSearch, start: IntArray, rng: np.random.Generator,
                 on_improvement: Callable[[IntArray, float], None] | None) -> None:
        self.space, self.rng, self.on_improvement = space, rng, on_improvement
        n, k = space.cost.shape
        self.jobs = np.arange(n)
        self.genome = start.copy()
        self.load = np.zeros((k, space.relative.shape[2]))
        np.add.at(self.load, self.genome, space.relative[self.jobs, self.genome])
        self.cost = float(space.cost[self.jobs, self.genome].sum())
        self.penalty = np.full(k, space.penalty0)
        self.tabu = np.zeros((n, k), dtype=np.int64)
        self.iteration = 0
        self.best: IntArray | None = None
        self.best_cost = np.inf
        self.elite: list[tuple[float, IntArray]] = []
        self.since_best = 0
        self.relinks = 0
        self._note()

    # -- pricing ---------------------------------------------------------------------------

    def _over(self) -> FloatArray:
        """Relative excess of each agent."""
        over: FloatArray = np.maximum(self.load - 1.0, 0.0).sum(axis=1)
        return over

    def _shifts(self, rows: IntArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Penalised cost, value change and excess change of each job of ``rows`` to each agent.

        Moves to the job's own agent or to one it may not take cost ``inf``.
        """
        space, load = self.space, self.load
        over = self._over()
        relative = space.relative[rows]  # (r, k, R)
        arrive = np.maximum(load[None] + relative - 1.0, 0.0).sum(axis=2) - over[None]
        here = self.genome[rows]
        left = load[here] - relative[np.arange(rows.size), here]
        leave = np.maximum(left - 1.0, 0.0).sum(axis=1) - over[here]
        value = space.cost[rows] - space.cost[rows, here][:, None]
        penalised = value + self.penalty[None] * arrive + (self.penalty[here] * leave)[:, None]
        shut = ~space.allowed[rows]
        shut[np.arange(rows.size), here] = True
        penalised[shut] = np.inf
        return penalised, value, arrive + leave[:, None]

    def _chains(self, jobs: IntArray, to: IntArray, first: tuple[FloatArray, ...]
                ) -> tuple[tuple[FloatArray, FloatArray, FloatArray], IntArray, IntArray]:
        """Ejection chains of length two from the shifts of ``jobs`` to agents ``to``.

        Shift ``s`` moves job ``j`` from ``p`` to ``q``; then one job ``k`` on ``q`` moves
        on to any agent ``r`` but ``q`` (``r = p`` is a swap). ``first`` holds the shifts'
        penalised cost, value and excess changes. Returns the chains' penalised cost,
        value and excess changes (chains x agents), and per chain its shift and job ``k``.
        """
        space, genome = self.space, self.genome
        # The jobs on each shift's target agent, without a loop: jobs sorted by agent,
        # each agent's run of them repeated once per shift that targets it.
        order = np.argsort(genome, kind="stable")
        size = np.bincount(genome, minlength=space.n_agents)
        first_of = np.cumsum(size) - size
        count = size[to]
        which = np.repeat(np.arange(jobs.size), count)
        offset = np.arange(which.size) - np.repeat(np.cumsum(count) - count, count)
        ejected = order[first_of[to][which] + offset]
        j, q = jobs[which], to[which]
        p = genome[j]
        rows = np.arange(which.size)
        # Loads after the first shift, per chain (chains x agents x R).
        load = np.repeat(self.load[None], which.size, axis=0)
        load[rows, p] -= space.relative[j, p]
        load[rows, q] += space.relative[j, q]
        over = np.maximum(load - 1.0, 0.0).sum(axis=2)
        arrive = np.maximum(load + space.relative[ejected] - 1.0, 0.0).sum(axis=2) - over
        left = load[rows, q] - space.relative[ejected, q]
        leave = np.maximum(left - 1.0, 0.0).sum(axis=1) - over[rows, q]
        value = (first[1][which][:, None] + space.cost[ejected]
                 - space.cost[ejected, q][:, None])
        penalised = (first[0][which][:, None] + space.cost[ejected]
                     - space.cost[ejected, q][:, None] + self.penalty[None] * arrive
                     + (self.penalty[q] * leave)[:, None])
        shut = ~space.allowed[ejected]
        shut[rows, q] = True
        penalised[shut] = np.inf
        excess = first[2][which][:, None] + arrive + leave[:, None]
        return (penalised, value, excess), which, ejected

    def _swaps(self, rows: IntArray) -> tuple[FloatArray, FloatArray, FloatArray, BoolArray]:
        """Penalised cost, value and excess change of each job of ``rows`` trading with each.

        Also which of the trades are tabu (either job back where it was).

        Trades within one agent, or onto an agent a job may not take, cost ``inf``.
        """
        space, load, genome = self.space, self.load, self.genome
        over = self._over()
        p = genome[rows]
        relative = space.relative
        mine = relative[rows, p]  # (r, R): each row job's demand where it is
        theirs = relative[self.jobs, genome]  # (n, R)
        # Agent p gets job k instead of j; agent q gets j instead of k.
        on_p = load[p][:, None] - mine[:, None] + relative[:, p].transpose(1, 0, 2)
        on_q = load[genome][None] - theirs[None] + relative[rows][:, genome]
        arrive_p = np.maximum(on_p - 1.0, 0.0).sum(axis=2) - over[p][:, None]
        arrive_q = np.maximum(on_q - 1.0, 0.0).sum(axis=2) - over[genome][None]
        cost = space.cost
        value = (cost[rows][:, genome] + cost[:, p].T - cost[rows, p][:, None]
                 - cost[self.jobs, genome][None])
        penalised = (value + self.penalty[p][:, None] * arrive_p
                     + self.penalty[genome][None] * arrive_q)
        shut = (~space.allowed[rows][:, genome] | ~space.allowed[:, p].T
                | (p[:, None] == genome[None]))
        penalised[shut] = np.inf
        tabu = ((self.tabu[rows][:, genome] > self.iteration)
                | (self.iteration < self.tabu[:, p].T))
        return penalised, value, arrive_p + arrive_q, tabu

    def _open(self, penalised: FloatArray, value: FloatArray, excess: FloatArray,
              tabu: BoolArray) -> FloatArray:
        """The penalised costs with tabu moves barred, unless they aspire.

        A tabu move aspires when its plan fits and beats the best plan found.
        """
        aspires = ((self._over().sum() + excess <= NO_EXCESS)
                   & (self.cost + value < self.best_cost - 1e-9))
        out: FloatArray = np.where(tabu & ~aspires, np.inf, penalised)
        return out

    # -- moves and records -----------------------------------------------------------------

    def _move(self, job: int, to: int) -> None:
        """Move one job, and bar it from the agent it left for a random tenure."""
        space = self.space
        here = int(self.genome[job])
        self.load[here] -= space.relative[job, here]
        self.load[to] += space.relative[job, to]
        self.cost += float(space.cost[job, to] - space.cost[job, here])
        self.genome[job] = to
        self.tabu[job, here] = self.iteration + TENURE + int(self.rng.integers(TENURE_SPAN))

    def _note(self) -> None:
        """Record the plan if it fits and beats the best (checked exactly), and the elites."""
        if self._over().sum() > NO_EXCESS or self.cost >= self.best_cost - 1e-9:
            return
        if self._record(self.genome):
            # Recomputed rather than summed move by move: no drift in the reported value.
            self.cost = self.best_cost

    def _record(self, genome: IntArray) -> bool:
        """Keep ``genome`` as the best plan if it fits and beats the best (exact checks)."""
        space = self.space
        if not space.fits(genome):
            return False
        cost = float(space.cost[self.jobs, genome].sum())
        if cost >= self.best_cost - 1e-9:
            return False
        self.best, self.best_cost = genome.copy(), cost
        self.since_best = 0
        if not any(np.array_equal(g, genome) for _, g in self.elite):
            self.elite.append((cost, genome.copy()))
            self.elite.sort(key=lambda e: e[0])
            del self.elite[ELITE:]
        if self.on_improvement is not None:
            self.on_improvement(self.best.copy(), space.sign * self.best_cost)
        return True

    def _peek(self, penalised: FloatArray, value: FloatArray, excess: FloatArray,
              moved: Callable[[int], IntArray]) -> None:
        """Record the best neighbour in a table of moves whose plan fits, without moving.

        The search lives mostly beyond capacity (see the module docstring), so the plans
        that fit are more often a move away than visited. ``moved`` gives the genome after
        the move at a flat index of the table.
        """
        fits = np.isfinite(penalised) & (self._over().sum() + excess <= NO_EXCESS)
        gain = np.where(fits, value, np.inf).ravel()
        at = int(np.argmin(gain))
        if self.cost + gain[at] < self.best_cost - 1e-9:
            self._record(moved(at))

    def _adapt(self) -> None:
        """Raise the weights of over-full agents and lower those of the others."""
        crowded = self._over() > NO_EXCESS
        self.penalty *= np.where(crowded, PENALTY_UP, PENALTY_DOWN)
        low, high = self.space.penalty0 / PENALTY_RANGE, self.space.penalty0 * PENALTY_RANGE
        np.clip(self.penalty, low, high, out=self.penalty)

    # -- the loop --------------------------------------------------------------------------

    def step(self) -> None:
        """One tabu iteration: the best admissible shift or two-move ejection chain."""
        self.iteration += 1
        shifts = self._shifts(self.jobs)
        tabu = self.tabu > self.iteration
        open_shifts = self._open(*shifts, tabu)
        flat = open_shifts.ravel()
        n_agents = self.space.n_agents
        count = min(CHAIN_STARTS, int(np.isfinite(flat).sum()))
        if count == 0:
            return
        starts = np.argpartition(flat, count - 1)[:count]
        starts = starts[np.isfinite(flat[starts])]
        best_shift = int(starts[np.argmin(flat[starts])])
        # Chains also grow from the shifts that gain most value, over-filling their agent:
        # the ejection that follows is what can make them fit.
        gain = np.where(np.isfinite(flat), shifts[1].ravel(), np.inf)
        by_value = np.argpartition(gain, count - 1)[:count]
        starts = np.unique(np.r_[starts, by_value[np.isfinite(gain[by_value])]])
        jobs, to = starts // n_agents, starts % n_agents
        chains, which, ejected = self._chains(jobs, to, tuple(s[jobs, to] for s in shifts))
        if ejected.size:
            open_chains = self._open(*chains, tabu[ejected])
            at = int(np.argmin(open_chains))
            c, r = divmod(at, n_agents)
        rows = (self.jobs if self.jobs.size <= SWAP_ROWS
                else self.rng.choice(self.jobs.size, SWAP_ROWS, replace=False))
        swap_cost, swap_value, swap_excess, swap_tabu = self._swaps(rows)
        open_swaps = self._open(swap_cost, swap_value, swap_excess, swap_tabu)
        a, b = divmod(int(np.argmin(open_swaps)), self.jobs.size)
        chain = open_chains[c, r] if ejected.size else np.inf
        swap = open_swaps[a, b]
        self._peek(*shifts, lambda at: self._moved((at // n_agents, at % n_agents)))
        if ejected.size:
            self._peek(*chains, lambda at: self._moved(
                (int(jobs[which[at // n_agents]]), int(to[which[at // n_agents]])),
                (int(ejected[at // n_agents]), at % n_agents)))
        n = self.jobs.size
        self._peek(swap_cost, swap_value, swap_excess, lambda at: self._moved(
            (int(rows[at // n]), int(self.genome[at % n])),
            (at % n, int(self.genome[rows[at // n]]))))
        if swap < min(chain, flat[best_shift]):
            j, k = int(rows[a]), b
            p, q = int(self.genome[j]), int(self.genome[k])
            self._move(j, q)
            self._move(k, p)
        elif chain < flat[best_shift]:
            self._move(int(jobs[which[c]]), int(to[which[c]]))
            self._move(int(ejected[c]), r)
        else:
            self._move(best_shift // n_agents, best_shift % n_agents)
        self._note()
        self._adapt()
        self.since_best += 1

    def relink(self) -> None:
        """Walk from one elite plan toward another; go on from the best point on the way.

        Each step moves the job, among those placed differently, whose move to the
        guiding plan's agent costs least (penalised); plans that fit on the way are
        recorded. The search goes on from the best point of the walk's middle half, with
        the tabu list cleared.
        """
        picks = self.rng.choice(len(self.elite), size=2, replace=False)
        source, guide = self.elite[int(picks[0])][1], self.elite[int(picks[1])][1]
        self._set(source)
        differ = np.flatnonzero(source != guide)
        walk: list[tuple[float, IntArray]] = []
        for _ in range(differ.size):
            rows = np.flatnonzero(self.genome != guide)
            penalised, _, _ = self._shifts(rows)
            cost = penalised[np.arange(rows.size), guide[rows]]
            job = int(rows[np.argmin(cost)])
            self._move(job, int(guide[job]))
            self._note()
            walk.append((self.cost + float(self.penalty @ self._over()), self.genome.copy()))
        middle = walk[len(walk) // 4: max(len(walk) * 3 // 4, len(walk) // 4 + 1)]
        if middle:
            self._set(min(middle, key=lambda w: w[0])[1])
        self.tabu[:] = 0
        self.since_best = 0
        self.relinks += 1

    def _moved(self, *moves: tuple[int, int]) -> IntArray:
        """A copy of the genome with each (job, agent) of ``moves`` made."""
        genome = self.genome.copy()
        for job, agent in moves:
            genome[job] = agent
        return genome

    def _set(self, genome: IntArray) -> None:
        """Take a whole genome; loads and value recomputed."""
        space = self.space
        self.genome = genome.copy()
        self.load[:] = 0.0
        np.add.at(self.load, self.genome, space.relative[self.jobs, self.genome])
        self.cost = float(space.cost[self.jobs, self.genome].sum())

    def search(self, budget: Budget) -> Found:
        """Iterate until the budget is spent; relink between elites when stalled."""
        stall = max(STALL_MIN, STALL_PER_JOB * self.jobs.size)
        while True:
            if self.iteration % CHECK_EVERY == 0 and budget.spent():
                break
            if budget.iterations is not None and self.iteration >= budget.iterations:
                break
            if self.since_best > stall and len(self.elite) >= 2:
                self.relink()
            self.step()
        space = self.space
        logger.debug("GAP tabu search: %d iterations, %d relinks, best %s", self.iteration,
                     self.relinks, self.best_cost)
        return Found(self.best, space.sign * self.best_cost if self.best is not None
                     else float("nan"), self.iteration, self.relinks)
