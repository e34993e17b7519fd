"""What ``sa`` and ``ga`` share: the annealing step, the search's progress, its result.

- :class:`StaticSearch`: rejection-free (heat-bath) annealing of a static plan, every
  shift and swap priced per step, capacity excess weighed by an adaptive penalty (x1.3
  after a window of 20 steps more than half of which ended with excess, /1.1 otherwise,
  after Yagiura et al.'s GAP searches). ``sa`` anneals with it; ``ga`` improves each
  child with a few of its steps.
- :class:`Progress`: the steps an anytime search has taken, read against the solve's
  :class:`~gpuplan.core.budget.Budget`, and whether its best plan already meets the bound
  (then it is optimal, and the search ends).
- :func:`static_result` and :func:`timed_result`: the best plan found as a result, never
  worse than greedy's.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from gpuplan.core.budget import Budget
from gpuplan.core.instance import FloatArray, Instance, IntArray
from gpuplan.core.result import Result, better, no_plan, plan_status
from gpuplan.core.status import Status
from gpuplan.models.bounds import objective_bound
from gpuplan.parts.construct import best_fit_decreasing
from gpuplan.parts.plan_encodings import NO_EXCESS, AssignmentState, MoveTable

#: Cost above the cheapest move, in temperatures, beyond which a move is not drawn.
GUMBEL_REACH = 30.0
#: Steps between adjustments of the capacity penalty, and the share of them ending with
#: excess above which it rises (by PENALTY_UP; else it falls by PENALTY_DOWN).
PENALTY_WINDOW = 20
INFEASIBLE_SHARE = 0.5
PENALTY_UP, PENALTY_DOWN = 1.3, 1.1
#: The penalty stays within this factor of its start either way: unbounded, a long search
#: that keeps over-filling (or never does) takes it to infinity (or zero), and prices
#: become NaN (infinite penalty times no excess, or zero times a forbidden move).
PENALTY_RANGE = 1e9


class Progress:
    """How far an anytime search has come, and whether it is over.

    The search ends when the solve's budget is spent (its time limit, or the caller's
    stop), after its steps, or once its best plan meets the bound. The steps are the
    budget's ``iterations``; without them and without a time limit, the method's default
    number, so that runs are reproducible. With a time limit, ``iterations`` still caps
    the steps when given.

    Parameters
    ----------
    budget
        The solve's budget (or the part of it the search was given).
    default_steps
        Steps when the budget has neither a time limit nor iterations.
    instance
        The instance searched, for its bound.
    """

    def __init__(self, budget: Budget, default_steps: int, instance: Instance) -> None:
        self.budget = budget
        bound = objective_bound(instance)
        sign = -1.0 if instance.objective.sense == "max" else 1.0
        #: The bound in minimised units: a plan that meets it is optimal (:meth:`meets`).
        self.target = None if bound is None else sign * bound
        self.proven = False
        self.steps = (budget.iterations if budget.iterations is not None
                      else None if budget.limited else default_steps)
        #: Steps taken so far.
        self.done = 0

    def share(self) -> float:
        """Share of the search spent, in [0, 1]: of the time limit, else of the steps."""
        limit = self.budget.time_limit_s
        if limit is not None:
            return 1.0 if limit <= 0 else min(1.0, self.budget.elapsed() / limit)
        assert self.steps is not None
        return min(1.0, self.done / max(self.steps, 1))

    def meets(self, value: float) -> None:
        """Note a plan's minimised value; one that meets the bound ends the search."""
        if self.target is not None and value <= self.target + 1e-9 * max(1.0, abs(self.target)):
            self.proven = True

    def over(self) -> bool:
        """Whether the best plan met the bound or the budget is spent (steps not counted)."""
        return self.proven or self.budget.spent()

    def next(self) -> bool:
        """Count one step; whether the search may take it."""
        self.done += 1
        if self.steps is not None and self.done > self.steps:
            return False
        return not self.over()


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
        Names of :data:`~gpuplan.parts.plan_encodings.MOVES`.
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
        """Keep the state's plan as the best (overall and of the run) if it fits and is."""
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


def static_result(state: AssignmentState, best: IntArray | None, solver: str) -> Result:
    """The best plan found, or best-fit decreasing's if that is better (or the only one).

    The greedy plan may put a gang on GPUs that are not an aligned block, so the search
    cannot always start from it; keeping it as the floor means the search never returns
    less than greedy does.

    Parameters
    ----------
    state
        The search's state (set to ``best`` here).
    best
        The best genome without excess, or None if the search found none.
    solver
        What found it, for the result.
    """
    instance = state.instance
    bound = objective_bound(instance)
    greedy = state.start if state.start is not None else best_fit_decreasing(instance)
    kept = dataclasses.replace(greedy, solver=f"{solver}; greedy plan kept")
    if best is None:
        found = no_plan(instance, "the search found no plan within every GPU's capacity; "
                        "try a longer --time-limit or --method milp", solver, bound=bound)
    else:
        state.set(best)
        found = state.result(solver, bound)
    return better(instance, found, kept)


def timed_result(instance: Instance, best: Result, solver: str) -> Result:
    """The best decoded plan of a time-based search as the method's result.

    A plan that leaves out jobs (their deadlines) is no plan; its reasons stay.
    """
    bound = objective_bound(instance)
    if best.unplaced:
        return Result(status=Status.NO_SOLUTION, objective=None, bound=bound, solver=solver,
                      unplaced=best.unplaced)
    return dataclasses.replace(best, status=plan_status(best.objective, bound), bound=bound,
                               solver=solver)
