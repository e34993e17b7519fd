"""Allocation policies solved on a backend: the time shares of every job on every type.

:func:`solve_policy` solves a policy of :mod:`gpuplan.models.allocation` on a backend
(HiGHS, or HiGHS through Pyomo) and returns an :class:`Allocation`: the time shares, the
policy's value and each job's throughput. Max-min style policies are one LP; finish-time
fairness a fixed point over a few max-min LPs; quadratic balancing is a QP; space sharing
prices pair columns into an LP held open by the backend (column generation, HiGHS only);
POP solves the policy in parts. ``--method balance`` turns the shares into a plan, and the
simulator's Gavel policies into rounds.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpuplan.backends import backends_with, get_backend
from gpuplan.backends.base import Backend, Capabilities, ProgramSolution
from gpuplan.core.errors import InputError, setting
from gpuplan.core.instance import FloatArray, Instance, IntArray
from gpuplan.core.objectives import time_objective
from gpuplan.core.options import check_range, option, parse_bool, parse_number
from gpuplan.core.settings import Context
from gpuplan.core.status import Status
from gpuplan.models.allocation import (
    SPACE_SHARING,
    FairShare,
    PairColumns,
    Policy,
    ThroughputData,
    chain_windows,
    fairness_scale,
    finish_time_need,
    finish_time_program,
    finish_time_ratios,
    has_windows,
    load_unit,
    makespan_program,
    makespan_scale,
    max_min_fairness_program,
    max_throughput_program,
    min_cost_program,
    policy_value,
    price_pairs,
    quadratic_program,
    rate_program,
    restrict,
    throughput_value,
    whole_job_need,
    whole_job_rates,
    window_program,
    window_shares,
)

logger = logging.getLogger(__name__)


#: Relative precision of finish-time fairness: the ratio found is within this share of a
#: proven lower bound on the optimum.
BISECTION_TOLERANCE = 1e-6


#: Fixed-point steps of finish-time fairness after which a bisection closes the gap left.
MAX_FIXED_POINT_STEPS = 30


#: Pricing rounds of space sharing after which the master stops (feasible, not proven).
MAX_PRICING_ROUNDS = 1_000


#: The backends the policies' programs go to, default first: HiGHS, or HiGHS through Pyomo
#: (which solves every policy but space sharing, whose column generation needs an open LP).
SOLVERS = backends_with(Capabilities(continuous=True))


#: Most parts POP may split an allocation into.
MAX_PARTITIONS = 10**9


def partitions_option() -> Any:
    """The ``partitions`` option (POP), as every part that solves allocations declares it."""
    return option(1, "--partitions", "solve the allocation POP-style in K parts of the jobs "
                  "and GPUs (at most the jobs and the GPUs; default: 1, exact)",
                  parse=parse_number(int, 1, MAX_PARTITIONS), metavar="K")


@dataclass(frozen=True)
class AllocationOptions:
    """What an allocation policy is solved with: the policy, its settings and the backend.

    ``--method balance`` and the simulator's Gavel policies declare these fields (the
    simulator's through :func:`partitions_option`), so each is defined once.
    """

    backend: str = option(SOLVERS[0], "--solver", "backend for the allocation LP/QP "
                          f"(default: {SOLVERS[0]})", choices=SOLVERS)
    policy: str = option(Policy.MAX_MIN_FAIRNESS.value, "--policy",
                         "the allocation policy (default: max-min-fairness)",
                         choices=tuple(p.value for p in Policy))
    floor: float = option(1.0, "--floor", "--policy min-cost: each job's throughput floor as "
                          "a multiple of its equal-share throughput (default: 1)",
                          parse=parse_number(float, 0, 1e6), metavar="F")
    fair_share: str = option(FairShare.GPUS.value, "--fair-share", "--policy max-min-fairness "
                             "or finish-time-fairness: what each job is owed, an equal share "
                             "of the GPUs (gpus, Gavel's: a gang of k GPUs gets 1/k of the "
                             "time) or of the time (time) (default: gpus)",
                             choices=tuple(b.value for b in FairShare))
    partitions: int = partitions_option()
    space_sharing: bool = option(False, "--space-sharing", "let pairs of jobs share GPUs at "
                                 "the instance's colocation speeds (policies max-min-fairness "
                                 "and makespan, priced in by column generation)",
                                 parse=parse_bool)

    def __post_init__(self) -> None:
        """Refuse values out of range, whoever gives them."""
        check_range("floor", self.floor, 0, 1e6)
        check_range("partitions", self.partitions, 1, MAX_PARTITIONS)


@dataclass(frozen=True)
class Allocation:
    """A policy's time shares.

    Attributes
    ----------
    policy
        The policy solved.
    status
        ``optimal``; ``feasible`` when the shares are not proven optimal (partitions, or
        a solve stopped by the time limit); or why there is no allocation
        (``infeasible``, ``no_solution``).
    share
        ``(J, T)`` time share of each job on each type (work share, for ``quadratic``).
    value
        The policy's objective: the max-min value, the largest finish-time ratio, the
        makespan in seconds, the normalised throughput sum, the spend per hour, or the sum
        of squared GPU loads.
    throughput
        ``(J,)`` share of each job done per second under ``share`` (for ``quadratic``,
        the GPU-seconds of each type instead, ``(T,)``).
    solver
        Backend and version.
    seconds
        Wall time of the solve.
    pairs
        With space sharing: the pair columns priced in, and ``pair_share`` their time
        shares; ``throughput`` counts them.
    pair_share
        ``(P,)`` time share of each pair column.
    """

    policy: Policy
    status: Status
    share: FloatArray
    value: float | None
    throughput: FloatArray
    solver: str
    seconds: float
    pairs: PairColumns | None = None
    pair_share: FloatArray | None = None


def _none(policy: Policy, data: ThroughputData, status: Status, solver: str,
          began: float) -> Allocation:
    """No allocation, and why (``status``)."""
    return Allocation(policy, status, np.zeros_like(data.rate), None, np.zeros(data.n_jobs),
                      solver, time.perf_counter() - began)


def check_partitions(partitions: int, n_jobs: int, gpus: int) -> None:
    """``--partitions K`` needs a job and a GPU for each of its ``K`` parts.

    Raises
    ------
    InputError
        Naming ``--partitions``, with the largest value that works.
    """
    most = min(n_jobs, gpus)
    if partitions > most:
        raise InputError(setting("partitions"), "", f"{partitions} parts for {n_jobs} jobs on "
                         f"{gpus} GPUs: every part needs at least one job and one GPU; use "
                         f"`partitions` of at most {most}")


def check_space_sharing(options: AllocationOptions) -> None:
    """``--space-sharing`` works with the max-min policies, unpartitioned.

    Raises
    ------
    InputError
        Naming ``--space-sharing`` and what it works with.
    """
    if options.space_sharing and (Policy(options.policy) not in SPACE_SHARING
                                  or options.partitions > 1):
        raise InputError(setting("space_sharing"), "", "works with `method` balance, `policy` "
                         + " or ".join(p.value for p in SPACE_SHARING)
                         + ", without `partitions`")


def solve_policy(data: ThroughputData, options: AllocationOptions, context: Context) -> Allocation:
    """Solve ``options.policy``: exactly, or POP-style in ``options.partitions`` parts.

    The context's budget covers building and solving every program: a solve stopped by it
    gives ``feasible`` shares when it has some, ``no_solution`` otherwise.

    Parameters
    ----------
    data
        Rates, gangs and GPU counts; with colocation speeds, pairs may share GPUs.
    options
        The policy, its ``floor`` (``min-cost``: each job's throughput floor as a multiple
        of its equal share), ``fair_share`` (the fairness policies' basis,
        :class:`~gpuplan.models.allocation.FairShare`), ``partitions``, ``space_sharing``
        and the backend.
    context
        The budget; threads, seed and gap for the backend (the seed also breaks ties in
        the deal of the partitions).

    Raises
    ------
    InputError
        If ``options.partitions`` exceeds the jobs or the GPUs, or space sharing is asked
        of another policy or with partitions.
    """
    backend = get_backend(options.backend)
    policy = Policy(options.policy)
    if data.colocation is not None and options.space_sharing:
        check_space_sharing(options)
        return _space_sharing(data, policy, FairShare(options.fair_share), backend, context)
    if options.partitions > 1:
        check_partitions(options.partitions, data.n_jobs, int(data.gpus.sum()))
        return _partitioned(data, policy, options, backend, context)
    return _exact(data, policy, options, backend, context)


def _space_sharing(data: ThroughputData, policy: Policy, basis: FairShare, backend: Backend,
                   context: Context) -> Allocation:
    """Max-min fairness or makespan with pairs of jobs sharing GPUs, by column generation.

    The master LP starts with every job alone (:func:`rate_program`); each round prices
    the pair columns (:func:`price_pairs`, best pairs per class pair, type and gang) and
    adds those of positive reduced cost, until none is left: then the master's optimum is
    the optimum over *all* pairs, without listing them. A column already in the master is
    never added again. Stopped by the time limit, or after :data:`MAX_PRICING_ROUNDS`
    rounds, the last master solution is kept: feasible, not proven optimal.
    """
    began = time.perf_counter()
    budget = context.budget
    scale = (fairness_scale(data, basis)[0] if policy is Policy.MAX_MIN_FAIRNESS
             else makespan_scale(data))
    built = rate_program(data, scale)
    if budget.spent():
        return _none(policy, data, Status.NO_SOLUTION,
                     f"{backend.name} (not started: the time limit was spent)", began)
    master = backend.open(built.program, context.limits())
    n_types = int(data.gpus.size)
    pairs = PairColumns(*(np.zeros(0, dtype=np.int64),) * 3)
    known = np.zeros(0, dtype=np.int64)
    # The last master solution with values, and how many pair columns it covers.
    kept: tuple[ProgramSolution, int] | None = None
    rounds, status = 0, Status.OPTIMAL
    while True:
        solution = master.solve(budget)
        duals = solution.duals
        if solution.values is not None and solution.status.has_plan:
            kept = (solution, pairs.size)
        if duals is None:
            status = Status.FEASIBLE
            break
        if budget.spent() or rounds >= MAX_PRICING_ROUNDS:
            status = Status.FEASIBLE
            break
        new = price_pairs(data, scale, duals, per_kind=PAIRS_PER_KIND, budget=budget)
        if new is None:
            status = Status.FEASIBLE
            break
        key = (new.a * data.n_jobs + new.b) * n_types + new.gpu_type
        fresh = ~np.isin(key, known)
        if not fresh.all():
            # A column of the master priced in again: its reduced cost is float noise.
            logger.debug("pricing round %d: %d columns already in the master", rounds,
                         int((~fresh).sum()))
            status = Status.FEASIBLE
        new = PairColumns(new.a[fresh], new.b[fresh], new.gpu_type[fresh])
        key = np.unique(key[fresh])
        logger.debug("pricing round %d: master %.9g, %d new pair columns", rounds,
                     solution.objective, new.size)
        if new.size == 0:
            break
        if budget.spent():
            status = Status.FEASIBLE
            break
        start, index, entries = new.matrix(data, scale)
        # No upper bound of their own (the time rows keep them <= 1): a column of the
        # master is then never priced in again, short of float noise.
        master.add_columns(np.zeros(new.size), np.full(new.size, np.inf), start, index,
                           entries)
        pairs = PairColumns(np.r_[pairs.a, new.a], np.r_[pairs.b, new.b],
                            np.r_[pairs.gpu_type, new.gpu_type])
        known = np.union1d(known, key)
        rounds += 1
    if kept is None:
        return _none(policy, data, solution.status, solution.solver, began)
    solution, covered = kept
    assert solution.values is not None
    pairs = PairColumns(pairs.a[:covered], pairs.b[:covered], pairs.gpu_type[:covered])
    share = built.shares(solution.values)
    pair_share = np.clip(solution.values[built.job.size + 1:][:covered], 0.0, None)
    rate_a, rate_b = pairs.rates(data)
    throughput = (data.rate * share).sum(axis=1)
    np.add.at(throughput, pairs.a, rate_a * pair_share)
    np.add.at(throughput, pairs.b, rate_b * pair_share)
    value = throughput_value(data, policy, throughput, basis)
    used = int((pair_share > 1e-9).sum())
    logger.info("%s with space sharing: %s %.6g after %d pricing rounds, %d pair columns "
                "(%d used), %.3f s", policy.value, status.value, value, rounds, pairs.size,
                used, time.perf_counter() - began)
    return Allocation(policy, status, share, value, throughput,
                      f"{solution.solver}, {rounds} pricing rounds, {pairs.size} pair columns "
                      f"({used} used)", time.perf_counter() - began, pairs, pair_share)


#: Pairs added per (class, class, type, gang) and pricing round.
PAIRS_PER_KIND = 16


def _deal_gpus(gpus: FloatArray, parts: int) -> FloatArray:
    """``(parts, T)`` each part's GPUs of each type: whole GPUs, dealt round-robin.

    The GPUs are dealt one by one over the parts, type after type, so that each part gets
    ``G // parts`` or one more in all, and every part some GPU when ``parts <= G``.
    """
    count = gpus.astype(np.int64)
    base, extra = np.divmod(count, parts)
    first = np.r_[0, np.cumsum(extra)[:-1]] % parts
    k = np.arange(parts)[:, None]
    dealt: FloatArray = (base[None, :] + ((k - first[None, :]) % parts < extra[None, :])
                         ).astype(float)
    return dealt


def _partitioned(data: ThroughputData, policy: Policy, options: AllocationOptions,
                 backend: Backend, context: Context) -> Allocation:
    """POP (Narayanan et al., SOSP 2021): job parts, each on a slice of every type.

    POP deals jobs at random; here the deal is stratified: jobs are sorted by gang size,
    then by priority weight, then by how much faster their fastest type is than their
    slowest (ties broken at random, the context's seed), and dealt round-robin. Every part
    then holds the same mix of gangs, weights and type preferences, which a max-min
    objective needs: its value is the worst part's, and a part that drew more big gangs
    (or heavy weights) than its GPUs' share drags it down (on Gavel jobs in 8 parts, random
    deals lost a clear share of the max-min value, and so did a deal blind to Gavel's
    priorities; docs/benchmarks.md, "Allocation policies (`--method balance`, issue 5)").
    The GPUs are dealt out in whole GPUs, round-robin over the parts (:func:`_deal_gpus`).
    Each part is solved exactly on its own, and the merged shares, feasible for the whole
    fleet, are scored on it. The caller checks that there are no more parts than jobs or
    GPUs (:func:`check_partitions`).
    """
    began = time.perf_counter()
    parts = options.partitions
    tie = np.random.default_rng(context.seed).random(data.n_jobs)
    fastest = data.rate.max(axis=1, initial=0.0)
    slowest = np.where(data.rate > 0, data.rate, np.inf).min(axis=1)
    order = np.lexsort((tie, fastest / slowest, data.weight, data.gang))
    dealt = _deal_gpus(data.gpus, parts)
    share = np.zeros_like(data.rate)
    solver = ""
    for k in range(parts):
        jobs = order[k::parts]
        part = _exact(restrict(data, jobs, dealt[k]), policy, options, backend, context)
        if not part.status.has_plan:
            return dataclasses.replace(part, share=share, seconds=time.perf_counter() - began)
        share[jobs] = part.share
        solver = part.solver
    throughput = (data.rate * share).sum(axis=1)
    value = policy_value(data, policy, share, options.floor, FairShare(options.fair_share))
    return Allocation(policy, Status.FEASIBLE, share, value, throughput,
                      f"{solver}, POP in {parts} parts", time.perf_counter() - began)


def _exact(data: ThroughputData, policy: Policy, options: AllocationOptions, backend: Backend,
           context: Context) -> Allocation:
    """Solve one policy on the whole fleet, to optimality unless the budget stops it."""
    began = time.perf_counter()
    basis = FairShare(options.fair_share)
    if policy is Policy.FINISH_TIME_FAIRNESS:
        return _finish_time_fairness(data, basis, backend, context, began)
    if policy is Policy.MAKESPAN and data.whole is not None and data.whole.any():
        return _whole_jobs_makespan(data, options, backend, context, began)
    if policy is Policy.MAKESPAN and has_windows(data):
        windows = window_program(data)
        solved = backend.solve_program(windows.program, context.limits())
        if not solved.status.has_plan or solved.values is None:
            return _none(policy, data, solved.status, solved.solver, began)
        share, makespan = window_shares(data, windows, solved.values)
        return Allocation(policy, solved.status, share, makespan,
                          (data.rate * share).sum(axis=1), solved.solver,
                          time.perf_counter() - began)
    built = {
        Policy.MAX_MIN_FAIRNESS: lambda d: max_min_fairness_program(d, basis),
        Policy.MAKESPAN: makespan_program,
        Policy.MAX_THROUGHPUT: max_throughput_program,
        Policy.MIN_COST: lambda d: min_cost_program(d, options.floor),
        Policy.QUADRATIC: quadratic_program,
    }[policy](data)
    solution = backend.solve_program(built.program, context.limits())
    if not solution.status.has_plan or solution.values is None:
        return _none(policy, data, solution.status, solution.solver, began)
    share = built.shares(solution.values)
    value = float(solution.objective) if solution.objective is not None else None
    throughput = (data.rate * share).sum(axis=1)
    match policy:
        case Policy.MAX_MIN_FAIRNESS | Policy.MAKESPAN:
            # Measured on the shares: alike jobs may have shared columns (job_groups).
            value = throughput_value(data, policy, throughput, basis)
        case Policy.MIN_COST:
            value = None if value is None else value * 3600.0
        case Policy.QUADRATIC:
            value = None if value is None else value * load_unit(data) ** 2
            throughput = (data.gang[:, None] * share / np.where(data.rate > 0, data.rate,
                                                                 np.inf)).sum(axis=0)
    logger.info("%s: %s %s in %.3f s", policy.value, solution.status.value, value,
                time.perf_counter() - began)
    return Allocation(policy, solution.status, share, value, throughput, solution.solver,
                      time.perf_counter() - began)


def _whole_jobs_makespan(data: ThroughputData, options: AllocationOptions, backend: Backend,
                         context: Context, began: float) -> Allocation:
    """The makespan policy when some jobs run in one piece: types they fit whole.

    With ``f(C)`` the makespan program's value on the rates without the types where a
    whole job outlasts its window in ``C`` (:func:`~gpuplan.models.allocation.whole_job_rates`),
    every plan that runs one job at a time per GPU has a makespan ``M >= f(M)``, and
    ``f`` only grows as ``C`` shrinks (fewer types); so the least ``C`` with
    ``f(C) <= C`` bounds every such plan, as the program on all rates does, and is at
    least as high. ``f`` changes only where ``C`` passes a whole job's need (head, run
    time and tail, :func:`~gpuplan.models.allocation.whole_job_need`): between two needs
    it is constant, and the least ``C`` is ``max(start, f(start))`` in the
    first such interval where ``f(start)`` is below the interval's end, found by
    bisection over the needs (a few more LPs). The shares are the program's there;
    the value is that least ``C``. A program stopped by the time limit ends the search
    with the last shares solved (``feasible``).
    """
    assert data.whole is not None
    need = whole_job_need(data)
    whole = data.whole[:, None] & np.isfinite(need)
    # A whole job takes its shortest need at least: no C below it has a program.
    shortest = float(need.min(axis=1).max(initial=0.0))
    full = _exact(dataclasses.replace(data, whole=None), Policy.MAKESPAN, options, backend,
                  context)
    if not full.status.has_plan or full.value is None:
        return full
    least = max(full.value, shortest)

    def at(makespan: float) -> Allocation:
        return _exact(dataclasses.replace(whole_job_rates(data, makespan), whole=None),
                      Policy.MAKESPAN, options, backend, context)

    kept = at(least)
    if not kept.status.has_plan or kept.value is None:
        return dataclasses.replace(full, status=Status.FEASIBLE)
    points = np.unique(need[whole & (need > least) & (need <= kept.value)])
    starts = np.r_[least, points]
    ends = np.r_[points, np.inf]
    # The first interval i whose f(start) is below its end: f falls and ends grow.
    low, high, start = 0, starts.size - 1, least
    solved = {0: kept}
    while low < high:
        middle = (low + high) // 2
        trial = at(float(starts[middle]))
        if not trial.status.has_plan or trial.value is None:
            return dataclasses.replace(kept, status=Status.FEASIBLE)
        solved[middle] = trial
        if trial.value < ends[middle]:
            high = middle
        else:
            low = middle + 1
    if low not in solved:
        solved[low] = at(float(starts[low]))
    kept, start = solved[low], float(starts[low])
    if not kept.status.has_plan or kept.value is None:
        return dataclasses.replace(full, status=Status.FEASIBLE)
    value = max(start, kept.value)
    logger.info("makespan with whole jobs: %.6g (all types: %.6g), %d LPs", value, full.value,
                len(solved) + 1)
    return dataclasses.replace(kept, value=value, seconds=time.perf_counter() - began)


def _finish_time_fairness(data: ThroughputData, basis: FairShare, backend: Backend,
                          context: Context, began: float) -> Allocation:
    """The smallest largest finish-time ratio ``rho``: one LP, or a fixed point over LPs.

    With ``B_j`` the job's :meth:`~ThroughputData.isolated_time`, ``e_j`` its elapsed time,
    ``R_j`` its work left and ``c_j = e_j / B_j``, a job's ratio under shares ``X`` is
    ``rho_j(X) = c_j + R_j / (B_j thr_j(X))``. When no job has waited (``e`` 0, a static
    batch or a fresh state) that is ``B_j / R_j`` over the throughput: max-min fairness
    with those row scales, one LP.

    Otherwise a Dinkelbach-style fixed point over max-min LPs (:func:`rate_program`), with
    the row normalisation of Crouzeix, Ferland and Schaible (1985). It starts at the fair
    share, ``X_0``, and its largest ratio ``rho_0``. At step ``k`` the LP maximises ``w``
    subject to, for every job,

        ((rho_k B_j - e_j) thr_j(X) - R_j) / (B_j thr_j(X_k)) >= w,

    that is ``(rho_k - c_j) thr_j(X) / thr_j(X_k) - w >= rho_j(X_k) - c_j``. ``X_k`` meets
    every row with ``rho_k - rho_j(X_k) >= 0``, so the optimum ``w_k >= 0``, and its
    shares give every job ``(rho_k B_j - e_j) thr_j >= R_j``, i.e. ``rho_j <= rho_k``:
    ``rho_{k+1} = max_j rho_j(X_{k+1}) <= rho_k``, feasible. Shares with every ratio below
    ``rho_k`` would meet every row with more than 0, so ``w_k = 0`` proves ``rho_k``
    optimal: the fixed point is the optimum. Normalising each row by the job's last
    ``B_j thr_j`` (rather than by ``R_j``, the plain generalised Dinkelbach step) makes
    the steps converge superlinearly: a bottleneck job with ``c_j`` near ``rho*`` (it has
    waited long) slowed the plain steps to a crawl (on a long Gavel run some recomputes
    were still short of the tolerance after many steps), where these mostly reached it in
    one step (the second gaining nothing), and never took more than a few.

    The steps stop when one gains less than :data:`BISECTION_TOLERANCE`; one LP
    feasibility check at ``rho (1 - BISECTION_TOLERANCE)`` (:func:`finish_time_program`)
    then proves the ratio optimal to that tolerance, as the bisection did, or gives better
    shares to go on from. After :data:`MAX_FIXED_POINT_STEPS`, a bisection closes the gap
    left (:func:`_bisect`). Stopped by the time limit, the best ratio proven feasible so
    far is kept (``feasible``); ``no_solution`` if the first LP gave none.
    """
    limits = context.limits()
    isolated = data.isolated_time(basis)
    if not data.waited().any():
        built = rate_program(data, isolated / data.work_left(), grouped=True)
        best = backend.solve_program(built.program, limits)
        if not best.status.has_plan or best.values is None:
            return _none(Policy.FINISH_TIME_FAIRNESS, data, best.status, best.solver, began)
        return _ratio_allocation(data, basis, built.shares(best.values), best.solver, began,
                                 best.status)
    alone = (data.rate * np.minimum(1.0, data.gpus / data.gang[:, None])).max(axis=1)
    low = float(finish_time_ratios(data, alone, basis).max(initial=0.0))
    waited = data.waited() / isolated
    share = data.fair_share(basis)
    throughput = data.fair_share_rate(basis)
    ratios = finish_time_ratios(data, throughput, basis)
    rho = float(ratios.max(initial=0.0))
    kept: tuple[FloatArray, str] | None = None
    status = Status.OPTIMAL
    for step in range(1, MAX_FIXED_POINT_STEPS + 1):
        built = rate_program(data, (rho - waited) / throughput, floor=ratios - waited)
        solution = backend.solve_program(built.program, limits)
        if not solution.status.has_plan or solution.values is None:
            if kept is None:
                return _none(Policy.FINISH_TIME_FAIRNESS, data, solution.status,
                             solution.solver, began)
            status = Status.FEASIBLE
            break
        previous = rho
        # Every row promises its job the throughput of ratio rho.
        trial = _meet(data, basis, built.shares(solution.values),
                      finish_time_need(data, rho, basis))
        trial_throughput = (data.rate * trial).sum(axis=1)
        trial_ratios = finish_time_ratios(data, trial_throughput, basis)
        if kept is None or trial_ratios.max(initial=0.0) < rho:
            share, throughput, ratios = trial, trial_throughput, trial_ratios
            rho = float(ratios.max(initial=0.0))
            kept = (share, solution.solver)
        if solution.status is not Status.OPTIMAL:
            status = Status.FEASIBLE
            break
        if previous - rho > BISECTION_TOLERANCE * previous and step < MAX_FIXED_POINT_STEPS:
            continue
        if step == MAX_FIXED_POINT_STEPS:
            logger.debug("finish-time fairness: bisection after %d fixed-point steps, rho "
                         "in [%.9g, %.9g]", step, low, rho)
            kept, status = _bisect(data, basis, backend, context, low, rho, kept)
            break
        # Too little gain: a ratio a tolerance lower is infeasible (done), or a step on.
        check = finish_time_program(data, rho * (1.0 - BISECTION_TOLERANCE), basis)
        proof = backend.solve_program(check.program, limits)
        if proof.status is Status.INFEASIBLE:
            logger.debug("finish-time fairness: rho %.9g in %d fixed-point steps", rho, step)
            break
        if not proof.status.has_plan or proof.values is None:
            status = Status.FEASIBLE
            break
        share = _meet(data, basis, check.shares(proof.values),
                      finish_time_need(data, rho * (1.0 - BISECTION_TOLERANCE), basis))
        throughput = (data.rate * share).sum(axis=1)
        ratios = finish_time_ratios(data, throughput, basis)
        rho = float(ratios.max(initial=0.0))
        kept = (share, proof.solver)
    assert kept is not None
    return _ratio_allocation(data, basis, *kept, began, status)


def _meet(data: ThroughputData, basis: FairShare, share: FloatArray,
          need: FloatArray) -> FloatArray:
    """``share``, with a little of the fair share mixed in if a job misses its ``need``.

    The LPs give every job at least its throughput ``need``, but a job that needs a
    share far below their tolerances (work left of 1e-12) may still get none, and an
    unbounded ratio. Mixing in the least part of the fair share that meets every such
    need (a small need: the fair share's throughput meets it) costs the other jobs that
    part of their throughput. Shares that meet every need come back unchanged.
    """
    throughput = (data.rate * share).sum(axis=1)
    short = throughput < need * (1.0 - BISECTION_TOLERANCE)
    if not short.any():
        return share
    fair = data.fair_share_rate(basis)[short]
    part = float(np.clip((need[short] - throughput[short]) / np.maximum(
        fair - throughput[short], 1e-300), 0.0, 1.0).max())
    mixed: FloatArray = (1.0 - part) * share + part * data.fair_share(basis)
    return mixed


def _bisect(data: ThroughputData, basis: FairShare, backend: Backend, context: Context,
            low: float, high: float, kept: tuple[FloatArray, str]
            ) -> tuple[tuple[FloatArray, str], Status]:
    """Bisection of the finish-time ratio between ``low`` (a bound) and ``high`` (``kept``'s).

    One LP feasibility check per step (:func:`finish_time_program`), at most
    ``log2((high - low) / (BISECTION_TOLERANCE * high))`` of them. Returns the shares of
    the best ratio proven feasible, and ``optimal``, or ``feasible`` when the time limit
    stopped it.
    """
    limits = context.limits()
    while high - low > BISECTION_TOLERANCE * high:
        middle = 0.5 * (low + high)
        trial = finish_time_program(data, middle, basis)
        solution = backend.solve_program(trial.program, limits)
        if solution.status.has_plan and solution.values is not None:
            share = _meet(data, basis, trial.shares(solution.values),
                          finish_time_need(data, middle, basis))
            high, kept = middle, (share, solution.solver)
        elif solution.status is Status.INFEASIBLE:
            low = middle
        else:
            # Stopped by the time limit: ``high`` is the best ratio proven feasible.
            return kept, Status.FEASIBLE
    return kept, Status.OPTIMAL


def _ratio_allocation(data: ThroughputData, basis: FairShare, share: FloatArray, solver: str,
                      began: float, status: Status) -> Allocation:
    """The finish-time fairness allocation of these shares, with its largest ratio."""
    throughput = (data.rate * share).sum(axis=1)
    value = throughput_value(data, Policy.FINISH_TIME_FAIRNESS, throughput, basis)
    return Allocation(Policy.FINISH_TIME_FAIRNESS, status, share, value, throughput,
                      solver, time.perf_counter() - began)


def structured(instance: Instance, data: ThroughputData, jobs: IntArray,
               remaining: FloatArray | None = None, now: float = 0.0) -> ThroughputData:
    """``data`` of these jobs with what the makespan policy reads of the batch's structure.

    Which jobs run whole (not preemptible) and each job's head and tail
    (:func:`~gpuplan.models.allocation.chain_windows`); the other policies read neither.
    """
    head, tail = chain_windows(instance, jobs, remaining, now)
    return dataclasses.replace(data, whole=~instance.preemptible[jobs], head=head, tail=tail)


def fluid_value(instance: Instance, data: ThroughputData, allocation: Allocation) -> float:
    """The instance's objective in the allocation's fluid plan (the round plan's model).

    In the fluid plan each job runs at its allocation's throughput from its head (its
    earliest start, :func:`~gpuplan.models.allocation.chain_windows`; 0 when ``data``
    has none), on every type at once in its shares, and ends when its work is done. For
    the makespan policy its makespan is the policy's value, a lower bound on every plan
    that runs one job per GPU at a time; for other policies and objectives it is the
    value the round plan aims at, not a bound.
    """
    work = data.rate * allocation.share
    throughput = work.sum(axis=1)
    head = np.zeros(data.n_jobs) if data.head is None else data.head
    end = head + data.work_left() / np.maximum(throughput, 1e-300)
    job, kind = np.nonzero(work > 0)
    return time_objective(instance, job, kind, end[job],
                          work=work[job, kind] / throughput[job])


def why_none(policy: Policy, data: ThroughputData, options: AllocationOptions, instance: Instance,
         backend: Backend, context: Context) -> str:
    """Why a policy has no allocation: the conflicting rows of min-cost's LP, by job id.

    Only ``min-cost`` has rows that can conflict (its throughput floors); they are named
    when the backend can explain infeasibility and the budget leaves time for it.
    """
    if policy is not Policy.MIN_COST:
        return "the solver found none in time"
    if not backend.capabilities.explain:
        return f"the {backend.name} backend cannot name the conflicting throughput floors"
    if context.budget.spent():
        return "the time limit left no time to name the conflicting throughput floors"
    text = backend.explain_infeasible(min_cost_program(data, options.floor).program,
                                      context.limits())
    return re.sub(r"throughput\[(\d+)\]",
                  lambda m: f"throughput floor of job {instance.job_ids[int(m[1])]!r}", text)
