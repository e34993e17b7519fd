"""``--method balance``: the allocation policies of :mod:`gpuplan.models.allocation`.

:func:`solve_policy` solves a policy on a backend (HiGHS, or HiGHS through Pyomo) and
returns an :class:`Allocation`: the time shares, the policy's value and each job's
throughput. Max-min style policies are one LP; finish-time fairness a fixed point over a
few max-min LPs; quadratic balancing is a QP; space sharing prices pair columns into an
LP held open by the backend (column generation, HiGHS only). :class:`BalanceMethod` turns
the shares into a plan: round by round (:func:`~gpuplan.parts.round_plans.plan_rounds`) for
the time-share policies, each segment stating its share of its job's work and, when two
jobs share GPUs, its partner segment; and whole jobs on the type holding most of their work
(list-scheduled) for quadratic balancing. Like Gavel, the plan pays no checkpoint or
migration overheads.

**Batches that change as they run.** When jobs arrive later (releases, dependencies) or
run in one piece (not preemptible), one static allocation is not the policy's plan: the
policy is solved again for what is left whenever the ready jobs or the jobs holding their
GPUs change (:func:`_reallocator`), and the rounds follow the latest shares. The makespan
policy then fits each job's run between its head and tail (releases and chains,
:func:`~gpuplan.models.allocation.window_program`), and a whole job only on types where it
fits (:func:`_whole_jobs_makespan`); its value is a lower bound on every plan that runs
one job per GPU at a time (not on plans whose jobs share a GPU by compute shares). Each
plan reports its *fluid plan*'s value of the instance's objective (:func:`fluid_value`).

**Time limit.** The solve's budget covers everything: building and solving the programs
(the backend gets only the time that is left), the pricing rounds of space sharing, the
round-based plan, and the translation, verification and writing of its segments
(:data:`SEGMENT_COST_S` each). With a limit, the greedy list-scheduling plan is made
first (it takes milliseconds); when no allocation is solved in time, or the round-based
plan cannot be finished in time or misses a deadline that greedy's meets, that plan is
returned instead, never a partial one.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from gpuplan.backends import get_backend
from gpuplan.backends.base import Capabilities
from gpuplan.core.budget import Budget
from gpuplan.core.errors import InputError, setting
from gpuplan.core.instance import MAX_TIME_S, FloatArray, Instance, IntArray
from gpuplan.core.objectives import TIME_OBJECTIVES, ObjectiveKind, time_objective
from gpuplan.core.options import check_range, option, parse_seconds
from gpuplan.core.result import Result, no_plan, plan_status
from gpuplan.core.settings import Context, WarmStart
from gpuplan.core.status import Status
from gpuplan.methods.base import MethodDefaults
from gpuplan.models.allocation import (
    FAIRNESS,
    Policy,
    ThroughputData,
    whole_job_need,
    whole_job_rates,
)
from gpuplan.models.bounds import objective_bound
from gpuplan.parts.allocation import (
    SOLVERS,
    Allocation,
    AllocationOptions,
    check_partitions,
    check_space_sharing,
    fluid_value,
    solve_policy,
    structured,
    why_none,
)
from gpuplan.parts.bounds import simple_bound
from gpuplan.parts.construct import list_schedule
from gpuplan.parts.round_plans import (
    GAVEL_ROUND_S,
    SEGMENT_COST_S,
    Reallocate,
    Residual,
    RoundPlan,
    TooManyRoundsError,
    check_round,
    plan_rounds,
    too_many,
)

logger = logging.getLogger(__name__)


#: Share of the time limit that the makespan bound's LP may take at most.
BOUND_SHARE = 0.1


#: Share of the time limit kept back after the round-based plan for the plan's objective.
MARGIN_SHARE = 0.02


@dataclass(frozen=True)
class BalanceOptions(AllocationOptions):
    """Options of ``--method balance``: the allocation's, and the rounds of its plan."""

    round_s: float = option(GAVEL_ROUND_S, "--round", "round length of the round-based plan "
                            "(default: 360, Gavel's); a plan has at most 100,000 rounds",
                            parse=parse_seconds, metavar="S")

    def __post_init__(self) -> None:
        """Refuse values out of range, whoever gives them."""
        super().__post_init__()
        check_range("round_s", self.round_s, 0, MAX_TIME_S, closed=False)


class BalanceMethod(MethodDefaults):
    """An allocation policy, rounded to a verified plan (``--method balance``)."""

    name: ClassVar[str] = "balance"
    description: ClassVar[str] = ("allocation policies (max-min fairness, makespan, ...) by "
                                  "LP/QP, rounded to a round-based plan")
    options_type: ClassVar[type[Any]] = BalanceOptions
    objectives: ClassVar[frozenset[ObjectiveKind]] = TIME_OBJECTIVES
    backends: ClassVar[tuple[str, ...]] = SOLVERS
    warm_starts: ClassVar[frozenset[WarmStart]] = frozenset()
    iterative: ClassVar[bool] = False

    def check(self, instance: Instance, options: BalanceOptions) -> None:
        """Refuse space sharing, partitions and rounds that cannot work, before any work.

        Raises
        ------
        InputError
            Naming the instance's colocation data when ``--space-sharing`` has none to
            use; ``--space-sharing`` with a policy other than the max-min ones or with
            partitions; ``--partitions`` beyond the jobs or GPUs; ``--round`` (or
            ``--method``) when the plan would need more than
            :data:`~gpuplan.parts.round_plans.MAX_ROUNDS` rounds; ``--floor`` for a
            policy other than min-cost, ``--fair-share`` for one other than the fairness
            policies, and ``--round`` for quadratic (whole jobs, no rounds): a setting the
            policy does not read is not silently dropped.
        """
        defaults = BalanceOptions()
        policy = Policy(options.policy)
        if options.floor != defaults.floor and policy is not Policy.MIN_COST:
            raise InputError(setting("floor"), "", f"`policy` {policy.value} has no throughput "
                             "floor; `floor` works with `policy` min-cost")
        if options.fair_share != defaults.fair_share and policy not in FAIRNESS:
            raise InputError(setting("fair_share"), "", f"`policy` {policy.value} owes jobs "
                             "no fair share; `fair_share` works with `policy` "
                             + " or ".join(p.value for p in FAIRNESS))
        if options.round_s != defaults.round_s and policy is Policy.QUADRATIC:
            raise InputError(setting("round_s"), "", "`policy` quadratic places whole jobs without "
                             "rounds; `round_s` works with the time-share policies")
        if options.space_sharing and not instance.class_ids:
            raise InputError(instance.source, "colocation", "`space_sharing` needs colocation "
                             "speeds and jobs' colocation_class (convert gavel `space_sharing` "
                             "writes them)")
        check_space_sharing(options)
        if options.partitions > 1:
            check_partitions(options.partitions, instance.n_jobs, instance.n_gpus)
        if Policy(options.policy) is not Policy.QUADRATIC:
            check_round(instance, options.round_s)

    def needs(self, instance: Instance, options: BalanceOptions) -> Capabilities:
        """LPs; a QP for ``quadratic``; a program held open for space sharing's pricing.

        Naming the rows of an infeasible ``min-cost`` program is used when the backend
        can (capability ``explain``), not needed.
        """
        return Capabilities(continuous=True,
                            quadratic=Policy(options.policy) is Policy.QUADRATIC,
                            incremental=options.space_sharing)

    def solve(self, instance: Instance, options: BalanceOptions, context: Context) -> Result:
        """Solve the policy, then realise its shares round by round (or place the work).

        The budget covers the whole solve (see the module docstring); the status is
        ``optimal`` only when the plan's objective meets the bound, which is a bound on the
        instance's objective (never the policy's value).

        Parameters
        ----------
        instance
            A time-based instance that passed the presolve checks and :meth:`check`.
        options
            The policy, ``round_s``, ``floor``, partitions, space sharing and the backend.
        context
            The budget; threads, seed and gap for the backend.

        Raises
        ------
        InputError
            If the round-based plan runs out of rounds while it is planned (naming
            ``--round``).
        """
        budget = context.budget
        policy = Policy(options.policy)
        data = structured(instance, ThroughputData.from_instance(instance),
                          np.arange(instance.n_jobs))
        backend = get_backend(options.backend)
        # With a time limit, a valid plan is at hand from the start (milliseconds).
        listed = budget.elapsed()
        fallback = list_schedule(instance) if budget.limited else None
        listing_s = budget.elapsed() - listed
        bound = _bound(instance, context)
        # Quadratic balancing lists the jobs again after its QP: keep the time for it.
        solving = (context.with_budget(_less(budget, 1.5 * listing_s))
                   if policy is Policy.QUADRATIC else context)
        allocation = solve_policy(data, options, solving)
        summary = f"{allocation.solver}; {policy.value} {allocation.value:.6g}" \
            if allocation.value is not None else allocation.solver
        if not allocation.status.has_plan:
            if fallback is not None and allocation.status is Status.NO_SOLUTION:
                return _instead(fallback, bound, f"{summary}; no {policy.value} allocation "
                                "within the time limit")
            reason = (f"policy {policy.value} has no allocation ({allocation.status.value}): "
                      + why_none(policy, data, options, instance, backend, context))
            return no_plan(instance, reason, summary, allocation.status, bound)
        if policy is Policy.QUADRATIC:
            return self._placement(instance, allocation, bound, summary)
        planning = _less(budget, MARGIN_SHARE * (budget.time_limit_s or 0.0))
        # Jobs in one piece start by their share of the GPUs, then (a second plan, when
        # the time allows) of the time: the better plan is kept.
        best: tuple[RoundPlan, dict[int, str], float, str] | None = None
        for order in (("GPUs", "time") if not instance.preemptible.all() else ("GPUs",)):
            began = budget.elapsed()
            reallocate = (_reallocator(instance, options, context, planning)
                          if allocation.pairs is None and changes(instance) else None)
            try:
                rounds = plan_rounds(instance, allocation.share, options.round_s,
                                     allocation.pairs, allocation.pair_share, budget=planning,
                                     segment_cost_s=SEGMENT_COST_S, reallocate=reallocate,
                                     wide_first=order == "GPUs")
            except TooManyRoundsError as error:
                raise InputError(setting("round_s"), "", too_many(error, options.round_s)) from None
            if rounds is None:
                break
            late = _late(instance, rounds.job, rounds.end)
            value = math.inf if late else time_objective(
                instance, rounds.job, rounds.gpu_type, rounds.end, work=rounds.work)
            if best is None or value < best[2]:
                best = (rounds, late, value, order)
            if budget.limited and budget.left() < 2.0 * (budget.elapsed() - began):
                break
        if best is None:
            assert fallback is not None
            return _instead(fallback, bound, f"{summary}; the round-based plan of {policy.value} "
                            f"did not fit in the time limit")
        rounds, late, objective, order = best
        fluid = fluid_value(instance, data, allocation)
        summary += (f"; fluid plan {instance.objective.value} {fluid:.6g}; {rounds.rounds} "
                    f"rounds of {options.round_s:g} s, tracking error mean "
                    f"{rounds.tracking_error.mean():.3f} max {rounds.tracking_error.max():.3f}")
        if not instance.preemptible.all():
            summary += f"; whole jobs started by their share of the {order}"
        logger.info("balance: %s", summary)
        if late and fallback is not None and fallback.status.has_plan:
            return _instead(fallback, bound, f"{summary}; the round-based plan misses "
                            f"{len(late)} deadlines")
        if late:
            return Result(status=Status.NO_SOLUTION, objective=None, bound=bound,
                          solver=summary, unplaced=late)
        return Result(status=plan_status(objective, bound), objective=objective, bound=bound,
                      solver=summary, job=rounds.job, gpu_type=rounds.gpu_type,
                      start=rounds.start, end=rounds.end, gpus=rounds.gpus, work=rounds.work,
                      partner=rounds.partner)

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


def changes(instance: Instance) -> bool:
    """Whether a static allocation stops being the policy's plan once the rounds start.

    One allocation serves a batch of preemptible jobs all there from the start: each job
    keeps its rate until it ends. Jobs that arrive later (releases, dependencies) or that
    hold their GPUs until they end (not preemptible) change the batch as it runs; their
    allocation is solved again as they do (:func:`_reallocator`).
    """
    return bool((instance.release > 0).any() or any(instance.predecessors)
                or not instance.preemptible.all())


#: Share of the planning budget the re-solved allocations may take in all; past it, the
#: plan follows the last allocation solved.
REALLOCATE_SHARE = 0.5


def _reallocator(instance: Instance, options: BalanceOptions, context: Context,
                 planning: Budget) -> Reallocate:
    """The policy solved again for what is left of the batch (Gavel re-solves the same way).

    The jobs left, ready or not, with their work left and the time they have waited
    (:meth:`ThroughputData.for_jobs`); a job holding its GPUs until it ends can use its
    type only. With a time limit the solves take at most :data:`REALLOCATE_SHARE` of the
    planning budget; a solve without shares (stopped, or infeasible floors) keeps the
    last ones. POP keeps its parts, fewer when fewer jobs are left. The makespan policy's
    search for the types whole jobs fit (:func:`_whole_jobs_makespan`, a few LPs) is not
    run again: the last makespan, less the time gone by, stands for it (one LP).
    """
    limit = (REALLOCATE_SHARE * planning.left()) if planning.limited else None
    # Seconds the solves took so far: the cap counts their time, not the rounds' between.
    solving = [0.0]
    # The last makespan solved and when: the makespan policy's types for whole jobs.
    last: list[float] = []

    def reallocate(state: Residual) -> FloatArray | None:
        solves = planning.part(None if limit is None else limit - solving[0])
        if solves.spent() or planning.spent():
            return None
        data = structured(instance, ThroughputData.for_jobs(
            instance, state.jobs, state.remaining, now=state.now), state.jobs,
            state.remaining, state.now)
        held = np.flatnonzero(state.held >= 0)
        if held.size:
            rate = data.rate.copy()
            only = rate[held, state.held[held]]
            rate[held] = 0.0
            rate[held, state.held[held]] = only
            data = dataclasses.replace(data, rate=rate)
        if Policy(options.policy) is Policy.MAKESPAN and last and data.whole is not None:
            need = whole_job_need(data)
            data = dataclasses.replace(whole_job_rates(data, max(
                last[0] - (state.now - last[1]), float(need.min(axis=1).max(initial=0.0)))),
                whole=None)
        parts = min(options.partitions, state.jobs.size, instance.n_gpus)
        allocation = solve_policy(data, dataclasses.replace(options, partitions=parts),
                                  context.with_budget(solves))
        solving[0] += solves.elapsed()
        if not allocation.status.has_plan:
            return None
        if allocation.value is not None:
            last[:] = [allocation.value, state.now]
        share = np.zeros((instance.n_jobs, instance.n_types))
        share[state.jobs] = allocation.share
        return share

    return reallocate


def _less(budget: Budget, seconds: float) -> Budget:
    """The budget without its last ``seconds``; the budget itself without a time limit."""
    return budget.part(budget.left() - seconds) if budget.limited else budget


def _bound(instance: Instance, context: Context) -> float:
    """A bound on the instance's objective: :func:`simple_bound` in a share of the budget.

    Its makespan LP gets at most :data:`BOUND_SHARE` of the time limit, and is skipped
    (the combinatorial bound only) once the budget is spent.
    """
    budget = context.budget
    if budget.spent():
        return objective_bound(instance)
    return simple_bound(instance, context.limits(budget.part(share=BOUND_SHARE)))


def _instead(fallback: Result, bound: float, why: str) -> Result:
    """The greedy plan made at the start, returned when the policy's plan is not in time."""
    logger.info("balance: %s; greedy list-scheduling plan instead", why)
    return dataclasses.replace(fallback, status=plan_status(fallback.objective, bound),
                               bound=bound,
                               solver=f"{why}; greedy list-scheduling plan instead")


def _late(instance: Instance, job: IntArray, end: FloatArray) -> dict[int, str]:
    """Jobs whose last segment ends after their deadline, with the reason."""
    finish = np.full(instance.n_jobs, -np.inf)
    np.maximum.at(finish, job, end)
    late = np.flatnonzero(finish > instance.deadline * (1 + 1e-9))
    return {int(j): (f"the round-based plan ends it at {finish[j]:g} s, after its deadline "
                     f"{instance.deadline[j]:g} s; try shorter rounds (--round) or --method cp")
            for j in late}
