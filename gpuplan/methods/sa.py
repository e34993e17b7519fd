"""``--method sa`` and ``--method ga``: simulated annealing and a genetic algorithm.

Both search the encodings of :mod:`gpuplan.search.plan_encodings`: block per job for static
objectives, random keys decoded by the list scheduler for time-based ones. Both start
from the greedy plan, are reproducible under ``--seed``, and are anytime: they stop at
``--time-limit`` (or after ``--iterations``) with the best plan found that has no
capacity excess and leaves out no job it must place. Their bound is the combinatorial
one (:func:`~gpuplan.models.bounds.objective_bound`); they prove nothing themselves.

Defaults (documented in README):

- annealing, static: rejection-free (heat bath, :class:`StaticSearch`), every shift and
  swap priced per step; temperature from the mean value change of the start plan's moves
  down to a hundredth of it, geometrically over the budget; capacity excess weighed by an
  adaptive penalty (x1.3 after a window of 20 steps more than half of which ended with
  excess, /1.1 otherwise, after Yagiura et al.'s GAP searches);
- annealing, time-based: Metropolis over one key move per decode;
- genetic: children by ``--crossover`` of a tournament winner and another parent; a
  static child is mutated (1% of its genes), then repaired and improved by 2 annealing
  steps per job at a low fixed temperature (Chu & Beasley's repair and improvement), in
  generations of 10 with 2 elite and 1 random immigrant; a time-based child is decoded
  as is (BRKGA), in generations of 20 with 4 elite and 3 immigrants.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from gpuplan.instance import FloatArray, Instance, IntArray
from gpuplan.methods.base import (
    ALL_OBJECTIVES,
    WarmStart,
    option,
    plan_status,
)
from gpuplan.methods.greedy import best_fit_decreasing
from gpuplan.models.bounds import objective_bound
from gpuplan.search.plan_encodings import (
    CROSSOVERS,
    NO_EXCESS,
    AssignmentState,
    MoveTable,
    PriorityEncoding,
    moves_option,
)
from gpuplan.solution import Result
from gpuplan.solvers.base import SolveOptions
from gpuplan.status import Status

#: Steps per job (static) or decodes (time-based) when there is no time limit.
DEFAULT_STEPS_PER_JOB = 20
DEFAULT_DECODES = 2000
#: Start and end temperatures of static annealing, relative to the mean |value change|
#: of the moves from the start plan.
HOT, COLD = 1.0, 0.01
#: Cost above the cheapest move, in temperatures, beyond which a move is not drawn.
GUMBEL_REACH = 30.0
#: Temperature of the genetic algorithm's improvement of each child, on the same scale.
CHILD_TEMPERATURE = 0.02
#: Steps between adjustments of the capacity penalty, and the share of them ending with
#: excess above which it rises (by PENALTY_UP; else it falls by PENALTY_DOWN).
PENALTY_WINDOW = 20
INFEASIBLE_SHARE = 0.5
PENALTY_UP, PENALTY_DOWN = 1.3, 1.1
#: The penalty stays within this factor of its start either way: unbounded, a long search
#: that keeps over-filling (or never does) takes it to infinity (or zero), and prices
#: become NaN (infinite penalty times no excess, or zero times a forbidden move).
PENALTY_RANGE = 1e9
#: Generations when there is no time limit.
DEFAULT_GENERATIONS = 100
@dataclasses.dataclass(frozen=True)
class Generation:
    """Sizes of a generation: individuals, elite kept, random immigrants."""

    population: int
    elite: int
    immigrants: int


#: Static children are each improved by annealing, so fewer of them go further (memetic);
#: time-based children are decoded as they are, and BRKGA's larger generations do better
#: (on gavel_cluster_500_long at 30 s, 2,557,740 with 20 against 2,580,628 with 10).
STATIC_GENERATION = Generation(10, 2, 1)
TIMED_GENERATION = Generation(20, 4, 3)
#: Annealing steps per job that improve each static child.
IMPROVEMENT_STEPS_PER_JOB = 2


class Budget:
    """When to stop: at the time limit, after the steps, or at the caller's word.

    The steps are ``--iterations`` (or ``steps``); the caller's word is
    ``SolveOptions.stop``. With a time limit, ``--iterations`` still caps the steps when
    given; without either, the method's default number of steps applies, so that runs are
    reproducible.
    """

    def __init__(self, options: SolveOptions, steps: int, instance: Instance) -> None:
        self.began = time.perf_counter()
        self.limit = options.time_limit_s
        self.stop = options.stop
        bound = objective_bound(instance)
        sign = -1.0 if instance.objective.sense == "max" else 1.0
        #: The bound in minimised units: a plan that meets it is optimal, and the search
        #: ends (see :meth:`meets`).
        self.target = None if bound is None else sign * bound
        self.proven = False
        self.steps = (options.iterations if options.iterations is not None
                      else None if self.limit is not None else steps)
        self.done = 0

    def progress(self) -> float:
        """Share of the budget spent, in [0, 1]."""
        if self.limit is not None:
            return min(1.0, (time.perf_counter() - self.began) / self.limit)
        assert self.steps is not None
        return min(1.0, self.done / max(self.steps, 1))

    @property
    def deadline(self) -> float | None:
        """The ``time.perf_counter()`` at which the time limit ends, or None."""
        return None if self.limit is None else self.began + self.limit

    def meets(self, value: float) -> None:
        """Note a plan's minimised value; one that meets the bound ends the search."""
        if self.target is not None and value <= self.target + 1e-9 * max(1.0, abs(self.target)):
            self.proven = True

    def expired(self) -> bool:
        """Whether the search is over.

        It is when the time limit has passed (never without one), the best plan met the
        bound, or the caller stopped.
        """
        if self.proven or (self.stop is not None and self.stop()):
            return True
        return self.limit is not None and time.perf_counter() - self.began >= self.limit

    def spent(self) -> bool:
        """Count one step; whether the budget is used up."""
        self.done += 1
        if self.steps is not None and self.done > self.steps:
            return True
        return self.expired()


class StaticSearch:
    """Rejection-free annealing of a static plan (the heat-bath rule).

    Each step prices every move at once (:meth:`AssignmentState.tables`) and makes one,
    drawn with probability proportional to ``exp(-cost / temperature)`` by the Gumbel-max
    trick; a move's cost is its value change plus the penalty times its excess change.
    No step is wasted on a rejected proposal, and at low temperature a step is the best
    move, so the search descends like steepest descent and still leaves local optima.
    The penalty adapts (after Yagiura et al.'s GAP searches): it rises while most steps
    end with excess, and falls otherwise.

    Parameters
    ----------
    state
        The plan to search from; changed in place.
    moves
        Names of :data:`~gpuplan.search.plan_encodings.MOVES`.
    rng
        The seeded generator.
    """

    def __init__(self, state: AssignmentState, moves: list[str],
                 rng: np.random.Generator) -> None:
        self.state, self.moves, self.rng = state, moves, rng
        tables = state.tables(moves, rng)
        value = np.abs(np.concatenate([t.value[np.isfinite(t.value)] for t in tables]))
        excess = np.abs(np.concatenate([t.excess[np.isfinite(t.excess)] for t in tables]))
        value, excess = value[value > 0], excess[excess > 0]
        #: Mean value change of a move from the start: temperatures are relative to it.
        self.scale = float(value.mean()) if value.size else 1.0
        self.penalty = 2.0 * self.scale / (float(excess.mean()) if excess.size else 1.0)
        self._penalty_bounds = (self.penalty / PENALTY_RANGE, self.penalty * PENALTY_RANGE)
        self.steps = 0
        #: Moves made over all steps (a step makes one or more).
        self.moves_made = 0
        self._infeasible = 0
        #: Best genome without excess, and its value: overall, and since :meth:`restart`.
        self.best: IntArray | None = None
        self.best_value = math.inf
        self.run_best: IntArray | None = None
        self.run_best_value = math.inf
        self._note()

    def restart(self) -> None:
        """Forget the run's best (not the overall best): the state was set anew."""
        self.run_best, self.run_best_value = None, math.inf
        self._note()

    def _note(self) -> None:
        state = self.state
        if state.excess >= NO_EXCESS:
            return
        if state.value < self.run_best_value - 1e-9:
            self.run_best, self.run_best_value = state.choice.copy(), state.value
        if state.value < self.best_value - 1e-9:
            self.best, self.best_value = state.choice.copy(), state.value

    def step(self, temperature: float) -> None:
        """Make the move drawn at ``temperature`` (0: the best), and the disjoint gains.

        Each row of each table draws its move by the heat-bath rule, so the cheapest of
        the rows' draws is the draw over all moves, and it is made. So is every other
        row's draw that is below zero and touches no job or GPU that an earlier move of
        the step touched (its price then still holds): on a large instance one pricing
        pays for many moves. ``min-max-load`` makes one move per step, as its value is
        not a sum over GPUs.
        """
        drawn: list[FloatArray] = []
        where: list[tuple[MoveTable, IntArray, IntArray]] = []
        for table in self.state.tables(self.moves, self.rng):
            cost = table.value + self.penalty * table.excess
            if not cost.size:
                continue
            if temperature > 0:
                # Gumbel-max over the moves that can win: one whose cost exceeds its row's
                # lowest by GUMBEL_REACH temperatures wins with probability below e^-30.
                near = np.flatnonzero(cost <= cost.min(axis=1, keepdims=True)
                                      + GUMBEL_REACH * temperature)
                noisy = np.full(cost.shape, np.inf)
                noisy.flat[near] = (cost.flat[near]
                                    - temperature * self.rng.gumbel(size=near.size))
                cost = noisy
            cols = np.argmin(cost, axis=1)
            rows = np.flatnonzero(np.isfinite(cost[np.arange(cost.shape[0]), cols]))
            drawn.append(cost[rows, cols[rows]])
            where.append((table, rows, cols[rows]))
        if not drawn or not any(d.size for d in drawn):
            return
        values = np.concatenate(drawn)
        tags = np.concatenate([np.full(d.size, i) for i, d in enumerate(drawn)])
        offsets = np.concatenate([np.arange(d.size) for d in drawn])
        changes: list[tuple[int, int]] = []
        jobs: set[int] = set()
        gpus: set[int] = set()
        for i in np.argsort(values, kind="stable").tolist():
            if changes and (values[i] >= 0 or self.state.peak):
                break
            table, rows, cols = where[int(tags[i])]
            move = self.state.changes(table, int(rows[offsets[i]]), int(cols[offsets[i]]))
            touched = self.state.touched(move)
            if jobs.isdisjoint(j for j, _ in move) and gpus.isdisjoint(touched):
                changes += move
                jobs.update(j for j, _ in move)
                gpus |= touched
        self.state.make_all(changes)
        self.moves_made += len(changes)
        self._note()
        self.steps += 1
        self._infeasible += self.state.excess >= NO_EXCESS
        if self.steps % PENALTY_WINDOW == 0:
            self.note_window(self._infeasible > INFEASIBLE_SHARE * PENALTY_WINDOW)
            self._infeasible = 0

    def note_window(self, crowded: bool) -> None:
        """Adapt the penalty after a window of steps: up if most of them over-filled.

        It stays within :data:`PENALTY_RANGE` of its start.
        """
        low, high = self._penalty_bounds
        self.penalty = min(max(self.penalty * (PENALTY_UP if crowded else 1 / PENALTY_DOWN),
                               low), high)


def _no_plan(instance: Instance, solver: str, why: str) -> Result:
    return Result(status=Status.NO_SOLUTION, objective=None, bound=objective_bound(instance),
                  solver=solver, unplaced=dict.fromkeys(range(instance.n_jobs), why))


def _static_result(state: AssignmentState, best: IntArray | None, solver: str) -> Result:
    """The best plan found, or best-fit decreasing's if that is better (or the only one).

    The greedy plan may put a gang on GPUs that are not an aligned block, so the search
    cannot always start from it; keeping it as the floor means the search never returns
    less than greedy does.
    """
    instance = state.instance
    greedy = state.start if state.start is not None else best_fit_decreasing(instance)
    if best is None:
        if greedy.status.has_plan:
            return dataclasses.replace(greedy, solver=f"{solver}; greedy plan kept")
        return _no_plan(instance, solver, "the search found no plan within every GPU's "
                        "capacity; try a longer --time-limit or --method milp")
    state.set(best)
    found = state.result(solver, objective_bound(instance))
    sign = -1.0 if instance.objective.sense == "max" else 1.0
    if (greedy.status.has_plan and greedy.objective is not None and found.objective is not None
            and sign * greedy.objective < sign * found.objective):
        return dataclasses.replace(greedy, solver=f"{solver}; greedy plan kept")
    return found


def _timed_result(instance: Instance, best: Result, solver: str) -> Result:
    bound = objective_bound(instance)
    if best.unplaced:
        return Result(status=Status.NO_SOLUTION, objective=None, bound=bound, solver=solver,
                      unplaced=best.unplaced)
    return Result(status=plan_status(best.objective, bound), objective=best.objective,
                  bound=bound, solver=solver, job=best.job, gpu_type=best.gpu_type,
                  start=best.start, end=best.end, gpus=best.gpus)


@dataclass(frozen=True)
class AnnealingOptions:
    """Options of ``--method sa``."""

    moves: tuple[str, ...] = moves_option("the annealing")


class AnnealingMethod:
    """Simulated annealing over the block (static) or key (time-based) encoding."""

    name = "sa"
    description = "simulated annealing from the greedy plan (anytime; --moves, --seed)"
    options_type = AnnealingOptions
    objectives = ALL_OBJECTIVES
    backends: tuple[str, ...] = ()
    warm_starts: frozenset[WarmStart] = frozenset()
    iterative = True

    def supports(self, instance: Instance) -> bool:
        """Every objective."""
        return True

    def solve(self, instance: Instance, options: SolveOptions) -> Result:
        """Anneal until the budget is spent; return the best valid plan.

        Parameters
        ----------
        instance
            The validated problem.
        options
            Time limit or iterations, seed and moves.
        """
        rng = np.random.default_rng(options.seed)
        if instance.objective.is_static:
            return self._static(instance, options, rng, Budget(
                options, DEFAULT_STEPS_PER_JOB * instance.n_jobs, instance))
        return self._timed(instance, options, rng, Budget(options, DEFAULT_DECODES, instance))

    @staticmethod
    def _static(instance: Instance, options: SolveOptions, rng: np.random.Generator,
                budget: Budget) -> Result:
        state = AssignmentState(instance)
        state.greedy()
        search = StaticSearch(state, list(options.moves), rng)
        hot, cold = search.scale * HOT, search.scale * COLD
        budget.meets(search.best_value)
        while not budget.spent():
            search.step(hot * (cold / hot) ** budget.progress())
            budget.meets(search.best_value)
        return _static_result(state, search.best,
                              f"sa ({search.steps} steps, {search.moves_made} moves, "
                              f"seed {options.seed})")

    @staticmethod
    def _timed(instance: Instance, options: SolveOptions, rng: np.random.Generator,
               budget: Budget) -> Result:
        encoding = PriorityEncoding(instance)
        keys = encoding.greedy()
        score, result = encoding.decode(keys)
        best, best_score = result, score
        budget.meets(math.inf if score[0] else score[1])
        unit = max(abs(score[1]), 1e-9)
        moves = list(options.moves)

        def energy(s: tuple[int, float]) -> float:
            return s[0] + s[1] / unit

        hot, cold = 0.02, 2e-5
        while not budget.spent():
            trial = encoding.neighbour(keys, moves[int(rng.integers(len(moves)))], rng)
            trial_score, trial_result = encoding.decode(trial)
            delta = energy(trial_score) - energy(score)
            temperature = hot * (cold / hot) ** budget.progress()
            if delta <= 0 or rng.random() < math.exp(-delta / temperature):
                keys, score = trial, trial_score
                if score < best_score:
                    best, best_score = trial_result, score
                    budget.meets(math.inf if score[0] else score[1])
        return _timed_result(instance, best, f"sa ({budget.done} decodes, seed {options.seed})")


@dataclass(frozen=True)
class GeneticOptions:
    """Options of ``--method ga``."""

    crossover: str = option("uniform", "--crossover", "crossover operator (default: uniform, "
                            "biased 70/30)", choices=tuple(CROSSOVERS))
    moves: tuple[str, ...] = moves_option("the improvement step of each child")


class GeneticMethod:
    """A steady-generation genetic algorithm over the same encodings."""

    name = "ga"
    description = "genetic algorithm seeded with the greedy plan (anytime; --crossover, --seed)"
    options_type = GeneticOptions
    objectives = ALL_OBJECTIVES
    backends: tuple[str, ...] = ()
    warm_starts: frozenset[WarmStart] = frozenset()
    iterative = True

    def supports(self, instance: Instance) -> bool:
        """Every objective."""
        return True

    def solve(self, instance: Instance, options: SolveOptions) -> Result:
        """Evolve until the budget is spent; return the best valid plan.

        Parameters
        ----------
        instance
            The validated problem.
        options
            Time limit or iterations (generations), seed and crossover.
        """
        rng = np.random.default_rng(options.seed)
        crossover = CROSSOVERS[options.crossover]
        budget = Budget(options, DEFAULT_GENERATIONS, instance)
        if instance.objective.is_static:
            return self._static(instance, options, rng, crossover, budget)
        return self._timed(instance, options, rng, crossover, budget)

    @staticmethod
    def _evolve(population: list[np.ndarray], fitness: list[float],
                make: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, float]],
                fresh: Callable[[], tuple[np.ndarray, float]], budget: Budget,
                rng: np.random.Generator, sizes: Generation) -> None:
        """Generations: keep the elite, add immigrants, fill with children (in place)."""
        while not budget.spent():
            order = np.argsort(fitness, kind="stable")
            elite = [population[i] for i in order[:sizes.elite]]
            elite_fit = [fitness[i] for i in order[:sizes.elite]]
            nxt, nxt_fit = elite, elite_fit
            for _ in range(sizes.immigrants if not budget.expired() else 0):
                genome, value = fresh()
                nxt, nxt_fit = [*nxt, genome], [*nxt_fit, value]
            while len(nxt) < sizes.population and not budget.expired():
                a, b = rng.integers(len(population), size=2)
                first = population[a] if fitness[a] <= fitness[b] else population[b]
                other = population[int(rng.integers(len(population)))]
                genome, value = make(first, other)
                nxt, nxt_fit = [*nxt, genome], [*nxt_fit, value]
            population[:], fitness[:] = nxt, nxt_fit

    def _static(self, instance: Instance, options: SolveOptions, rng: np.random.Generator,
                crossover: Callable[..., np.ndarray], budget: Budget) -> Result:
        state = AssignmentState(instance)
        state.greedy()
        search = StaticSearch(state, list(options.moves), rng)
        steps = max(1, round(IMPROVEMENT_STEPS_PER_JOB * instance.n_jobs))

        def improve(genome: IntArray) -> tuple[IntArray, float]:
            state.set(genome)
            search.restart()
            for _ in range(steps):
                if budget.expired():
                    break
                search.step(search.scale * CHILD_TEMPERATURE)
                budget.meets(search.best_value)
            if search.run_best is not None:
                return search.run_best, search.run_best_value
            return state.choice.copy(), state.value + 1e12 * (1.0 + state.excess)

        def make(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, float]:
            child = crossover(a, b, rng)
            mutate = np.flatnonzero(rng.random(child.size) < 0.01)
            for j in mutate.tolist():
                if state.options[j].size:
                    child[j] = state.options[j][int(rng.integers(state.options[j].size))]
            return improve(child)

        population: list[np.ndarray] = []
        fitness: list[float] = []
        sizes = STATIC_GENERATION
        for genome in [state.greedy(),
                       *(state.random(rng) for _ in range(sizes.population - 1))]:
            if len(population) >= 2 and budget.expired():
                break
            genome, value = improve(genome)
            population.append(genome)
            fitness.append(value)
        self._evolve(population, fitness, make, lambda: improve(state.random(rng)), budget,
                     rng, sizes)
        return _static_result(state, search.best,
                              f"ga ({budget.done} generations, seed {options.seed})")

    def _timed(self, instance: Instance, options: SolveOptions, rng: np.random.Generator,
               crossover: Callable[..., np.ndarray], budget: Budget) -> Result:
        encoding = PriorityEncoding(instance)
        best: list[tuple[tuple[int, float], Result]] = []

        def scored(keys: FloatArray) -> tuple[np.ndarray, float]:
            score, result = encoding.decode(keys)
            if not best or score < best[0][0]:
                best[:] = [(score, result)]
                budget.meets(math.inf if score[0] else score[1])
            return keys, score[0] * 1e18 + score[1]

        population: list[np.ndarray] = []
        fitness: list[float] = []
        sizes = TIMED_GENERATION
        for keys in [encoding.greedy(),
                     *(encoding.random(rng) for _ in range(sizes.population - 1))]:
            if len(population) >= 2 and budget.expired():
                break
            keys, value = scored(keys)
            population.append(keys)
            fitness.append(value)
        self._evolve(population, fitness, lambda a, b: scored(crossover(a, b, rng)),
                     lambda: scored(encoding.random(rng)), budget, rng, sizes)
        return _timed_result(instance, best[0][1],
                             f"ga ({budget.done} generations, seed {options.seed})")
