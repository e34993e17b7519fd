"""``replan``: plan the active jobs with any registered method, and follow the plan.

The hook between the online and the offline halves. When the set of active jobs has
changed, or GPUs failed or came back (and at least ``--replan-every`` seconds have passed
since the last plan), the residual batch (:func:`gpuplan.simulate.residual.residual_instance`:
each active job with the work it has left by its estimate, a paused one with its restore
overhead; failed GPUs held until they come back, for methods that plan around them) goes
to ``--replan-method`` through :func:`gpuplan.planning.plan` for ``--replan-objective``,
under the run's ``--time-limit`` per call (1 s when none is given), so every plan followed
is a verified one. With ``--replan-disruption S``, each running job the plan would stop or
move costs S seconds of objective (times its weight for weighted objectives): the method
keeps it where it runs unless moving it pays (methods that take a plan to keep: greedy,
sa, ga, cp). Jobs then run in the order of their planned starts, each on its planned GPU
type first; a job that arrived since the last plan queues behind the planned ones,
fastest type first. The engine stays work-conserving: a job planned for later starts now
if GPUs are free for it (on another type than planned, unless ``--replan-strict``). The
wall seconds spent planning are kept (the run record's ``solver_s``); the simulated clock
does not pay them. A method that starts from a plan (cp) starts from list scheduling's,
so that its plans run each job in one piece, as the policy follows them.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from gpuplan.core.errors import InputError, setting
from gpuplan.core.instance import MAX_TIME_S, Instance, IntArray, Outage
from gpuplan.core.keep import Keep
from gpuplan.core.objectives import ObjectiveKind
from gpuplan.core.options import check_range, option, parse_bool, parse_number
from gpuplan.core.settings import WarmStart
from gpuplan.methods import METHODS
from gpuplan.planning import plan
from gpuplan.simulate.policy import Decision, Mode, PolicyContext, View
from gpuplan.simulate.residual import residual_instance

logger = logging.getLogger(__name__)

#: The heuristic a method that takes a plan to start from starts from.
REPAIR = "greedy"
#: Seconds a plan may take when the run gives no --time-limit.
DEFAULT_CALL_S = 1.0
#: What the residual batches are planned for unless told.
OBJECTIVE = ObjectiveKind.WEIGHTED_COMPLETION
#: What they may be planned for: the time-based objectives of an online run.
OBJECTIVES = (ObjectiveKind.WEIGHTED_COMPLETION, ObjectiveKind.MAKESPAN,
              ObjectiveKind.TARDINESS)


def _objective(text: str) -> ObjectiveKind:
    try:
        kind = ObjectiveKind(text)
    except ValueError:
        kind = None
    if kind not in OBJECTIVES:
        raise ValueError(f"expected one of {', '.join(k.value for k in OBJECTIVES)}")
    assert kind is not None
    return kind


@dataclass(frozen=True)
class ReplanOptions:
    """Options of the ``replan`` scheduler."""

    replan_method: str = option(
        "greedy", "--replan-method", "the registered planning method the replan hook calls on "
        "the residual jobs (default: greedy)",
        choices=tuple(name for name, method in METHODS.items()
                      if set(OBJECTIVES) & method.objectives),
        metavar="NAME")
    replan_every: float = option(
        0.0, "--replan-every", "at most one replan every S seconds (default: 0)",
        parse=parse_number(float, 0.0, MAX_TIME_S), metavar="S")
    replan_objective: ObjectiveKind = option(
        OBJECTIVE, "--replan-objective", "what the residual batches are planned for: "
        f"{', '.join(k.value for k in OBJECTIVES)} (default: {OBJECTIVE.value})",
        parse=_objective, metavar="NAME")
    replan_first_method: str | None = option(
        None, "--replan-first-method", "the method of the first plan, made of what is there "
        "when the run starts (default: --replan-method)",
        choices=tuple(name for name, method in METHODS.items()
                      if set(OBJECTIVES) & method.objectives),
        metavar="NAME")
    replan_first: float | None = option(
        None, "--replan-first", "seconds for the first plan, made of what is there when the "
        "run starts (default: the run's --time-limit, as every plan)",
        parse=parse_number(float, 0.0, MAX_TIME_S), metavar="S")
    replan_strict: bool = option(
        False, "--replan-strict", "true: run each planned job on its planned GPU type only "
        "(default: false, on any type once its planned one is busy, work-conserving)",
        parse=parse_bool, metavar="BOOL")
    replan_disruption: float = option(
        0.0, "--replan-disruption", "seconds of objective each running job the plan stops or "
        "moves costs, times its weight for weighted objectives (default: 0, free)",
        parse=parse_number(float, 0.0, MAX_TIME_S), metavar="S")

    def __post_init__(self) -> None:
        """Refuse a method that cannot plan the residual batches, and a bad interval."""
        if self.replan_method not in METHODS:
            raise InputError(setting("replan_method"), "", f"unknown method "
                             f"{self.replan_method!r}; choose one of: {', '.join(METHODS)}")
        method = METHODS[self.replan_method]
        for flag, name in (("replan_method", self.replan_method),
                           ("replan_first_method", self.replan_first_method)):
            if name is not None and self.replan_objective not in METHODS[name].objectives:
                raise InputError(setting(flag), "", f"method {name!r} cannot plan "
                                 f"{self.replan_objective.value!r}, which the residual "
                                 "batches minimise")
        if self.replan_disruption > 0 and not method.keeps:
            keepers = [name for name, m in METHODS.items() if m.keeps]
            raise InputError(setting("replan_disruption"), "", f"method {self.replan_method!r} "
                             "takes no plan to keep; --replan-disruption works with "
                             f"--replan-method {', '.join(keepers)}")
        check_range("replan_every", self.replan_every, 0.0, MAX_TIME_S)
        check_range("replan_disruption", self.replan_disruption, 0.0, MAX_TIME_S)
        check_range("replan_first", self.replan_first, 0.0, MAX_TIME_S, closed=False)


class Replan:
    """Follows plans of the residual batch made by a registered method."""

    name: ClassVar[str] = "replan"
    description: ClassVar[str] = ("plan the active jobs with --replan-method (default greedy) "
                                  "whenever they or the GPUs change, at most every "
                                  "--replan-every s, and run them in planned order")
    options_type: ClassVar[type[Any]] = ReplanOptions
    modes: ClassVar[frozenset[Mode]] = frozenset(Mode)
    preemptive: ClassVar[bool] = True
    calls_solver: ClassVar[bool] = True
    preempts_to_start: ClassVar[bool] = False
    decides_in_fixed_order: ClassVar[bool] = False

    @classmethod
    def fixed_order(cls, instance: Instance) -> IntArray | None:
        """None: the order follows the run."""
        del instance
        return None

    def __init__(self, context: PolicyContext) -> None:
        options: ReplanOptions = context.options
        self.method = options.replan_method
        self.every = options.replan_every
        self.objective = options.replan_objective
        self.disruption = options.replan_disruption
        self.strict = options.replan_strict
        settings = context.settings
        self.settings = (settings if settings.time_limit_s is not None else
                         dataclasses.replace(settings, time_limit_s=DEFAULT_CALL_S))
        self.first = (self.settings if options.replan_first is None else
                      dataclasses.replace(settings, time_limit_s=options.replan_first))
        self.restart_s = context.restart_overhead_s
        self.first_method = options.replan_first_method or self.method
        self.planned: frozenset[int] = frozenset()
        self.down: bytes = b""
        self.last = -np.inf
        n = context.instance.n_jobs
        #: Each job's planned start (relative to its plan) and type; inf/-1 when unplanned.
        self.start = np.full(n, np.inf)
        self.gpu_type = np.full(n, -1, dtype=np.int64)
        self.calls = 0
        #: Wall seconds spent in plan calls.
        self.solver_s = 0.0

    def _replan(self, view: View) -> None:
        jobs = view.jobs
        paused = ~np.isnan(view.first_start[jobs]) & (view.running_type[jobs] < 0)
        residual = residual_instance(view.instance, jobs, view.remaining[jobs],
                                     np.where(paused, self.restart_s, 0.0), view.now,
                                     self.objective)
        first = self.calls == 0
        method = METHODS[self.first_method if first else self.method]
        if method.plans_outages:
            residual = dataclasses.replace(residual, outages=_down(view))
        # The policy follows each job's planned start and type: a method that would start
        # from a round-based plan (cp's default for preemptible makespan batches) starts
        # from list scheduling's instead, so that jobs run in one piece.
        warm = REPAIR if WarmStart.PLAN in method.warm_starts else None
        keep = (self._keep(view, residual) if self.disruption > 0 and method.keeps
                else None)
        began = time.perf_counter()
        schedule = plan(residual, method.name, settings=self.first if first else self.settings,
                        warm=warm, keep=keep)
        self.solver_s += time.perf_counter() - began
        self.calls += 1
        self.planned, self.last = frozenset(jobs.tolist()), view.now
        self.down = view.down_until.tobytes()
        self.start[jobs] = np.inf
        self.gpu_type[jobs] = -1
        if not schedule.status.has_plan:
            logger.info("t=%g: %s found no plan (%s); jobs keep arrival order", view.now,
                        self.method, schedule.status.value)
            return
        ids = residual.job_index
        types = view.instance.type_index
        for segment in schedule.segments:
            j = int(jobs[ids[segment.job]])
            if segment.start_s < self.start[j]:
                self.start[j] = segment.start_s
                self.gpu_type[j] = types[segment.gpu_type]

    def _keep(self, view: View, residual: Instance) -> Keep:
        """Each running job's slot: where it runs, from now; moving it costs the price."""
        jobs = view.jobs
        running = view.running_type[jobs] >= 0
        held = view.gpus
        gpus = tuple(held[j] if running[k] else None for k, j in enumerate(jobs.tolist()))
        start = np.where(running, 0.0, np.nan)
        weighted = self.objective is not ObjectiveKind.MAKESPAN
        penalty = self.disruption * (residual.weight if weighted else np.ones(jobs.size))
        return Keep(gpus, start, penalty.astype(float))

    def decide(self, view: View) -> Decision:
        """Planned jobs by planned start, then the others by arrival."""
        jobs = view.jobs
        changed = (frozenset(jobs.tolist()) != self.planned
                   or view.down_until.tobytes() != self.down)
        if changed and view.now - self.last >= self.every:
            self._replan(view)
        position = np.arange(jobs.size)
        # Among jobs planned to start at once, the running ones first: a waiting job
        # planned beside them (on GPUs the placement may not give it) never stops one.
        waiting = view.running_type[jobs] < 0
        order: IntArray = jobs[np.lexsort((position, waiting, self.start[jobs]))]
        # Planned type first, then every other eligible type fastest first.
        key = np.where(view.instance.eligible[order], view.instance.duration[order], np.inf)
        planned = self.gpu_type[order]
        rows = np.flatnonzero(planned >= 0)
        if self.strict:
            key[rows] = np.inf
        key[rows, planned[rows]] = -1.0
        prefer = np.argsort(key, axis=1, kind="stable")
        prefer[np.take_along_axis(key, prefer, axis=1) == np.inf] = -1
        return Decision(order, prefer)

    def wakeup(self, view: View) -> float | None:
        """The next time a due re-plan may happen, if jobs changed since the last plan."""
        if frozenset(view.jobs.tolist()) == self.planned or self.every == 0:
            return None
        return float(self.last + self.every) if self.last + self.every > view.now else None


def _down(view: View) -> tuple[Outage, ...]:
    """The failed GPUs, held in the residual's time until they come back."""
    down = np.flatnonzero(view.down_until > view.now)
    if not down.size:
        return ()
    until = view.down_until[down] - view.now
    return tuple(Outage(down[until == end], 0.0, float(end), "failed")
                 for end in np.unique(until).tolist())
