"""``--method balance``: the allocation policies of :mod:`gpuplan.models.allocation`.

:func:`solve_policy` solves a policy with HiGHS and returns an :class:`Allocation`: the time
shares, the policy's value and each job's throughput. Max-min style policies are one LP;
finish-time fairness is a bisection over LP feasibility checks; quadratic balancing is a
QP. :class:`BalanceSolver` turns the shares into a plan: round by round
(:func:`~gpuplan.solvers.rounds.plan_rounds`) for the time-share policies, and whole jobs
on the type holding most of their work (list-scheduled) for quadratic balancing.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import time
from dataclasses import dataclass

import numpy as np

from gpuplan.instance import FloatArray, Instance, IntArray
from gpuplan.models.allocation import (
    SPACE_SHARING,
    AllocationProgram,
    PairColumns,
    Policy,
    ThroughputData,
    finish_time_program,
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
)
from gpuplan.schedule import Status
from gpuplan.solvers.base import (
    ProgramSolution,
    Result,
    SolveOptions,
    plan_status,
    time_objective,
)
from gpuplan.solvers.greedy import list_schedule
from gpuplan.solvers.highs import HighsBackend, HighsMaster, explain_infeasible
from gpuplan.solvers.rounds import plan_rounds
from gpuplan.solvers.time_bounds import simple_bound

logger = logging.getLogger(__name__)

#: Relative precision of the finish-time fairness bisection.
BISECTION_TOLERANCE = 1e-6


@dataclass(frozen=True)
class Allocation:
    """A policy's optimal time shares.

    Attributes
    ----------
    policy
        The policy solved.
    status
        ``optimal``, or why there is no allocation (``infeasible``, ``no_solution``).
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


def _solve(built: AllocationProgram, options: SolveOptions) -> ProgramSolution:
    return HighsBackend().solve_program(built.program, options)


def solve_policy(data: ThroughputData, policy: Policy, options: SolveOptions,
                 floor: float = 1.0) -> Allocation:
    """Solve one policy: exactly, or POP-style in ``options.partitions`` parts.

    Parameters
    ----------
    data
        Rates, gangs and GPU counts.
    policy
        Which policy.
    options
        Time limit, threads and seed for HiGHS; ``partitions``.
    floor
        For ``min-cost``: each job's throughput floor as a multiple of its equal share.
    """
    if data.colocation is not None and options.space_sharing:
        if policy not in SPACE_SHARING or options.partitions > 1:
            raise ValueError(f"space sharing is supported for the policies "
                             f"{', '.join(p.value for p in SPACE_SHARING)}, unpartitioned")
        return _space_sharing(data, policy, options)
    if options.partitions > 1:
        return _partitioned(data, policy, options, floor)
    return _exact(data, policy, options, floor)


def _space_sharing(data: ThroughputData, policy: Policy, options: SolveOptions) -> Allocation:
    """Max-min fairness or makespan with pairs of jobs sharing GPUs, by column generation.

    The master LP starts with every job alone (:func:`rate_program`); each round prices
    the pair columns (:func:`price_pairs`, best pairs per class pair, type and gang) and
    adds those of positive reduced cost, until none is left: then the master's optimum is
    the optimum over *all* pairs, without listing them. Stopped by the time limit, the
    allocation is feasible but not proven optimal.
    """
    began = time.perf_counter()
    scale = (1.0 / (data.weight * data.equal_share_rate()) if policy is Policy.MAX_MIN_FAIRNESS
             else makespan_scale(data))
    built = rate_program(data, scale)
    master = HighsMaster(built.program, options)
    pairs = PairColumns(*(np.zeros(0, dtype=np.int64),) * 3)
    rounds, status = 0, Status.OPTIMAL
    while True:
        solution, duals = master.solve()
        if duals is None or solution.values is None:
            if solution.values is None:
                return Allocation(policy, solution.status, np.zeros_like(data.rate), None,
                                  np.zeros(data.n_jobs), solution.solver,
                                  time.perf_counter() - began)
            status = Status.FEASIBLE
            break
        new = price_pairs(data, scale, duals, per_kind=PAIRS_PER_KIND)
        logger.debug("pricing round %d: master %.9g, %d new pair columns", rounds,
                     solution.objective, new.size)
        if new.size == 0:
            break
        left = _left(options, began)
        if left is not None and left <= 0:
            status = Status.FEASIBLE
            break
        if left is not None:
            master.set_time_limit(left)
        start, index, entries = new.matrix(data, scale)
        master.add_columns(np.zeros(new.size), np.ones(new.size), start, index, entries)
        pairs = PairColumns(np.r_[pairs.a, new.a], np.r_[pairs.b, new.b],
                            np.r_[pairs.gpu_type, new.gpu_type])
        rounds += 1
    share = built.shares(solution.values)
    pair_share = np.clip(solution.values[built.job.size + 1:], 0.0, None)
    rate_a, rate_b = pairs.rates(data)
    throughput = (data.rate * share).sum(axis=1)
    np.add.at(throughput, pairs.a, rate_a * pair_share)
    np.add.at(throughput, pairs.b, rate_b * pair_share)
    value = float((throughput * scale).min())
    if policy is Policy.MAKESPAN:
        value = 1.0 / float(throughput.min())
    used = int((pair_share > 1e-9).sum())
    logger.info("%s with space sharing: %s %.6g after %d pricing rounds, %d pair columns "
                "(%d used), %.3f s", policy.value, status.value, value, rounds, pairs.size,
                used, time.perf_counter() - began)
    return Allocation(policy, status, share, value, throughput,
                      f"{solution.solver}, {rounds} pricing rounds, {pairs.size} pair columns "
                      f"({used} used)", time.perf_counter() - began, pairs, pair_share)


#: Pairs added per (class, class, type, gang) and pricing round.
PAIRS_PER_KIND = 16


def _left(options: SolveOptions, began: float) -> float | None:
    """Seconds left of the time limit, or None without one."""
    if options.time_limit_s is None:
        return None
    return options.time_limit_s - (time.perf_counter() - began)


def _partitioned(data: ThroughputData, policy: Policy, options: SolveOptions,
                 floor: float) -> Allocation:
    """POP (Narayanan et al., SOSP 2021): job parts, each on a slice of every type.

    POP deals jobs at random; here the deal is stratified: jobs are sorted by gang size,
    then by how much faster their fastest type is than their slowest (ties broken at
    random, ``options.seed``), and dealt round-robin. Every part then holds the same mix
    of gangs and type preferences, which a max-min objective needs: its value is the
    worst part's, and a part that drew more big gangs than its GPUs' share drags it down
    (on 2,048 Gavel jobs in 8 parts, random deals lost 9% of the max-min value). Each
    type's GPUs are dealt out in whole GPUs as evenly as possible. Each part is solved
    exactly on its own, and the merged shares, feasible for the whole fleet, are scored
    on it.
    """
    began = time.perf_counter()
    parts = min(options.partitions, data.n_jobs)
    tie = np.random.default_rng(options.seed).random(data.n_jobs)
    fastest = data.rate.max(axis=1, initial=0.0)
    slowest = np.where(data.rate > 0, data.rate, np.inf).min(axis=1)
    order = np.lexsort((tie, fastest / slowest, data.gang))
    base, extra = np.divmod(data.gpus.astype(np.int64), parts)
    share = np.zeros_like(data.rate)
    solver = ""
    for k in range(parts):
        jobs = order[k::parts]
        part = _exact(restrict(data, jobs, (base + (k < extra)).astype(float)), policy,
                      options, floor)
        if part.status is not Status.OPTIMAL:
            return dataclasses.replace(part, share=share, seconds=time.perf_counter() - began)
        share[jobs] = part.share
        solver = part.solver
    throughput = (data.rate * share).sum(axis=1)
    value = policy_value(data, policy, share, floor)
    return Allocation(policy, Status.FEASIBLE, share, value, throughput,
                      f"{solver}, POP in {parts} parts", time.perf_counter() - began)


def _exact(data: ThroughputData, policy: Policy, options: SolveOptions,
           floor: float) -> Allocation:
    """Solve one policy on the whole fleet, to optimality (LPs and QPs solve exactly)."""
    began = time.perf_counter()
    if policy is Policy.FINISH_TIME_FAIRNESS:
        return _finish_time_fairness(data, options, began)
    built = {
        Policy.MAX_MIN_FAIRNESS: max_min_fairness_program,
        Policy.MAKESPAN: makespan_program,
        Policy.MAX_THROUGHPUT: max_throughput_program,
        Policy.MIN_COST: lambda d: min_cost_program(d, floor),
        Policy.QUADRATIC: quadratic_program,
    }[policy](data)
    solution = _solve(built, options)
    if solution.status is not Status.OPTIMAL or solution.values is None:
        return Allocation(policy, solution.status, np.zeros_like(data.rate), None,
                          np.zeros(data.n_jobs), solution.solver, time.perf_counter() - began)
    share = built.shares(solution.values)
    value = float(solution.objective) if solution.objective is not None else None
    throughput = (data.rate * share).sum(axis=1)
    match policy:
        case Policy.MAKESPAN:
            value = 1.0 / float(throughput.min()) if value else None
        case Policy.MIN_COST:
            value = None if value is None else value * 3600.0
        case Policy.QUADRATIC:
            value = None if value is None else value * load_unit(data) ** 2
            throughput = (data.gang[:, None] * share / np.where(data.rate > 0, data.rate,
                                                                 np.inf)).sum(axis=0)
    logger.info("%s: %s %s in %.3f s", policy.value, solution.status.value, value,
                time.perf_counter() - began)
    return Allocation(policy, Status.OPTIMAL, share, value, throughput, solution.solver,
                      time.perf_counter() - began)


def _finish_time_fairness(data: ThroughputData, options: SolveOptions,
                          began: float) -> Allocation:
    """Bisection on the largest finish-time ratio ``rho``, one LP feasibility check each.

    ``rho = 1`` is feasible (the equal share meets it); the lower end starts at the ratio
    every job would have with the whole fleet to itself.
    """
    equal = data.equal_share_rate()
    finish_equal = data.release + 1.0 / equal
    if not data.release.any():
        # rho_j = equal_j / throughput_j: max-min fairness with unit weights, one LP.
        built = rate_program(data, 1.0 / equal)
        best = _solve(built, options)
        if best.status is not Status.OPTIMAL or best.values is None:
            return Allocation(Policy.FINISH_TIME_FAIRNESS, best.status,
                              np.zeros_like(data.rate), None, np.zeros(data.n_jobs),
                              best.solver, time.perf_counter() - began)
        return _ratio_allocation(data, built, best, finish_equal, began)
    alone = data.release + 1.0 / (data.rate * np.minimum(1.0, data.gpus / data.gang[:, None])
                                  ).max(axis=1)
    low, high = float(np.max(alone / finish_equal, initial=0.0)), 1.0
    built = finish_time_program(data, high)
    best = _solve(built, options)
    if best.status is not Status.OPTIMAL:
        return Allocation(Policy.FINISH_TIME_FAIRNESS, best.status, np.zeros_like(data.rate),
                          None, np.zeros(data.n_jobs), best.solver, time.perf_counter() - began)
    while high - low > BISECTION_TOLERANCE * high:
        middle = 0.5 * (low + high)
        trial = finish_time_program(data, middle)
        solution = _solve(trial, options)
        if solution.status is Status.OPTIMAL:
            high, best, built = middle, solution, trial
        else:
            low = middle
    return _ratio_allocation(data, built, best, finish_equal, began)


def _ratio_allocation(data: ThroughputData, built: AllocationProgram, best: ProgramSolution,
                      finish_equal: FloatArray, began: float) -> Allocation:
    """The finish-time fairness allocation of a solved program, with its largest ratio."""
    assert best.values is not None
    share = built.shares(best.values)
    throughput = (data.rate * share).sum(axis=1)
    value = float(np.max((data.release + 1.0 / np.maximum(throughput, 1e-300)) / finish_equal))
    return Allocation(Policy.FINISH_TIME_FAIRNESS, Status.OPTIMAL, share, value, throughput,
                      best.solver, time.perf_counter() - began)


class BalanceSolver:
    """An allocation policy, rounded to a verified plan (``--method balance``)."""

    name = "balance"
    description = ("allocation policies (max-min fairness, makespan, ...) by LP/QP, rounded "
                   "to a round-based plan")

    def supports(self, instance: Instance) -> bool:
        """The time-based objectives: the plan has start times."""
        return not instance.objective.is_static

    def solve(self, instance: Instance, options: SolveOptions) -> Result:
        """Solve the policy, then realise its shares round by round (or place the work).

        Parameters
        ----------
        instance
            A time-based instance that passed the presolve checks.
        options
            ``policy``, ``round_s`` and ``floor``; time limit and threads for HiGHS.
        """
        policy = Policy(options.policy)
        data = ThroughputData.from_instance(instance)
        allocation = solve_policy(data, policy, options, floor=options.floor)
        bound = simple_bound(instance, options)
        summary = f"{allocation.solver}; {policy.value} {allocation.value:.6g}" \
            if allocation.value is not None else allocation.solver
        if not allocation.status.has_plan:
            reason = (f"policy {policy.value} has no allocation ({allocation.status.value}): "
                      + _why(policy, data, options, instance))
            return Result(status=allocation.status, objective=None, bound=bound,
                          solver=summary, unplaced=dict.fromkeys(range(instance.n_jobs), reason))
        if policy is Policy.QUADRATIC:
            return self._placement(instance, allocation, bound, summary)
        rounds = plan_rounds(instance, allocation.share, options.round_s, allocation.pairs,
                             allocation.pair_share)
        summary += (f"; {rounds.rounds} rounds of {options.round_s:g} s, tracking error mean "
                    f"{rounds.tracking_error.mean():.3f} max {rounds.tracking_error.max():.3f}")
        logger.info("balance: %s", summary)
        late = _late(instance, rounds.job, rounds.end)
        if late:
            return Result(status=Status.NO_SOLUTION, objective=None, bound=bound,
                          solver=summary, unplaced=late)
        objective = time_objective(instance, rounds.job, rounds.gpu_type, rounds.end,
                                   work=rounds.work)
        return Result(status=plan_status(objective, bound), objective=objective, bound=bound,
                      solver=summary, job=rounds.job, gpu_type=rounds.gpu_type,
                      start=rounds.start, end=rounds.end, gpus=rounds.gpus)

    @staticmethod
    def _placement(instance: Instance, allocation: Allocation, bound: float,
                   summary: str) -> Result:
        """Quadratic balancing: each job on the type holding most of its work, listed."""
        chosen = np.zeros_like(instance.eligible)
        chosen[np.arange(instance.n_jobs), allocation.share.argmax(axis=1)] = True
        placed = list_schedule(dataclasses.replace(instance, eligible=chosen
                                                   & instance.eligible))
        return Result(status=plan_status(placed.objective, bound), objective=placed.objective,
                      bound=bound, solver=f"{summary}; whole jobs on their main type",
                      job=placed.job, gpu_type=placed.gpu_type, start=placed.start,
                      end=placed.end, gpus=placed.gpus, unplaced=placed.unplaced)


def _late(instance: Instance, job: IntArray, end: FloatArray) -> dict[int, str]:
    """Jobs whose last segment ends after their deadline, with the reason."""
    finish = np.full(instance.n_jobs, -np.inf)
    np.maximum.at(finish, job, end)
    late = np.flatnonzero(finish > instance.deadline * (1 + 1e-9))
    return {int(j): (f"the round-based plan ends it at {finish[j]:g} s, after its deadline "
                     f"{instance.deadline[j]:g} s; try shorter rounds (--round) or --method cp")
            for j in late}


def _why(policy: Policy, data: ThroughputData, options: SolveOptions,
         instance: Instance) -> str:
    """The conflicting rows of an infeasible policy LP, by job id."""
    program = {Policy.MIN_COST: lambda: min_cost_program(data, options.floor).program}.get(
        policy)
    if program is None:
        return "the solver found none in time"
    text = explain_infeasible(program())
    return re.sub(r"throughput\[(\d+)\]",
                  lambda m: f"throughput floor of job {instance.job_ids[int(m[1])]!r}", text)
