"""Exact static assignment: ``--method milp``.

``milp`` hands :class:`~gpuplan.models.assignment.AssignmentModel` to the chosen backend,
started from best-fit decreasing (or from the plan it is given). On a backend that solves
relaxations and can be stopped from another thread (HiGHS), with a time limit and two
threads, it runs the peer's branch-and-cut on the whole model beside an LP-guided lane at
the lowest priority (:mod:`gpuplan.parts.portfolio`): the MIP over the LP's split jobs (or,
where it finds no plan and every job takes one GPU, the GAP tabu search with ejection
chains, :mod:`gpuplan.parts.gap_tabu`), a reduced-cost core MIP, then large-neighbourhood
search around the incumbent (:mod:`gpuplan.parts.lns`); see :meth:`MilpMethod.solve`.

The time limit covers everything: greedy's start, building the model, handing it to the
backend, the solve and reading the plan back. When the budget is spent before the backend
could run, the start plan is returned and the solver string says why.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from gpuplan.backends import backends_with, get_backend
from gpuplan.backends.base import Backend, Capabilities, ProgramSolution
from gpuplan.core.budget import Limits
from gpuplan.core.instance import BoolArray, FloatArray, Instance, IntArray
from gpuplan.core.objectives import STATIC_OBJECTIVES, ObjectiveKind
from gpuplan.core.result import Result, better, no_plan
from gpuplan.core.settings import Context, WarmStart
from gpuplan.core.status import Status
from gpuplan.methods.base import MethodDefaults, solver_option
from gpuplan.models.assignment import AssignmentModel
from gpuplan.models.bounds import objective_bound
from gpuplan.models.linear import LinearProgram, OutOfTimeError
from gpuplan.parts import gap_tabu
from gpuplan.parts.construct import best_fit_decreasing
from gpuplan.parts.lns import improve, subprogram
from gpuplan.parts.portfolio import Portfolio
from gpuplan.parts.static_plans import placements, proven_infeasible, static_result, tightest

logger = logging.getLogger(__name__)

#: Share of the time left after the LP that the MIP over the LP's split jobs may take.
LP_FIX_SHARE = 0.2
#: Share of the time left after the LP that the core MIP gets before LNS takes over.
CORE_SHARE = 0.5
#: Share of the time left after the LP-fixed MIP that the GAP tabu search takes, on
#: instances it applies to (:func:`gpuplan.parts.gap_tabu.applies`) when that MIP left
#: no plan. From the LP-fixed plan, the core MIP and LNS did better with its time: with a
#: whole core, the lane without the tabu search ended better on most of the Chu-Beasley
#: and Yagiura D and E problems (docs/benchmarks.md, "Generalized assignment (GAP): MILP,
#: LP and the peers").
TABU_SHARE = 0.2
#: Assignment columns per job in the core problem, by smallest reduced cost.
CORE_COLUMNS_PER_JOB = 3
#: What the LP-guided lane beside branch-and-cut needs of the backend: the LP relaxation
#: with reduced costs, and stopping a running solve from another thread (branch-and-cut
#: proving optimality stops the lane's sub-MIP).
LANE_NEEDS = Capabilities(relaxation=True, incumbents=True)


def kept_plan(instance: Instance, found: Result, start: Result, why: str) -> Result:
    """The better of the backend's result and the plan known before it, with the best bound.

    The start plan (greedy's, a warm start's) stands when the backend found no plan (its
    budget spent building, or no incumbent in time), a worse one, or claims infeasibility
    (a plan that fits disproves it); ``why`` then says, in the solver string, why the
    backend gave no better plan.
    """
    return better(instance, found, dataclasses.replace(
        start, solver=f"{found.solver}; {start.solver} plan kept ({why})"))


def symmetric(instance: Instance, placed: dict[int, IntArray]) -> dict[int, IntArray]:
    """The same plan with identical GPUs relabelled to meet the model's symmetry rows.

    The assignment model orders consecutive GPUs of one type on one node (used ones first,
    then by load of the first resource). A plan that another method made (greedy's, a
    warm start's) rarely follows that order, and a start that breaks it is no feasible
    start at all: CP-SAT drops it as a hint, HiGHS refuses it as an incumbent, and LNS
    finds no sub-MIP it satisfies. Swapping the loads of identical GPUs changes nothing
    else in the plan.
    """
    gpu_type, n_gpus = instance.gpu_type, instance.n_gpus
    load = np.zeros(n_gpus)
    used = np.zeros(n_gpus, dtype=bool)
    for j, gpus in placed.items():
        load[gpus] += instance.demand[j, gpu_type[gpus], 0]
        used[gpus] = True
    group = instance.gpu_node * instance.n_types + gpu_type
    run = np.cumsum(np.r_[True, group[1:] != group[:-1]])  # runs of consecutive twins
    order = np.lexsort((-load, ~used, run))  # within each run: used, then heavier, first
    label = np.empty(n_gpus, dtype=np.int64)
    label[order] = np.arange(n_gpus)
    return {j: np.sort(label[gpus]) for j, gpus in placed.items()}


#: Seconds a time limit must have left for :func:`closed` to solve the model again.
CLOSE_MIN_S = 0.5


def _best_of(program: LinearProgram, a: FloatArray | None,
             b: FloatArray | None) -> FloatArray | None:
    """The better of two column vectors of the program (either may be None)."""
    if a is None or b is None:
        return a if b is None else b
    sense = -1.0 if program.sense == "max" else 1.0
    return a if sense * (program.cost @ a) <= sense * (program.cost @ b) else b


def closed(program: LinearProgram, solved: ProgramSolution, name: str,
            context: Context) -> ProgramSolution:
    """Branch-and-cut again with no gap, from its plan, where the gap left a unit unproven.

    Backends stop at a relative gap of :data:`~gpuplan.core.status.OPTIMAL_GAP` (gpuplan's
    "optimal"). On integer costs that can leave a better plan unproven: HiGHS may stop a
    unit above a bound that plain CP-SAT reaches (Yagiura's e05100; docs/benchmarks.md,
    "Generalized assignment (GAP): MILP, LP and the peers"). When such a stop leaves time
    in the limit, the whole model is solved again with no gap, from the plan, for the time
    left; the better plan and the tighter bound are kept (the plan stays ``optimal``
    within the gap either way). The peer's run itself is untouched: run with no gap from
    the start, HiGHS searched differently and ended worse than the peer on a large
    problem.
    """
    costs = program.cost
    if (solved.status is not Status.OPTIMAL or solved.values is None
            or solved.objective is None or solved.bound is None
            or not context.budget.limited or context.budget.left() < CLOSE_MIN_S
            or not program.integer.all() or not bool(np.all(costs == np.round(costs)))):
        return solved
    sense = -1.0 if program.sense == "max" else 1.0
    if sense * solved.objective - np.ceil(sense * solved.bound - 1e-6) < 1.0 - 1e-6:
        return solved
    again = get_backend(name).solve_program(
        program, dataclasses.replace(context.limits(), gap=0.0), start=solved.values)
    logger.debug("milp: no-gap re-solve from %.10g: %s, objective %s, bound %s",
                 solved.objective, again.status.value, again.objective, again.bound)
    bounds = [b for b in (solved.bound, again.bound) if b is not None]
    tighter = dataclasses.replace(solved, bound=sense * max(sense * b for b in bounds))
    if (again.values is None or again.objective is None
            or sense * again.objective >= sense * solved.objective):
        return tighter
    return dataclasses.replace(tighter, values=np.round(again.values), objective=again.objective)


def reduced_cost_core(
    model: AssignmentModel, reduced_cost: FloatArray, relaxed: FloatArray, per_job: int
) -> BoolArray:
    """Columns of the core problem, by LP reduced cost.

    Each job keeps its ``per_job`` assignment columns of smallest reduced cost; every
    column the LP uses and all non-assignment columns are kept too.
    """
    nx = model.x_job.size
    sign = -1.0 if model.program.sense == "max" else 1.0
    order = np.lexsort((sign * reduced_cost[:nx], model.x_job))
    jobs = model.x_job[order]
    starts = np.flatnonzero(np.r_[True, jobs[1:] != jobs[:-1]])
    rank = np.arange(nx) - np.repeat(starts, np.diff(np.r_[starts, nx]))
    core = np.ones(model.program.n_cols, dtype=bool)
    core[:nx] = False
    core[order[rank < per_job]] = True
    core[:nx] |= relaxed[:nx] > 1e-6
    return core


def _lp_fixed_plan(
    model: AssignmentModel, relaxed: FloatArray, backend: Backend, limits: Limits
) -> FloatArray | None:
    """Keep every job the LP places whole where it is; solve the MIP over the rest.

    A vertex of the LP relaxation splits at most one job per capacity row, so the
    residual MIP over the split jobs is small, and on tight instances (GAP type E) its
    plan stays close to the LP's value where a greedy start does not.

    Returns
    -------
    numpy.ndarray or None
        A feasible column vector, or None when the residual MIP has no plan in time.
    """
    program, nx = model.program, model.x_job.size
    whole = relaxed[:nx] > 1.0 - 1e-6
    kept = np.zeros(model.instance.n_jobs, dtype=bool)
    kept[model.x_job[whole]] = True
    base = np.zeros(program.n_cols)
    base[:nx] = whole
    free = np.ones(program.n_cols, dtype=bool)
    free[:nx] = ~kept[model.x_job]
    sub, columns = subprogram(program, free, base)
    solution = backend.solve_program(sub, limits, None)
    if solution.values is None:
        return None
    base[columns] = np.where(sub.integer, np.round(solution.values), solution.values)
    return base


def lane_tabu_search(model: AssignmentModel, incumbent: FloatArray | None,
                     limits: Limits) -> tuple[FloatArray | None, str]:
    """Improve the incumbent by the GAP tabu search within ``limits``' budget.

    The lane runs it when the LP-fixed MIP found no plan in time (Yagiura's c801600 on the
    loaded machine): then it starts from each job's cheapest GPU, over capacity, and the
    penalty leads it to a plan that fits.

    Returns
    -------
    tuple
        The better of the incumbent and the search's best (None if neither has a plan),
        and what the search did.
    """
    search = gap_tabu.GapSearch(model.instance)
    program = model.program
    sense = -1.0 if program.sense == "max" else 1.0
    given = sense * np.inf if incumbent is None else float(program.cost @ incumbent)
    improvements = 0

    def count(genome: IntArray, value: float) -> None:
        nonlocal improvements
        improvements += sense * value < sense * given - 1e-9

    start = search.agents({} if incumbent is None else model.decode(incumbent))
    found = search.run(start, limits.budget,
                       np.random.default_rng(limits.seed), on_improvement=count)
    note = (f" + tabu search ({found.iterations} iterations, {found.relinks} relinks, "
            f"{improvements} improvements)")
    # The search's best plan beats the incumbent exactly when it improved on it.
    if improvements and found.plan is not None:
        return model.encode(search.placed(found.plan)), note
    return incumbent, note


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

        The LP-guided lane's needs (:data:`LANE_NEEDS`) are not asked for: on a backend
        without them the backend solves the whole model alone.
        """
        return Capabilities(integer=True,
                            continuous=instance.objective is ObjectiveKind.MIN_MAX_LOAD)

    def solve(self, instance: Instance, options: MilpOptions, context: Context) -> Result:
        """Build the model, start it from the start plan, and solve it.

        The start plan is the context's (a schedule file's) or greedy's; a heuristic warm
        start (``context.warm``) improves on it, run first on ``context.warm_share`` of the
        budget, or beside branch-and-cut in the lanes below. The budget covers the start,
        the build and the solve. When it is spent before the backend can run (or the
        backend finds no plan in time, or a worse one), the start plan is returned, with
        the backend's bound where it has one.

        Without a time limit, with one thread, or on a backend without :data:`LANE_NEEDS`
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
                lambda: self._guided(instance, model, lane_backend, context, start,
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
            incumbent = _best_of(program, np.where(program.integer, np.round(outcome.values),
                                                   outcome.values), incumbent)
        status = Status.FEASIBLE if incumbent is not None else Status.NO_SOLUTION
        return self._result(instance, model, status, incumbent, bound, solver, name, context)

    @staticmethod
    def _guided(
        instance: Instance,
        model: AssignmentModel,
        backend: Backend,
        context: Context,
        start: FloatArray | None,
        going: Callable[[], bool],
    ) -> tuple[FloatArray | None, float | None, str]:
        """The LP-guided lane (see :meth:`solve`): its best plan, its bound, what it did.

        It works while ``going()`` holds, on one thread, with ``backend`` (which the
        other lane cancels once it proves optimality).
        """
        budget = context.budget
        limits = dataclasses.replace(context.limits(), threads=1)
        program = model.program
        sense = -1.0 if program.sense == "max" else 1.0
        incumbent = start
        solver = backend.name
        if context.warm is not None and going():
            found = context.warm(budget.part(share=context.warm_share, stop=lambda: not going()))
            if found.status.has_plan:
                incumbent = _best_of(program, model.encode(
                    symmetric(instance, placements(found))), incumbent)
                solver += f" + {found.solver.split(' ')[0]} start"
        lp_value = relaxed = reduced = None
        if going():
            relaxation = backend.relax(program, limits)
            if relaxation.status is Status.OPTIMAL:
                lp_value, relaxed, reduced = (relaxation.objective, relaxation.values,
                                              relaxation.reduced_costs)
        bound = lp_value
        if relaxed is not None and going():
            fixed = _lp_fixed_plan(model, relaxed, backend, dataclasses.replace(
                limits, budget=budget.part(LP_FIX_SHARE * budget.left())))
            if fixed is not None:
                incumbent = _best_of(program, fixed, incumbent)
                solver += " + LP-fixed MIP"
        if incumbent is None and going() and gap_tabu.applies(instance):
            incumbent, note = lane_tabu_search(model, incumbent, dataclasses.replace(
                limits, budget=budget.part(TABU_SHARE * budget.left(),
                                           stop=lambda: not going())))
            solver += note
        if relaxed is not None and reduced is not None and going():
            core = reduced_cost_core(model, reduced, relaxed, CORE_COLUMNS_PER_JOB)
            if incumbent is not None:
                core |= incumbent > 0.5
            sub, columns = subprogram(program, core, np.zeros(program.n_cols))
            solution = backend.solve_program(
                sub, dataclasses.replace(limits, budget=budget.part(CORE_SHARE * budget.left())),
                None if incumbent is None else incumbent[columns],
            )
            solver += f" + core MIP ({sub.n_cols} of {program.n_cols} columns)"
            if solution.values is not None:
                values = np.zeros(program.n_cols)
                values[columns] = np.where(sub.integer, np.round(solution.values),
                                           solution.values)
                incumbent = _best_of(program, values, incumbent)
                assert incumbent is not None and lp_value is not None
                # Reduced-cost fixing: a column outside the core would cost more than the
                # gap, so the core's bound then holds for the whole model.
                gap = sense * (float(program.cost @ incumbent) - lp_value)
                if solution.bound is not None and np.all(sense * reduced[~core] > gap + 1e-9):
                    bound = tightest(instance, bound, solution.bound)
        bound = None if bound is None else program.round_bound(bound)
        if incumbent is not None and going():
            incumbent, steps, improved = improve(
                model, incumbent, get_backend(backend.name),
                dataclasses.replace(limits, budget=budget.part(stop=lambda: not going())),
                bound)
            solver += f" + LNS ({steps} steps, {improved} improvements)"
        return incumbent, bound, solver

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

