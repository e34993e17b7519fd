"""Exact and relaxed static assignment: ``--method milp`` and ``--method lp``.

``milp`` hands :class:`~gpuplan.models.assignment.AssignmentModel` to the chosen backend,
warm-started from best-fit decreasing. With HiGHS and a time limit it runs branch-and-cut on
the whole model beside an LP-guided lane: the MIP over the LP's split jobs, a reduced-cost
core MIP, then large-neighbourhood search around the incumbent
(:mod:`gpuplan.search.lns`); see :meth:`MilpMethod.solve`.

``lp`` solves the pooled-type LP relaxation (:class:`~gpuplan.models.assignment.PooledModel`),
whose optimum is the reported bound, rounds it with a rounding from
:data:`~gpuplan.search.lp_rounding.ROUNDINGS`, and improves the plan by moving jobs.

The time limit covers everything: building the model, handing it to the backend, the
solve, rounding, repair and reading the plan back. A method whose budget is spent before
its solver could run returns the best plan it has (greedy's, for ``milp``) and says why.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import threading
import time
from dataclasses import dataclass

import numpy as np

from gpuplan.backends import get_backend
from gpuplan.backends.base import ProgramSolution
from gpuplan.backends.highs import (
    HighsBackend,
    explain_infeasible,
    new_highs,
    solve_relaxation,
    still_busy,
    wait_for,
)
from gpuplan.instance import BoolArray, FloatArray, Instance, IntArray, ObjectiveKind
from gpuplan.methods.base import (
    STATIC_OBJECTIVES,
    WarmStart,
    option,
    plan_status,
    solver_option,
)
from gpuplan.methods.greedy import best_fit_decreasing
from gpuplan.models.assignment import POOLED_OBJECTIVES, AssignmentModel, PooledModel, job_value
from gpuplan.models.bounds import infeasibility_reasons, objective_bound
from gpuplan.models.linear import OutOfTimeError
from gpuplan.search.lns import improve, subprogram
from gpuplan.search.lp_rounding import ROUNDINGS, improve_by_moves, repair_by_ejection
from gpuplan.solution import Result
from gpuplan.solvers.base import SolveOptions
from gpuplan.status import Status

logger = logging.getLogger(__name__)

#: Share of the time left after the LP that the MIP over the LP's split jobs may take.
LP_FIX_SHARE = 0.2
#: Share of the time left after the LP that the core MIP gets before LNS takes over.
CORE_SHARE = 0.5
#: Branch-and-cut runs alone for this long (at most this share of the limit) first.
SOLO_SECONDS = 1.0
SOLO_SHARE = 0.1
#: Assignment columns per job in the core problem, by smallest reduced cost.
CORE_COLUMNS_PER_JOB = 3


def deadline_of(options: SolveOptions, started: float) -> float:
    """The ``time.perf_counter()`` time at which the options' limit ends (inf: none)."""
    return math.inf if options.time_limit_s is None else started + options.time_limit_s


def settled_status(status: Status, objective: float | None, bound: float | None) -> Status:
    """The status a plan may claim: ``optimal`` exactly when its bound proves it.

    That is when the relative gap between the plan and the reported bound is at most
    :data:`~gpuplan.schedule.OPTIMAL_GAP`, as the verifier requires, whatever the solver
    said: a solver measures its gap its own way (HiGHS and CP-SAT divide by at least 1,
    and stop at the gap they are given), and the reported bound may not be the solver's.
    Statuses without a plan stand as they are.
    """
    return plan_status(objective, bound) if status.has_plan else status


def placements(result: Result) -> dict[int, IntArray]:
    """Job index to GPU indices of a result."""
    return {int(j): g for j, g in zip(result.job, result.gpus, strict=True)}


def _tighter(instance: Instance, *bounds: float | None) -> float | None:
    """The tightest of several valid bounds."""
    known = [b for b in bounds if b is not None]
    if not known:
        return None
    return max(known) if instance.objective.sense == "min" else min(known)


def static_result(
    instance: Instance,
    placed: dict[int, IntArray],
    status: Status,
    objective: float | None,
    bound: float | None,
    solver: str,
    missing_reason: str,
) -> Result:
    """A result for a static plan: every placed job starts at 0 and runs its duration."""
    jobs = np.array(sorted(placed), dtype=np.int64)
    types = np.array([instance.gpu_type[placed[j][0]] for j in jobs], dtype=np.int64)
    status = settled_status(status, objective, bound)
    return Result(
        status=status,
        objective=objective,
        bound=bound,
        solver=solver,
        job=jobs,
        gpu_type=types,
        gpus=tuple(placed[j] for j in jobs),
        start=np.zeros(jobs.size),
        end=instance.duration[jobs, types] if jobs.size else np.zeros(0),
        unplaced={j: missing_reason for j in range(instance.n_jobs) if j not in placed},
    )


def _remaining(options: SolveOptions, started: float, share: float = 1.0) -> SolveOptions:
    if options.time_limit_s is None:
        return options
    left = max(0.01, options.time_limit_s - (time.perf_counter() - started))
    return dataclasses.replace(options, time_limit_s=left * share)


def _infeasible(instance: Instance, model: AssignmentModel, solver: str,
                deadline: float = math.inf) -> Result:
    left = None if math.isinf(deadline) else max(0.0, deadline - time.perf_counter())
    reasons = infeasibility_reasons(instance) or dict.fromkeys(
        range(instance.n_jobs), explain_infeasible(model.program, left)
    )
    return Result(
        status=Status.INFEASIBLE, objective=None, bound=None, solver=solver,
        unplaced={j: reasons.get(j, "not planned: the instance is infeasible (see the jobs "
                                 "named)") for j in range(instance.n_jobs)},
    )


def fits(instance: Instance, placed: dict[int, IntArray]) -> bool:
    """Whether a static plan holds as it is.

    Every job it names is on as many distinct GPUs as its gang, of one node and one
    eligible type, within every GPU's capacity; and every job is placed unless the
    objective lets jobs go.
    """
    if not instance.objective.allows_unplaced and len(placed) < instance.n_jobs:
        return False
    load = np.zeros((instance.n_gpus, len(instance.resources)))
    for j, gpus in placed.items():
        if not 0 <= j < instance.n_jobs or gpus.size != instance.gang[j]:
            return False
        if gpus.min(initial=0) < 0 or gpus.max(initial=0) >= instance.n_gpus:
            return False
        t = int(instance.gpu_type[gpus[0]])
        if (np.unique(gpus).size != gpus.size or not instance.eligible[j, t]
                or (instance.gpu_type[gpus] != t).any()
                or (instance.gpu_node[gpus] != instance.gpu_node[gpus[0]]).any()):
            return False
        load[gpus] += instance.demand[j, t]
    capacity = instance.capacity[instance.gpu_type]
    return bool((load <= capacity * (1 + 1e-9)).all())


def _sign(instance: Instance) -> float:
    return -1.0 if instance.objective.sense == "max" else 1.0


def kept_plan(instance: Instance, found: Result, fallback: Result | None, why: str) -> Result:
    """The better of a solver's result and a plan known before it (greedy's, a warm start).

    The fallback stands when the solver found no plan (its budget spent building, or no
    incumbent in time) or a worse one; it then takes the solver's bound if tighter. ``why``
    says, in the solver string, why the solver gave no better plan.
    """
    # A fallback plan stands even against a claim of infeasibility: a plan that fits
    # disproves it.
    if fallback is None or not fallback.status.has_plan:
        return found
    assert fallback.objective is not None
    if found.status.has_plan and found.objective is not None and (
            _sign(instance) * found.objective <= _sign(instance) * fallback.objective):
        return found
    bound = _tighter(instance, found.bound, fallback.bound)
    return dataclasses.replace(
        fallback, bound=bound, status=settled_status(Status.FEASIBLE, fallback.objective, bound),
        solver=f"{found.solver}; {fallback.solver} plan kept ({why})",
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
            load = np.zeros((instance.n_gpus, len(instance.resources)))
            for j, gpus in placed.items():
                load[gpus] += instance.demand[j, gpu_type[gpus[0]]]
            return float((load / instance.capacity[gpu_type]).max(initial=0.0))
    values = job_value(instance)
    return float(sum(values[j, gpu_type[g[0]]] for j, g in placed.items()))


def no_plan(instance: Instance, solver: str, why: str, bound: float | None = None) -> Result:
    """No plan: every job unplaced with the reason."""
    return Result(status=Status.NO_SOLUTION, objective=None, bound=bound, solver=solver,
                  unplaced=dict.fromkeys(range(instance.n_jobs), why))


class SharedIncumbent:
    """The best plan of one lane, offered to branch-and-cut in the other (thread-safe)."""

    def __init__(self, sense: str) -> None:
        self._lock = threading.Lock()
        self._sign = -1.0 if sense == "max" else 1.0
        self._values: FloatArray | None = None
        self._value = np.inf
        self._given = True

    def update(self, values: FloatArray, value: float) -> None:
        """Record a new plan if it is better than the one held."""
        with self._lock:
            if self._sign * value < self._value - 1e-9:
                self._values, self._value, self._given = values.copy(), self._sign * value, False

    def offer(self, current: float) -> FloatArray | None:
        """The held plan, once, if it beats ``current`` (branch-and-cut's incumbent)."""
        with self._lock:
            if self._given or self._values is None or self._value >= self._sign * current:
                return None
            self._given = True
            return self._values


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
    model: AssignmentModel, relaxed: FloatArray, solver: HighsBackend, options: SolveOptions
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
    solution = solver.solve_program(sub, options, None)
    if solution.values is None:
        return None
    base[columns] = np.where(sub.integer, np.round(solution.values), solution.values)
    return base


@dataclass(frozen=True)
class MilpOptions:
    """Options of ``--method milp``."""

    backend: str = solver_option(("highs", "cpsat", "pyomo"), "the assignment MILP")


class MilpMethod:
    """The exact assignment MILP on HiGHS (default), CP-SAT or Pyomo."""

    name = "milp"
    description = "assignment MILP (static objectives) on --solver; HiGHS adds core + LNS"
    options_type = MilpOptions
    objectives = STATIC_OBJECTIVES
    backends: tuple[str, ...] = ("highs", "cpsat", "pyomo")
    warm_starts: frozenset[WarmStart] = frozenset({WarmStart.PLAN, WarmStart.LANE})
    iterative = False

    def supports(self, instance: Instance) -> bool:
        """The static objectives."""
        return AssignmentModel.supports(instance.objective)

    def solve(self, instance: Instance, options: SolveOptions) -> Result:
        """Build the model, warm-start it from greedy, and solve it.

        The time limit covers the greedy start, the build and the solve. When it is spent
        before the backend can run (or the backend finds no plan in time, or a worse one),
        the start plan is returned, greedy's or the warm start's, with the solver's bound
        where it has one.

        Without a time limit, with one thread, or on CP-SAT or Pyomo, the backend solves
        the whole model.
        With HiGHS, a time limit and two threads or more, two lanes run at once. One is
        branch-and-cut on the whole model for the whole time; it alone proves optimality,
        and when it does, the other lane stops. It runs alone for its first second (a tenth
        of the limit at most), so small instances are proven as fast as by the plain model.
        The other lane runs ``options.start_search`` if given (a heuristic warm start, whose
        plan branch-and-cut takes as an incumbent), solves the LP relaxation (a bound, and
        reduced costs), then the MIP
        over the jobs the LP splits with the others kept where the LP puts them, then the
        core MIP over each job's few best columns by reduced cost for half of the time left,
        then
        LNS over the whole model from the best plan until the time is up, the gap closes or
        the first lane ends. The better plan
        and the best bound are kept; the core's own bound counts only when reduced-cost
        fixing proves that the core holds every optimum.

        Parameters
        ----------
        instance
            A static-objective instance.
        options
            Time limit, threads, seed, gap tolerance and backend.
        """
        started = time.perf_counter()
        deadline = deadline_of(options, started)
        backend = get_backend(options.backend)
        fallback = self._start_plan(instance, options, deadline)
        try:
            model = AssignmentModel.build(instance, deadline)
        except OutOfTimeError as spent:
            why = f"the time limit was spent building the model's {spent}"
            return kept_plan(instance, no_plan(instance, f"{options.backend} not started",
                                               f"no plan: {why}", fallback.bound),
                             fallback, why)
        alone = (not isinstance(backend, HighsBackend) or options.time_limit_s is None
                 or options.threads < 2)
        if alone and options.start_search is not None:
            # No second lane to run the heuristic beside the solver: it runs first.
            searched = options.start_search(_remaining(options, started))
            fallback = kept_plan(instance, searched, fallback, "a better start")
        if options.warm_start is not None:
            start: FloatArray | None = model.encode(dict(options.warm_start))
        else:
            start = model.encode(placements(fallback)) if fallback.status.has_plan else None
        if alone:
            left = _remaining(options, started)
            solution = (backend.solve_bounded(model.program, left, start)
                        if isinstance(backend, HighsBackend)
                        else backend.solve_program(model.program, left, start))
            found = self._result(instance, model, solution.status, solution.values,
                                 solution.bound, solution.solver, deadline)
        else:
            found = self._portfolio(instance, model, options, started, start)
        return kept_plan(instance, found, fallback, "no better plan within the time limit")

    @staticmethod
    def _start_plan(instance: Instance, options: SolveOptions, deadline: float) -> Result:
        """The plan to fall back on: the warm start's when it holds, else greedy's."""
        if options.start_plan is not None and options.start_plan.status.has_plan:
            return options.start_plan
        if options.warm_start is not None:
            given = {int(j): np.asarray(g, dtype=np.int64)
                     for j, g in options.warm_start.items()}
            if fits(instance, given):
                return static_result(instance, given, Status.FEASIBLE,
                                     static_value(instance, given), objective_bound(instance),
                                     "warm start", "left out by the warm start")
        return best_fit_decreasing(instance, deadline=deadline)

    def _portfolio(
        self,
        instance: Instance,
        model: AssignmentModel,
        options: SolveOptions,
        started: float,
        start: FloatArray | None,
    ) -> Result:
        limit = options.time_limit_s
        assert limit is not None
        # Two lanes at once: each gets half of the threads, so that --threads holds for
        # the solve as a whole.
        options = dataclasses.replace(options, threads=max(1, options.threads // 2))
        program = model.program
        deadline = started + limit
        sense = -1.0 if program.sense == "max" else 1.0

        def better(a: FloatArray | None, b: FloatArray | None) -> FloatArray | None:
            if a is None or b is None:
                return a if b is None else b
            return a if sense * (program.cost @ a) <= sense * (program.cost @ b) else b

        # Lane 1, on its own thread (HiGHS releases the GIL): branch-and-cut on the whole
        # model for the whole time. It alone can prove optimality and tighten the bound.
        full: dict[str, ProgramSolution | BaseException] = {}
        core_solver = HighsBackend()
        shared = SharedIncumbent(program.sense)
        branch_and_cut_solver = HighsBackend()
        branch_and_cut_solver.offer = shared.offer

        def branch_and_cut() -> None:
            try:
                full["solution"] = branch_and_cut_solver.solve_program(
                    program, _remaining(options, started), start
                )
            except BaseException as exc:  # re-raised on the caller's thread
                full["solution"] = exc
            finally:
                if settled():
                    core_solver.cancel()  # the other lane has nothing left to add

        def settled() -> bool:
            """Whether branch-and-cut ended with a proof (optimal or infeasible).

            Ended otherwise (its time limit, or not started on a model too large for the
            time left), it leaves the rest of the time to the other lane.
            """
            outcome = full.get("solution")
            return not isinstance(outcome, ProgramSolution) or outcome.status in (
                Status.OPTIMAL, Status.INFEASIBLE)

        def going() -> bool:
            """Whether this lane has work left: until a proof, or the deadline."""
            return lane.is_alive() or not settled()

        new_highs(options)  # start HiGHS's thread pool before two threads use it
        lane = threading.Thread(target=branch_and_cut, name="gpuplan-branch-and-cut",
                                daemon=True)
        lane.start()
        # Small instances are proven within a second when branch-and-cut has the machine to
        # itself, as the plain model does; only then does the second lane start.
        lane.join(min(SOLO_SECONDS, SOLO_SHARE * limit))
        # Lane 2, here: a heuristic's start if asked, LP relaxation, reduced-cost core MIP,
        # then LNS.
        incumbent = start
        solver = "highs"
        if options.start_search is not None and going():
            found = options.start_search(dataclasses.replace(
                _remaining(options, started), stop=lambda: not going()))
            if found.status.has_plan:
                incumbent = better(model.encode(placements(found)), incumbent)
                assert incumbent is not None
                shared.update(incumbent, float(program.cost @ incumbent))
                solver += f" + {found.solver.split(' ')[0]} start"
        lp_value = relaxed = reduced = None
        if going():
            _, lp_value, relaxed, reduced = solve_relaxation(
                program, _remaining(options, started)
            )
        bound = lp_value
        if relaxed is not None and going():
            fixed = _lp_fixed_plan(model, relaxed, core_solver,
                                   _remaining(options, started, LP_FIX_SHARE))
            if fixed is not None:
                incumbent = better(fixed, incumbent)
                solver += " + LP-fixed MIP"
        if relaxed is not None and reduced is not None and going():
            core = reduced_cost_core(model, reduced, relaxed, CORE_COLUMNS_PER_JOB)
            if incumbent is not None:
                core |= incumbent > 0.5
            sub, columns = subprogram(program, core, np.zeros(program.n_cols))
            solution = core_solver.solve_program(
                sub, _remaining(options, started, CORE_SHARE),
                None if incumbent is None else incumbent[columns],
            )
            solver += f" + core MIP ({sub.n_cols} of {program.n_cols} columns)"
            if solution.values is not None:
                values = np.zeros(program.n_cols)
                values[columns] = np.where(sub.integer, np.round(solution.values),
                                           solution.values)
                incumbent = better(values, incumbent)
                assert incumbent is not None and lp_value is not None
                shared.update(incumbent, float(program.cost @ incumbent))
                # Reduced-cost fixing: a column outside the core would cost more than the
                # gap, so the core's bound then holds for the whole model.
                gap = sense * (float(program.cost @ incumbent) - lp_value)
                if solution.bound is not None and np.all(sense * reduced[~core] > gap + 1e-9):
                    bound = _tighter(instance, bound, solution.bound)
        bound = None if bound is None else program.round_bound(bound)
        if incumbent is not None and going():
            incumbent, steps, improved = improve(
                model, incumbent, options, deadline, bound, stop=lambda: not going(),
                on_improvement=shared.update,
            )
            solver += f" + LNS ({steps} steps, {improved} improvements)"
        if wait_for(lane, deadline, limit):
            outcome = full["solution"]
        else:
            branch_and_cut_solver.cancel()  # it stops at HiGHS's next callback
            outcome = still_busy()
        if isinstance(outcome, BaseException):
            raise outcome
        solver = f"{outcome.solver} (branch-and-cut || {solver})"
        if outcome.status in (Status.OPTIMAL, Status.INFEASIBLE):
            return self._result(instance, model, outcome.status, outcome.values,
                                outcome.bound, solver, deadline)
        bound = _tighter(instance, bound, outcome.bound)
        if outcome.values is not None:
            incumbent = better(np.where(program.integer, np.round(outcome.values),
                                        outcome.values), incumbent)
        status = Status.FEASIBLE if incumbent is not None else Status.NO_SOLUTION
        return self._result(instance, model, status, incumbent, bound, solver, deadline)

    @staticmethod
    def _result(
        instance: Instance,
        model: AssignmentModel,
        status: Status,
        values: FloatArray | None,
        bound: float | None,
        solver: str,
        deadline: float = math.inf,
    ) -> Result:
        if status is Status.INFEASIBLE:
            return _infeasible(instance, model, solver, deadline)
        bound = _tighter(instance, bound, objective_bound(instance))
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


@dataclass(frozen=True)
class LpOptions:
    """Options of ``--method lp``."""

    backend: str = solver_option(("highs", "pyomo"), "the pooled LP relaxation")
    rounding: str = option("largest-share", "--rounding", "how the relaxation is rounded "
                           "(default: largest-share)", choices=tuple(ROUNDINGS))


class LpMethod:
    """LP relaxation over pooled GPU types, rounded and improved."""

    name = "lp"
    description = "pooled LP relaxation + --rounding + job moves (assign-cost/-profit, max-weight)"
    options_type = LpOptions
    objectives = POOLED_OBJECTIVES
    backends: tuple[str, ...] = ("highs", "pyomo")
    warm_starts: frozenset[WarmStart] = frozenset()
    iterative = False

    def supports(self, instance: Instance) -> bool:
        """Objectives that sum a value per (job, type)."""
        return instance.objective in POOLED_OBJECTIVES

    def solve(self, instance: Instance, options: SolveOptions) -> Result:
        """Solve the relaxation, round it, improve the rounded plan until the time limit.

        Parameters
        ----------
        instance
            An instance whose objective is in :data:`POOLED_OBJECTIVES`.
        options
            Time limit, seed, backend (HiGHS or Pyomo) and rounding.
        """
        started = time.perf_counter()
        deadline = deadline_of(options, started)
        pooled = PooledModel.build(instance)
        backend = get_backend(options.backend)
        relaxation: ProgramSolution = backend.solve_program(
            pooled.program, _remaining(options, started, 0.5)
        )
        if relaxation.status is Status.INFEASIBLE:
            left = None if math.isinf(deadline) else max(0.0, deadline - time.perf_counter())
            reasons = infeasibility_reasons(instance) or dict.fromkeys(
                range(instance.n_jobs), explain_infeasible(pooled.program, left)
            )
            return Result(status=Status.INFEASIBLE, objective=None, bound=None,
                          solver=relaxation.solver, unplaced=reasons)
        if relaxation.values is None:
            shares: FloatArray = np.where(instance.eligible, 1.0, 0.0)
        else:
            shares = pooled.shares(relaxation.values)
        rounded = ROUNDINGS[options.rounding](instance, shares, options.seed, deadline)
        bound = _tighter(instance, relaxation.objective if relaxation.status is Status.OPTIMAL
                         else None, objective_bound(instance))
        solver = f"{relaxation.solver} + {options.rounding} rounding"
        placed = placements(rounded)
        if not instance.objective.allows_unplaced and len(placed) < instance.n_jobs:
            placed = repair_by_ejection(instance, placed, deadline)
            if len(placed) < instance.n_jobs:
                out_of_time = time.perf_counter() > deadline
                return static_result(
                    instance, placed, Status.NO_SOLUTION, None, bound, solver + " + repair",
                    "the time limit ended rounding and repair before every job had a GPU"
                    if out_of_time else "rounding and repair found no GPU with room for it",
                )
        placed, moves = improve_by_moves(instance, placed, deadline)
        value = static_value(instance, placed)
        return static_result(instance, placed, Status.FEASIBLE, value, bound,
                             f"{solver} + {moves} moves",
                             "left out: no GPU had room after rounding")
