"""Bounds on time-based objectives that need no search, shared by the time-based methods.

:func:`simple_bound` raises the combinatorial bounds of :mod:`gpuplan.models.bounds` by
the LPs of :mod:`gpuplan.models.scheduling` and :mod:`gpuplan.models.energetic`, solved on
the first registered backend that solves LPs (:func:`lp_backend`). Cut rows join the LPs
only where their last solution breaks them (:func:`solve_by_rows`), and
:func:`energetic_bound` refutes trial makespans above the window LP's optimum.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from gpuplan.backends import backend_for
from gpuplan.backends.base import Backend, Capabilities, ProgramSolution
from gpuplan.core.budget import Limits
from gpuplan.core.instance import FloatArray, Instance
from gpuplan.core.objectives import ObjectiveKind
from gpuplan.core.status import Status
from gpuplan.models.bounds import objective_bound
from gpuplan.models.energetic import (
    PackingRows,
    WindowProgram,
    keep_rows,
    packing_rows,
    trial_program,
    window_program,
    windows,
)
from gpuplan.models.scheduling import workload_program

logger = logging.getLogger(__name__)

#: Cut rows broken by more than this (relative to their bound) join the next round, at
#: most MAX_CUTS of them, the most broken first.
CUT_TOLERANCE, MAX_CUTS = 1e-7, 200
#: Relative margin by which an LP's makespan must exceed a trial ``T`` to prove it
#: infeasible (well above the LP solver's tolerances), and by which an LP's optimum is
#: lowered before it is reported as a bound (the solver's feasibility tolerance).
MARGIN, LP_TOLERANCE = 1e-6, 1e-7
#: Relative width at which the search for the largest infeasible ``T`` stops, and its
#: first step above the window LP's bound.
PRECISION, FIRST_STEP = 2e-3, 0.02
#: What the bounding LPs need of a backend.
LP = Capabilities(continuous=True)


def lp_backend() -> Backend:
    """A fresh backend for the bounding LPs: the first registered that solves LPs."""
    return backend_for(LP)


def simple_bound(instance: Instance, limits: Limits) -> float:
    """The best bound that needs no search: combinatorial, and LPs for makespan.

    For makespan, within ``limits`` (give it a part of the solve's budget): the workload
    LP (:func:`~gpuplan.models.scheduling.workload_program`, the quickest), then
    :func:`energetic_bound` (the window LP with completion
    times, windows and packing rows, then trial makespans refuted by energetic
    reasoning). What was proven before the budget ran out is kept; an LP cut short
    proves nothing and adds nothing, and the combinatorial bound is always there.
    """
    bound = objective_bound(instance)
    if instance.objective is ObjectiveKind.MAKESPAN:
        backend = lp_backend()
        solution = backend.solve_program(workload_program(instance), limits)
        if solution.status is Status.OPTIMAL and solution.objective is not None:
            bound = max(bound, solution.objective)
        bound = energetic_bound(instance, backend, limits, bound).value
    return bound


def solve_by_rows(model: WindowProgram, backend: Backend, limits: Limits,
                  enough: float = np.inf) -> ProgramSolution:
    """Solve the program with its cut rows added only where the last solution breaks them.

    Each round solves a relaxation of the program (a subset of its rows), so its optimum
    is a bound on the program's and its infeasibility is the program's; the rounds end
    when no cut row is broken (then the optimum is the program's) or the budget is spent
    (then the last round's solution is returned, still a relaxation's), or as soon as
    the optimum exceeds ``enough``.
    """
    program = model.program
    active = ~model.cuts
    cuts = np.flatnonzero(model.cuts)
    scale = np.maximum(1.0, np.abs(program.row_upper[cuts]))
    while True:
        solution = backend.solve_program(keep_rows(program, active), limits)
        if (solution.status is not Status.OPTIMAL or solution.values is None
                or solution.objective is None or solution.objective > enough):
            return solution
        excess = np.full(program.n_rows, -np.inf)
        excess[cuts] = (program.activity(solution.values)[cuts] - program.row_upper[cuts]) / scale
        broken = np.flatnonzero(~active & (excess > CUT_TOLERANCE))
        if not broken.size or limits.budget.spent():
            return solution
        active[broken[np.argsort(-excess[broken])[:MAX_CUTS]]] = True


@dataclass(frozen=True)
class EnergeticBound:
    """A proven makespan bound and what proved it.

    Attributes
    ----------
    value
        The bound, in seconds.
    source
        ``"windows"`` (the window LP's optimum), ``"energetic"`` (a trial makespan the
        trial LP or the windows refute), ``"given"`` (the bound passed in, above both) or
        ``"none"`` (no LP finished).
    trials
        How many trial makespans were solved.
    shares
        ``(J, T)`` the share of each job's work on each type in the last LP that did not
        refute its makespan (the window LP's, or the smallest such trial's), a guide for
        the type choices of plans near the bound; None when no LP finished.
    """

    value: float
    source: str
    trials: int
    shares: FloatArray | None = None


def energetic_bound(instance: Instance, backend: Backend, limits: Limits,
                    start: float = 0.0) -> EnergeticBound:
    """The window LP's optimum, raised by refuting trial makespans above it.

    The trials grow by :data:`FIRST_STEP`, doubling, until one is not refuted, then
    bisect until the interval is :data:`PRECISION` wide or the budget is spent; the
    largest refuted trial is the bound. Each trial is refuted only by a proof: the
    windows leave some job no type, or the trial LP is infeasible or its optimum exceeds
    the trial by :data:`MARGIN`.

    Parameters
    ----------
    instance
        A makespan instance.
    backend
        The LP solver.
    limits
        Every LP runs within these limits; when they are spent the best proof so far is
        returned.
    start
        A bound already proven (e.g. combinatorial), where the search may start.
    """
    packing = packing_rows(instance)
    base = windows(instance)
    if not base.feasible:
        return EnergeticBound(start, "none", 0)
    model = window_program(instance, packing, base)
    solution = solve_by_rows(model, backend, limits)
    if solution.status is not Status.OPTIMAL or solution.objective is None:
        return EnergeticBound(start, "none", 0)
    lp = solution.objective * (1 - LP_TOLERANCE)
    refuted, source = max(start, lp), "windows" if lp >= start else "given"
    shares = _shares(instance, model, solution.values)
    step, feasible, trials = FIRST_STEP, np.inf, 0
    # Trials grow by a share of the bound: there is nothing to grow from zero.
    while refuted > 0 and feasible > refuted * (1 + PRECISION) and not limits.budget.spent():
        trial = refuted * (1 + step) if np.isinf(feasible) else (refuted + feasible) / 2
        proven, found = _refutes(instance, packing, trial, backend, limits)
        if proven is None:
            break
        trials += 1
        if proven:
            refuted, step, source = trial, step * 2, "energetic"
        else:
            feasible, shares = trial, found
    logger.debug("energetic bound %s (%s) after %d trials", refuted, source, trials)
    return EnergeticBound(refuted, source, trials, shares)


def _shares(instance: Instance, model: WindowProgram, values: FloatArray | None
            ) -> FloatArray | None:
    """``(J, T)`` the share columns of an LP solution, by job and type."""
    if values is None:
        return None
    shares = np.zeros(instance.eligible.shape)
    shares[model.jobs, model.types] = values[:model.jobs.size]
    return shares


def _refutes(instance: Instance, packing: PackingRows, trial: float, backend: Backend,
             limits: Limits) -> tuple[bool | None, FloatArray | None]:
    """Whether the trial makespan is proven infeasible, and if not, the LP's type shares.

    The verdict is None when the LP did not finish.
    """
    frame = windows(instance, trial)
    if not frame.feasible:
        return True, None
    model = trial_program(instance, packing, frame, trial)
    solution = solve_by_rows(model, backend, limits, enough=trial * (1 + MARGIN))
    if solution.status is Status.INFEASIBLE:
        return True, None
    if solution.status is not Status.OPTIMAL or solution.objective is None:
        return None, None
    if solution.objective > trial * (1 + MARGIN):
        return True, None
    return False, _shares(instance, model, solution.values)
