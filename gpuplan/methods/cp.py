"""Time-indexed plans with CP-SAT: ``--method cp`` for the time-based objectives.

The model is :class:`~gpuplan.models.scheduling.SchedulingModel`, or for batches with nothing
to sequence (:func:`~gpuplan.models.machine_load.sequencing_free`) the load model
:class:`~gpuplan.models.machine_load.MachineLoadModel`. The solve starts from list
scheduling's plan as a hint, runs CP-SAT on ``threads`` workers, and keeps the better of the
two plans at the real durations. The reported bound is the best of the combinatorial bounds
(:func:`~gpuplan.models.bounds.objective_bound`), the work-over-capacity LP for makespan
(:func:`~gpuplan.models.scheduling.workload_program`) and CP-SAT's own bound when the integer
model is the instance exactly. A secondary objective (``SolveOptions.then``) is optimised in
a second phase with the primary held at the value the first phase reached.

The time limit covers everything: list scheduling, the bound, building the model (a model
whose size would not leave CP-SAT time to search is replaced by a smaller one, or not built
at all, and a build that runs late is abandoned), CP-SAT's loading, presolve and search, and
reading and freeing the model afterwards. Whatever is cut short, list scheduling's plan is
there to fall back on.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass
from importlib.metadata import version
from typing import Any

import numpy as np

from gpuplan.backends.cpsat import import_cp_model, status_table
from gpuplan.instance import Instance, IntArray, ObjectiveKind
from gpuplan.methods.base import (
    TIME_OBJECTIVES,
    WarmStart,
    option,
    parse_seconds,
    time_objective,
)
from gpuplan.methods.greedy import list_schedule
from gpuplan.models.machine_load import MachineLoadModel, sequencing_free
from gpuplan.models.scheduling import (
    OutOfTimeError,
    SchedulingModel,
    TickScale,
    exclusive_types,
    model_size,
)
from gpuplan.search.time_bounds import simple_bound
from gpuplan.solution import Result
from gpuplan.solvers.base import SolveOptions
from gpuplan.status import OPTIMAL_GAP, Status, relative_gap

logger = logging.getLogger(__name__)

#: Seconds for the second solve that names the deadlines in conflict (less when the time
#: limit leaves less).
EXPLAIN_LIMIT_S = 10.0
#: Share of the time limit the workload LP bound may take.
BOUND_SHARE = 0.1
#: Building, hinting, loading into CP-SAT and freeing a model may take this share of the
#: time left; a larger model is replaced by a smaller one, or by list scheduling's plan.
MODEL_SHARE = 0.5
#: Seconds per unit of the interval model (an alternative or a per-GPU literal,
#: :func:`~gpuplan.models.scheduling.model_size`) to build, hint, load into CP-SAT and free,
#: measured at 20-30 µs on a 2-core machine under load; and the same for the load model's
#: (job, GPU) literals, measured at 6 µs.
UNIT_S = 30e-6
LOAD_UNIT_S = 10e-6
#: Seconds per unit that CP-SAT spends outside its own time limit (loading before it checks
#: the clock, building its response) and that Python spends freeing the model afterwards.
AFTER_UNIT_S = 8e-6
#: Seconds per unit of CP-SAT's presolve: 80 to 120 µs measured on the interval model, 20
#: µs on the load model. Presolve runs only when it is expected to take at most
#: :data:`PRESOLVE_SHARE` of CP-SAT's time, since an unfinished presolve leaves no time to
#: search (on a 2000-job model it took the whole of a 5 s limit).
PRESOLVE_UNIT_S = 120e-6
LOAD_PRESOLVE_UNIT_S = 25e-6
PRESOLVE_SHARE = 0.35
#: Below this many seconds for CP-SAT, it is not run at all.
MIN_SEARCH_S = 0.05


@dataclasses.dataclass(frozen=True)
class _Clock:
    """The time limit, counted from the start of the solve."""

    started: float
    limit: float | None

    def left(self) -> float | None:
        """Seconds left, or None without a time limit."""
        if self.limit is None:
            return None
        return self.limit - (time.perf_counter() - self.started)

    def at(self, share: float) -> float | None:
        """The perf_counter time when ``share`` of the time now left will have passed."""
        left = self.left()
        return None if left is None else time.perf_counter() + max(0.0, left) * share


def _better(a: Result, b: Result) -> Result:
    """The result with the lower objective (both minimise); a plan beats none."""
    if b.objective is None:
        return a
    if a.objective is None:
        return b
    return a if a.objective <= b.objective else b


def _status(objective: float | None, bound: float | None, options: SolveOptions) -> Status:
    """Optimal only when a bound proves the plan within the gap tolerance (and 1e-4)."""
    if objective is None:
        return Status.NO_SOLUTION
    gap = relative_gap(objective, bound)
    optimal = gap is not None and gap <= min(options.gap_tolerance, OPTIMAL_GAP)
    return Status.OPTIMAL if optimal else Status.FEASIBLE


def _configure(solver: Any, options: SolveOptions, limit: float | None,
               presolve: bool = True) -> None:
    parameters = solver.parameters
    if limit is not None:
        parameters.max_time_in_seconds = max(limit, 0.01)
    parameters.num_workers = max(1, int(options.threads))
    parameters.random_seed = int(options.seed)
    parameters.relative_gap_limit = float(options.gap_tolerance)
    # Probing took 9 of the first 12 s on the 500-job Gavel cluster and found 33 clauses;
    # the search does better with that time.
    parameters.cp_model_probing_level = 0
    parameters.cp_model_presolve = presolve
    if not presolve:
        # Without presolve, finding symmetries still took 1.3 s of a 2.3 s limit on a
        # 2000-job model.
        parameters.symmetry_level = 0


def _units(instance: Instance, load_model: bool, share_gpus: bool) -> int:
    """The model's size in units (:data:`UNIT_S`, :data:`LOAD_UNIT_S`)."""
    if load_model:
        return int(instance.eligible[:, instance.gpu_type].sum())
    alternatives, literals = model_size(instance, share_gpus)
    return alternatives + literals


def _objective(text: str) -> ObjectiveKind:
    try:
        return ObjectiveKind(text)
    except ValueError:
        known = ", ".join(k.value for k in ObjectiveKind)
        raise ValueError(f"unknown objective {text!r}; choose from {known}") from None


@dataclass(frozen=True)
class CpOptions:
    """Options of ``--method cp``."""

    tick_s: float | None = option(
        None, "--tick", "seconds per time step (default: the coarsest exact power of ten, "
        "else about 0.1%% of the shortest duration)", parse=parse_seconds, metavar="S")
    then: ObjectiveKind | None = option(
        None, "--then", "a second time-based objective, optimised with the first held at its "
        "best (e.g. --objective makespan --then cost)", parse=_objective, metavar="NAME")


class CpMethod:
    """CP-SAT over interval variables per GPU group, for plans with start times."""

    name = "cp"
    description = "CP-SAT scheduling with start times (time-based objectives), bound and gap"
    options_type = CpOptions
    objectives = TIME_OBJECTIVES
    backends: tuple[str, ...] = ()
    warm_starts: frozenset[WarmStart] = frozenset({WarmStart.PLAN})
    iterative = False

    def supports(self, instance: Instance) -> bool:
        """The time-based objectives: makespan, weighted completion, tardiness and cost."""
        return not instance.objective.is_static

    def solve(self, instance: Instance, options: SolveOptions) -> Result:
        """Plan with CP-SAT from list scheduling's hint, all within the time limit.

        Parameters
        ----------
        instance
            A time-based instance that passed the presolve checks.
        options
            Time limit, threads (CP-SAT workers), seed, gap tolerance, tick and secondary
            objective.

        Raises
        ------
        InputError
            If ``options.tick_s`` is so fine that the horizon in ticks exceeds CP-SAT's
            integers.
        """
        clock = _Clock(time.perf_counter(), options.time_limit_s)
        cp_model = import_cp_model()
        scale = TickScale.choose(instance, options.tick_s)
        name = f"cpsat {version('ortools')} ({scale.describe()})"
        if not scale.exact:
            logger.info("cp: %s is no exact tick for this instance: durations and releases are "
                        "rounded up and deadlines down by up to %.3g s, so every plan is valid "
                        "at the real times, but CP-SAT's bound and infeasibility are not used",
                        f"{scale.tick_s:g} s", scale.shift_s)
        greedy = list_schedule(instance)
        if options.start_plan is not None:
            greedy = _better(options.start_plan, greedy)
        share = None if clock.limit is None else clock.limit * BOUND_SHARE
        bound = simple_bound(instance, dataclasses.replace(options, time_limit_s=share))
        # CP plans every job in one piece and never pairs jobs on GPUs; where the instance
        # allows either, CP-SAT's bound and infeasibility hold for that restriction only.
        whole = not instance.preemptible.any() and instance.pair_gain == 1.0

        load_model = options.then is None and sequencing_free(instance)
        chosen = self._choose(instance, load_model, clock)
        if chosen is None:
            return _kept(instance, greedy, bound, options, name, "list scheduling's plan: "
                         "no CP-SAT model fits the time limit (a longer --time-limit lets "
                         "CP-SAT search)")
        load_model, share_gpus, units = chosen
        model: SchedulingModel | MachineLoadModel
        try:
            if load_model:
                model = MachineLoadModel.build(instance, scale)
            else:
                model = SchedulingModel.build(instance, scale, share_gpus=share_gpus,
                                              stop_at=clock.at(MODEL_SHARE))
            if greedy.status.has_plan:
                gpus = (_twins_by_load(model, greedy.job, greedy.gpus)
                        if isinstance(model, MachineLoadModel) else greedy.gpus)
                model.hint(greedy.job, gpus, greedy.start)
        except OutOfTimeError:
            logger.info("cp: building the model ran out of its share of the time limit after "
                        "%.2f s; keeping list scheduling's plan", time.perf_counter()
                        - clock.started)
            return _kept(instance, greedy, bound, options, name, "list scheduling's plan: "
                         "the CP-SAT model could not be built within the time limit")
        restricted = isinstance(model, SchedulingModel) and model.restricted
        if restricted:
            name += ", without GPU sharing to fit the time limit"
        # CP-SAT's bound holds for the instance when the whole model is exact; its
        # infeasibility, when the constraints are (weights only change the objective).
        certain = model.exact and whole and not restricted
        proof = (model.exact_constraints if isinstance(model, SchedulingModel)
                 else model.exact) and whole and not restricted
        left = clock.left()
        search = None if left is None else left - AFTER_UNIT_S * units
        if search is not None and search < MIN_SEARCH_S:
            return _kept(instance, greedy, bound, options, name, "list scheduling's plan: "
                         "no time was left for CP-SAT to search")
        if options.then is not None and search is not None:
            search /= 2
        presolve_s = (LOAD_PRESOLVE_UNIT_S if load_model else PRESOLVE_UNIT_S) * units
        presolve = search is None or presolve_s <= PRESOLVE_SHARE * search
        solver = cp_model.CpMethod()
        _configure(solver, options, search, presolve)
        code = solver.solve(model.model)
        status = status_table(cp_model).get(code, Status.NO_SOLUTION)
        if code == cp_model.MODEL_INVALID:
            logger.warning("cp: CP-SAT rejected the model: %s", model.model.validate())
        if status is Status.INFEASIBLE:
            return self._no_plan(instance, scale, options, clock, name, greedy, bound,
                                 whole, proof, restricted, units)
        if certain and code in (cp_model.OPTIMAL, cp_model.FEASIBLE, cp_model.UNKNOWN):
            slack = model.bound_slack() if isinstance(model, SchedulingModel) else (
                scale.slack_s)
            bound = max(bound, solver.best_objective_bound * model.objective_scale - slack)
        found = self._plan(instance, model, solver, status, bound, name, options)
        best = _better(found, greedy)
        if best is not found:
            best = _kept(instance, greedy, bound, options, name,
                         "list scheduling's plan kept")
        elif (isinstance(model, SchedulingModel) and options.then is not None
              and status.has_plan):
            best = self._second_phase(instance, model, solver, best, options, clock, name,
                                      units)
        logger.info("cp: %s, CP-SAT %s after %.2f s", best.status.value,
                    solver.status_name(code), time.perf_counter() - clock.started)
        return best

    @staticmethod
    def _choose(instance: Instance, load_model: bool,
                clock: _Clock) -> tuple[bool, bool, int] | None:
        """The model that fits the time left: (load model, GPU sharing, units), or None.

        The full model first; then, where jobs may share GPUs, the model without sharing
        (pooled like exclusive types, far smaller); for a sequencing-free batch whose load
        model is too large, the interval model. None when nothing fits.
        """
        left = clock.left()
        shareable = not exclusive_types(instance).all()
        candidates = [(True, True)] if load_model else []
        candidates += [(False, True)] + ([(False, False)] if shareable else [])
        for load, share in candidates:
            units = _units(instance, load, share)
            if left is None or (LOAD_UNIT_S if load else UNIT_S) * units <= MODEL_SHARE * left:
                if (load, share) != candidates[0]:
                    logger.info("cp: the full model (%d units) would take more than %.0f%% of "
                                "the %.2f s left; using %s (%d units)",
                                _units(instance, *candidates[0]), 100 * MODEL_SHARE, left,
                                "the model without GPU sharing" if not share
                                else "the interval model", units)
                return load, share, units
        logger.info("cp: even the smallest CP-SAT model would take more than %.0f%% of the "
                    "%.2f s left; keeping list scheduling's plan", 100 * MODEL_SHARE, left)
        return None

    @staticmethod
    def _plan(instance: Instance, model: SchedulingModel | MachineLoadModel, solver: Any,
              status: Status, bound: float, name: str, options: SolveOptions) -> Result:
        if not status.has_plan:
            return Result(status=Status.NO_SOLUTION, objective=None, bound=bound, solver=name,
                          unplaced=dict.fromkeys(range(instance.n_jobs), "no plan found "
                                                 "within the time limit"))
        job, types, gpus, start, end = model.decode(solver)
        objective = time_objective(instance, job, types, end)
        return Result(status=_status(objective, bound, options), objective=objective,
                      bound=bound, solver=name, job=job, gpu_type=types, gpus=gpus,
                      start=start, end=end)

    def _second_phase(self, instance: Instance, model: SchedulingModel, solver: Any,
                      first: Result, options: SolveOptions, clock: _Clock, name: str,
                      units: int) -> Result:
        """Optimise ``options.then`` with the primary objective held where phase one left it."""
        assert options.then is not None and first.objective is not None
        left = clock.left()
        search = None if left is None else left - AFTER_UNIT_S * units
        if search is not None and search < MIN_SEARCH_S:
            return first
        primary = model.objective_expression()
        model.model.add(primary <= round(solver.objective_value))
        model.set_objective(options.then)
        model.hint_solution(solver)
        second = import_cp_model().CpMethod()
        _configure(second, options, search,
                   search is None or PRESOLVE_UNIT_S * units <= PRESOLVE_SHARE * search)
        code = second.solve(model.model)
        status = status_table(import_cp_model()).get(code, Status.NO_SOLUTION)
        if not status.has_plan:
            return first
        result = self._plan(instance, model, second, Status.FEASIBLE, first.bound or 0.0,
                            f"{name}, then {options.then.value}", options)
        if result.objective is None or result.objective > first.objective * (1 + 1e-9):
            return first
        return result

    def _no_plan(self, instance: Instance, scale: TickScale, options: SolveOptions,
                 clock: _Clock, name: str, greedy: Result, bound: float, whole: bool,
                 proof: bool, restricted: bool, units: int) -> Result:
        """CP-SAT found its model infeasible: a proof only when the model is the instance.

        Otherwise list scheduling's plan (if it has one) is kept, or no plan is reported
        with what made the model narrower than the instance.
        """
        if greedy.status.has_plan:
            if proof:
                logger.warning("cp: CP-SAT calls the model infeasible, yet list scheduling's "
                               "plan is valid; keeping that plan")
            why = ("without GPU sharing" if restricted
                   else f"at a tick of {scale.tick_s:g} s" if not scale.exact
                   else "with every job in one piece" if not whole
                   else "with per-GPU demands rounded up" if not proof
                   else "(wrongly)")
            logger.info("cp: CP-SAT found no plan %s; keeping list scheduling's plan", why)
            return _kept(instance, greedy, bound, options, name, "list scheduling's plan: "
                         f"the CP-SAT model {why} has no plan")
        if not whole:
            return Result(status=Status.NO_SOLUTION, objective=None, bound=bound,
                          solver=name, unplaced=dict.fromkeys(
                              range(instance.n_jobs), "no plan runs every job in one "
                              "piece within its deadline; preemptible jobs may still "
                              "fit in segments (try --method balance)"))
        if restricted:
            return Result(status=Status.NO_SOLUTION, objective=None, bound=bound,
                          solver=name, unplaced=dict.fromkeys(
                              range(instance.n_jobs), "no plan without GPU sharing meets "
                              "every deadline (GPU sharing was left out of the CP-SAT model "
                              "to fit the time limit; a longer --time-limit includes it)"))
        core = self._core(instance, scale, options, clock, units)
        if proof:
            if core:
                reason = (f"the deadlines of jobs {core} cannot all be met together: the "
                          "GPUs they may use are too few for the work due by then")
            else:
                reason = "no plan meets every deadline within the capacity of the fleet"
            return Result(status=Status.INFEASIBLE, objective=None, bound=None, solver=name,
                          unplaced=dict.fromkeys(range(instance.n_jobs), reason))
        conflict = f" (there, the deadlines of jobs {core} cannot all be met together)"
        if scale.exact:
            reason = ("no plan found: with per-GPU demands rounded up to integers (and "
                      "capacities down) the CP-SAT model has no plan"
                      + (conflict if core else "") + "; this is no proof for the instance")
        else:
            best = TickScale.choose(instance)
            advice = (f"--tick {best.tick_s:g} (the default) represents every time exactly"
                      if best.exact else "a finer --tick may find one")
            reason = (f"no plan found at a tick of {scale.tick_s:g} s: with durations and "
                      "releases rounded up and deadlines down to whole ticks the problem has "
                      f"no plan{conflict if core else ''}; this is no proof for the real "
                      f"times, and {advice}")
        return Result(status=Status.NO_SOLUTION, objective=None, bound=bound, solver=name,
                      unplaced=dict.fromkeys(range(instance.n_jobs), reason))

    @staticmethod
    def _core(instance: Instance, scale: TickScale, options: SolveOptions, clock: _Clock,
              units: int) -> str:
        """The jobs whose deadlines cannot all be met together (a CP-SAT core), named.

        Empty when the time left is too short to rebuild and solve the model.
        """
        left = clock.left()
        if left is not None and left < 2 * UNIT_S * units + MIN_SEARCH_S:
            return ""
        try:
            explained = SchedulingModel.build(instance, scale, deadlines_as_assumptions=True,
                                              stop_at=clock.at(MODEL_SHARE))
        except OutOfTimeError:
            return ""
        left = clock.left()
        limit = EXPLAIN_LIMIT_S if left is None else min(
            EXPLAIN_LIMIT_S, left - AFTER_UNIT_S * units)
        if limit < MIN_SEARCH_S:
            return ""
        solver = import_cp_model().CpMethod()
        _configure(solver, dataclasses.replace(options, threads=1), limit)
        solver.solve(explained.model)
        core = sorted(explained.deadline_job[i]
                      for i in solver.sufficient_assumptions_for_infeasibility())
        return ", ".join(repr(instance.job_ids[j]) for j in core)


def _twins_by_load(model: MachineLoadModel, job: IntArray,
                   gpus: tuple[IntArray, ...]) -> tuple[IntArray, ...]:
    """A plan's GPUs renamed among twins so that their loads decrease, as the model orders them.

    The load model breaks the symmetry of twin GPUs (same node and type) by ordering their
    loads; list scheduling's plan seldom has that order, which made the hint infeasible
    (CP-SAT then repairs it). Renaming twins changes nothing else in the plan.
    """
    instance = model.instance
    gpu_type = instance.gpu_type
    load = np.zeros(instance.n_gpus, dtype=np.int64)
    for j, used in zip(job.tolist(), gpus, strict=True):
        load[used] += model.ticks[j, gpu_type[used]]
    rename = np.arange(instance.n_gpus)
    twin = np.r_[False, (instance.gpu_node[1:] == instance.gpu_node[:-1])
                 & (gpu_type[1:] == gpu_type[:-1])]
    starts = np.flatnonzero(~twin)
    for first, last in zip(starts, np.r_[starts[1:], instance.n_gpus], strict=True):
        run = np.arange(first, last)
        rename[run[np.argsort(-load[run], kind="stable")]] = run
    return tuple(rename[used] for used in gpus)


def _kept(instance: Instance, result: Result, bound: float, options: SolveOptions,
          name: str, note: str) -> Result:
    """A heuristic's result with the method's bound, its status from that bound, and why.

    ``note`` says why CP-SAT's plan is not the one returned; without a plan, each job the
    heuristic left out gives its reason and the note.
    """
    if result.status.has_plan:
        return Result(status=_status(result.objective, bound, options),
                      objective=result.objective, bound=bound, solver=f"{name}; {note}",
                      job=result.job, gpu_type=result.gpu_type, start=result.start,
                      end=result.end, gpus=result.gpus)
    unplaced = ({j: f"{reason}; {note}" for j, reason in result.unplaced.items()}
                or dict.fromkeys(range(instance.n_jobs), f"no plan found; {note}"))
    return Result(status=Status.NO_SOLUTION, objective=None, bound=bound,
                  solver=f"{name}; {note}", job=result.job, gpu_type=result.gpu_type,
                  start=result.start, end=result.end, gpus=result.gpus, unplaced=unplaced)
