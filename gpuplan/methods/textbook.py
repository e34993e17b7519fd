"""``--method textbook``: the plain model a user writes first, handed straight to a solver.

The peer gpuplan's methods are measured against, verified like every other answer, so
that a benchmark compares plans, not claims:

- static objectives: the plain assignment MILP
  (:class:`~gpuplan.models.textbook.TextbookModel`) on ``--solver`` with its default
  settings and no start plan;
- ``makespan`` of a batch with nothing to sequence
  (:func:`~gpuplan.models.machine_load.sequencing_free`: the unrelated parallel machine
  problem R||Cmax): the assignment MILP, minimise the largest load
  (:class:`~gpuplan.models.assignment_makespan.AssignmentMakespanModel`), on ``--solver``
  (HiGHS by default) with its default settings and no start plan; the largest load is a
  continuous column, or an integer one in whole ticks on a backend without continuous
  columns (CP-SAT);
- other ``makespan`` batches: the plain CP-SAT model of unrelated machines
  (:class:`~gpuplan.models.textbook.IntervalModel`), no hint; it is a CP-SAT model, so
  ``--solver`` plays no part in it beyond refusing the others.

All cover single-GPU jobs only, as the textbook models do. The time limit covers
building the model too; a build that spends it returns ``no_solution`` and says so (the
peer has no start plan to fall back on).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from gpuplan.backends import backends_with, get_backend
from gpuplan.backends.base import Backend, Capabilities
from gpuplan.backends.cpsat import import_cp_model, new_solver, status_table
from gpuplan.core.errors import InputError, setting
from gpuplan.core.instance import Instance
from gpuplan.core.objectives import ObjectiveKind, time_objective
from gpuplan.core.options import option
from gpuplan.core.result import Result, no_plan
from gpuplan.core.settings import Context, WarmStart
from gpuplan.core.status import Status
from gpuplan.methods.base import MethodDefaults
from gpuplan.models.assignment_makespan import AssignmentMakespanModel
from gpuplan.models.linear import OutOfTimeError, check_budget
from gpuplan.models.machine_load import back_to_back, sequencing_free
from gpuplan.models.scheduling import TickScale
from gpuplan.models.textbook import ADDITIVE, IntervalModel, TextbookModel
from gpuplan.parts.static_plans import settled_status, static_result

#: What the backend needs: both models have integer columns only.
NEEDS = Capabilities(integer=True)
#: The backends that can take the textbook assignment MILP, default first.
BACKENDS = backends_with(NEEDS)
#: The interval model (makespan with sequencing) is CP-SAT's own: it runs without a
#: --solver (None) or on cpsat.
INTERVAL_BACKENDS = (None, "cpsat")
#: Why a job is unplaced when the solver returned no plan.
NO_PLAN = "the textbook model found no plan"


@dataclass(frozen=True)
class TextbookOptions:
    """Options of ``--method textbook``."""

    backend: str | None = option(
        None, "--solver", "backend of the textbook model (default: highs for the assignment "
        "MILPs, cpsat for makespan with sequencing, whose interval model only CP-SAT "
        "takes)", choices=BACKENDS)


class TextbookMethod(MethodDefaults):
    """The textbook assignment MILPs on ``--solver``, the interval model on CP-SAT."""

    name: ClassVar[str] = "textbook"
    description: ClassVar[str] = ("the plain model on a solver, defaults only (a peer; "
                                  "single-GPU jobs: assignment MILP on --solver for "
                                  "assign-cost/-profit, max-weight and makespan with nothing "
                                  "to sequence, CP-SAT intervals for other makespan batches)")
    options_type: ClassVar[type[TextbookOptions]] = TextbookOptions
    objectives: ClassVar[frozenset[ObjectiveKind]] = ADDITIVE | {ObjectiveKind.MAKESPAN}
    backends: ClassVar[tuple[str, ...]] = BACKENDS
    warm_starts: ClassVar[frozenset[WarmStart]] = frozenset()
    iterative: ClassVar[bool] = False

    def check(self, instance: Instance, options: TextbookOptions) -> None:
        """Refuse gangs (one GPU per job), and the interval model on another backend.

        Raises
        ------
        InputError
            Naming ``--method`` for a job of several GPUs, or ``--solver`` for a makespan
            batch that needs sequencing on a backend that does not stand for CP-SAT's
            interval model.
        """
        makespan = instance.objective is ObjectiveKind.MAKESPAN
        gangs = np.flatnonzero(instance.gang > 1)
        if gangs.size:
            j = int(gangs[0])
            raise InputError(setting("method"), "", f"method 'textbook' plans single-GPU jobs only "
                             f"(its models give each job one GPU), and job "
                             f"{instance.job_ids[j]!r} needs {int(instance.gang[j])} GPUs; "
                             f"use `method` {'cp' if makespan else 'milp'}")
        if _intervals(instance) and options.backend not in INTERVAL_BACKENDS:
            raise InputError(setting("backend"), "", f"method 'textbook' plans makespan with "
                             f"sequencing (releases, dependencies, deadlines or GPU sharing) "
                             f"with CP-SAT's interval model, which the {options.backend} "
                             "backend cannot take; use `backend` cpsat")

    def needs(self, instance: Instance, options: TextbookOptions) -> Capabilities:
        """Integer columns: the assignment MILPs' are binary.

        The largest load of R||Cmax is an integer column on a backend without continuous
        ones, so they are not needed.
        """
        return NEEDS

    def solve(self, instance: Instance, options: TextbookOptions, context: Context) -> Result:
        """Build the model and solve it within the context's budget.

        Parameters
        ----------
        instance
            The validated problem.
        options
            The backend of the assignment MILP.
        context
            Budget, threads, seed and gap.
        """
        intervals = _intervals(instance)
        on = "cpsat" if intervals else options.backend or BACKENDS[0]
        backend = get_backend(on)
        try:
            if intervals:
                return self._makespan(instance, context)
            if instance.objective is ObjectiveKind.MAKESPAN:
                return self._largest_load(instance, backend, context)
            model = TextbookModel.build(instance, context.budget)
        except OutOfTimeError as spent:
            return no_plan(instance, f"no plan: the time limit was spent building the model's "
                           f"{spent}", f"textbook on {on} (not started)")
        solution = backend.solve_program(model.program, context.limits())
        solver = f"textbook on {solution.solver}"
        if solution.values is None:
            status = (Status.INFEASIBLE if solution.status is Status.INFEASIBLE
                      else Status.NO_SOLUTION)
            return static_result(instance, {}, status, None, solution.bound, solver, NO_PLAN)
        chosen = np.round(solution.values) > 0.5
        placed = {int(j): np.array([int(g)]) for j, g in
                  zip(model.x_job[chosen].tolist(), model.x_gpu[chosen].tolist(), strict=True)}
        value = float(model.program.cost[chosen].sum())
        status = Status.OPTIMAL if solution.status is Status.OPTIMAL else Status.FEASIBLE
        return static_result(instance, placed, status, value, solution.bound, solver,
                             "left out by the textbook model")

    @staticmethod
    def _largest_load(instance: Instance, backend: Backend, context: Context) -> Result:
        """R||Cmax as the assignment MILP, minimising the largest load, on the backend.

        In seconds with a continuous largest load; on a backend without continuous columns
        in whole ticks (:class:`~gpuplan.models.scheduling.TickScale`) with an integer one,
        whose bound holds when the ticks are exact. No bound holds when a job is
        preemptible (it could be split between GPUs, which the model does not do).

        Raises
        ------
        OutOfTimeError
            When the budget is spent while the model is being built.
        """
        continuous = backend.capabilities.continuous
        scale = None if continuous else TickScale.choose(instance)
        duration = (instance.duration if scale is None
                    else scale.up(np.where(instance.eligible, instance.duration, 0.0)))
        model = AssignmentMakespanModel.build(instance, duration, integer_makespan=not continuous)
        check_budget(context.budget, "rows")
        solution = backend.solve_program(model.program, context.limits())
        solver = f"textbook on {solution.solver}"
        gpu = None if solution.values is None else model.decode(solution.values)
        if gpu is None or (gpu < 0).any():
            status = (Status.INFEASIBLE if solution.status is Status.INFEASIBLE
                      else Status.NO_SOLUTION)
            return no_plan(instance, NO_PLAN, solver, status)
        release = float(instance.release.max(initial=0.0))
        bound = None
        if solution.bound is not None and not instance.preemptible.any():
            if scale is None:
                bound = release + solution.bound
            elif scale.exact:
                bound = (release + model.program.round_bound(solution.bound) * scale.tick_s
                         - scale.slack_s)
        job, types, gpus, start_s, end_s = back_to_back(instance, gpu)
        value = time_objective(instance, job, types, end_s)
        status = Status.OPTIMAL if solution.status is Status.OPTIMAL else Status.FEASIBLE
        return Result(status=settled_status(status, value, bound), objective=value,
                      bound=bound, solver=solver, job=job, gpu_type=types, gpus=gpus,
                      start=start_s, end=end_s)

    @staticmethod
    def _makespan(instance: Instance, context: Context) -> Result:
        """Makespan with sequencing on CP-SAT: optional intervals per job and GPU.

        Raises
        ------
        OutOfTimeError
            When the budget is spent while the model is being built.
        """
        built = IntervalModel.build(instance, context.budget)
        left = context.budget.left()
        solver = new_solver(context.limits(), left if math.isfinite(left) else None)
        code = solver.solve(built.model)
        status = status_table(import_cp_model()).get(code, Status.NO_SOLUTION)
        name = "textbook on CP-SAT"
        if not status.has_plan:
            return Result(status=status, objective=None, bound=None, solver=name,
                          unplaced=dict.fromkeys(range(instance.n_jobs), NO_PLAN))
        gpus = [next(g for p, g, _ in options_j if solver.boolean_value(p))
                for options_j in built.options]
        job = np.arange(instance.n_jobs, dtype=np.int64)
        gpu_type = instance.gpu_type[np.array(gpus, dtype=np.int64)]
        start_s = np.array([float(solver.value(s)) for s in built.starts])
        end_s = start_s + instance.duration[job, gpu_type]
        # The bound is on whole-second durations: a bound of the real problem only when
        # every duration is whole.
        exact = bool(np.all(instance.duration[np.isfinite(instance.duration)] % 1 == 0))
        bound = float(solver.best_objective_bound) if exact else None
        value = float(end_s.max(initial=0.0))
        final = settled_status(Status.OPTIMAL if status is Status.OPTIMAL and exact
                               else Status.FEASIBLE, value, bound)
        return Result(status=final, objective=value, bound=bound, solver=name, job=job,
                      gpu_type=gpu_type, start=start_s, end=end_s,
                      gpus=tuple(np.array([g], dtype=np.int64) for g in gpus))


def _intervals(instance: Instance) -> bool:
    """Whether the instance is a makespan batch with something to sequence (intervals)."""
    return instance.objective is ObjectiveKind.MAKESPAN and not sequencing_free(instance)
