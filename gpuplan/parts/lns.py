"""Large-neighbourhood search for the assignment MILP, on any MILP backend.

Branch-and-cut alone closes the bound but finds good plans slowly on tight instances (GAP
type D). Each step here frees the jobs on a few GPUs (plus the unplaced jobs that could use
them), fixes every other column at the incumbent, and solves that small sub-MIP briefly
from the incumbent. The incumbent stays feasible for every sub-MIP, so the plan never gets
worse; the bound stays the one the full solve proved.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable

import numpy as np

from gpuplan.backends.base import Backend
from gpuplan.core.budget import Limits
from gpuplan.core.instance import BoolArray, FloatArray, IntArray
from gpuplan.core.status import Status
from gpuplan.models.assignment import AssignmentModel
from gpuplan.models.linear import LinearProgram, take_names

logger = logging.getLogger(__name__)

#: Seconds per sub-MIP at most; short, so that many neighbourhoods are tried.
STEP_LIMIT_S = 0.3
#: A sub-MIP solved to optimality faster than this makes the neighbourhood grow.
QUICK_STEP_S = 0.05
#: A related neighbourhood grows by one of this many cheapest alternative columns.
RELATED_POOL = 8
#: Seconds that must be left for another step.
LAST_STEP_S = 0.02


def subprogram(
    program: LinearProgram, free: BoolArray, incumbent: FloatArray
) -> tuple[LinearProgram, IntArray]:
    """The program over the ``free`` columns with every other column fixed at the incumbent.

    Rows that touch no free column hold already (the incumbent is feasible) and are left
    out; the others keep their free entries, with bounds shifted by the fixed part.

    Returns
    -------
    tuple
        The sub-program and the indices of its columns in the full program.
    """
    columns = np.flatnonzero(free)
    fixed = np.where(free, 0.0, incumbent)
    activity = program.activity(fixed)
    entry_row = np.repeat(np.arange(program.n_rows), np.diff(program.row_start))
    keep = free[program.col_index]
    touched = np.unique(entry_row[keep])
    new_col = np.full(program.n_cols, -1)
    new_col[columns] = np.arange(columns.size)
    new_row = np.full(program.n_rows, -1)
    new_row[touched] = np.arange(touched.size)
    rows = new_row[entry_row[keep]]
    order = np.argsort(rows, kind="stable")
    start = np.zeros(touched.size + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=touched.size), out=start[1:])
    sub = LinearProgram(
        sense=program.sense,
        cost=program.cost[columns],
        col_lower=program.col_lower[columns],
        col_upper=program.col_upper[columns],
        integer=program.integer[columns],
        row_lower=program.row_lower[touched] - activity[touched],
        row_upper=program.row_upper[touched] - activity[touched],
        row_start=start,
        col_index=new_col[program.col_index[keep]][order],
        value=program.value[keep][order],
        col_names=take_names(program.col_names, columns),
        row_names=take_names(program.row_names, touched),
    )
    return sub, columns


def _neighbourhood(
    model: AssignmentModel, best: FloatArray, freed_gpus: BoolArray
) -> BoolArray:
    """Columns to free for a set of freed GPUs.

    The jobs on the freed GPUs (and unplaced ones that could go there) may move among the
    freed GPUs and the GPUs they are on now, with their gang and use columns.
    """
    instance, program = model.instance, model.program
    nx, n_gpus = model.x_job.size, instance.n_gpus
    x_job, x_gpu = model.x_job, model.x_gpu
    chosen = best[:nx] > 0.5
    jobs = np.zeros(instance.n_jobs, dtype=bool)
    jobs[x_job[chosen & freed_gpus[x_gpu]]] = True
    if instance.objective.allows_unplaced:
        placed = np.zeros(instance.n_jobs, dtype=bool)
        placed[x_job[chosen]] = True
        could = np.zeros(instance.n_jobs, dtype=bool)
        could[x_job[freed_gpus[x_gpu]]] = True
        jobs |= could & ~placed
    reach = freed_gpus.copy()
    reach[x_gpu[chosen & jobs[x_job]]] = True
    free = np.zeros(program.n_cols, dtype=bool)
    free[:nx] = jobs[x_job] & reach[x_gpu]
    if model.y_job.size:
        free[model.y_start : model.y_start + model.y_job.size] = jobs[model.y_job]
    if model.u_start >= 0:
        free[model.u_start : model.u_start + n_gpus] = reach
    if model.z_col >= 0:
        free[model.z_col] = True
    return free


def _related_gpus(
    model: AssignmentModel, best: FloatArray, size: int, rng: np.random.Generator
) -> BoolArray:
    """A seed GPU plus the GPUs its jobs would move to at the least extra cost.

    Growing the set one GPU at a time, the next GPU is drawn from the few cheapest
    alternative columns of the jobs already on the set: freeing GPUs that trade jobs with
    each other is what lets a sub-MIP find an exchange that no random set would contain.
    """
    n_gpus = model.instance.n_gpus
    nx, x_job, x_gpu = model.x_job.size, model.x_job, model.x_gpu
    sign = -1.0 if model.program.sense == "max" else 1.0
    cost = sign * model.program.cost[:nx]
    chosen = best[:nx] > 0.5
    current = np.full(model.instance.n_jobs, np.inf)
    np.minimum.at(current, x_job[chosen], cost[chosen])
    regret = cost - np.where(np.isfinite(current[x_job]), current[x_job], 0.0)
    freed = np.zeros(n_gpus, dtype=bool)
    freed[rng.integers(n_gpus)] = True
    while freed.sum() < size:
        on_set = np.zeros(model.instance.n_jobs, dtype=bool)
        on_set[x_job[chosen & freed[x_gpu]]] = True
        candidates = np.flatnonzero(on_set[x_job] & ~freed[x_gpu])
        if candidates.size == 0:
            freed[rng.choice(np.flatnonzero(~freed))] = True
            continue
        cheapest = candidates[np.argsort(regret[candidates], kind="stable")[:RELATED_POOL]]
        freed[x_gpu[rng.choice(cheapest)]] = True
    return freed


def improve(
    model: AssignmentModel,
    incumbent: FloatArray,
    backend: Backend,
    limits: Limits,
    bound: float | None = None,
    on_improvement: Callable[[FloatArray, float], None] | None = None,
) -> tuple[FloatArray, int, int]:
    """Improve a feasible column vector by LNS until the budget of ``limits`` is spent.

    Each step frees the jobs of a few random GPUs, builds the sub-MIP over them
    (:func:`subprogram`) and solves it on the backend from the incumbent, for at most
    :data:`STEP_LIMIT_S`. The neighbourhood grows while sub-MIPs solve to optimality
    quickly and shrinks when they time out.

    Parameters
    ----------
    model
        The assignment model the incumbent belongs to.
    incumbent
        A feasible, integral column vector.
    backend
        Solves the sub-MIPs (integer columns; a warm start when it has one).
    limits
        The search's budget (its stop is read before each step), the sub-MIPs' threads,
        the seed of the neighbourhoods and the gap tolerance.
    bound
        A proven bound: the search also stops once the incumbent is within the gap
        tolerance of it.
    on_improvement
        Called with each better vector and its objective value.

    Returns
    -------
    tuple
        The best vector, the number of sub-MIPs solved, and how many improved it.
    """
    program, n_gpus = model.program, model.instance.n_gpus
    budget = limits.budget
    rng = np.random.default_rng(limits.seed)
    sign = -1.0 if program.sense == "max" else 1.0
    best = incumbent.copy()
    best_value = float(program.cost @ best)
    size = min(n_gpus, 3)
    steps = improvements = 0
    while n_gpus > 1 and budget.left() > LAST_STEP_S and not budget.stop():
        if bound is not None and abs(best_value - bound) <= limits.gap * max(
            abs(best_value), 1e-9
        ):
            break
        if steps % 2:
            freed = _related_gpus(model, best, size, rng)
        else:
            freed = np.zeros(n_gpus, dtype=bool)
            freed[rng.choice(n_gpus, size=size, replace=False)] = True
        sub, columns = subprogram(program, _neighbourhood(model, best, freed), best)
        step = dataclasses.replace(limits, budget=budget.part(STEP_LIMIT_S),
                                   seed=int(rng.integers(1 << 30)))
        solution = backend.solve_program(sub, step, best[columns])
        quick = step.budget.elapsed() < QUICK_STEP_S
        steps += 1
        if solution.values is not None:
            candidate = best.copy()
            candidate[columns] = np.where(sub.integer, np.round(solution.values),
                                          solution.values)
            value = float(program.cost @ candidate)
            if sign * value < sign * best_value - 1e-9:
                best, best_value = candidate, value
                improvements += 1
                if on_improvement is not None:
                    on_improvement(best, best_value)
        if solution.status is Status.OPTIMAL and quick:
            size = min(n_gpus, size + 1)
        elif solution.status is not Status.OPTIMAL:
            size = max(2, size - 1)
    logger.debug("LNS: %d steps, %d improvements, final size %d", steps, improvements, size)
    return best, steps, improvements
