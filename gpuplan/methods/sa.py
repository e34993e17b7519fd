"""``--method sa``: simulated annealing over the encodings of the metaheuristics.

It searches the encodings of :mod:`gpuplan.parts.plan_encodings`: block per job for static
objectives, random keys decoded by the list scheduler for time-based ones. It starts
from the greedy plan, is reproducible under ``--seed``, and is anytime: it stops at
``--time-limit`` (or after ``--iterations``) with the best plan found that has no
capacity excess and leaves out no job it must place. Its bound is the combinatorial
one (:func:`~gpuplan.models.bounds.objective_bound`); it proves nothing itself.

Defaults (documented in README):

- static: rejection-free (heat bath, :class:`~gpuplan.parts.local_search.StaticSearch`),
  every shift and swap priced per step; temperature from the mean value change of the
  start plan's moves down to a hundredth of it, geometrically over the budget; capacity
  excess weighed by an adaptive penalty;
- time-based: Metropolis over one key move per decode.

``--search tabu`` replaces static annealing by the GAP tabu search with ejection chains
(:mod:`gpuplan.parts.gap_tabu`) on the instances it applies to (single-GPU jobs, an
additive objective); on others it anneals.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from gpuplan.core.instance import Feature, Instance
from gpuplan.core.objectives import ALL_OBJECTIVES, ObjectiveKind
from gpuplan.core.options import option
from gpuplan.core.result import Result, better, no_plan
from gpuplan.core.settings import Context, WarmStart
from gpuplan.core.status import Status
from gpuplan.methods.base import MethodDefaults
from gpuplan.models.bounds import objective_bound
from gpuplan.parts import gap_tabu
from gpuplan.parts.construct import best_fit_decreasing
from gpuplan.parts.local_search import Progress, StaticSearch, static_result, timed_result
from gpuplan.parts.plan_encodings import (
    AssignmentState,
    PriorityEncoding,
    encoding_features,
    moves_option,
)
from gpuplan.parts.static_plans import placements
from gpuplan.parts.static_plans import static_result as placed_result

#: Steps per job (static) or decodes (time-based) when there is no time limit.
DEFAULT_STEPS_PER_JOB = 20
DEFAULT_DECODES = 2000
#: Start and end temperatures of static annealing, relative to the mean absolute change
#: of value of the moves from the start plan.
HOT, COLD = 1.0, 0.01
#: Start and end temperatures of time-based annealing, in units of the start plan's value.
TIMED_HOT, TIMED_COLD = 0.02, 2e-5


@dataclass(frozen=True)
class AnnealingOptions:
    """Options of ``--method sa``."""

    moves: tuple[str, ...] = moves_option("the annealing")
    search: str = option("anneal", "--search", "static objectives: anneal (default), or tabu: "
                         "the GAP tabu search with ejection chains where every job takes one "
                         "GPU and the objective is additive", choices=("anneal", "tabu"))


class AnnealingMethod(MethodDefaults):
    """Simulated annealing over the block (static) or key (time-based) encoding."""

    name: ClassVar[str] = "sa"
    description: ClassVar[str] = ("simulated annealing from the greedy plan (anytime; --moves, "
                                  "--seed)")
    options_type: ClassVar[type[AnnealingOptions]] = AnnealingOptions
    objectives: ClassVar[frozenset[ObjectiveKind]] = ALL_OBJECTIVES
    backends: ClassVar[tuple[str, ...]] = ()
    warm_starts: ClassVar[frozenset[WarmStart]] = frozenset()
    iterative: ClassVar[bool] = True
    plans_outages: ClassVar[bool] = True
    keeps: ClassVar[bool] = True

    def features(self, objective: ObjectiveKind) -> frozenset[Feature]:
        """Those of the encodings it searches (:func:`encoding_features`)."""
        return encoding_features(objective)

    def solve(self, instance: Instance, options: AnnealingOptions, context: Context) -> Result:
        """Anneal until the budget is spent; return the best valid plan.

        Parameters
        ----------
        instance
            The validated problem.
        options
            The moves.
        context
            The budget (time limit, iterations: moves or decodes, the caller's stop) and
            the seed.
        """
        rng = np.random.default_rng(context.seed)
        if options.search == "tabu" and gap_tabu.applies(instance):
            return self._tabu(instance, context, rng)
        if instance.objective.is_static:
            return self._static(instance, options, context, rng, Progress(
                context.budget, DEFAULT_STEPS_PER_JOB * instance.n_jobs, instance))
        return self._timed(instance, options, context, rng,
                           Progress(context.budget, DEFAULT_DECODES, instance))

    @staticmethod
    def _static(instance: Instance, options: AnnealingOptions, context: Context,
                rng: np.random.Generator, progress: Progress) -> Result:
        """Heat-bath annealing of the block encoding, cooling geometrically."""
        state = AssignmentState(instance)
        state.greedy()
        if context.budget.spent():
            return static_result(state, None, "sa (greedy's start spent the time limit)")
        search = StaticSearch(state, list(options.moves), rng)
        hot, cold = search.scale * HOT, search.scale * COLD
        progress.meets(search.best_value)
        while progress.next():
            search.step(hot * (cold / hot) ** progress.share())
            progress.meets(search.best_value)
        return static_result(state, search.best,
                             f"sa ({search.steps} steps, {search.moves_made} moves, "
                             f"seed {context.seed})")

    @staticmethod
    def _tabu(instance: Instance, context: Context, rng: np.random.Generator) -> Result:
        """The GAP tabu search from greedy's plan; greedy's plan if it finds none better.

        Without a time limit or iterations it makes :data:`DEFAULT_STEPS_PER_JOB` moves
        per job, so that runs are reproducible.
        """
        budget = context.budget
        greedy = best_fit_decreasing(instance, budget=budget)
        search = gap_tabu.GapSearch(instance)
        start = search.agents(placements(greedy) if greedy.status.has_plan else {})
        if not budget.limited and budget.iterations is None:
            budget = budget.part(iterations=DEFAULT_STEPS_PER_JOB * instance.n_jobs)
        found = search.run(start, budget, rng)
        solver = (f"sa --search tabu ({found.iterations} iterations, {found.relinks} relinks, "
                  f"seed {context.seed})")
        bound = objective_bound(instance)
        searched = (no_plan(instance, "the search found no plan within every GPU's capacity",
                            solver, bound=bound) if found.plan is None
                    else placed_result(instance, search.placed(found.plan), Status.FEASIBLE,
                                       found.value, bound, solver, "left out by the search"))
        return better(instance, searched, greedy)

    @staticmethod
    def _timed(instance: Instance, options: AnnealingOptions, context: Context,
               rng: np.random.Generator, progress: Progress) -> Result:
        """Metropolis annealing of the key encoding, one key move per decode."""
        encoding = PriorityEncoding(instance, context.keep)
        keys = encoding.greedy()
        score, result = encoding.decode(keys)
        best, best_score = result, score
        progress.meets(math.inf if score[0] else score[1])
        unit = max(abs(score[1]), 1e-9)
        moves = list(options.moves)

        def energy(s: tuple[int, float]) -> float:
            """Jobs left out first, then the value relative to the start plan's."""
            return s[0] + s[1] / unit

        while progress.next():
            trial = encoding.neighbour(keys, moves[int(rng.integers(len(moves)))], rng)
            trial_score, trial_result = encoding.decode(trial)
            delta = energy(trial_score) - energy(score)
            temperature = TIMED_HOT * (TIMED_COLD / TIMED_HOT) ** progress.share()
            if delta <= 0 or rng.random() < math.exp(-delta / temperature):
                keys, score = trial, trial_score
                if score < best_score:
                    best, best_score = trial_result, score
                    progress.meets(math.inf if score[0] else score[1])
        return timed_result(instance, best, f"sa ({progress.done} decodes, seed {context.seed})")
