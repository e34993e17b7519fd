"""The LP-guided search over the assignment MILP, beside the peer's branch-and-cut.

``milp`` runs :func:`guided_search` on a lane of its own (:mod:`gpuplan.parts.portfolio`)
while HiGHS's branch-and-cut runs the whole model untouched: the LP relaxation, the MIP
over the LP's split jobs, the GAP tabu search where that finds nothing
(:mod:`gpuplan.parts.gap_tabu`), a reduced-cost core MIP, then large-neighbourhood search
(:mod:`gpuplan.parts.lns`). :func:`closed` solves a model again with no gap where the gap
left a unit of an integral objective unproven, and :func:`symmetric` relabels a plan made
elsewhere to meet the model's symmetry rows, so that it is a feasible start.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable

import numpy as np

from gpuplan.backends import get_backend
from gpuplan.backends.base import Backend, Capabilities, ProgramSolution
from gpuplan.core.budget import Limits
from gpuplan.core.instance import BoolArray, FloatArray, Instance, IntArray
from gpuplan.core.settings import Context
from gpuplan.core.status import Status
from gpuplan.models.assignment import AssignmentModel
from gpuplan.models.linear import LinearProgram
from gpuplan.parts import gap_tabu
from gpuplan.parts.lns import improve, subprogram
from gpuplan.parts.static_plans import placements, tightest

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
        load[gpus] += instance.packing_demand[j, gpu_type[gpus], 0]
        used[gpus] = True
    group = instance.gpu_node * instance.n_types + gpu_type
    run = np.cumsum(np.r_[True, group[1:] != group[:-1]])  # runs of consecutive twins
    order = np.lexsort((-load, ~used, run))  # within each run: used, then heavier, first
    label = np.empty(n_gpus, dtype=np.int64)
    label[order] = np.arange(n_gpus)
    return {j: np.sort(label[gpus]) for j, gpus in placed.items()}


#: Seconds a time limit must have left for :func:`closed` to solve the model again.
CLOSE_MIN_S = 0.5


def best_of(program: LinearProgram, a: FloatArray | None,
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


def guided_search(
    instance: Instance,
    model: AssignmentModel,
    backend: Backend,
    context: Context,
    start: FloatArray | None,
    going: Callable[[], bool],
) -> tuple[FloatArray | None, float | None, str]:
    """The LP-guided search over the assignment MILP: its best plan, its bound, what it did.

    From ``start`` (column values, or None) and the context's warm start if any: the LP
    relaxation (a bound, and reduced costs); the MIP over the jobs the LP splits with the
    others kept where the LP puts them (where that finds no plan, on instances of single-GPU
    jobs with an additive objective, the GAP tabu search for :data:`TABU_SHARE` of the
    time left); the core MIP over each job's few best columns by reduced cost for
    :data:`CORE_SHARE` of the time left; then LNS over the whole model from the best plan.
    The core's own bound counts only when reduced-cost fixing proves that the core holds
    every optimum. It works while ``going()`` holds, on one thread, with ``backend``
    (which a portfolio cancels once another lane proves optimality).
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
            incumbent = best_of(program, model.encode(
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
            incumbent = best_of(program, fixed, incumbent)
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
            incumbent = best_of(program, values, incumbent)
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
