"""``--method textbook``: the plain model a user writes first, handed straight to a solver.

The peer gpuplan's methods are measured against, verified like every other answer, so
that a benchmark compares plans, not claims:

- static objectives: the plain assignment MILP
  (:class:`~gpuplan.models.textbook.TextbookModel`) on ``--solver`` with its default
  settings and no start plan;
- ``makespan``: the plain CP-SAT model of unrelated machines, one optional interval per
  job and GPU, no overlap per GPU, releases, deadlines and dependencies as bounds and
  precedences, durations rounded up to whole seconds, 2 workers, no hint.

Both cover single-GPU jobs only, as the textbook models do. The time limit covers
building the model too; a build that spends it returns ``no_solution`` and says so (the
peer has no start plan to fall back on).
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpuplan.backends import get_backend
from gpuplan.backends.cpsat import import_cp_model, status_table
from gpuplan.backends.highs import HighsBackend
from gpuplan.instance import Instance, ObjectiveKind
from gpuplan.methods.base import (
    WarmStart,
    solver_option,
)
from gpuplan.methods.milp import deadline_of, no_plan, settled_status, static_result
from gpuplan.models.linear import OutOfTimeError, check_deadline
from gpuplan.models.textbook import ADDITIVE, TextbookModel
from gpuplan.solution import Result
from gpuplan.solvers.base import SolveOptions
from gpuplan.status import Status

#: Jobs whose intervals are made between two readings of the clock.
CLOCK_EVERY = 16


@dataclass(frozen=True)
class TextbookOptions:
    """Options of ``--method textbook``."""

    backend: str = solver_option(("highs", "cpsat"), "the textbook model")


class TextbookMethod:
    """The textbook assignment MILP on HiGHS, CP-SAT or Pyomo (``--solver``)."""

    name = "textbook"
    description = ("the plain model on a solver, defaults only (a peer; single-GPU jobs: "
                   "assignment MILP on --solver for assign-cost/-profit and max-weight, "
                   "CP-SAT intervals for makespan)")
    options_type = TextbookOptions
    objectives = ADDITIVE | {ObjectiveKind.MAKESPAN}
    backends: tuple[str, ...] = ("highs", "cpsat")
    warm_starts: frozenset[WarmStart] = frozenset()
    iterative = False

    def supports(self, instance: Instance) -> bool:
        """Single-GPU jobs, and an additive static objective or makespan."""
        return TextbookModel.supports(instance) or (
            instance.objective is ObjectiveKind.MAKESPAN and bool((instance.gang == 1).all()))

    def solve(self, instance: Instance, options: SolveOptions) -> Result:
        """Build the model and solve it within the options' limits.

        Parameters
        ----------
        instance
            The validated problem.
        options
            Backend, time limit and threads.
        """
        started = time.perf_counter()
        deadline = deadline_of(options, started)
        try:
            if instance.objective is ObjectiveKind.MAKESPAN:
                return self._makespan(instance, options, deadline)
            model = TextbookModel.build(instance, deadline)
        except OutOfTimeError as spent:
            return no_plan(instance, f"textbook on {options.backend} (not started)",
                           f"no plan: the time limit was spent building the model's {spent}")
        left = (options if options.time_limit_s is None else dataclasses.replace(
            options, time_limit_s=max(0.01, deadline - time.perf_counter())))
        backend = get_backend(options.backend)
        solution = (backend.solve_bounded(model.program, left)
                    if isinstance(backend, HighsBackend)
                    else backend.solve_program(model.program, left))
        solver = f"textbook on {solution.solver}"
        if solution.values is None:
            status = (Status.INFEASIBLE if solution.status is Status.INFEASIBLE
                      else Status.NO_SOLUTION)
            return static_result(instance, {}, status, None, solution.bound, solver,
                                 "the textbook model found no plan")
        chosen = np.round(solution.values) > 0.5
        placed = {int(j): np.array([int(g)]) for j, g in
                  zip(model.x_job[chosen].tolist(), model.x_gpu[chosen].tolist(), strict=True)}
        value = float(model.program.cost[chosen].sum())
        status = Status.OPTIMAL if solution.status is Status.OPTIMAL else Status.FEASIBLE
        return static_result(instance, placed, status, value, solution.bound, solver,
                             "left out by the textbook model")

    @staticmethod
    def _makespan(instance: Instance, options: SolveOptions, deadline: float) -> Result:
        """Unrelated machines on CP-SAT: optional intervals per job and GPU.

        Raises
        ------
        OutOfTimeError
            When the deadline passes while the model is being built.
        """
        cp_model = import_cp_model()
        model = cp_model.CpModel()
        ticks = [[math.ceil(d) if math.isfinite(d) else -1 for d in row]
                 for row in instance.duration.tolist()]
        release = [math.ceil(r) for r in instance.release.tolist()]
        # Without deadlines a plan ends within this horizon: every job on its fastest type,
        # one after another in dependency order, after the last release.
        horizon = max(release, default=0) + sum(
            min(t for t in row if t >= 0) if any(t >= 0 for t in row) else 0 for row in ticks)
        makespan = model.new_int_var(0, horizon, "makespan")
        per_gpu: list[list[Any]] = [[] for _ in range(instance.n_gpus)]
        starts = []
        # Per job, its options: (presence literal, GPU, whole-second duration).
        chosen: list[list[tuple[Any, int, int]]] = []
        for j in range(instance.n_jobs):
            if j % CLOCK_EVERY == 0:
                check_deadline(deadline, "intervals")
            start = model.new_int_var(release[j], horizon, f"s{j}")
            options_j = []
            for g in range(instance.n_gpus):
                t = int(instance.gpu_type[g])
                if not instance.eligible[j, t] or ticks[j][t] < 0:
                    continue
                present = model.new_bool_var(f"x{j}_{g}")
                per_gpu[g].append(model.new_optional_fixed_size_interval_var(
                    start, ticks[j][t], present, f"i{j}_{g}"))
                model.add(start + ticks[j][t] <= makespan).only_enforce_if(present)
                if math.isfinite(instance.deadline[j]):
                    model.add(start + ticks[j][t] <= math.floor(instance.deadline[j])
                              ).only_enforce_if(present)
                options_j.append((present, g, ticks[j][t]))
            model.add_exactly_one(p for p, _, _ in options_j)
            starts.append(start)
            chosen.append(options_j)
        check_deadline(deadline, "precedences")
        for j, preds in enumerate(instance.predecessors):
            for p in preds:
                for present, _, t in chosen[p]:
                    model.add(starts[j] >= starts[p] + t).only_enforce_if(present)
        for intervals in per_gpu:
            model.add_no_overlap(intervals)
        model.minimize(makespan)
        check_deadline(deadline, "objective")
        solver = cp_model.CpMethod()
        solver.parameters.log_search_progress = False
        solver.parameters.log_to_stdout = False
        if math.isfinite(deadline):
            solver.parameters.max_time_in_seconds = max(0.01, deadline - time.perf_counter())
        solver.parameters.num_workers = max(1, int(options.threads))
        solver.parameters.random_seed = int(options.seed)
        status = status_table(cp_model)[solver.solve(model)]
        name = "textbook on CP-SAT"
        if not status.has_plan:
            return Result(status=status, objective=None, bound=None, solver=name,
                          unplaced=dict.fromkeys(range(instance.n_jobs),
                                                 "the textbook model found no plan"))
        gpus = [next(g for p, g, _ in options_j if solver.boolean_value(p))
                for options_j in chosen]
        job = np.arange(instance.n_jobs, dtype=np.int64)
        gpu_type = instance.gpu_type[np.array(gpus, dtype=np.int64)]
        start_s = np.array([float(solver.value(s)) for s in starts])
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
