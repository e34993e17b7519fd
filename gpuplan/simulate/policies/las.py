"""``las``: Tiresias' discretized two-dimensional least-attained-service (2D-LAS).

Gu et al., "Tiresias: A GPU Cluster Manager for Distributed Deep Learning", NSDI'19, as
its simulator does it (``dlas_sim_jobs`` with ``gputime=True``, the ``dlas-gpu`` schedule,
in ``simulator/run_sim.py`` of github.com/SymbioticLab/Tiresias):

- a job's service is two-dimensional: GPUs times seconds run (``View.attained``,
  GPU-seconds, overheads excluded);
- ``K`` priority queues are split by thresholds on that service; a job arrives in the top
  queue and is demoted one queue when its service since it last entered the top queue
  reaches its queue's threshold, joining the back of the next queue;
- higher queues go first; within a queue, first the jobs that were there before this
  decision, running ones ahead of waiting ones, then those that enter it now; each group
  in the order it entered the queue, ties by arrival (Tiresias appends a job entering a
  queue at its back and, after each decision, moves a queue's waiting jobs behind its
  running ones). So a running job is not preempted by a waiting job of its own queue
  unless it has just been demoted into it. A job that does not fit is skipped for one
  that does;
- starvation: a waiting job below the top queue that has waited, since it last entered
  the top queue and first ran there, at least ``starvation`` times as long as it has run
  since then, is promoted to the top queue, its service counted from zero again
  (Tiresias' ``last_pending_time >= executed_time * solve_starvation``; 0 disables it).

Defaults are Tiresias' ``dlas-gpu``: three queues split at 3250 and 7200 GPU-seconds
(``jobs.py``: ``num_queue = 3``, ``queue_limit = [3250, 7200, ...]``) and no starvation
promotion (``solve_starvation = 0``; its ``dlas-gpu-N`` schedules use ``N``).

In event mode the scheduler asks to decide again when a running job reaches its queue's
threshold or a waiting job reaches the starvation limit. A job's service grows only once
its restore or migration overhead is paid, which the view does not tell: the wake-up
assumes it grows from now, so it is early, never late, for a job still paying an
overhead, and the next one lands on the crossing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from gpuplan.core.errors import InputError, setting
from gpuplan.core.instance import FloatArray, Instance, IntArray
from gpuplan.core.options import check_range, option, parse_number
from gpuplan.simulate.policy import Decision, Mode, PolicyContext, View

#: Tiresias' dlas-gpu queue thresholds in GPU-hours (3250 and 7200 GPU-seconds).
DEFAULT_THRESHOLDS: tuple[float, ...] = (3250.0 / 3600.0, 7200.0 / 3600.0)
#: Tiresias' dlas-gpu default: no starvation promotion.
DEFAULT_STARVATION = 0.0
#: Seconds within which a crossing counts as reached, so that a job a rounding error
#: short of its threshold is demoted now rather than woken for again at the same instant.
_EPS_S = 1e-6


def _thresholds(text: str) -> tuple[float, ...]:
    """``--thresholds`` text: GPU-hours separated by commas."""
    try:
        return tuple(float(part) for part in text.split(","))
    except ValueError:
        raise ValueError(f"expected GPU-hours separated by commas, e.g. 0.9,2; got "
                         f"{text!r}") from None


@dataclass(frozen=True)
class LasOptions:
    """Options of the ``las`` scheduler."""

    thresholds: tuple[float, ...] = option(
        DEFAULT_THRESHOLDS, "--thresholds", "attained-service thresholds of the priority "
        "queues, GPU-hours, increasing (default: Tiresias' dlas-gpu, 3250 and 7200 "
        "GPU-seconds)", parse=_thresholds, metavar="H,H,...")
    starvation: float = option(
        DEFAULT_STARVATION, "--starvation", "promote a job that waited X times its run time "
        "since it last entered the top queue (default: 0, never)",
        parse=parse_number(float, 0.0, 1e12), metavar="X")

    def __post_init__(self) -> None:
        """Refuse thresholds that are not positive, finite and increasing, however given."""
        hours = np.asarray(self.thresholds, dtype=float)
        if (hours.ndim != 1 or hours.size == 0 or not np.isfinite(hours).all()
                or hours.min() <= 0 or (np.diff(hours) <= 0).any()):
            raise InputError(setting("thresholds"), "", f"{self.thresholds!r} is not a list of "
                             "positive GPU-hours in increasing order, e.g. 0.9,2")
        check_range("starvation", self.starvation, 0.0, 1e12)


class Las:
    """Tiresias' discretized 2D-LAS: queues by attained GPU-seconds, preemptive."""

    name: ClassVar[str] = "las"
    description: ClassVar[str] = ("Tiresias' discretized 2D-LAS: priority queues by "
                                  "attained GPU-time, preemptive (--thresholds, "
                                  "--starvation)")
    options_type: ClassVar[type[Any]] = LasOptions
    modes: ClassVar[frozenset[Mode]] = frozenset(Mode)
    preemptive: ClassVar[bool] = True
    calls_solver: ClassVar[bool] = False
    preempts_to_start: ClassVar[bool] = True
    decides_in_fixed_order: ClassVar[bool] = False

    @classmethod
    def fixed_order(cls, instance: Instance) -> IntArray | None:
        """None: the order follows the run."""
        del instance
        return None

    def __init__(self, context: PolicyContext) -> None:
        options: LasOptions = context.options
        #: Queue thresholds in GPU-seconds; queue k holds service in [limits[k-1], limits[k]).
        self.limits = np.asarray(options.thresholds, dtype=float) * 3600.0
        self.starvation = options.starvation
        n = context.instance.n_jobs
        # Service a job had when it last entered the top queue (promotion resets it).
        self.base: FloatArray = np.zeros(n)
        # Seconds it has waited since then, counted once it has run there.
        self.waited: FloatArray = np.zeros(n)
        self.queue = np.full(n, -1, dtype=np.int64)
        # When it entered its queue: arrival, demotion or promotion.
        self.entered: FloatArray = np.zeros(n)
        self.last: float | None = None

    def decide(self, view: View) -> Decision:
        """Account waits, demote, promote the starved; order by queue, running, entry."""
        jobs, now = view.jobs, view.now
        gang = view.instance.gang[jobs]
        running = view.running_type[jobs] >= 0
        served = view.attained[jobs] - self.base[jobs]
        # A job waiting now waited since the previous decision: only decisions start jobs.
        waiting = ~running & (served > 0)
        if self.last is not None:
            self.waited[jobs[waiting]] += now - self.last
        self.last = now
        queue = np.searchsorted(self.limits, served + _EPS_S * gang, side="right")
        if self.starvation > 0:
            starved = waiting & (queue > 0) & (
                self.waited[jobs] >= self.starvation * served / gang - _EPS_S)
            promoted = jobs[starved]
            self.base[promoted] = view.attained[promoted]
            self.waited[promoted] = 0.0
            queue[starved] = 0
        moved = queue != self.queue[jobs]
        self.entered[jobs[moved]] = now
        self.queue[jobs] = queue
        # Tiresias appends a job entering a queue at its back, and after each decision
        # moves the waiting jobs of a queue behind its running ones: within a queue,
        # those there before this decision go first, running ones ahead, each group in
        # the order it entered. lexsort's last key is the primary one; a position in
        # view.jobs is the arrival order.
        order = np.lexsort((np.arange(jobs.size), self.entered[jobs], ~running, moved,
                            queue))
        return Decision(jobs[order])

    def wakeup(self, view: View) -> float | None:
        """When the next running job reaches its threshold or waiting job starves."""
        jobs, now = view.jobs, view.now
        gang = view.instance.gang[jobs]
        # running_type is the engine's live state: the decision has been carried out.
        running = view.running_type[jobs] >= 0
        served = view.attained[jobs] - self.base[jobs]
        queue = self.queue[jobs]
        soonest = math.inf
        climbing = running & (queue < self.limits.size)
        if climbing.any():
            left = self.limits[queue[climbing]] - served[climbing]
            soonest = float((left / gang[climbing]).min())
        if self.starvation > 0:
            starving = ~running & (queue > 0) & (served > 0)
            if starving.any():
                left = (self.starvation * served[starving] / gang[starving]
                        - self.waited[jobs[starving]])
                soonest = min(soonest, float(left.min()))
        return now + max(soonest, _EPS_S) if math.isfinite(soonest) else None
