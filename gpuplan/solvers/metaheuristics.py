"""``--method sa`` and ``--method ga``: simulated annealing and a genetic algorithm.

Both search the encodings of :mod:`gpuplan.solvers.encodings`: block per job for static
objectives, random keys decoded by the list scheduler for time-based ones. Both start
from the greedy plan, are reproducible under ``--seed``, and are anytime: they stop at
``--time-limit`` (or after ``--iterations``) with the best plan found that has no
capacity excess and leaves out no job it must place. Their bound is the combinatorial
one (:func:`~gpuplan.models.bounds.objective_bound`); they prove nothing themselves.

Defaults (documented in README):

- annealing: temperature from the mean cost change of 200 random moves down to a
  thousandth of it, geometrically over the budget; moves drawn evenly from ``--moves``;
  static capacity excess weighed by an adaptive penalty (raised by 20% after a window of
  1,000 moves more than 10% of them with excess, lowered by 5% otherwise, after Yagiura
  et al.'s GAP heuristics); moves priced in pure Python over the GPUs they touch, about
  100,000 per second on GAP;
- genetic: 20 individuals, 4 elite kept, 3 random immigrants per generation, children by
  ``--crossover`` of a tournament winner and another parent; a static child is mutated
  (1% of its genes), repaired off over-full GPUs and improved by 50 random descent moves
  per job (``--moves``; Chu & Beasley's repair and improvement); a time-based child is
  decoded as is (BRKGA).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable

import numpy as np

from gpuplan.instance import FloatArray, Instance, IntArray
from gpuplan.models.bounds import objective_bound
from gpuplan.schedule import Status
from gpuplan.solvers.base import Result, SolveOptions, plan_status
from gpuplan.solvers.encodings import CROSSOVERS, AssignmentState, PriorityEncoding
from gpuplan.solvers.greedy import best_fit_decreasing

#: Moves (static) or decodes (time-based) per job when there is no time limit.
DEFAULT_MOVES_PER_JOB = 200
DEFAULT_DECODES = 2000
#: Start and end temperatures of static annealing, relative to the mean |value change|
#: of random moves.
HOT, COLD = 1.0, 1e-3
#: Share of a window's moves spent with excess above which the penalty rises.
INFEASIBLE_SHARE = 0.1
#: Moves between adjustments of the capacity penalty.
PENALTY_WINDOW = 1000
#: Generations when there is no time limit.
DEFAULT_GENERATIONS = 100
POPULATION, ELITE, IMMIGRANTS = 20, 4, 3
#: Random descent moves per job after each static child's repair.
IMPROVEMENT_MOVES_PER_JOB = 50


class Budget:
    """When to stop: at the time limit, or after ``--iterations`` (or ``steps``) steps.

    With a time limit, ``--iterations`` still caps the steps when given; without either,
    the method's default number of steps applies, so that runs are reproducible.
    """

    def __init__(self, options: SolveOptions, steps: int) -> None:
        self.began = time.perf_counter()
        self.limit = options.time_limit_s
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

    def expired(self) -> bool:
        """Whether the time limit has passed (never without one)."""
        return self.limit is not None and time.perf_counter() - self.began >= self.limit

    def spent(self) -> bool:
        """Count one step; whether the budget is used up."""
        self.done += 1
        if self.steps is not None and self.done > self.steps:
            return True
        return self.limit is not None and time.perf_counter() - self.began >= self.limit


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


class AnnealingSolver:
    """Simulated annealing over the block (static) or key (time-based) encoding."""

    name = "sa"
    description = "simulated annealing from the greedy plan (anytime; --moves, --seed)"

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
            return self._static(instance, options, rng,
                                Budget(options, DEFAULT_MOVES_PER_JOB * instance.n_jobs))
        return self._timed(instance, options, rng, Budget(options, DEFAULT_DECODES))

    @staticmethod
    def _static(instance: Instance, options: SolveOptions, rng: np.random.Generator,
                budget: Budget) -> Result:
        state = AssignmentState(instance)
        state.greedy()
        best = state.choice.copy() if state.excess < 1e-9 else None
        best_value = state.value if best is not None else math.inf
        moves = list(options.moves)
        sample = [m for m in (state.propose(moves[k % len(moves)], u, v)
                              for k, (u, v) in enumerate(rng.random((200, 2)).tolist()))
                  if m is not None]
        scale = float(np.mean([abs(m.value) for m in sample])) if sample else 1.0
        scale = scale if scale > 0 else 1.0
        penalty = 2.0 * scale / max(float(np.mean([abs(m.excess) for m in sample]
                                                  or [1.0])), 1e-9)
        hot, cold = scale * HOT, scale * COLD
        infeasible = 0
        draws: list[list[float]] = []
        while not budget.spent():
            if not draws:
                draws = rng.random((4096, 4)).tolist()
            pick, u, v, w = draws.pop()
            temperature = hot * (cold / hot) ** budget.progress()
            move = state.propose(moves[int(pick * len(moves))], u, v)
            if move is not None:
                delta = move.value + penalty * move.excess
                if delta <= 0 or w < math.exp(-delta / temperature):
                    state.apply(move)
            if state.excess < 1e-9 and state.value < best_value - 1e-9:
                best, best_value = state.choice.copy(), state.value
            infeasible += state.excess >= 1e-9
            if budget.done % PENALTY_WINDOW == 0:
                penalty *= 1.2 if infeasible > INFEASIBLE_SHARE * PENALTY_WINDOW else 1 / 1.05
                infeasible = 0
        return _static_result(state, best, f"sa ({budget.done} moves, seed {options.seed})")

    @staticmethod
    def _timed(instance: Instance, options: SolveOptions, rng: np.random.Generator,
               budget: Budget) -> Result:
        encoding = PriorityEncoding(instance)
        keys = encoding.greedy()
        score, result = encoding.decode(keys)
        best, best_score = result, score
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
        return _timed_result(instance, best, f"sa ({budget.done} decodes, seed {options.seed})")


class GeneticSolver:
    """A steady-generation genetic algorithm over the same encodings."""

    name = "ga"
    description = "genetic algorithm seeded with the greedy plan (anytime; --crossover, --seed)"

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
        budget = Budget(options, DEFAULT_GENERATIONS)
        if instance.objective.is_static:
            return self._static(instance, options, rng, crossover, budget)
        return self._timed(instance, options, rng, crossover, budget)

    @staticmethod
    def _evolve(population: list[np.ndarray], fitness: list[float],
                make: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, float]],
                fresh: Callable[[], tuple[np.ndarray, float]], budget: Budget,
                rng: np.random.Generator) -> None:
        """Generations: keep the elite, add immigrants, fill with children (in place)."""
        while not budget.spent():
            order = np.argsort(fitness, kind="stable")
            elite = [population[i] for i in order[:ELITE]]
            elite_fit = [fitness[i] for i in order[:ELITE]]
            nxt, nxt_fit = elite, elite_fit
            for _ in range(IMMIGRANTS if not budget.expired() else 0):
                genome, value = fresh()
                nxt, nxt_fit = [*nxt, genome], [*nxt_fit, value]
            while len(nxt) < POPULATION and not budget.expired():
                a, b = rng.integers(len(population), size=2)
                first = population[a] if fitness[a] <= fitness[b] else population[b]
                other = population[int(rng.integers(len(population)))]
                genome, value = make(first, other)
                nxt, nxt_fit = [*nxt, genome], [*nxt_fit, value]
            population[:], fitness[:] = nxt, nxt_fit

    def _static(self, instance: Instance, options: SolveOptions, rng: np.random.Generator,
                crossover: Callable[..., np.ndarray], budget: Budget) -> Result:
        state = AssignmentState(instance)
        best: list[IntArray | None] = [None]
        best_value = [math.inf]
        moves = list(options.moves)

        def improve(genome: IntArray) -> tuple[IntArray, float]:
            state.set(genome)
            state.repair(rng, budget.deadline)
            state.descend(IMPROVEMENT_MOVES_PER_JOB * instance.n_jobs, moves, rng,
                          budget.deadline)
            value = state.value + (0.0 if state.excess < 1e-9 else 1e12 * (1 + state.excess))
            if state.excess < 1e-9 and state.value < best_value[0] - 1e-9:
                best[0], best_value[0] = state.choice.copy(), state.value
            return state.choice.copy(), value

        def make(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, float]:
            child = crossover(a, b, rng)
            mutate = np.flatnonzero(rng.random(child.size) < 0.01)
            for j in mutate.tolist():
                if state.options[j].size:
                    child[j] = state.options[j][int(rng.integers(state.options[j].size))]
            return improve(child)

        population: list[np.ndarray] = []
        fitness: list[float] = []
        for genome in [state.greedy(), *(state.random(rng) for _ in range(POPULATION - 1))]:
            if len(population) >= 2 and budget.expired():
                break
            genome, value = improve(genome)
            population.append(genome)
            fitness.append(value)
        self._evolve(population, fitness, make, lambda: improve(state.random(rng)), budget,
                     rng)
        return _static_result(state, best[0],
                              f"ga ({budget.done} generations, seed {options.seed})")

    def _timed(self, instance: Instance, options: SolveOptions, rng: np.random.Generator,
               crossover: Callable[..., np.ndarray], budget: Budget) -> Result:
        encoding = PriorityEncoding(instance)
        best: list[tuple[tuple[int, float], Result]] = []

        def scored(keys: FloatArray) -> tuple[np.ndarray, float]:
            score, result = encoding.decode(keys)
            if not best or score < best[0][0]:
                best[:] = [(score, result)]
            return keys, score[0] * 1e18 + score[1]

        population: list[np.ndarray] = []
        fitness: list[float] = []
        for keys in [encoding.greedy(), *(encoding.random(rng) for _ in range(POPULATION - 1))]:
            if len(population) >= 2 and budget.expired():
                break
            keys, value = scored(keys)
            population.append(keys)
            fitness.append(value)
        self._evolve(population, fitness, lambda a, b: scored(crossover(a, b, rng)),
                     lambda: scored(encoding.random(rng)), budget, rng)
        return _timed_result(instance, best[0][1],
                             f"ga ({budget.done} generations, seed {options.seed})")
