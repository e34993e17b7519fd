"""What the elastic policies share: each job's levels, and handing out GPUs left over."""

from __future__ import annotations

import heapq
import math
from collections.abc import Collection

import numpy as np

from gpuplan.core.instance import FloatArray, Instance, IntArray
from gpuplan.simulate.elastic.engine import ElasticDecision, ElasticView
from gpuplan.simulate.elastic.slots import Levels, Plan, Slots


class JobLevels:
    """Each job's :class:`Levels` on the cluster's one GPU type, built once per job.

    With ``useful`` only the counts faster than every smaller one are levels (ElasticFlow
    caps each model at the count past which it stops speeding up, its ``max_gpu``).
    """

    def __init__(self, instance: Instance, useful: bool = False) -> None:
        self.instance = instance
        self.useful = useful
        self.type = int(np.flatnonzero(instance.node_gpus.sum(axis=0) > 0)[0])
        self._levels: dict[int, Levels] = {}

    def __call__(self, job: int) -> Levels:
        """The counts ``job`` may run on (0 first), with its speed on each."""
        found = self._levels.get(job)
        if found is None:
            instance = self.instance
            if instance.elastic[job]:
                rates = instance.speed[job, self.type]
                allowed = rates > 0
                if self.useful:
                    allowed &= rates > np.maximum.accumulate(
                        np.concatenate(([0.0], rates[:-1])))
                counts = np.concatenate(([0], instance.counts[allowed]))
                speeds = np.concatenate(([0.0], rates[allowed]))
            else:
                # A rigid job: its gang, one "iteration" a second (its duration is its work).
                counts = np.array([0, int(instance.gang[job])])
                speeds = np.array([0.0, 1.0])
            found = Levels(counts.astype(np.int64), speeds.astype(float))
            self._levels[job] = found
        return found

    def need(self, view: ElasticView, job: int) -> float:
        """Iterations ``job`` has left (a rigid job's seconds at its gang)."""
        return float(view.remaining[job])


def fixed_counts(view: ElasticView) -> dict[int, int]:
    """The running jobs that may not be preempted, with the GPUs they keep to their end."""
    running = view.active[view.count[view.active] > 0]
    fixed = running[~view.instance.preemptible[running]]
    return {j: int(view.count[j]) for j in fixed.tolist()}


def progress_seconds(view: ElasticView, job: int, bounds: IntArray, last_s: float,
                     slot_s: float) -> tuple[FloatArray, FloatArray]:
    """Seconds of progress of ``job`` in each step of a plan, and the overhead of each.

    Step ``k`` covers the slots ``[bounds[k], bounds[k + 1])`` of ``slot_s`` seconds, the
    last ending ``last_s`` after the decision; a job not running now pays its restart
    overhead (``rescale_s``) at the start, a running one what is left of its current one.
    """
    begin = bounds[:-1] * slot_s
    end = np.append(bounds[1:-1] * slot_s, last_s)
    lengths = end - begin
    restart = (float(view.overhead_left[job]) if view.count[job]
               else float(view.instance.rescale_s[job]))
    spent: FloatArray = np.clip(restart - begin, 0.0, lengths)
    done: FloatArray = lengths - spent
    return done, spent


def hand_out(view: ElasticView, levels: JobLevels, count: dict[int, int],
             eligible: Collection[int]) -> None:
    """Give the GPUs no job holds to ``eligible`` jobs one level at a time, most gain first.

    ElasticFlow's leftover rule: the step with the most iterations per second gained per
    GPU added goes first, again and again while GPUs are left and some step fits.
    """
    left = view.gpus - sum(count.values())
    heap: list[tuple[float, int]] = []
    for job in eligible:
        step = levels(job).steps.get(count.get(job, 0))
        if step is not None and step[1] > 0:
            heap.append((-step[1], job))
    heapq.heapify(heap)
    pinned = fixed_counts(view)
    while heap and left > 0:
        _, job = heapq.heappop(heap)
        now = count.get(job, 0)
        grown, _ = levels(job).steps[now]
        if grown - now > left or (pinned and not view.packs([grown] + [
                c for j, c in count.items() if c and j != job and j not in pinned])):
            continue
        count[job] = grown
        left -= grown - now
        step = levels(job).steps.get(grown)
        if step is not None and step[1] > 0:
            heapq.heappush(heap, (-step[1], job))


class SharePlanner:
    """ElasticFlow's planning: minimum satisfactory shares in deadline order over slots.

    Parameters
    ----------
    levels
        Each job's levels.
    slot_s
        Slot length in seconds.
    """

    def __init__(self, levels: JobLevels, slot_s: float) -> None:
        self.levels = levels
        self.slot_s = slot_s

    def plan(self, view: ElasticView, jobs: IntArray) -> tuple[dict[int, Plan], set[int]]:
        """Each job's plan from an empty future, deadline first; those that would be late.

        A job that cannot meet its deadline is planned to run as soon and as wide as the
        slots left allow.
        """
        instance = view.instance
        fixed = fixed_counts(view)
        order = sorted((j for j in jobs.tolist() if j not in fixed),
                       key=lambda j: (instance.due[j], instance.release[j], j))
        slots = Slots(view.gpus, self.slot_s)
        plans: dict[int, Plan] = {}
        late: set[int] = set()
        for j, count in fixed.items():
            # It holds its GPUs to its end, whatever else is planned.
            levels = self.levels(j)
            n = slots.slot_of(float(view.overhead_left[j]) + float(view.remaining[j])
                              / float(levels.rates[levels.below(np.array([count]))[0]])) + 1
            plans[j] = Plan(np.array([0, n]), np.array([count]), 0.0)
            slots.reserve(plans[j])
        for j in order:
            plan = self.share(view, slots, j)
            if plan is None:
                late.add(j)
                plan = self.widest(view, slots, j)
            slots.reserve(plan)
            plans[j] = plan
        return plans, late

    def share(self, view: ElasticView, slots: Slots, j: int) -> Plan | None:
        """The job's minimum satisfactory share, or None if no level meets its deadline.

        The smallest level ``q`` such that holding ``q`` (or the largest level the free
        GPUs of a step allow) from some step to the deadline does the job's iterations;
        the job holds the level below ``q`` until that step, ``q`` from it, and ends when
        its iterations are done.
        """
        left = float(view.instance.due[j]) - view.now
        if not left > 0:
            return None
        bounds, free = slots.window(slots.slot_of(left))
        levels = self.levels(j)
        need = float(view.remaining[j])
        lengths, spent = progress_seconds(view, j, bounds, left, self.slot_s)
        room = levels.below(free)
        for q in range(1, levels.counts.size):
            cap = np.minimum(room, q)
            done = np.cumsum((levels.rates[cap] * lengths)[::-1])[::-1]
            if done[0] < need * (1 - 1e-12):
                continue
            point = int(np.flatnonzero(done >= need * (1 - 1e-12))[-1])
            cap[:point] = np.minimum(room[:point], q - 1)
            plan = slots.run(levels, bounds, cap, need, lengths, spent)
            if plan.end_s <= left + 1e-6:
                return plan
        return None

    def widest(self, view: ElasticView, slots: Slots, j: int) -> Plan:
        """The plan running the job as soon and as wide as the free slots allow."""
        levels = self.levels(j)
        need = float(view.remaining[j])
        n = max(int(slots.bounds[-1]), 0) + slots.slot_of(need / float(levels.rates[-1])) + 2
        while True:
            bounds, free = slots.window(n)
            lengths, spent = progress_seconds(view, j, bounds, n * self.slot_s, self.slot_s)
            plan = slots.run(levels, bounds, levels.below(free), need, lengths, spent)
            if math.isfinite(plan.end_s):
                return plan
            n *= 2

    def slot_work(self, view: ElasticView, j: int, plan: Plan
                  ) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
        """Job ``j``'s plan step by step: begin and end seconds, GPU-seconds, iterations.

        The last step counts up to the plan's end.
        """
        end = min(plan.end_s, float(plan.bounds[-1]) * self.slot_s)
        lengths, spent = progress_seconds(view, j, plan.bounds, end, self.slot_s)
        levels = self.levels(j)
        rates = levels.rates[levels.below(plan.counts)]
        did = np.minimum(np.cumsum(rates * lengths), float(view.remaining[j]))
        begin: FloatArray = plan.bounds[:-1].astype(float) * self.slot_s
        finish = begin + lengths + spent
        held: FloatArray = plan.counts.astype(float) * (finish - begin)
        return begin, finish, held, np.diff(did, prepend=0.0)

    def decision(self, view: ElasticView, plans: dict[int, Plan],
                 declined: list[int]) -> ElasticDecision:
        """Each job's first-slot count, leftovers by marginal gain, and the next change."""
        count = {j: p.now for j, p in plans.items() if p.now}
        fixed = fixed_counts(view)
        hand_out(view, self.levels, count, [j for j in plans if j not in fixed])
        changes = [c for c in (p.first_change() for p in plans.values()) if c is not None]
        wake = view.now + min(changes) * self.slot_s if changes else None
        return ElasticDecision({j: c for j, c in count.items() if c}, declined, wake)
