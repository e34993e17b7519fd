"""Static plans (each job's gang on GPUs of one type, all at time 0), as results.

``milp``, ``lp``, ``textbook`` and the plan encodings of ``sa`` and ``ga`` all end with a
placement (job index to GPU indices) and turn it into a :class:`~gpuplan.core.result.Result`
here: its objective as the verifier computes it, the status its bound allows, and, for a
program a backend proved infeasible, the reason every job is unplaced.
"""

from __future__ import annotations

import numpy as np

from gpuplan.backends.base import Backend
from gpuplan.core.budget import Limits
from gpuplan.core.instance import Instance, IntArray
from gpuplan.core.objectives import ObjectiveKind
from gpuplan.core.result import Result, infeasible, plan_status
from gpuplan.core.status import Status
from gpuplan.models.assignment import job_value
from gpuplan.models.bounds import infeasibility_reasons
from gpuplan.models.linear import LinearProgram

#: What a proof of infeasibility says when the backend cannot name the conflict.
UNEXPLAINED = "the solver proved that no plan satisfies every constraint"


def settled_status(status: Status, objective: float | None, bound: float | None) -> Status:
    """The status a plan may claim: ``optimal`` exactly when its bound proves it.

    That is when the relative gap between the plan and the reported bound is at most
    :data:`~gpuplan.core.status.OPTIMAL_GAP`, as the verifier requires, whatever the solver
    said: a solver measures its gap its own way (HiGHS and CP-SAT divide by at least 1,
    and stop at the gap they are given), and the reported bound may not be the solver's.
    Statuses without a plan stand as they are.
    """
    return plan_status(objective, bound) if status.has_plan else status


def tightest(instance: Instance, *bounds: float | None) -> float | None:
    """The tightest of several valid bounds on the instance's optimum; None if none is known."""
    known = [b for b in bounds if b is not None]
    if not known:
        return None
    return max(known) if instance.objective.sense == "min" else min(known)


def placements(result: Result) -> dict[int, IntArray]:
    """Job index to GPU indices of a static result."""
    return {int(j): g for j, g in zip(result.job, result.gpus, strict=True)}


def static_result(
    instance: Instance,
    placed: dict[int, IntArray],
    status: Status,
    objective: float | None,
    bound: float | None,
    solver: str,
    missing_reason: str,
) -> Result:
    """A result for a static plan: every placed job starts at 0 and runs its duration.

    Parameters
    ----------
    instance
        A static-objective instance.
    placed
        Job index to GPU indices.
    status
        What the method found; settled against ``bound`` (:func:`settled_status`).
    objective, bound
        The plan's value and a proven bound, or None.
    solver
        What produced the plan.
    missing_reason
        Why a job that ``placed`` leaves out is unplaced.
    """
    jobs = np.array(sorted(placed), dtype=np.int64)
    types = np.array([instance.gpu_type[placed[j][0]] for j in jobs], dtype=np.int64)
    return Result(
        status=settled_status(status, objective, bound),
        objective=objective,
        bound=bound,
        solver=solver,
        job=jobs,
        gpu_type=types,
        gpus=tuple(placed[j] for j in jobs),
        start=np.zeros(jobs.size),
        end=(instance.duration[jobs, types] * instance.spread_factors(
            jobs, [placed[j] for j in jobs.tolist()]) if jobs.size else np.zeros(0)),
        unplaced={j: missing_reason for j in range(instance.n_jobs) if j not in placed},
    )


def static_value(instance: Instance, placed: dict[int, IntArray]) -> float:
    """The objective of a static plan, as the verifier computes it."""
    gpu_type = instance.gpu_type
    match instance.objective:
        case ObjectiveKind.MIN_GPUS | ObjectiveKind.MIN_GPU_COST:
            used = np.zeros(instance.n_gpus, dtype=bool)
            for gpus in placed.values():
                used[gpus] = True
            if instance.objective is ObjectiveKind.MIN_GPUS:
                return float(used.sum())
            return float(instance.price_per_hour[gpu_type[used]].sum())
        case ObjectiveKind.MIN_MAX_LOAD:
            load = np.zeros((instance.n_gpus, len(instance.packing_resources)))
            for j, gpus in placed.items():
                load[gpus] += instance.packing_demand[j, gpu_type[gpus[0]]]
            return float((load / instance.packing_capacity[gpu_type]).max(initial=0.0))
    values = job_value(instance)
    return float(sum(values[j, gpu_type[g[0]]] for j, g in placed.items()))


def proven_infeasible(instance: Instance, program: LinearProgram, backend: Backend,
                      limits: Limits, solver: str) -> Result:
    """The result of a program the backend proved infeasible, every job saying why.

    The combinatorial reasons (:func:`~gpuplan.models.bounds.infeasibility_reasons`) name
    the jobs when they apply; otherwise every job carries the rows of an irreducible
    infeasible subsystem when the backend can name one (capability ``explain``), within
    ``limits``, or :data:`UNEXPLAINED`.
    """
    reasons = infeasibility_reasons(instance)
    if not reasons:
        why = (backend.explain_infeasible(program, limits)
               if backend.capabilities.explain else UNEXPLAINED)
        reasons = dict.fromkeys(range(instance.n_jobs), why)
    return infeasible(instance, reasons, solver)
