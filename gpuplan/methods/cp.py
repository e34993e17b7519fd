"""Time-indexed plans with CP-SAT: ``--method cp`` for the time-based objectives.

The model is :class:`~gpuplan.models.scheduling.SchedulingModel`. Batches with nothing to
sequence (:func:`~gpuplan.models.machine_load.sequencing_free`: the unrelated parallel
machine problem R||Cmax) go to :func:`~gpuplan.parts.unrelated_machines.plan_unrelated`
from list scheduling's start and the combinatorial bound. The solve starts from a plan given
as a full hint (a value for every variable: a solution CP-SAT keeps as it is): list
scheduling's (the better of greedy list scheduling and, where jobs may share GPUs,
:func:`~gpuplan.parts.schedule_sharing.best_sharing_schedule`, which runs jobs side by
side on a GPU within its memory and compute, over several orders, for makespan some of
them planned for a target below its best plan so that slow GPUs do not idle; elsewhere
for makespan
:func:`~gpuplan.parts.lp_list.lp_list_schedule`, which holds each job to the type the
makespan LP gives it), or the warm start's (a schedule file's, or a heuristic's run
first on its share of the time limit) when that is better.
CP-SAT searches the whole model on ``threads`` workers for :data:`FULL_SHARE` of its
time (for its bound, and a proof of optimality on easy batches), then
:func:`~gpuplan.parts.schedule_lns.improve_schedule` re-solves parts of the best plan
(time windows, GPU groups, the plan's end) with the rest fixed, until the time is up or
the plan meets a bound. The better of that plan and the start at the real durations is
kept. The reported bound is the best of the combinatorial bounds
(:func:`~gpuplan.models.bounds.objective_bound`), those of
:func:`~gpuplan.parts.bounds.simple_bound` for makespan and CP-SAT's own bound when
the integer model is the instance exactly. A secondary objective (``--then``) is optimised
in a second phase with the primary held at the value the first phase reached.

cp declares the heuristics it starts from unless told otherwise
(:meth:`CpMethod.default_warm`), which :func:`~gpuplan.planning.plan` runs through the
registry: sa for tardiness (its moves of the list order fix due dates fast), and for
makespan, when every job is preemptible and the plan spans at least :data:`MIN_ROUNDS` of
Gavel's rounds, balance's makespan policy: the model runs each job in one piece, while the
makespan LP that bounds such batches lets jobs move between GPUs and types, and the
round-based plan does too. For the other objectives no heuristic runs first unless asked
(``--warm-start sa``): there the sharing start and LNS did better with the time
(docs/benchmarks.md).

Elastic jobs are moldable (``--moldable``, default true): each runs whole on one GPU
type and count of its speed table that the model chooses, every undominated shape an
alternative of the job (:class:`~gpuplan.parts.moldable.Shapes`), from the moldable list
schedule's plan (:func:`~gpuplan.parts.moldable.moldable_list_schedule`); the bound is
then the relaxation's (:func:`~gpuplan.parts.moldable.moldable_bound`) and CP-SAT's, over
plans that run each job in one piece. With ``--moldable false``, and in a re-plan, each
runs at the count it asked for.

The solve's one budget covers everything: the warm start, list scheduling, the bound,
building the model (a model whose size would not leave CP-SAT time to search is replaced by
a smaller one, or not built at all, and a build that runs late is abandoned), CP-SAT's
loading, presolve and search, and reading and freeing the model afterwards. Whatever is cut
short, the start's plan is there to fall back on.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from dataclasses import dataclass
from importlib.metadata import version
from typing import Any, ClassVar

import numpy as np

from gpuplan.backends.cpsat import import_cp_model, search_solver, status_table
from gpuplan.core.budget import Budget
from gpuplan.core.errors import InputError, setting
from gpuplan.core.instance import Feature, Instance, IntArray
from gpuplan.core.keep import Keep
from gpuplan.core.objectives import TIME_OBJECTIVES, ObjectiveKind, time_objective
from gpuplan.core.options import option, parse_seconds
from gpuplan.core.result import Result, better, no_plan, plan_status, with_bound
from gpuplan.core.settings import Context, WarmStart
from gpuplan.core.status import Status
from gpuplan.methods.base import DefaultWarm, MethodDefaults
from gpuplan.models.bounds import objective_bound
from gpuplan.models.linear import OutOfTimeError
from gpuplan.models.machine_load import sequencing_free
from gpuplan.models.scheduling import (
    SchedulingModel,
    TickScale,
    exclusive_types,
    model_size,
    solution_values,
)
from gpuplan.parts.bounds import simple_bound
from gpuplan.parts.construct import list_schedule
from gpuplan.parts.lp_list import lp_list_schedule
from gpuplan.parts.moldable import (
    Shapes,
    as_pieces,
    at_counts_asked,
    moldable_bound,
    moldable_list_schedule,
    moldable_option,
    relaxation,
)
from gpuplan.parts.round_plans import GAVEL_ROUND_S, SEGMENT_COST_S
from gpuplan.parts.schedule_lns import ScheduleNeighbourhoods, improve_schedule
from gpuplan.parts.schedule_sharing import best_sharing_schedule, sharing_list_schedule
from gpuplan.parts.unrelated_machines import plan_unrelated

logger = logging.getLogger(__name__)

#: Seconds for the second solve that names the deadlines in conflict (less when the time
#: limit leaves less).
EXPLAIN_LIMIT_S = 10.0
#: Share of the time limit the workload LP bound may take.
BOUND_SHARE = 0.1
#: Share of the time limit of sa, cp's default warm start for tardiness.
ANNEAL_SHARE = 0.6
#: Share of the time limit of the round-based plan, cp's default warm start for makespan
#: when every job is preemptible. Most of it: where that plan is made, LNS over plans
#: that run each job in one piece does not come near it.
ROUND_SHARE = 0.8
#: The round-based start is made only where the plan spans at least this many of Gavel's
#: rounds: with fewer, GPUs idle to the end of the rounds in which jobs end.
MIN_ROUNDS = 10
#: Seconds per GPU and round that the round-based plan takes to plan, and to translate,
#: verify and write its segments (docs/benchmarks.md, "Gavel-derived cluster (500 jobs,
#: 128 GPUs in 16 nodes of 8, three types)").
ROUND_GPU_S = 20e-6
#: Share of the round-based plan's budget for its rounds; the rest is for the policy's
#: re-solves as jobs end (balance caps these at half of its planning time).
ROUND_PLANNING = 0.35
#: Share of the time limit list scheduling with GPU sharing may take, over several
#: orders (it runs where jobs may share GPUs, instead of the LP-guided plan; a pass cut
#: short gives no plan).
SHARING_SHARE = 0.2
#: Building, hinting, loading into CP-SAT and freeing a model may take this share of the
#: time left; a larger model is replaced by a smaller one, or by the start's plan.
MODEL_SHARE = 0.5
#: Seconds per unit of the interval model (an alternative or a per-GPU literal,
#: :func:`~gpuplan.models.scheduling.model_size`) to build, hint, load into CP-SAT and free:
#: the top of the range measured on a loaded 2-core machine.
UNIT_S = 30e-6
#: Seconds per unit that CP-SAT spends outside its own time limit (loading before it checks
#: the clock, building its response) and that Python spends freeing the model afterwards.
AFTER_UNIT_S = 8e-6
#: Seconds per unit of CP-SAT's presolve: the top of the range measured on the interval
#: model. Presolve runs only when it is expected to take at most
#: :data:`PRESOLVE_SHARE` of CP-SAT's time, since an unfinished presolve leaves no time to
#: search (on a 2000-job model it took the whole of a short time limit).
PRESOLVE_UNIT_S = 120e-6
PRESOLVE_SHARE = 0.35
#: Share of CP-SAT's time for its search of the whole model when a hinted plan lets LNS
#: (:func:`~gpuplan.parts.schedule_lns.improve_schedule`) take the rest.
FULL_SHARE = 0.15
#: Below this many seconds for CP-SAT, it is not run at all.
MIN_SEARCH_S = 0.05
#: What the plan CP-SAT starts from, and falls back on, is called in messages.
LISTED = "list scheduling's plan"
STARTED = "the warm start's plan"


def _part(budget: Budget, seconds: float) -> Budget:
    """At most ``seconds`` of the budget from now; infinite seconds: the rest of it."""
    return budget.part(seconds if math.isfinite(seconds) else None)


def _units(instance: Instance, share_gpus: bool) -> int:
    """The model's size in units (:data:`UNIT_S`)."""
    alternatives, literals = model_size(instance, share_gpus)
    return alternatives + literals


def _objective(text: str) -> ObjectiveKind:
    """The objective named by ``--then``."""
    try:
        return ObjectiveKind(text)
    except ValueError:
        known = ", ".join(k.value for k in ObjectiveKind)
        raise ValueError(f"unknown objective {text!r}; choose from {known}") from None


def _hintable(plan: Result, shapes: Shapes) -> bool:
    """Whether the models can take the plan as a hint: every job in one piece of a shape."""
    return (plan.status.has_plan and np.unique(plan.job).size == plan.n_segments
            and all(shapes.row_of(int(j), gpus) >= 0
                    for j, gpus in zip(plan.job.tolist(), plan.gpus, strict=True)))


def _start(instance: Instance, context: Context, shapes: Shapes,
           guided: bool = True) -> tuple[Result, str, Result | None]:
    """The plan to fall back on, what messages call it, and the plan to hint to CP-SAT.

    The fallback is list scheduling's plan (the better of the greedy's and, where jobs
    may share GPUs, :func:`~gpuplan.parts.schedule_sharing.best_sharing_schedule`'s on
    :data:`SHARING_SHARE` of the time limit, elsewhere for makespan the LP-guided one's,
    whose LP gets :data:`BOUND_SHARE` of the time limit), or the warm
    start's when that is at least as good: a schedule file's plan (``context.start``), or
    a heuristic's (``context.warm``, by default :meth:`CpMethod.default_warm`'s), run here
    on ``context.warm_share`` of the time limit, whose order of starts is also listed with
    GPU sharing. The hint is the fallback, or list
    scheduling's plan when the fallback runs a job in pieces. Without ``guided`` no
    LP-guided plan is made (the R||Cmax lanes solve that LP themselves). Where jobs have
    several shapes, list scheduling's plan is the moldable list schedule's.
    """
    start = context.start
    warm = context.warm
    # The sharing heuristics know no held GPUs: with outages, the list scheduler and the
    # model plan GPU sharing.
    sharing = (not exclusive_types(instance).all() and not instance.outages
               and not instance.features)
    moldable = not shapes.identity
    # The list schedule at the counts asked for bounds that restriction only.
    listed = (moldable_list_schedule(instance, shapes) if moldable
              else at_counts_asked(instance, list_schedule(instance)))
    if warm is not None:
        found = at_counts_asked(instance, warm(context.budget.part(share=context.warm_share)))
        start = found if start is None else better(instance, start, found)
        if sharing and found.status.has_plan:
            # The heuristic's order of starts, listed with GPU sharing.
            keys = np.full(instance.n_jobs, np.inf)
            np.minimum.at(keys, found.job, found.start)
            listed = better(instance, listed, sharing_list_schedule(
                instance, keys, context.budget.part(share=SHARING_SHARE)))
    if sharing:
        listed = better(instance, listed, best_sharing_schedule(
            instance, context.budget.part(share=SHARING_SHARE), context.seed))
    # The LP-guided plan gives each job whole GPUs too; where jobs may share them, the
    # sharing plan was better on the operator's batches, and the time goes to LNS.
    elif guided and not moldable and instance.objective is ObjectiveKind.MAKESPAN:
        guided_plan = lp_list_schedule(instance, context.limits(context.budget.part(
            share=BOUND_SHARE)))
        listed = better(instance, listed, at_counts_asked(instance, guided_plan))
    fallback, origin = listed, LISTED
    if start is not None and start.status.has_plan:
        fallback = _better(instance, context.keep, start, listed)
        # On a tie the start is kept; list scheduling's plan only when strictly better.
        if fallback.objective == start.objective:
            origin = STARTED
    return fallback, origin, next((p for p in (fallback, listed) if _hintable(p, shapes)),
                                  None)


@dataclass(frozen=True)
class CpOptions:
    """Options of ``--method cp``."""

    tick_s: float | None = option(
        None, "--tick", "seconds per time step (default: the coarsest exact power of ten, "
        "else about 0.1%% of the shortest duration)", parse=parse_seconds, metavar="S")
    then: ObjectiveKind | None = option(
        None, "--then", "a second time-based objective, optimised with the first held at its "
        "best (e.g. --objective makespan --then cost)", parse=_objective, metavar="NAME")
    moldable: bool = moldable_option()


class CpMethod(MethodDefaults):
    """CP-SAT over interval variables per GPU group, for plans with start times."""

    name: ClassVar[str] = "cp"
    description: ClassVar[str] = ("CP-SAT scheduling with start times (time-based "
                                  "objectives), bound and gap")
    options_type: ClassVar[type[Any]] = CpOptions
    objectives: ClassVar[frozenset[ObjectiveKind]] = TIME_OBJECTIVES
    # CP-SAT takes cp's interval model directly, not a LinearProgram through a backend.
    backends: ClassVar[tuple[str, ...]] = ()
    warm_starts: ClassVar[frozenset[WarmStart]] = frozenset({WarmStart.PLAN})
    iterative: ClassVar[bool] = False
    plans_outages: ClassVar[bool] = True
    keeps: ClassVar[bool] = True

    def features(self, objective: ObjectiveKind) -> frozenset[Feature]:
        """All of them.

        The interval model holds a gang's nodes, domains, partition and node resources, and
        a cumulative per account or QOS GPU limit.
        """
        return frozenset(Feature)

    def default_warm(self, instance: Instance, time_limit_s: float | None) -> DefaultWarm | None:
        """Annealing (sa) for tardiness; balance's makespan rounds where all are preemptible.

        None where some job is elastic: those heuristics run it at the count it asked for,
        and the moldable list schedule starts the solve.

        The round-based start is made for makespan only where the plan spans at least
        :data:`MIN_ROUNDS` of Gavel's rounds (by the combinatorial bound), in rounds of
        Gavel's length or longer where the time limit could not plan that many: the
        bound over the round length times the GPUs times :data:`ROUND_GPU_S` must fit in
        :data:`ROUND_PLANNING` of the start's time. Where the plan still does not fit,
        balance returns greedy's and cp goes on from list scheduling's.
        """
        if instance.elastic.any():
            return None
        if instance.objective is ObjectiveKind.TARDINESS:
            return DefaultWarm("sa", {}, ANNEAL_SHARE)
        if instance.objective is not ObjectiveKind.MAKESPAN or not instance.preemptible.all():
            return None
        bound = objective_bound(instance)
        if bound < MIN_ROUNDS * GAVEL_ROUND_S:
            return None
        seconds = math.inf if time_limit_s is None else ROUND_SHARE * time_limit_s
        round_s = max(GAVEL_ROUND_S,
                      bound * instance.n_gpus * ROUND_GPU_S / (ROUND_PLANNING * seconds))
        return DefaultWarm("balance", {"policy": "makespan", "round_s": round_s}, ROUND_SHARE)

    def check(self, instance: Instance, options: CpOptions) -> None:
        """Refuse a secondary objective that is static or the primary itself.

        Raises
        ------
        InputError
            Naming ``--then`` and the objectives it may take.
        """
        then = options.then
        if then is None or (not then.is_static and then is not instance.objective):
            return
        others = sorted(k.value for k in TIME_OBJECTIVES if k is not instance.objective)
        raise InputError(setting("then"), "", f"a secondary objective must be time-based "
                         f"and differ from the objective ({instance.objective.value}); got "
                         f"{then.value}, choose from {', '.join(others)}")

    def solve(self, instance: Instance, options: CpOptions, context: Context) -> Result:
        """Plan with CP-SAT from the best start at hand, all within the context's budget.

        Parameters
        ----------
        instance
            A time-based instance that passed the presolve checks.
        options
            Tick, secondary objective, and whether elastic jobs choose their count.
        context
            The budget, threads (CP-SAT workers), seed and gap, and the warm start: a
            schedule file's plan, or a heuristic run first on ``context.warm_share`` of
            the time limit; CP-SAT is given
            its plan as a hint, and it is kept when CP-SAT finds nothing better.

        Raises
        ------
        InputError
            If ``options.tick_s`` is so fine that the horizon in ticks exceeds CP-SAT's
            integers.
        """
        budget = context.budget
        keep = context.keep
        # A re-plan keeps the previous plan's slots, which hold the counts asked for.
        shapes = Shapes.of(instance, options.moldable and keep is None)
        moldable = not shapes.identity
        scale = TickScale.choose(shapes.table, options.tick_s)
        name = f"cpsat {version('ortools')} ({scale.describe()})"
        if not scale.exact:
            logger.info("cp: %s is no exact tick for this instance: durations and releases are "
                        "rounded up and deadlines down by up to %.3g s, so every plan is valid "
                        "at the real times, but CP-SAT's bound and infeasibility are not used",
                        f"{scale.tick_s:g} s", scale.shift_s)
        unrelated = (options.then is None and sequencing_free(instance)
                     and not instance.outages and keep is None and not moldable)
        fallback, origin, hint = _start(instance, context, shapes, guided=not unrelated)
        if budget.limited and fallback.status.has_plan:
            # The plan is translated, verified and written after the solve: for a plan of
            # many segments (a round-based start) that takes seconds, kept back here.
            budget = budget.part(budget.left() - fallback.n_segments * SEGMENT_COST_S)
            context = context.with_budget(budget)
        if unrelated:
            # The R||Cmax lanes solve the assignment LP first (their bound and rounding):
            # here only the combinatorial bound, so that their branch-and-cut starts at once.
            return plan_unrelated(instance, context, fallback, origin, hint,
                                  objective_bound(instance), scale, f"R||Cmax lanes on "
                                  f"highs {version('highspy')} ({scale.describe()})")
        import_cp_model()  # after the R||Cmax lanes, whose branch-and-cut starts at once
        # Bounded over every count of the elastic jobs, even where they keep theirs.
        every = Shapes.of(instance)
        bound = simple_bound(relaxation(instance, every),
                             context.limits(budget.part(share=BOUND_SHARE)))
        if not every.identity:
            bound = max(bound, moldable_bound(instance, every))
        # CP plans every job in one piece and never pairs jobs on GPUs; where the instance
        # allows either, CP-SAT's bound and infeasibility hold for that restriction only,
        # as they do for elastic jobs held to the counts they asked for.
        whole = (not instance.preemptible.any() and instance.pair_gain == 1.0
                 and (moldable or not instance.elastic.any()))

        chosen = self._choose(shapes.table, budget, origin)
        if chosen is None:
            return with_bound(instance, fallback, bound, name, f"{origin}: no CP-SAT model fits "
                         "the time limit (a longer --time-limit lets CP-SAT search)")
        share_gpus, units = chosen
        try:
            model = SchedulingModel.build(
                instance, scale, share_gpus=share_gpus,
                budget=_part(budget, MODEL_SHARE * max(0.0, budget.left())), keep=keep,
                shapes=(shapes.table, shapes.rows) if moldable else None)
            if hint is not None:
                model.hint(hint.job, hint.gpus, hint.start, hint.nodes(instance))
        except OutOfTimeError:
            logger.info("cp: building the model ran out of its share of the time limit after "
                        "%.2f s; keeping %s", budget.elapsed(), origin)
            return with_bound(instance, fallback, bound, name, f"{origin}: the CP-SAT model could "
                         "not be built within the time limit")
        restricted = model.restricted
        if restricted:
            name += ", without GPU sharing to fit the time limit"
        # CP-SAT's bound holds for the instance when the whole model is exact; its
        # infeasibility, when the constraints are (weights only change the objective).
        # With moves priced in, CP-SAT bounds the objective plus their cost, not the plan.
        certain = model.exact and whole and not restricted and keep is None
        proof = model.exact_constraints and whole and not restricted
        search = budget.left() - AFTER_UNIT_S * units
        if search < MIN_SEARCH_S:
            return with_bound(instance, fallback, bound, name, f"{origin}: no time was left for "
                         "CP-SAT to search")
        if options.then is not None:
            search /= 2
        solved = self._search(model, context, _part(budget, search), hint is not None, units,
                              bound)
        if solved.status is Status.INFEASIBLE:
            return self._without_plan(instance, scale, context, name, fallback, origin, bound,
                                      whole, proof, restricted, units, shapes)
        if certain and solved.bound is not None:
            bound = max(bound, solved.bound * model.objective_scale - model.bound_slack())
        found = _decoded(instance, model, solved.values, bound, name)
        best = _better(instance, keep, found, fallback)
        # CP-SAT's plan stands unless the start's is strictly better (a tie keeps CP-SAT's).
        if best.objective != found.objective:
            best = with_bound(instance, fallback, bound, name, f"{origin} kept")
        elif options.then is not None and solved.values is not None:
            best = self._second_phase(instance, model, solved.values, best, options.then,
                                      context, name, units)
        logger.info("cp: %s, %s after %.2f s", best.status.value, solved.how,
                    budget.elapsed())
        return best

    @staticmethod
    def _search(model: SchedulingModel, context: Context, budget: Budget, hinted: bool,
                units: int, bound: float) -> _Searched:
        """CP-SAT on the whole model, then LNS from its best solution, within ``budget``.

        The whole model's solve takes :data:`FULL_SHARE` of the time when the model holds
        a hint (a complete solution) for the LNS to start from, else all of it; it gives
        CP-SAT's bound, and ends the search when it proves its solution optimal. The LNS
        (:func:`~gpuplan.parts.schedule_lns.improve_schedule`) takes the rest.
        """
        cp_model = import_cp_model()
        values = None
        first = budget.left() * (FULL_SHARE if hinted else 1.0)
        solver = search_solver(context.limits(_part(budget, first)),
                               PRESOLVE_UNIT_S * units <= PRESOLVE_SHARE * first)
        code = solver.solve(model.model)
        status = status_table(cp_model).get(code, Status.NO_SOLUTION)
        if code == cp_model.MODEL_INVALID:
            logger.warning("cp: CP-SAT rejected the model: %s", model.model.validate())
        found = (solver.best_objective_bound
                 if code in (cp_model.OPTIMAL, cp_model.FEASIBLE, cp_model.UNKNOWN) else None)
        how = f"CP-SAT {solver.status_name(code)}"
        if status.has_plan:
            values = solution_values(solver)
        # Without a time limit, the whole model's solve ran to its end.
        if (status is Status.INFEASIBLE or code == cp_model.OPTIMAL or values is None
                or not budget.limited):
            return _Searched(status, values, found, how)
        # A plan within the gap of a bound (the instance's, in the model's units, or
        # CP-SAT's on the model) is optimal: LNS stops there.
        lowest = max(bound / model.objective_scale, -math.inf if found is None else found)
        improved = improve_schedule(model, values, context.limits(budget), budget,
                                    lowest / (1.0 - context.gap))
        how += (f", then LNS: {improved.improvements} improvements in "
                f"{improved.subproblems} subproblems")
        return _Searched(Status.FEASIBLE, improved.values, found, how)

    @staticmethod
    def _choose(instance: Instance, budget: Budget, origin: str) -> tuple[bool, int] | None:
        """The model that fits the time left: (GPU sharing, units), or None.

        The full model first; then, where jobs may share GPUs, the model without sharing
        (pooled like exclusive types, far smaller). None when nothing fits.
        """
        left = budget.left()
        candidates = [True] + ([False] if not exclusive_types(instance).all() else [])
        for share in candidates:
            units = _units(instance, share)
            if UNIT_S * units <= MODEL_SHARE * left:
                if not share:
                    logger.info("cp: the full model (%d units) would take more than %.0f%% of "
                                "the %.2f s left; using the model without GPU sharing (%d "
                                "units)", _units(instance, True), 100 * MODEL_SHARE, left,
                                units)
                return share, units
        logger.info("cp: even the smallest CP-SAT model would take more than %.0f%% of the "
                    "%.2f s left; keeping %s", 100 * MODEL_SHARE, left, origin)
        return None

    @staticmethod
    def _second_phase(instance: Instance, model: SchedulingModel, values: IntArray,
                      first: Result, then: ObjectiveKind, context: Context, name: str,
                      units: int) -> Result:
        """Optimise ``then`` with the primary objective held where phase one left it."""
        assert first.objective is not None
        search = context.budget.left() - AFTER_UNIT_S * units
        if search < MIN_SEARCH_S:
            return first
        primary = model.objective_expression()
        reached = ScheduleNeighbourhoods(model).objective(values)
        model.model.add(primary <= round(reached))
        model.set_objective(then)
        model.hint_values(values)
        second = search_solver(context.limits(_part(context.budget, search)),
                               PRESOLVE_UNIT_S * units <= PRESOLVE_SHARE * search)
        code = second.solve(model.model)
        status = status_table(import_cp_model()).get(code, Status.NO_SOLUTION)
        if not status.has_plan:
            return first
        result = _decoded(instance, model, solution_values(second), first.bound or 0.0,
                          f"{name}, then {then.value}")
        if result.objective is None or result.objective > first.objective * (1 + 1e-9):
            return first
        return result

    def _without_plan(self, instance: Instance, scale: TickScale, context: Context, name: str,
                      fallback: Result, origin: str, bound: float, whole: bool, proof: bool,
                      restricted: bool, units: int, shapes: Shapes) -> Result:
        """CP-SAT found its model infeasible: a proof only when the model is the instance.

        Otherwise the start's plan (if it has one) is kept, or no plan is reported with
        what made the model narrower than the instance.
        """
        if fallback.status.has_plan:
            if proof:
                logger.warning("cp: CP-SAT calls the model infeasible, yet %s is valid; "
                               "keeping that plan", origin)
            why = ("without GPU sharing" if restricted
                   else f"at a tick of {scale.tick_s:g} s" if not scale.exact
                   else "with every job in one piece" if not whole
                   else "with per-GPU demands rounded up" if not proof
                   else "(wrongly)")
            logger.info("cp: CP-SAT found no plan %s; keeping %s", why, origin)
            return with_bound(instance, fallback, bound, name,
                         f"{origin}: the CP-SAT model {why} has no plan")
        if not whole:
            return no_plan(instance, "no plan runs every job in one piece within its "
                           "deadline; preemptible jobs may still fit in segments (try "
                           "--method balance)", name, bound=bound)
        if restricted:
            return no_plan(instance, "no plan without GPU sharing meets every deadline (GPU "
                           "sharing was left out of the CP-SAT model to fit the time limit; "
                           "a longer --time-limit includes it)", name, bound=bound)
        core = self._core(instance, scale, context, units, shapes)
        if proof:
            if core:
                reason = (f"the deadlines of jobs {core} cannot all be met together: the "
                          "GPUs they may use are too few for the work due by then")
            else:
                reason = "no plan meets every deadline within the capacity of the fleet"
            return no_plan(instance, reason, name, Status.INFEASIBLE)
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
        return no_plan(instance, reason, name, bound=bound)

    @staticmethod
    def _core(instance: Instance, scale: TickScale, context: Context, units: int,
              shapes: Shapes) -> str:
        """The jobs whose deadlines cannot all be met together (a CP-SAT core), named.

        Empty when the time left is too short to rebuild and solve the model.
        """
        budget = context.budget
        left = budget.left()
        if left < 2 * UNIT_S * units + MIN_SEARCH_S:
            return ""
        try:
            explained = SchedulingModel.build(
                instance, scale, deadlines_as_assumptions=True,
                budget=_part(budget, MODEL_SHARE * left),
                shapes=None if shapes.identity else (shapes.table, shapes.rows))
        except OutOfTimeError:
            return ""
        limit = min(EXPLAIN_LIMIT_S, budget.left() - AFTER_UNIT_S * units)
        if limit < MIN_SEARCH_S:
            return ""
        # One worker: with more, CP-SAT names every assumption as the core (or-tools#3102).
        solver = search_solver(dataclasses.replace(context.limits(budget.part(limit)), threads=1),
                         presolve=True)
        solver.solve(explained.model)
        core = sorted(explained.deadline_job[i]
                      for i in solver.sufficient_assumptions_for_infeasibility())
        return ", ".join(repr(instance.job_ids[j]) for j in core)


@dataclass(frozen=True)
class _Searched:
    """What the search found: status, best solution (variable values), CP-SAT's bound."""

    status: Status
    values: IntArray | None
    bound: float | None
    how: str


def _better(instance: Instance, keep: Keep | None, first: Result, second: Result) -> Result:
    """The better plan for the objective, or, re-planning, for it plus the moves' cost.

    ``first`` on a tie; the better (higher: time objectives minimise) bound is kept.
    """
    if keep is None:
        return better(instance, first, second)
    chosen = second if keep.score(second) < keep.score(first) else first
    bounds = [b for b in (first.bound, second.bound) if b is not None]
    if not bounds or not chosen.status.has_plan:
        return chosen
    return dataclasses.replace(chosen, bound=max(bounds),
                               status=plan_status(chosen.objective, max(bounds)))


def _decoded(instance: Instance, model: SchedulingModel, values: IntArray | None,
             bound: float, name: str) -> Result:
    """A solution's plan at the real durations, with the method's bound; none without one."""
    if values is None:
        return no_plan(instance, "no plan found within the time limit", name, bound=bound)
    job, types, gpus, start, end, node = model.decode(values)
    objective = time_objective(instance, job, types, end)
    return as_pieces(instance, Result(
        status=plan_status(objective, bound), objective=objective, bound=bound, solver=name,
        job=job, gpu_type=types, gpus=gpus, start=start, end=end, node=node))
