"""Gavel's round mechanism: how an allocation of time shares becomes the jobs of a round.

Gavel (Narayanan et al., OSDI 2020) does not run its allocation ``X[job, type]`` directly:
it recomputes ``X`` now and then and, at every round boundary, picks the jobs of the next
round so that the time each job receives tracks its share. This module is that mechanism,
as Gavel's simulator runs it (``scheduler/scheduler.py`` of its repository: ``simulate``,
``_update_priorities``, ``_reset_time_run_so_far``, ``_schedule_jobs_on_workers_helper``);
the schedulers of :mod:`gpuplan.simulate.policies` (``gavel-*``) only say how ``X`` is
computed (:meth:`GavelRounds.allocate`).

**When the allocation is recomputed.** Only at a round boundary at which a job arrived or
completed since the last recompute, and only when :data:`RESET_INTERVAL_S` (1,920 s) have
passed since the last one, or none has happened at a time after 0 yet (Gavel's
``last_reset == 0`` test). A job that arrives in between is in no allocation and never
runs until the next recompute; with nothing running the engine's clock jumps to the next
arrival, so such a job may wait for the next arrival (Gavel's idle clock jump).

**Bookkeeping of a recompute** (a *reset*). Every job present gets a deficit per type,
``+= X_old[j, t] * (now - last_reset) - (time received on t since the last reset)``
(X_old 0 for a job that arrived since), its time received is set back to Gavel's credit of
half a round (180 s of a 360 s round; a new job starts with it too), and each type's worker
time becomes that credit times the jobs present.

**Choosing a round's jobs.** Each job's priority on type ``t`` is ``X[j, t]`` over its
fraction ``job_time[j, t] / worker_time[t]`` of the time given on ``t`` since the last reset
(0 when the job is in no allocation, ``X`` is 0 or it cannot run on ``t``). Types are
visited fastest first (:func:`type_order`) by heterogeneity-aware policies and in an order
shuffled every round by heterogeneity-agnostic ones (Gavel's ``_worker_type_shuffler``, a
``random.Random(seed + 5)``). For each type in turn its jobs are sorted by (priority,
deficit, X) descending, stable in arrival order, and taken greedily: a job already taken
on an earlier type, one that cannot run on the type, one whose gang exceeds the GPUs left
(the next may fit), and, for the FIFO policies only, one of priority 0, are skipped. So the
LP policies are work-conserving: a job of priority 0 still runs where GPUs are left. A job
in no allocation may be taken by that pass, using up GPUs, but is then dropped (Gavel
drops it when it assigns workers): those GPUs idle for the round.

**Where gpuplan's simulator differs** (none of this changes which jobs a round takes):
rounds last exactly ``round_s`` (Gavel's end ``int(throughput * 360) / throughput`` s in,
a fraction of a second early); Gavel's ``round_start`` is not moved past an idle gap, so
the first round after one credits the gap to the jobs it runs, which only skews their
priorities among themselves; here the time credited is the time held. When every job that
ran completes and the next arrival is later, the engine asks nothing at the round's end:
the recompute Gavel makes then (with no job present) is made at the next decision, dated
to the round's end.

**The end of a workload.** Gavel's generated workloads never end. When nothing is chosen
and no job will arrive any more, the allocation is recomputed at once, as Gavel's
simulator does for a trace file (``from_trace``: ``last_reset_time = 0`` once the trace is
consumed and nothing runs).
"""

from __future__ import annotations

import dataclasses
import enum
import logging
import random
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from gpuplan.core.budget import Budget
from gpuplan.core.instance import BoolArray, FloatArray, Instance, IntArray
from gpuplan.core.options import NoOptions
from gpuplan.core.settings import Context
from gpuplan.models.allocation import FairShare, Policy, ThroughputData
from gpuplan.parts.allocation import AllocationOptions, partitions_option, solve_policy
from gpuplan.simulate.policy import Decision, Mode, PolicyContext, View

logger = logging.getLogger(__name__)

#: Gavel's ``minimum_time_between_allocation_resets``: seconds between two recomputes.
RESET_INTERVAL_S = 1920.0

#: Gavel's GPU types, fastest first: the order heterogeneity-aware policies visit them in.
GAVEL_TYPES = ("v100", "p100", "k80")

#: Gavel's priority of an allocated job while its type has no worker time yet (its
#: ``X * 1e9``, "so 2 * new_priority > new_priority").
UNSEEN_PRIORITY = 1e9

#: Time since the end of the last round (seconds) below which a decision is that round's
#: end, not a later arrival after an idle gap.
SAME_INSTANT_S = 1e-6


def type_order(instance: Instance) -> IntArray:
    """The fleet's GPU types, fastest first: the order aware policies visit them in.

    Gavel's types (``v100``, ``p100``, ``k80``, any case) in Gavel's order; any other fleet
    by the median over jobs of the type's speed relative to the job's fastest type,
    highest first (ties in the fleet's order; a type no job can use last).
    """
    ids = [type_id.casefold() for type_id in instance.type_ids]
    if set(ids) <= set(GAVEL_TYPES):
        return np.array([ids.index(t) for t in GAVEL_TYPES if t in ids], dtype=np.int64)
    rate = np.where(instance.eligible, 1.0 / np.where(instance.eligible, instance.duration,
                                                      1.0), np.nan)
    relative = rate / np.nanmax(np.where(instance.eligible, rate, -np.inf), axis=1)[:, None]
    usable = instance.eligible.any(axis=0)
    median = np.full(instance.n_types, -np.inf)
    for t in np.flatnonzero(usable).tolist():
        median[t] = float(np.median(relative[instance.eligible[:, t], t]))
    order: IntArray = np.argsort(-median, kind="stable").astype(np.int64)
    return order


def reference_rates(rate: FloatArray, eligible: BoolArray, top: int) -> FloatArray:
    """``rate`` with each job's rate on type ``top`` on every type it may use.

    Gavel's agnostic finish-time fairness and makespan policies count every type at the
    job's V100 throughput (``top``: the fleet's fastest type, :func:`type_order`'s first);
    a job that cannot run on ``top`` counts at its fastest rate.
    """
    reference = np.where(eligible[:, top], rate[:, top], rate.max(axis=1, initial=0.0))
    same: FloatArray = np.where(eligible, reference[:, None], 0.0)
    return same


def unit_rates(eligible: BoolArray) -> FloatArray:
    """Rates of 1 wherever a job may run: Gavel's agnostic max-min fairness LP."""
    ones: FloatArray = eligible.astype(float)
    return ones


class GavelRounds(ABC):
    """A Gavel round-based scheduler: an allocation policy driven by Gavel's mechanism.

    Subclasses say how the allocation is computed (:meth:`allocate`), whether the policy
    is heterogeneity-aware (types fastest first) or agnostic (types shuffled every round),
    and whether it is a FIFO policy (skips jobs of priority 0). See the module docstring
    for the mechanism.
    """

    name: ClassVar[str]
    description: ClassVar[str]
    options_type: ClassVar[type[Any]] = NoOptions
    modes: ClassVar[frozenset[Mode]] = frozenset({Mode.ROUND})
    preemptive: ClassVar[bool] = True
    calls_solver: ClassVar[bool] = False
    preempts_to_start: ClassVar[bool] = False
    decides_in_fixed_order: ClassVar[bool] = False

    @classmethod
    def fixed_order(cls, instance: Instance) -> IntArray | None:
        """None: the order follows the run."""
        del instance
        return None
    #: Types fastest first (True) or shuffled every round (False).
    aware: ClassVar[bool]
    #: Gavel's FIFO policies never run a job of priority 0.
    fifo: ClassVar[bool] = False

    def __init__(self, context: PolicyContext) -> None:
        instance = context.instance
        self.context = context
        self.instance = instance
        n, kinds = instance.n_jobs, instance.n_types
        self.eligible: BoolArray = instance.eligible.copy()
        self.rate: FloatArray = np.where(self.eligible, 1.0 / np.where(
            self.eligible, instance.duration, 1.0), 0.0)
        self.gang: IntArray = instance.gang.astype(np.int64)
        self.total: IntArray = instance.node_gpus.sum(axis=0).astype(np.int64)
        self.order: IntArray = type_order(instance)
        self.shuffler = random.Random(context.seed + 5)
        #: Gavel's credit of time received at a reset and for a new job: half a round.
        self.credit = context.round_s / 2.0
        self.last_release = float(instance.release.max(initial=0.0))
        # Per-reset state, by job index (rows of jobs not present are stale and unused).
        self.share: FloatArray = np.zeros((n, kinds))
        self.allocated = np.zeros(n, dtype=bool)
        self.job_time: FloatArray = np.zeros((n, kinds))
        self.worker_time: FloatArray = np.zeros(kinds)
        self.deficit: FloatArray = np.zeros((n, kinds))
        self.last_reset = 0.0
        self.need_update = False
        # What the last decision saw, to turn the engine's cumulative times into diffs.
        self.known = np.zeros(n, dtype=bool)
        self.active = np.zeros(n, dtype=bool)
        self.seen: FloatArray = np.zeros((n, kinds))
        self.last_jobs: IntArray = np.zeros(0, dtype=np.int64)
        self.last_time = 0.0

    @abstractmethod
    def allocate(self, view: View, jobs: IntArray, now: float) -> FloatArray:
        """``(len(jobs), T)`` the policy's time shares of the jobs present, in ``[0, 1]``.

        Called at every recompute, ``jobs`` in arrival order; with no job at all when the
        cluster emptied (a policy with state across recomputes forgets the jobs gone).
        """

    def wakeup(self, view: View) -> float | None:
        """None: Gavel's policies decide at round boundaries only."""
        return None

    def decide(self, view: View) -> Decision:
        """The jobs of the next round, in Gavel's greedy order, each on its one type."""
        now, jobs = view.now, view.jobs
        self._account(view)
        new = jobs[~self.known[jobs]]
        if new.size:
            self.known[new] = True
            self.job_time[new] = self.credit
            self.deficit[new] = 0.0
            self.need_update = True
        if self.need_update and self._may_reset(now):
            self._reset(view, jobs, now)
        order, kinds = self._pass(view, jobs)
        if order.size == 0 and now >= self.last_release:
            # Gavel's trace mode: nothing runs and nothing will arrive, so reset now.
            self.last_reset = 0.0
            if self.need_update:
                self._reset(view, jobs, now)
            order, kinds = self._pass(view, jobs)
        self.seen[jobs] = view.received[jobs]
        self.last_jobs = jobs.copy()
        self.last_time = now
        return Decision(order, kinds[:, None])

    # -- bookkeeping ----------------------------------------------------------------------

    def _may_reset(self, now: float) -> bool:
        return now - self.last_reset >= RESET_INTERVAL_S or self.last_reset == 0.0

    def _account(self, view: View) -> None:
        """Credit the time the last round gave, note completions, and the skipped reset.

        Only jobs present at the last decision can have run since: their time received
        grows by what the engine counted (a job that completed, up to its completion).
        """
        before = self.last_jobs
        self.active[before] = False
        self.active[view.jobs] = True
        if before.size == 0:
            return
        given = view.received[before] - self.seen[before]
        self.job_time[before] += given
        self.worker_time += given.sum(axis=0)
        gone = ~self.active[before]
        if not gone.any():
            return
        self.need_update = True
        # Every job of the last round completed; the round ended at the last completion.
        # If the engine's next decision is later, Gavel's simulator decided at that end with
        # no job present: its shuffle and possible (empty) recompute happen there.
        end = self.last_time + float(given.sum(axis=1).max(initial=0.0))
        if gone.all() and view.now > end + SAME_INSTANT_S:
            if not self.aware:
                self.shuffler.shuffle(list(self.order))
            if self._may_reset(end):
                self._reset(view, np.zeros(0, dtype=np.int64), end)

    def _reset(self, view: View, jobs: IntArray, now: float) -> None:
        """Gavel's ``_reset_time_run_so_far`` and a recompute of the allocation."""
        elapsed = now - self.last_reset
        received = self.job_time[jobs] - self.credit
        self.deficit[jobs] += self.share[jobs] * elapsed - received
        self.job_time[jobs] = self.credit
        self.worker_time[:] = self.credit * jobs.size
        shares = np.clip(self.allocate(view, jobs, now), 0.0, 1.0)
        self.share[self.allocated] = 0.0
        self.allocated[:] = False
        self.share[jobs] = shares
        self.allocated[jobs] = True
        self.last_reset = now
        self.need_update = False
        logger.debug("t=%g: allocation recomputed for %d jobs", now, jobs.size)

    # -- the round's jobs -----------------------------------------------------------------

    def _types(self) -> list[int]:
        order = [int(t) for t in self.order]
        if not self.aware:
            self.shuffler.shuffle(order)
        return order

    def _pass(self, view: View, jobs: IntArray) -> tuple[IntArray, IntArray]:
        """Gavel's greedy pass: the jobs to run (in pass order) and the type of each."""
        share = self.share[jobs]
        eligible = self.eligible[jobs]
        worker = self.worker_time
        fraction = np.divide(self.job_time[jobs], worker, out=np.zeros_like(share),
                             where=worker > 0)
        ratio = np.divide(share, fraction, out=share * UNSEEN_PRIORITY, where=fraction > 0)
        priority = np.where(self.allocated[jobs][:, None] & (share != 0) & eligible,
                            ratio, 0.0)
        deficit = self.deficit[jobs]
        gang = self.gang[jobs]
        left = self.total.copy()
        taken = np.zeros(jobs.size, dtype=bool)
        # A job the engine will not stop keeps its GPUs: it is taken where it runs.
        kind = view.running_type[jobs]
        fixed = (kind >= 0) & view.locked[jobs]
        if fixed.any():
            taken[fixed] = True
            left -= np.bincount(kind[fixed], weights=gang[fixed],
                                minlength=left.size).astype(np.int64)
        picked: list[IntArray] = []
        picked_type: list[int] = []
        for t in self._types():
            if left[t] <= 0:
                continue
            queue = np.lexsort((-share[:, t], -deficit[:, t], -priority[:, t]))
            usable = ~taken[queue] & eligible[queue, t]
            if self.fifo:
                usable &= priority[queue, t] > 0
            candidates = queue[usable]
            candidates = candidates[gang[candidates] <= left[t]]
            while candidates.size and left[t] > 0:
                total = np.cumsum(gang[candidates])
                fit = int(np.searchsorted(total, left[t], side="right"))
                if fit:
                    chosen = candidates[:fit]
                    taken[chosen] = True
                    left[t] -= int(total[fit - 1])
                    picked.append(chosen)
                    picked_type.append(t)
                # The next job did not fit: later ones may, if their gang is small enough.
                rest = candidates[fit:]
                candidates = rest[gang[rest] <= left[t]]
        if not picked:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty
        positions = np.concatenate(picked)
        kinds = np.repeat(np.array(picked_type, dtype=np.int64), [p.size for p in picked])
        # A job in no allocation was counted by the pass but never runs (Gavel drops it).
        runs = self.allocated[jobs[positions]]
        order: IntArray = jobs[positions[runs]]
        chosen_kinds: IntArray = kinds[runs]
        return order, chosen_kinds


class LpRates(enum.Enum):
    """The throughputs an LP policy's allocation sees (the rounds always run true speeds)."""

    #: The measured ones: Gavel's heterogeneity-aware policies.
    TRUE = "true"
    #: 1 wherever a job may run (:func:`unit_rates`): Gavel's agnostic max-min fairness.
    UNIT = "unit"
    #: The fleet's fastest type's on every type (:func:`reference_rates`): Gavel's agnostic
    #: finish-time fairness and makespan policies.
    REFERENCE = "reference"


@dataclass(frozen=True)
class LpRoundsOptions:
    """Options of the Gavel policies whose allocation is an LP."""

    partitions: int = partitions_option()


class LpRounds(GavelRounds):
    """A Gavel policy whose allocation is one of gpuplan's allocation LPs.

    Solved by :func:`~gpuplan.parts.allocation.solve_policy` on the jobs present at every
    recompute, with the run's time limit per call and threads; ``partitions`` (POP) as
    given, at most one part per job present. Subclasses set :attr:`policy` and may set the
    rates the LP sees (:attr:`lp_rates`); the mechanism always runs jobs at their true
    speeds. If the solver returns no allocation (the time limit), Gavel's isolated share is
    used instead, as Gavel's finish-time fairness does when its solver fails.
    """

    options_type: ClassVar[type[Any]] = LpRoundsOptions
    calls_solver: ClassVar[bool] = True
    #: The allocation policy solved.
    policy: ClassVar[Policy]
    #: The throughputs the LP sees.
    lp_rates: ClassVar[LpRates] = LpRates.TRUE

    def __init__(self, context: PolicyContext) -> None:
        super().__init__(context)
        self.partitions = context.options.partitions

    def rates(self, jobs: IntArray) -> FloatArray:
        """``(len(jobs), T)`` the rates the LP sees, as :attr:`lp_rates` says."""
        if self.lp_rates is LpRates.UNIT:
            return unit_rates(self.eligible[jobs])
        if self.lp_rates is LpRates.REFERENCE:
            return reference_rates(self.rate[jobs], self.eligible[jobs], int(self.order[0]))
        rate: FloatArray = self.rate[jobs]
        return rate

    def data(self, view: View, jobs: IntArray, now: float) -> ThroughputData:
        """The LP's view of the jobs present: rates, work left and time since arrival."""
        # A job about to complete may show no work left; the LPs divide by it.
        remaining = np.maximum(view.remaining[jobs], 1e-12)
        data = ThroughputData.for_jobs(self.instance, jobs, remaining=remaining, now=now)
        return dataclasses.replace(data, rate=self.rates(jobs))

    def allocate(self, view: View, jobs: IntArray, now: float) -> FloatArray:
        """Solve :attr:`policy` on the jobs present (no jobs: nothing to solve)."""
        if jobs.size == 0:
            return np.zeros((0, self.instance.n_types))
        return self.solve(self.data(view, jobs, now), now)

    def solve(self, data: ThroughputData, now: float) -> FloatArray:
        """The policy's shares of ``data``; Gavel's isolated share if none is found."""
        settings = self.context.settings
        parts = min(self.partitions, data.n_jobs, int(data.gpus.sum()))
        options = AllocationOptions(policy=self.policy.value, partitions=parts,
                                 fair_share=FairShare.GPUS.value)
        context = Context(Budget(settings.time_limit_s), seed=self.context.seed,
                          threads=settings.threads, gap=settings.gap)
        allocation = solve_policy(data, options, context)
        if not allocation.status.has_plan:
            logger.warning("t=%g: %s found no allocation of %d jobs (%s); Gavel's isolated "
                           "share instead", now, self.policy.value, data.n_jobs,
                           allocation.status.value)
            return data.isolated_share()
        return allocation.share
