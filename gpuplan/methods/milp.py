"""Exact static assignment: ``--method milp``.

``milp`` hands :class:`~gpuplan.models.assignment.AssignmentModel` to the chosen backend,
started from best-fit decreasing (or from the plan it is given). On a backend that solves
relaxations and can be stopped from another thread (HiGHS), with a time limit and two
threads, it runs the peer's branch-and-cut on the whole model beside an LP-guided lane at
the lowest priority (:mod:`gpuplan.parts.portfolio`): the MIP over the LP's split jobs (or,
where it finds no plan and every job takes one GPU, the GAP tabu search with ejection
chains, :mod:`gpuplan.parts.gap_tabu`), a reduced-cost core MIP, then large-neighbourhood
search around the incumbent (:mod:`gpuplan.parts.assignment_search`); see
:meth:`MilpMethod.solve`.

The time limit covers everything: greedy's start, building the model, handing it to the
backend, the solve and reading the plan back. When the budget is spent before the backend
could run, the start plan is returned and the solver string says why.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from gpuplan.backends import backends_with, get_backend
from gpuplan.backends.base import Capabilities
from gpuplan.core.instance import Feature, FloatArray, Instance
from gpuplan.core.objectives import STATIC_OBJECTIVES, ObjectiveKind
from gpuplan.core.result import Result, better, no_plan
from gpuplan.core.settings import Context, WarmStart
from gpuplan.core.status import Status
from gpuplan.methods.base import MethodDefaults, solver_option
from gpuplan.models.assignment import AssignmentModel
from gpuplan.models.bounds import objective_bound
from gpuplan.models.linear import OutOfTimeError
from gpuplan.parts.assignment_search import (
    LANE_NEEDS,
    best_of,
    closed,
    guided_search,
    symmetric,
)
from gpuplan.parts.construct import best_fit_decreasing
from gpuplan.parts.portfolio import Portfolio
from gpuplan.parts.static_plans import placements, proven_infeasible, static_result, tightest

logger = logging.getLogger(__name__)

def kept_plan(instance: Instance, found: Result, start: Result, why: str) -> Result:
    """The better of the backend's result and the plan known before it, with the best bound.

    The start plan (greedy's, a warm start's) stands when the backend found no plan (its
    budget spent building, or no incumbent in time), a worse one, or claims infeasibility
    (a plan that fits disproves it); ``why`` then says, in the solver string, why the
    backend gave no better plan.
    """
    return better(instance, found, dataclasses.replace(
        start, solver=f"{found.solver}; {start.solver} plan kept ({why})"))


#: Backends with integer columns: the ones the assignment MILP can be handed to (a
#: min-max-load model also needs continuous columns, which needs() asks for).
MILP_BACKENDS = backends_with(Capabilities(integer=True))


@dataclass(frozen=True)
class MilpOptions:
    """Options of ``--method milp``."""

    backend: str = solver_option(MILP_BACKENDS, "the assignment MILP")


class MilpMethod(MethodDefaults):
    """The exact assignment MILP on HiGHS (default), CP-SAT or Pyomo."""

    name: ClassVar[str] = "milp"
    description: ClassVar[str] = ("assignment MILP (static objectives) on --solver; HiGHS "
                                  "adds core + LNS")
    options_type: ClassVar[type[MilpOptions]] = MilpOptions
    objectives: ClassVar[frozenset[ObjectiveKind]] = STATIC_OBJECTIVES
    backends: ClassVar[tuple[str, ...]] = MILP_BACKENDS
    warm_starts: ClassVar[frozenset[WarmStart]] = frozenset({WarmStart.PLAN, WarmStart.LANE})
    iterative: ClassVar[bool] = False

    def needs(self, instance: Instance, options: MilpOptions) -> Capabilities:
        """Integer columns; continuous ones too for the load level of ``min-max-load``.

        The LP-guided lane's needs (:data:`~gpuplan.parts.assignment_search.LANE_NEEDS`)
        are not asked for: on a backend without them the backend solves the whole model
        alone.
        """
        return Capabilities(integer=True,
                            continuous=instance.objective is ObjectiveKind.MIN_MAX_LOAD)

    def features(self, objective: ObjectiveKind) -> frozenset[Feature]:
        """Node resources, multi-node gangs and topology: rows of the assignment MILP.

        A CPU-only job holds no GPU, which the model has no column for.
        """
        return frozenset({Feature.NODE_RESOURCES, Feature.MULTI_NODE, Feature.TOPOLOGY})

    def solve(self, instance: Instance, options: MilpOptions, context: Context) -> Result:
        """Build the model, start it from the start plan, and solve it.

        The start plan is the context's (a schedule file's) or greedy's; a heuristic warm
        start (``context.warm``) improves on it, run first on ``context.warm_share`` of the
        budget, or beside branch-and-cut in the lanes below. The budget covers the start,
        the build and the solve. When it is spent before the backend can run (or the
        backend finds no plan in time, or a worse one), the start plan is returned, with
        the backend's bound where it has one.

        Without a time limit, with one thread, or on a backend without
        :data:`~gpuplan.parts.assignment_search.LANE_NEEDS`
        (CP-SAT, Pyomo), the backend solves the whole model.
        Otherwise two lanes run at once. One is the peer's branch-and-cut (``--method
        textbook``'s solve) on the whole model, on all the threads, for the whole time,
        with no start and no plans offered: it alone proves optimality, and when it does,
        the other lane stops. Kept intact, its plan is always among ``milp``'s (with a
        start and offered plans, on one thread, HiGHS ended worse than the peer on some
        GAP problems, though better on more; docs/benchmarks.md, "Generalized assignment
        (GAP): MILP, LP and the peers"). The other lane runs on a thread of its own at the
        lowest priority (:mod:`gpuplan.parts.portfolio`), on CPU that branch-and-cut
        leaves idle: the heuristic warm start if there is one, the LP
        relaxation (a bound, and reduced costs), the MIP over the jobs the LP splits with
        the others kept where the LP puts them (where that finds no plan, on instances of
        single-GPU jobs with an additive objective, the GAP tabu search for
        :data:`TABU_SHARE` of the time left), then the core MIP over each job's few best
        columns by reduced cost for half of the time left, then LNS over the whole model
        from the best plan until the time is up, the gap closes or the first lane ends.
        The better plan and the best bound are kept; the core's own bound counts only
        when reduced-cost fixing proves that the core holds every optimum.

        Parameters
        ----------
        instance
            A static-objective instance.
        options
            The backend.
        context
            Budget, threads, seed, gap, and the plan or heuristic to start from.
        """
        budget = context.budget
        backend = get_backend(options.backend)
        fallback = self._start_plan(instance, context)
        try:
            if budget.spent():
                raise OutOfTimeError("start plan")
            model = AssignmentModel.build(instance, budget)
        except OutOfTimeError as spent:
            why = ("the time limit was spent on the start plan" if str(spent) == "start plan"
                   else f"the time limit was spent building the model's {spent}")
            return kept_plan(instance, no_plan(instance, f"no plan: {why}",
                                               f"{options.backend} not started",
                                               bound=fallback.bound),
                             fallback, why)
        lanes = (budget.limited and context.threads >= 2
                 and not backend.capabilities.missing(LANE_NEEDS))
        if context.warm is not None and not lanes:
            # No second lane to run the heuristic beside the backend: it runs first.
            searched = context.warm(budget.part(share=context.warm_share))
            fallback = kept_plan(instance, searched, fallback, "a better start")
        start = (model.encode(symmetric(instance, placements(fallback)))
                 if fallback.status.has_plan else None)
        if lanes:
            found = self._lanes(instance, model, options.backend, context, start)
        else:
            solution = closed(model.program, backend.solve_program(
                model.program, context.limits(),
                start if backend.capabilities.warm_start else None), options.backend, context)
            found = self._result(instance, model, solution.status, solution.values,
                                 solution.bound, solution.solver, options.backend, context)
        return kept_plan(instance, found, fallback, "no better plan within the time limit")

    @staticmethod
    def _start_plan(instance: Instance, context: Context) -> Result:
        """The plan to fall back on: the context's (a schedule file's) when given, else greedy's.

        A given plan is verified; it takes the combinatorial bound and the status it
        allows, so that it claims no more than it proves.
        """
        if context.start is None:
            return best_fit_decreasing(instance, budget=context.budget)
        bound = objective_bound(instance)
        return static_result(instance, placements(context.start), Status.FEASIBLE,
                             context.start.objective, bound, context.start.solver,
                             "left out by the plan started from")

    def _lanes(
        self,
        instance: Instance,
        model: AssignmentModel,
        name: str,
        context: Context,
        start: FloatArray | None,
    ) -> Result:
        """The peer's branch-and-cut beside the LP-guided lane (see :meth:`solve`).

        Branch-and-cut proving optimality or infeasibility settles the portfolio and stops
        the guided lane; ended otherwise (its time limit, or not started on a model too
        large for the time left), it leaves the rest of the time to the guided lane.
        """
        program = model.program
        branch_and_cut_backend, lane_backend = get_backend(name), get_backend(name)
        with Portfolio(program.sense) as portfolio:
            portfolio.on_settle(lane_backend.cancel)
            full = portfolio.start(
                "branch-and-cut",
                lambda: branch_and_cut_backend.solve_program(program, context.limits()),
                settles=lambda solution: solution.status in (Status.OPTIMAL,
                                                              Status.INFEASIBLE))
            guided = portfolio.start(
                "guided-lane",
                lambda: guided_search(instance, model, lane_backend, context, start,
                                     lambda: not portfolio.settled),
                low_priority=True)
            # The backend returns within the budget (a solve still busy then is left to
            # end on its own, and answers without a plan), and so does the guided lane.
            portfolio.join()
        outcome, found = full.answer(), guided.answer()
        incumbent, bound, solver = found
        solver = f"{outcome.solver} (branch-and-cut || {solver})"
        outcome = closed(program, outcome, name, context)
        if outcome.status in (Status.OPTIMAL, Status.INFEASIBLE):
            return self._result(instance, model, outcome.status, outcome.values,
                                outcome.bound, solver, name, context)
        bound = tightest(instance, bound, outcome.bound)
        if outcome.values is not None:
            incumbent = best_of(program, np.where(program.integer, np.round(outcome.values),
                                                   outcome.values), incumbent)
        status = Status.FEASIBLE if incumbent is not None else Status.NO_SOLUTION
        return self._result(instance, model, status, incumbent, bound, solver, name, context)

    @staticmethod
    def _result(
        instance: Instance,
        model: AssignmentModel,
        status: Status,
        values: FloatArray | None,
        bound: float | None,
        solver: str,
        name: str,
        context: Context,
    ) -> Result:
        """The result of the model's column values, or of the backend's proof.

        An infeasible model is explained by a fresh backend ``name`` within the budget.
        """
        if status is Status.INFEASIBLE:
            return proven_infeasible(instance, model.program, get_backend(name),
                                     context.limits(), solver)
        bound = tightest(instance, bound, objective_bound(instance))
        bound = None if bound is None else model.program.round_bound(bound)
        if values is None:
            return static_result(instance, {}, Status.NO_SOLUTION, None, bound, solver,
                                 "no plan found within the time limit")
        # Solvers return integers up to their feasibility tolerance; snap them.
        values = np.where(model.program.integer, np.round(values), values)
        value = float(model.program.cost @ values)
        if status is not Status.OPTIMAL:
            status = Status.FEASIBLE
        return static_result(instance, model.decode(values), status, value, bound, solver,
                             "left out: placing it does not improve the plan within capacity")

