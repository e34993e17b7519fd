"""The one path from an instance to a verified schedule, shared by every method.

:func:`plan` runs a solver, translates its raw :class:`~gpuplan.solvers.base.Result` into a
:class:`~gpuplan.schedule.Schedule` and verifies it. A schedule the verifier rejects is a bug
in gpuplan: it raises :class:`~gpuplan.errors.VerificationError` instead of being returned.
"""

from __future__ import annotations

import dataclasses
import logging
import time

import numpy as np

from gpuplan._version import __version__
from gpuplan.errors import InputError, VerificationError
from gpuplan.instance import Instance, IntArray
from gpuplan.models.bounds import infeasibility_reasons
from gpuplan.schedule import Placement, Schedule, Unplaced, ViolationKind
from gpuplan.solvers import SOLVERS, Result, SolveOptions, get_solver
from gpuplan.status import Status, relative_gap
from gpuplan.verify import verify_schedule

logger = logging.getLogger(__name__)


def _infeasible(instance: Instance, reasons: dict[int, str]) -> Result:
    """A result that places nothing and says, per job, why the instance is infeasible."""
    unplaced = {
        j: reasons.get(j, "not planned: the instance is infeasible (see the jobs named)")
        for j in range(instance.n_jobs)
    }
    return Result(
        status=Status.INFEASIBLE, objective=None, bound=None, solver="gpuplan-presolve",
        unplaced=unplaced,
    )


def to_schedule(
    instance: Instance, result: Result, method: str, wall_time_s: float, seed: int
) -> Schedule:
    """Translate a raw result to an (unverified) schedule in ids, ordered by start time.

    Parameters
    ----------
    instance
        The instance the result is for.
    result
        The solver's raw result.
    method
        The registry name of the method.
    wall_time_s
        Seconds the solve took.
    seed
        The seed the method was given.
    """
    order = np.lexsort((result.job, result.start))
    placements = [
        Placement(
            job=instance.job_ids[result.job[i]],
            node=instance.node_ids[instance.gpu_node[result.gpus[i][0]]],
            gpu_type=instance.type_ids[result.gpu_type[i]],
            gpu_ids=[instance.gpu_ids[g] for g in result.gpus[i]],
            start_s=float(result.start[i]),
            end_s=float(result.end[i]),
        )
        for i in order
    ]
    unplaced = [
        Unplaced(job=instance.job_ids[j], reason=reason)
        for j, reason in sorted(result.unplaced.items())
    ]
    return Schedule(
        instance=instance.name,
        objective_kind=instance.objective.value,
        status=result.status,
        objective=result.objective,
        bound=result.bound,
        gap=relative_gap(result.objective, result.bound),
        method=method,
        solver=result.solver,
        wall_time_s=round(wall_time_s, 6),
        seed=seed,
        gpuplan_version=__version__,
        placements=placements,
        unplaced=unplaced,
    )


def warm_start_from(instance: Instance, schedule: Schedule, source: str) -> dict[int, IntArray]:
    """Job index to GPU indices of a schedule's placements, for ``SolveOptions.warm_start``.

    Raises
    ------
    InputError
        If the schedule names a job or GPU the instance does not have.
    """
    placed: dict[int, IntArray] = {}
    for k, placement in enumerate(schedule.placements):
        if placement.job not in instance.job_index:
            raise InputError(source, f"placements[{k}].job", f"unknown job {placement.job!r}")
        unknown = [g for g in placement.gpu_ids if g not in instance.gpu_index]
        if unknown:
            raise InputError(source, f"placements[{k}].gpu_ids", f"unknown GPU {unknown[0]!r}")
        placed[instance.job_index[placement.job]] = np.array(
            [instance.gpu_index[g] for g in placement.gpu_ids], dtype=np.int64
        )
    return placed


#: Share of the time limit a ``warm`` heuristic gets before the main method.
WARM_SHARE = 0.3

#: Methods that accept a plan to start from, and the heuristics that can give one.
WARM_STARTED = ("milp", "cp")
WARM_HEURISTICS = ("greedy", "ga", "sa")


def _warm_started(instance: Instance, method: str, heuristic: str,
                  options: SolveOptions) -> SolveOptions:
    """The method's options with ``heuristic``'s plan to start from.

    For ``milp`` on HiGHS with a time limit, ``ga`` and ``sa`` run on the second lane,
    beside branch-and-cut, which keeps the whole time limit (``start_search``): taking
    time from branch-and-cut cost it more than the start gave on GAP problems that it
    closes near the limit. Otherwise the heuristic runs first, on :data:`WARM_SHARE` of
    the time limit, and the method gets the rest with its plan.
    """
    if (method == "milp" and heuristic != "greedy" and options.backend == "highs"
            and options.time_limit_s is not None):
        budget = options.time_limit_s * WARM_SHARE

        def search(given: SolveOptions) -> Result:
            limit = min(budget, budget if given.time_limit_s is None else given.time_limit_s)
            found = get_solver(heuristic).solve(instance, dataclasses.replace(
                given, time_limit_s=limit, start_search=None))
            logger.info("warm start from %s beside branch-and-cut: %s, objective %s",
                        heuristic, found.status.value, found.objective)
            return found
        return dataclasses.replace(options, start_search=search)
    began = time.perf_counter()
    share = (None if options.time_limit_s is None
             else dataclasses.replace(options, time_limit_s=options.time_limit_s * WARM_SHARE))
    start = get_solver(heuristic).solve(instance, share or options)
    logger.info("warm start from %s: %s, objective %s", heuristic, start.status.value,
                start.objective)
    left = (None if options.time_limit_s is None
            else max(0.01, options.time_limit_s - (time.perf_counter() - began)))
    if not start.status.has_plan:
        return dataclasses.replace(options, time_limit_s=left)
    placed = {int(j): g for j, g in zip(start.job, start.gpus, strict=True)}
    return dataclasses.replace(options, time_limit_s=left, warm_start=placed,
                               start_plan=start)


def plan(
    instance: Instance, method: str = "greedy", options: SolveOptions | None = None,
    warm: str | None = None,
) -> Schedule:
    """Plan an instance with a registered method and return the verified schedule.

    Instances that are infeasible for a reason gpuplan can name (a deadline no dependency
    chain can meet, more demand than the fleet holds) come back with status ``infeasible``
    and the reason per job, without running the method.

    Parameters
    ----------
    instance
        The validated problem.
    method
        A name from :data:`gpuplan.solvers.SOLVERS`.
    options
        Time limit, seed, threads and tolerance.
    warm
        A heuristic (``greedy``, ``ga`` or ``sa``) whose plan starts ``milp`` or ``cp``;
        it gets :data:`WARM_SHARE` of the time limit, beside ``milp``'s branch-and-cut or
        before the method (see :func:`_warm_started`).

    Raises
    ------
    KeyError
        If the method is unknown.
    VerificationError
        If the method's schedule breaks a constraint: always a bug, never repaired.
    """
    options = options or SolveOptions()
    solver = get_solver(method)
    if not solver.supports(instance):
        able = [name for name, s in SOLVERS.items() if s.supports(instance)]
        raise InputError(
            "--method", "", f"method {method!r} cannot plan objective "
            f"{instance.objective.value!r}; methods that can: {', '.join(able)}"
        )
    if warm is not None and (method not in WARM_STARTED or warm not in WARM_HEURISTICS):
        raise InputError("--warm-start", "", f"a heuristic warm start "
                         f"({', '.join(WARM_HEURISTICS)}) works with --method "
                         f"{' or '.join(WARM_STARTED)}")
    if options.then is not None and (method != "cp" or options.then.is_static
                                     or instance.objective.is_static):
        raise InputError(
            "--then", "", "a secondary objective needs --method cp and two time-based "
            "objectives (makespan, weighted-completion, tardiness, cost)"
        )
    started = time.perf_counter()
    reasons = infeasibility_reasons(instance)
    if not reasons and warm is not None:
        options = _warm_started(instance, method, warm, options)
    elif not reasons and options.time_limit_s is not None:
        # The presolve checks above count against the same limit (a spent limit leaves the
        # method a moment: it returns what it has at once).
        options = dataclasses.replace(options, time_limit_s=max(
            1e-9, options.time_limit_s - (time.perf_counter() - started)))
    result = _infeasible(instance, reasons) if reasons else solver.solve(instance, options)
    wall = time.perf_counter() - started
    schedule = to_schedule(instance, result, method, wall, options.seed)
    verification = verify_schedule(instance, schedule)
    # Without a plan, jobs are expected to be missing; anything else is still a bug.
    allowed = set() if result.status.has_plan else {ViolationKind.UNPLACED}
    bugs = [str(v) for v in verification.violations if v.kind not in allowed]
    if bugs:
        raise VerificationError(method, bugs)
    logger.info(
        "%s on %s: %s, objective %s, bound %s, %.3f s",
        method, instance.name, result.status.value, result.objective, result.bound, wall,
    )
    return schedule.model_copy(update={"verification": verification})
