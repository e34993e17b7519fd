"""The one path from an instance to a verified schedule, shared by every method.

:func:`plan` runs a method, translates its raw :class:`~gpuplan.core.result.Result` into a
:class:`~gpuplan.core.schedule.Schedule` and verifies it. A schedule the verifier rejects is a bug
in gpuplan: it raises :class:`~gpuplan.core.errors.VerificationError` instead of being returned.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from gpuplan.backends import BACKENDS
from gpuplan.backends.base import check_capabilities
from gpuplan.core.budget import Budget, never
from gpuplan.core.errors import InputError, VerificationError, setting
from gpuplan.core.instance import Feature, Instance
from gpuplan.core.keep import Keep
from gpuplan.core.options import part_options
from gpuplan.core.result import Result, infeasible
from gpuplan.core.schedule import Schedule, ViolationKind
from gpuplan.core.settings import WARM_SHARE, Context, RunSettings, WarmStart
from gpuplan.methods import DEFAULT_METHOD, METHODS, get_method
from gpuplan.methods.base import Method
from gpuplan.models.bounds import infeasibility_reasons
from gpuplan.verify import verify_schedule

logger = logging.getLogger(__name__)


def start_from(instance: Instance, schedule: Schedule, source: str) -> Result:
    """A schedule file's plan as a result to start from (``--warm-start SCHEDULE.json``).

    The file is verified against the instance first: a method keeps the plan it starts
    from when it finds nothing better, so a plan that breaks a constraint is refused here.

    Raises
    ------
    InputError
        If the schedule names a job or GPU the instance does not have, holds no plan, or
        breaks a constraint.
    """
    verification = verify_schedule(instance, schedule)
    if not schedule.status.has_plan or not verification.ok:
        problem = (f"status {schedule.status.value} holds no plan" if not
                   schedule.status.has_plan else str(verification.violations[0]))
        raise InputError(source, "", f"cannot start from this schedule: {problem}")
    return schedule.to_result(instance, verification.objective)


def _options(method: Method, options: Any) -> Any:
    """The method's typed options from None, a mapping of settings, or the options."""
    if options is None:
        return method.options_type()
    if isinstance(options, Mapping):
        return part_options(method, "method", options)
    if not isinstance(options, method.options_type):
        raise InputError(setting("method"), "", f"method {method.name!r} takes "
                         f"{method.options_type.__name__}, not {type(options).__name__}")
    return options


def _warm_heuristic(instance: Instance, method: Method, name: str,
                    settings: RunSettings) -> Callable[[Budget], Result]:
    """The heuristic ``name`` as a warm start for ``method``, run on a budget it is given.

    Raises
    ------
    InputError
        If ``method`` takes no warm start, or ``name`` is not a method that plans the
        objective without a warm start of its own.
    """
    able = [m.name for m in METHODS.values() if not m.warm_starts and m is not method
            and instance.objective in m.objectives]
    if not method.warm_starts or name not in able:
        takers = [m.name for m in METHODS.values() if m.warm_starts]
        raise InputError(setting("warm"), "", f"a heuristic warm start ({', '.join(able)}) "
                         f"works with `method` {' or '.join(takers)}; got {name!r} for "
                         f"`method` {method.name}")
    heuristic = METHODS[name]
    if instance.outages and not heuristic.plans_outages:
        raise InputError(setting("warm"), "", f"{name!r} does not plan around GPUs that are "
                         "down or held, as this instance's are")
    check_features(instance, heuristic)
    return _warm_run(instance, heuristic, heuristic.options_type(), settings)


def _warm_run(instance: Instance, heuristic: Method, options: Any,
              settings: RunSettings) -> Callable[[Budget], Result]:
    """A registered method with its options, run as a warm start on the budget it is given."""
    def run(budget: Budget) -> Result:
        found = heuristic.solve(instance, options, Context(
            budget, settings.seed, settings.threads, settings.gap))
        logger.info("warm start from %s: %s, objective %s", heuristic.name,
                    found.status.value, found.objective)
        return found
    return run


def _default_warm(instance: Instance, method: Method,
                  settings: RunSettings) -> tuple[Callable[[Budget], Result], float] | None:
    """The heuristic the method declares it starts from unless told, and its share.

    Resolved through the registry (:meth:`~gpuplan.methods.base.Method.default_warm`), so
    that no method imports another.
    """
    declared = method.default_warm(instance, settings.time_limit_s)
    if declared is None:
        return None
    heuristic = METHODS[declared.method]
    if (instance.outages and not heuristic.plans_outages) or (
            instance.features - heuristic.features(instance.objective)):
        return None
    options = part_options(heuristic, "method", declared.options)
    return _warm_run(instance, heuristic, options, settings), declared.share


def check_settings(method: Method, settings: RunSettings) -> None:
    """Refuse run settings the method does not read: ``--iterations`` without steps.

    Raises
    ------
    InputError
        Naming ``--iterations``, the method and the methods that count iterations.
    """
    if settings.iterations is not None and not method.iterative:
        counting = [m.name for m in METHODS.values() if m.iterative]
        raise InputError(setting("iterations"), "", f"method {method.name!r} does not count "
                         f"iterations; methods that do: {', '.join(counting)}")


#: Where in an instance file each feature is set, for messages.
_FEATURE_FIELD = {
    Feature.NODE_RESOURCES: "jobs[].node_demand",
    Feature.CPU_ONLY: "jobs[].gpus",
    Feature.MULTI_NODE: "jobs[].gpus_per_node",
    Feature.TOPOLOGY: "jobs[].topology",
    Feature.PARTITIONS: "jobs[].partition",
    Feature.GPU_LIMITS: "accounts, qos",
}


def check_features(instance: Instance, method: Method) -> None:
    """Refuse an instance that uses a part of the cluster model the method does not plan.

    Raises
    ------
    InputError
        Naming the feature, where the file sets it, and the methods that plan it.
    """
    objective = instance.objective
    missing = sorted(instance.features - method.features(objective))
    if not missing:
        return
    feature = missing[0]
    able = [m.name for m in METHODS.values() if instance.features <= m.features(objective)
            and objective in m.objectives]
    instead = (f"methods that plan this instance: {', '.join(able)}" if able else
               "no method plans all of it")
    raise InputError(instance.source, _FEATURE_FIELD[feature], f"this instance has "
                     f"{feature}, which method {method.name!r} does not plan; {instead}")


def check_method(instance: Instance, method: Method, options: Any,
                 settings: RunSettings) -> None:
    """Refuse a method, objective, backend and settings that cannot work together.

    Raises
    ------
    InputError
        Naming the flag, the method and what it does take.
    """
    if instance.objective not in method.objectives:
        able = [m.name for m in METHODS.values() if instance.objective in m.objectives]
        which = (f"methods that can: {', '.join(able)}" if able else "no planning method "
                 "can; plan the instance for another `objective`")
        raise InputError(setting("method"), "", f"method {method.name!r} cannot plan objective "
                         f"{instance.objective.value!r}; {which}")
    check_features(instance, method)
    check_settings(method, settings)
    if instance.outages and not method.plans_outages:
        able = [m.name for m in METHODS.values() if m.plans_outages
                and instance.objective in m.objectives]
        raise InputError(setting("method"), "", f"method {method.name!r} does not plan around "
                         "GPUs that are down or held (a re-plan's residual instance); methods "
                         f"that do: {', '.join(able)}")
    if instance.has_later_outages:
        raise InputError(instance.source, "outages", "no planning method takes outages that "
                         "start after time 0; re-plan at their start instead")
    if method.backends:
        # None: the method picks its backend for the objective (textbook's makespan).
        name = options.backend or method.backends[0]
        if name not in method.backends:
            raise InputError(setting("backend"), "", f"unknown value {name!r}; method "
                             f"{method.name!r} takes `backend` {' or '.join(method.backends)}")
        check_capabilities(BACKENDS[name].capabilities, name, method.needs(instance, options),
                           f"method {method.name!r} for {instance.objective.value}")
    method.check(instance, options)


def plan(
    instance: Instance, method: str = DEFAULT_METHOD, options: Any = None,
    settings: RunSettings | None = None, warm: str | Schedule | None = None,
    stop: Callable[[], bool] | None = None, source: str = setting("warm"),
    keep: Keep | None = None,
) -> Schedule:
    """Plan an instance with a registered method and return the verified schedule.

    Instances that are infeasible for a reason gpuplan can name (a deadline no dependency
    chain can meet, more demand than the fleet holds) come back with status ``infeasible``
    and the reason per job, without running the method.

    Parameters
    ----------
    instance
        The validated problem.
    method
        A name from :data:`gpuplan.methods.METHODS`.
    options
        The method's options: its ``options_type``, a mapping of settings by name or flag
        (as ``gpuplan bench`` specs give them), or None for its defaults.
    settings
        Time limit, iterations, seed, threads and gap.
    warm
        A heuristic's name whose plan starts the method (run first or beside it, as the
        method declares), or a schedule whose plan it starts from.
    stop
        Called between steps: True ends the solve with the best plan so far.
    source
        Where ``warm`` came from, for messages.
    keep
        A previous plan to stay close to (a re-plan, :mod:`gpuplan.hybrid`); only methods
        that declare ``keeps`` take one.

    Raises
    ------
    InputError
        If the method, its options, the objective, the backend or the warm start cannot
        work together; nothing is solved then.
    VerificationError
        If the method's schedule breaks a constraint: always a bug, never repaired.
    """
    settings = settings or RunSettings()
    chosen = get_method(method)
    typed = _options(chosen, options)
    check_method(instance, chosen, typed, settings)
    if keep is not None and not chosen.keeps:
        takers = [m.name for m in METHODS.values() if m.keeps]
        raise InputError(setting("method"), "", f"method {method!r} cannot re-plan with least "
                         f"disruption; methods that can: {', '.join(takers)}")
    start = warm_fn = None
    if isinstance(warm, Schedule):
        if WarmStart.PLAN not in chosen.warm_starts:
            takers = [m.name for m in METHODS.values() if WarmStart.PLAN in m.warm_starts]
            raise InputError(setting("warm"), "", f"method {method!r} takes no plan to start "
                             f"from; methods that do: {', '.join(takers)}")
        start = start_from(instance, warm, source)
    elif warm is not None:
        warm_fn = _warm_heuristic(instance, chosen, warm, settings)
    share = WARM_SHARE
    if warm_fn is None and (default := _default_warm(instance, chosen, settings)):
        warm_fn, share = default
    budget = Budget(settings.time_limit_s, settings.iterations,
                    stop or never)
    context = Context(budget, settings.seed, settings.threads, settings.gap, start, warm_fn,
                      share, keep)
    # The presolve checks count against the same budget.
    reasons = infeasibility_reasons(instance)
    result = (infeasible(instance, reasons, "gpuplan-presolve") if reasons
              else chosen.solve(instance, typed, context))
    wall = budget.elapsed()
    schedule = Schedule.from_result(instance, result, method, wall, settings.seed)
    verification = verify_schedule(instance, schedule)
    # Without a plan, jobs are expected to be missing; anything else is still a bug.
    allowed = set() if result.status.has_plan else {ViolationKind.UNPLACED}
    bugs = [str(v) for v in verification.violations if v.kind not in allowed]
    if bugs:
        raise VerificationError(method, bugs)
    logger.info(
        "%s on %s: %s, objective %s, bound %s, %.3f s",
        method, instance.name, result.status.value, result.objective, result.bound, wall,
    )
    return schedule.model_copy(update={"verification": verification})
