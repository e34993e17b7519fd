"""Makespan of batches with nothing to sequence: the unrelated parallel machine problem.

``--method cp`` hands a sequencing-free batch
(:func:`~gpuplan.models.machine_load.sequencing_free`: single-GPU jobs, one release, no
dependencies, deadlines or GPU sharing) here, with the start plan and the bound it
already has. The makespan is then the release plus the largest GPU load, so the plan is an
assignment: CP-SAT solves the load model
(:class:`~gpuplan.models.machine_load.MachineLoadModel`) from the start plan's hint, and
the better of its plan and the start's is returned with the best bound.
"""

from __future__ import annotations

import logging

from gpuplan.backends.cpsat import import_cp_model, search_solver, status_table
from gpuplan.instance import Instance
from gpuplan.methods.base import Context, better, plan_status, time_objective, with_bound
from gpuplan.models.machine_load import MachineLoadModel
from gpuplan.models.scheduling import TickScale
from gpuplan.solution import Result
from gpuplan.status import Status

logger = logging.getLogger(__name__)

#: Seconds per (job, GPU) literal to build, hint, load into CP-SAT and free the load model
#: (6 µs measured on a 2-core machine), the share of the time left that may take, and the
#: seconds per literal CP-SAT spends outside its own limit.
LOAD_UNIT_S = 10e-6
MODEL_SHARE = 0.5
AFTER_UNIT_S = 8e-6
#: Seconds per literal of CP-SAT's presolve (20 µs measured); presolve runs only when it
#: is expected to take at most :data:`PRESOLVE_SHARE` of the search.
PRESOLVE_UNIT_S = 25e-6
PRESOLVE_SHARE = 0.35
#: Below this many seconds for CP-SAT, it is not run at all.
MIN_SEARCH_S = 0.05


def plan_unrelated(instance: Instance, context: Context, start: Result, origin: str,
                   hint: Result | None, bound: float, scale: TickScale, name: str) -> Result:
    """The best plan of a sequencing-free batch within the context's budget.

    Parameters
    ----------
    instance
        A batch for which :func:`~gpuplan.models.machine_load.sequencing_free` holds.
    context
        Budget, threads (CP-SAT workers), seed and gap.
    start
        The plan to fall back on (list scheduling's or the warm start's).
    origin
        What messages call ``start``.
    hint
        The plan to hint to CP-SAT (every job in one piece), or None.
    bound
        The valid bound known before the search.
    scale
        Ticks of the CP-SAT model.
    name
        The solver string of the result.
    """
    budget = context.budget
    units = int(instance.eligible[:, instance.gpu_type].sum())
    if LOAD_UNIT_S * units > MODEL_SHARE * budget.left():
        return with_bound(instance, start, bound, name, f"{origin}: the load model does "
                               "not fit the time limit (a longer --time-limit lets CP-SAT "
                               "search)")
    model = MachineLoadModel.build(instance, scale)
    if hint is not None:
        model.hint(hint.job, hint.gpus, hint.start)
    search = budget.left() - AFTER_UNIT_S * units
    if search < MIN_SEARCH_S:
        return with_bound(instance, start, bound, name, f"{origin}: no time was left "
                               "for CP-SAT to search")
    cp_model = import_cp_model()
    solver = search_solver(context.limits(budget.part(search)),
                           PRESOLVE_UNIT_S * units <= PRESOLVE_SHARE * search)
    code = solver.solve(model.model)
    status = status_table(cp_model).get(code, Status.NO_SOLUTION)
    # The model runs every job in one piece: its bound holds for preemptible jobs only
    # when none is preemptible.
    certain = model.exact and not instance.preemptible.any()
    if certain and code in (cp_model.OPTIMAL, cp_model.FEASIBLE, cp_model.UNKNOWN):
        bound = max(bound, solver.best_objective_bound * model.objective_scale
                    - scale.slack_s)
    if not status.has_plan:
        return with_bound(instance, start, bound, name, f"{origin}: CP-SAT found no "
                               "plan in time")
    job, types, gpus, start_s, end_s = model.decode(solver)
    objective = time_objective(instance, job, types, end_s)
    found = Result(status=plan_status(objective, bound), objective=objective, bound=bound,
                   solver=name, job=job, gpu_type=types, gpus=gpus, start=start_s, end=end_s)
    best = better(instance, found, start)
    logger.info("cp: R||Cmax load model, CP-SAT %s after %.2f s", solver.status_name(code),
                budget.elapsed())
    # CP-SAT's plan stands unless the start's is strictly better (a tie keeps CP-SAT's).
    if best.objective != found.objective:
        return with_bound(instance, start, bound, name, f"{origin} kept")
    return found
