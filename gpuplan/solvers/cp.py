"""Time-indexed plans with CP-SAT: ``--method cp`` for the time-based objectives.

The model is :class:`~gpuplan.models.scheduling.SchedulingModel`, or for batches with nothing
to sequence (:func:`~gpuplan.models.machine_load.sequencing_free`) the load model
:class:`~gpuplan.models.machine_load.MachineLoadModel`. The solve starts from list
scheduling's plan as a hint, runs CP-SAT for the time limit on ``threads`` workers, and keeps
the better of the two plans at the real durations. The reported bound is the best of the
combinatorial bounds (:func:`~gpuplan.models.bounds.objective_bound`), the work-over-capacity
LP for makespan (:func:`~gpuplan.models.scheduling.workload_program`) and CP-SAT's own bound
when the integer model is exact. A secondary objective (``SolveOptions.then``) is optimised
in a second phase with the primary held at the value the first phase reached.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from importlib.metadata import version
from typing import Any

from gpuplan.instance import Instance
from gpuplan.models.machine_load import MachineLoadModel, sequencing_free
from gpuplan.models.scheduling import SchedulingModel, TickScale
from gpuplan.schedule import Status
from gpuplan.solvers.base import Result, SolveOptions, plan_status, time_objective
from gpuplan.solvers.cpsat import import_cp_model, status_table
from gpuplan.solvers.greedy import list_schedule
from gpuplan.solvers.time_bounds import simple_bound

logger = logging.getLogger(__name__)

#: Seconds for the second solve that names the deadlines in conflict.
EXPLAIN_LIMIT_S = 10.0


def _better(a: Result, b: Result) -> Result:
    """The result with the lower objective (both minimise); a plan beats none."""
    if b.objective is None:
        return a
    if a.objective is None:
        return b
    return a if a.objective <= b.objective else b


def _configure(solver: Any, options: SolveOptions, limit: float | None) -> None:
    parameters = solver.parameters
    if limit is not None:
        parameters.max_time_in_seconds = max(limit, 0.01)
    parameters.num_workers = max(1, int(options.threads))
    parameters.random_seed = int(options.seed)
    parameters.relative_gap_limit = float(options.gap_tolerance)
    # Probing took 9 of the first 12 s on the 500-job Gavel cluster and found 33 clauses;
    # the search does better with that time.
    parameters.cp_model_probing_level = 0


class CpSolver:
    """CP-SAT over interval variables per GPU group, for plans with start times."""

    name = "cp"
    description = "CP-SAT scheduling with start times (time-based objectives), bound and gap"

    def supports(self, instance: Instance) -> bool:
        """The time-based objectives: makespan, weighted completion, tardiness and cost."""
        return not instance.objective.is_static

    def solve(self, instance: Instance, options: SolveOptions) -> Result:
        """Plan with CP-SAT from list scheduling's hint until the time limit.

        Parameters
        ----------
        instance
            A time-based instance that passed the presolve checks.
        options
            Time limit, threads (CP-SAT workers), seed, gap tolerance, tick and secondary
            objective.
        """
        started = time.perf_counter()
        cp_model = import_cp_model()
        scale = TickScale.choose(instance, options.tick_s)
        greedy = list_schedule(instance)
        if options.start_plan is not None:
            greedy = _better(options.start_plan, greedy)
        bound = simple_bound(instance, options)
        # Batches with nothing to sequence are pure assignment (R||Cmax): the load model.
        model: SchedulingModel | MachineLoadModel = (
            MachineLoadModel.build(instance, scale)
            if options.then is None and sequencing_free(instance)
            else SchedulingModel.build(instance, scale))
        if greedy.status.has_plan:
            model.hint(greedy.job, greedy.gpus, greedy.start)
        solver = cp_model.CpSolver()
        _configure(solver, options, _left(options, started, 0.5 if options.then else 1.0))
        code = solver.solve(model.model)
        status = status_table(cp_model).get(code, Status.NO_SOLUTION)
        resolution = f"tick {scale.tick_s:g} s{'' if scale.exact else ', durations rounded up'}"
        name = f"cpsat {version('ortools')} ({resolution})"
        # CP plans every job in one piece and never pairs jobs on GPUs; where the instance
        # allows either, CP-SAT's bound and infeasibility hold for that restriction only.
        whole = not instance.preemptible.any() and instance.pair_gain == 1.0
        if status is Status.INFEASIBLE:
            if not whole:
                return Result(status=Status.NO_SOLUTION, objective=None, bound=bound,
                              solver=name, unplaced=dict.fromkeys(
                                  range(instance.n_jobs), "no plan runs every job in one "
                                  "piece within its deadline; preemptible jobs may still "
                                  "fit in segments (try --method balance)"))
            return self._infeasible(instance, scale, options, name)
        if model.exact and whole and status.has_plan:
            bound = max(bound, solver.best_objective_bound * model.objective_scale)
        found = self._plan(instance, model, solver, status, bound, name)
        best = _better(found, greedy)
        if best is greedy:
            best = _with(greedy, bound, f"{name}; list scheduling's plan kept")
        if isinstance(model, SchedulingModel) and options.then is not None and status.has_plan:
            best = self._second_phase(instance, model, solver, best, options, started, name)
        logger.info("cp: %s, CP-SAT %s after %.2f s", best.status.value,
                    solver.status_name(code), time.perf_counter() - started)
        return best

    @staticmethod
    def _plan(instance: Instance, model: SchedulingModel | MachineLoadModel, solver: Any,
              status: Status, bound: float, name: str) -> Result:
        if not status.has_plan:
            return Result(status=Status.NO_SOLUTION, objective=None, bound=bound, solver=name)
        job, types, gpus, start, end = model.decode(solver)
        objective = time_objective(instance, job, types, end)
        final = plan_status(objective, bound)
        return Result(status=final, objective=objective, bound=bound, solver=name, job=job,
                      gpu_type=types, gpus=gpus, start=start, end=end)

    def _second_phase(self, instance: Instance, model: SchedulingModel, solver: Any,
                      first: Result, options: SolveOptions, started: float,
                      name: str) -> Result:
        """Optimise ``options.then`` with the primary objective held where phase one left it."""
        assert options.then is not None and first.objective is not None
        primary = model.objective_expression()
        model.model.add(primary <= round(solver.objective_value))
        model.set_objective(options.then)
        model.hint_solution(solver)
        second = import_cp_model().CpSolver()
        _configure(second, options, _left(options, started))
        code = second.solve(model.model)
        status = status_table(import_cp_model()).get(code, Status.NO_SOLUTION)
        if not status.has_plan:
            return first
        result = self._plan(instance, model, second, Status.FEASIBLE, first.bound or 0.0,
                            f"{name}, then {options.then.value}")
        if result.objective is None or result.objective > first.objective * (1 + 1e-9):
            return first
        return result

    @staticmethod
    def _infeasible(instance: Instance, scale: TickScale, options: SolveOptions,
                    name: str) -> Result:
        """Name the jobs whose deadlines cannot all be met together (a CP-SAT core)."""
        explained = SchedulingModel.build(instance, scale, deadlines_as_assumptions=True)
        solver = import_cp_model().CpSolver()
        _configure(solver, dataclasses.replace(options, threads=1), EXPLAIN_LIMIT_S)
        solver.solve(explained.model)
        core = sorted(explained.deadline_job[i]
                      for i in solver.sufficient_assumptions_for_infeasibility())
        names = ", ".join(repr(instance.job_ids[j]) for j in core)
        tick = "" if scale.exact else (
            f" (at a resolution of {scale.tick_s:g} s with durations rounded up; a finer "
            "--tick may help)")
        if core:
            reason = (f"the deadlines of jobs {names} cannot all be met together: the GPUs "
                      f"they may use are too few for the work due by then{tick}")
        else:
            reason = f"no plan meets every deadline within the capacity of the fleet{tick}"
        return Result(status=Status.INFEASIBLE, objective=None, bound=None, solver=name,
                      unplaced=dict.fromkeys(range(instance.n_jobs), reason))


def _left(options: SolveOptions, started: float, share: float = 1.0) -> float | None:
    if options.time_limit_s is None:
        return None
    return max(0.01, (options.time_limit_s - (time.perf_counter() - started)) * share)


def _with(result: Result, bound: float, solver: str) -> Result:
    """A result with a (better) bound and a new solver name."""
    return Result(status=plan_status(result.objective, bound), objective=result.objective,
                  bound=bound, solver=solver, job=result.job, gpu_type=result.gpu_type,
                  start=result.start, end=result.end, gpus=result.gpus,
                  unplaced=result.unplaced)
