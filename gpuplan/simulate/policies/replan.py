"""``replan``: plan the active jobs with any registered method, and follow the plan.

The hook between the online and the offline halves. When the set of active jobs has
changed (and at least ``--replan-every`` seconds have passed since the last plan), the
residual batch (:func:`gpuplan.simulate.residual.residual_instance`: each active job with
the work it has left, a paused one with its restore overhead) goes to ``--replan-method``
through :func:`gpuplan.planning.plan`, under the run's ``--time-limit`` per call (1 s when
none is given), so every plan followed is a verified one. Jobs then run in the order of
their planned starts, each on its planned GPU type first; a job that arrived since the
last plan queues behind the planned ones, fastest type first. The engine stays
work-conserving: a job planned for later starts now if GPUs are free for it.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from gpuplan.core.errors import InputError, setting
from gpuplan.core.instance import MAX_TIME_S, Instance, IntArray
from gpuplan.core.objectives import ObjectiveKind
from gpuplan.core.options import check_range, option, parse_number
from gpuplan.methods import METHODS
from gpuplan.planning import plan
from gpuplan.simulate.policy import Decision, Mode, PolicyContext, View
from gpuplan.simulate.residual import residual_instance

logger = logging.getLogger(__name__)

#: Seconds a plan may take when the run gives no --time-limit.
DEFAULT_CALL_S = 1.0
#: What the residual batches are planned for.
OBJECTIVE = ObjectiveKind.WEIGHTED_COMPLETION


@dataclass(frozen=True)
class ReplanOptions:
    """Options of the ``replan`` scheduler."""

    replan_method: str = option(
        "greedy", "--replan-method", "the registered planning method the replan hook calls on "
        "the residual jobs (default: greedy)",
        choices=tuple(name for name, method in METHODS.items() if OBJECTIVE in method.objectives),
        metavar="NAME")
    replan_every: float = option(
        0.0, "--replan-every", "at most one replan every S seconds (default: 0)",
        parse=parse_number(float, 0.0, MAX_TIME_S), metavar="S")

    def __post_init__(self) -> None:
        """Refuse a method that cannot plan the residual batches, and a bad interval."""
        if self.replan_method not in METHODS:
            raise InputError(setting("replan_method"), "", f"unknown method "
                             f"{self.replan_method!r}; choose one of: {', '.join(METHODS)}")
        if OBJECTIVE not in METHODS[self.replan_method].objectives:
            raise InputError(setting("replan_method"), "", f"method {self.replan_method!r} cannot "
                             f"plan {OBJECTIVE.value!r}, which the residual batches minimise")
        check_range("replan_every", self.replan_every, 0.0, MAX_TIME_S)


class Replan:
    """Follows plans of the residual batch made by a registered method."""

    name: ClassVar[str] = "replan"
    description: ClassVar[str] = ("plan the active jobs with --replan-method (default greedy) "
                                  "whenever they change, at most every --replan-every s, "
                                  "and run them in planned order")
    options_type: ClassVar[type[Any]] = ReplanOptions
    modes: ClassVar[frozenset[Mode]] = frozenset(Mode)
    preemptive: ClassVar[bool] = True
    calls_solver: ClassVar[bool] = True
    preempts_to_start: ClassVar[bool] = False

    @classmethod
    def fixed_order(cls, instance: Instance) -> IntArray | None:
        """None: the order follows the run."""
        del instance
        return None

    def __init__(self, context: PolicyContext) -> None:
        options: ReplanOptions = context.options
        self.method = options.replan_method
        self.every = options.replan_every
        settings = context.settings
        self.settings = (settings if settings.time_limit_s is not None else
                         dataclasses.replace(settings, time_limit_s=DEFAULT_CALL_S))
        self.restart_s = context.restart_overhead_s
        self.n_types = context.instance.n_types
        self.planned: frozenset[int] = frozenset()
        self.last = -np.inf
        n = context.instance.n_jobs
        #: Each job's planned start (relative to its plan) and type; inf/-1 when unplanned.
        self.start = np.full(n, np.inf)
        self.gpu_type = np.full(n, -1, dtype=np.int64)
        self.calls = 0

    def _replan(self, view: View) -> None:
        jobs = view.jobs
        paused = ~np.isnan(view.first_start[jobs]) & (view.running_type[jobs] < 0)
        residual = residual_instance(view.instance, jobs, view.remaining[jobs],
                                     np.where(paused, self.restart_s, 0.0), view.now,
                                     OBJECTIVE)
        schedule = plan(residual, self.method, settings=self.settings)
        self.calls += 1
        self.planned, self.last = frozenset(jobs.tolist()), view.now
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

    def decide(self, view: View) -> Decision:
        """Planned jobs by planned start, then the others by arrival."""
        jobs = view.jobs
        if (frozenset(jobs.tolist()) != self.planned
                and view.now - self.last >= self.every):
            self._replan(view)
        position = np.arange(jobs.size)
        order: IntArray = jobs[np.lexsort((position, self.start[jobs]))]
        # Planned type first, then every other eligible type fastest first.
        key = np.where(view.instance.eligible[order], view.instance.duration[order], np.inf)
        planned = self.gpu_type[order]
        rows = np.flatnonzero(planned >= 0)
        key[rows, planned[rows]] = -1.0
        prefer = np.argsort(key, axis=1, kind="stable")
        prefer[np.take_along_axis(key, prefer, axis=1) == np.inf] = -1
        return Decision(order, prefer)

    def wakeup(self, view: View) -> float | None:
        """The next time a due re-plan may happen, if jobs changed since the last plan."""
        if frozenset(view.jobs.tolist()) == self.planned or self.every == 0:
            return None
        return float(self.last + self.every) if self.last + self.every > view.now else None
