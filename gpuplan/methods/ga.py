"""``--method ga``: a genetic algorithm over the encodings of the metaheuristics.

It searches the encodings of :mod:`gpuplan.parts.plan_encodings`: block per job for static
objectives, random keys decoded by the list scheduler for time-based ones. Its first
individual is the greedy plan; it is reproducible under ``--seed`` and anytime: it stops
at ``--time-limit`` (or after ``--iterations`` generations) with the best plan found that
has no capacity excess and leaves out no job it must place. Its bound is the
combinatorial one (:func:`~gpuplan.models.bounds.objective_bound`); it proves nothing
itself.

Defaults (documented in README): children by ``--crossover`` of a tournament winner and
another parent; a static child is mutated (1% of its genes), then repaired and improved
by 2 annealing steps per job at a low fixed temperature (Chu & Beasley's repair and
improvement), in generations of 10 with 2 elite and 1 random immigrant; a time-based
child is decoded as is (BRKGA), in generations of 20 with 4 elite and 3 immigrants.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from gpuplan.core.instance import Feature, FloatArray, Instance, IntArray
from gpuplan.core.objectives import ALL_OBJECTIVES, ObjectiveKind
from gpuplan.core.options import option
from gpuplan.core.result import Result
from gpuplan.core.settings import Context, WarmStart
from gpuplan.methods.base import MethodDefaults
from gpuplan.parts.local_search import Progress, StaticSearch, static_result, timed_result
from gpuplan.parts.plan_encodings import (
    CROSSOVERS,
    AssignmentState,
    Crossover,
    PriorityEncoding,
    encoding_features,
    moves_option,
)

#: Generations when there is no time limit.
DEFAULT_GENERATIONS = 100
#: Temperature of the improvement of each static child, relative to the mean absolute
#: change of value of the moves from the start plan.
CHILD_TEMPERATURE = 0.02
#: Annealing steps per job that improve each static child.
IMPROVEMENT_STEPS_PER_JOB = 2
#: Share of a static child's genes mutated before its improvement.
MUTATION_RATE = 0.01


@dataclass(frozen=True)
class Generation:
    """Sizes of a generation: individuals, elite kept, random immigrants."""

    population: int
    elite: int
    immigrants: int


#: Static children are each improved by annealing, so fewer of them go further (memetic);
#: time-based children are decoded as they are, and BRKGA's larger generations do better
#: (docs/benchmarks.md, "Time-based: the Gavel clusters, 30 s").
STATIC_GENERATION = Generation(10, 2, 1)
TIMED_GENERATION = Generation(20, 4, 3)

#: An individual and its fitness (lower is better).
Scored = tuple[np.ndarray, float]


@dataclass(frozen=True)
class GeneticOptions:
    """Options of ``--method ga``."""

    crossover: str = option("uniform", "--crossover", "crossover operator (default: uniform, "
                            "biased 70/30)", choices=tuple(CROSSOVERS))
    moves: tuple[str, ...] = moves_option("the improvement step of each child")


class GeneticMethod(MethodDefaults):
    """A steady-generation genetic algorithm over the block or key encoding."""

    name: ClassVar[str] = "ga"
    description: ClassVar[str] = ("genetic algorithm seeded with the greedy plan (anytime; "
                                  "--crossover, --seed)")
    options_type: ClassVar[type[GeneticOptions]] = GeneticOptions
    objectives: ClassVar[frozenset[ObjectiveKind]] = ALL_OBJECTIVES
    backends: ClassVar[tuple[str, ...]] = ()
    warm_starts: ClassVar[frozenset[WarmStart]] = frozenset()
    iterative: ClassVar[bool] = True
    plans_outages: ClassVar[bool] = True
    keeps: ClassVar[bool] = True

    def features(self, objective: ObjectiveKind) -> frozenset[Feature]:
        """Those of the encodings it searches (:func:`encoding_features`)."""
        return encoding_features(objective)

    def solve(self, instance: Instance, options: GeneticOptions, context: Context) -> Result:
        """Evolve until the budget is spent; return the best valid plan.

        Parameters
        ----------
        instance
            The validated problem.
        options
            Crossover, and the moves of the improvement step.
        context
            The budget (time limit, iterations: generations, the caller's stop) and the
            seed.
        """
        rng = np.random.default_rng(context.seed)
        crossover = CROSSOVERS[options.crossover]
        progress = Progress(context.budget, DEFAULT_GENERATIONS, instance)
        if instance.objective.is_static:
            return self._static(instance, options, context, rng, crossover, progress)
        return self._timed(instance, context, rng, crossover, progress)

    @staticmethod
    def _evolve(population: list[np.ndarray], fitness: list[float],
                make: Callable[[np.ndarray, np.ndarray], Scored], fresh: Callable[[], Scored],
                progress: Progress, rng: np.random.Generator, sizes: Generation) -> None:
        """Generations: keep the elite, add immigrants, fill with children (in place)."""
        while progress.next():
            order = np.argsort(fitness, kind="stable")
            elite = [population[i] for i in order[:sizes.elite]]
            elite_fit = [fitness[i] for i in order[:sizes.elite]]
            nxt, nxt_fit = elite, elite_fit
            for _ in range(sizes.immigrants if not progress.over() else 0):
                genome, value = fresh()
                nxt, nxt_fit = [*nxt, genome], [*nxt_fit, value]
            while len(nxt) < sizes.population and not progress.over():
                a, b = rng.integers(len(population), size=2)
                first = population[a] if fitness[a] <= fitness[b] else population[b]
                other = population[int(rng.integers(len(population)))]
                genome, value = make(first, other)
                nxt, nxt_fit = [*nxt, genome], [*nxt_fit, value]
            population[:], fitness[:] = nxt, nxt_fit

    @staticmethod
    def _seeded(genomes: list[np.ndarray], score: Callable[[np.ndarray], Scored],
                progress: Progress) -> tuple[list[np.ndarray], list[float]]:
        """The first generation: the genomes scored in order, while the budget lasts.

        At least two are scored, so that the search has parents, whatever the budget.
        """
        population: list[np.ndarray] = []
        fitness: list[float] = []
        for genome in genomes:
            if len(population) >= 2 and progress.over():
                break
            individual, value = score(genome)
            population.append(individual)
            fitness.append(value)
        return population, fitness

    def _static(self, instance: Instance, options: GeneticOptions, context: Context,
                rng: np.random.Generator, crossover: Crossover, progress: Progress) -> Result:
        """Memetic search of the block encoding: each child mutated, then annealed a little."""
        state = AssignmentState(instance)
        state.greedy()
        if context.budget.spent():
            return static_result(state, None, "ga (greedy's start spent the time limit)")
        search = StaticSearch(state, list(options.moves), rng)
        steps = max(1, round(IMPROVEMENT_STEPS_PER_JOB * instance.n_jobs))

        def improve(genome: IntArray) -> Scored:
            """Repair and improve a genome by annealing steps; its best fitting plan."""
            state.set(genome)
            search.restart()
            for _ in range(steps):
                if progress.over():
                    break
                search.step(search.scale * CHILD_TEMPERATURE)
                progress.meets(search.best_value)
            if search.run_best is not None:
                return search.run_best, search.run_best_value
            return state.choice.copy(), state.value + 1e12 * (1.0 + state.excess)

        def make(a: np.ndarray, b: np.ndarray) -> Scored:
            """A child of two parents: crossed, mutated, improved."""
            child = crossover(a, b, rng)
            mutate = np.flatnonzero(rng.random(child.size) < MUTATION_RATE)
            for j in mutate.tolist():
                if state.options[j].size:
                    child[j] = state.options[j][int(rng.integers(state.options[j].size))]
            return improve(child)

        sizes = STATIC_GENERATION
        # Greedy's plan (the state is at it) and random genomes, all drawn before the
        # first improvement draws from the same generator.
        population, fitness = self._seeded(
            [state.choice.copy(), *(state.random(rng) for _ in range(sizes.population - 1))],
            improve, progress)
        self._evolve(population, fitness, make, lambda: improve(state.random(rng)), progress,
                     rng, sizes)
        return static_result(state, search.best,
                             f"ga ({progress.done} generations, seed {context.seed})")

    def _timed(self, instance: Instance, context: Context, rng: np.random.Generator,
               crossover: Crossover, progress: Progress) -> Result:
        """BRKGA over the key encoding: children decoded as they are."""
        encoding = PriorityEncoding(instance, context.keep)
        best: list[tuple[tuple[int, float], Result]] = []

        def scored(keys: FloatArray) -> Scored:
            """Decode keys, keep the best plan; fitness ranks jobs left out first."""
            score, result = encoding.decode(keys)
            if not best or score < best[0][0]:
                best[:] = [(score, result)]
                progress.meets(math.inf if score[0] else score[1])
            return keys, score[0] * 1e18 + score[1]

        sizes = TIMED_GENERATION
        population, fitness = self._seeded(
            [encoding.greedy(), *(encoding.random(rng) for _ in range(sizes.population - 1))],
            scored, progress)
        self._evolve(population, fitness, lambda a, b: scored(crossover(a, b, rng)),
                     lambda: scored(encoding.random(rng)), progress, rng, sizes)
        return timed_result(instance, best[0][1],
                            f"ga ({progress.done} generations, seed {context.seed})")
