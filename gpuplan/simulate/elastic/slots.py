"""The future as ElasticFlow's policies see it: free GPUs over time slots, and reservations.

Time from the decision on is cut into slots of ``slot_s`` seconds (ElasticFlow's
``scheduling_slot``, 60 s). The free GPUs are a step function of the slot: a
:class:`Slots` holds it as segments (runs of slots with as many GPUs free), as
ElasticFlow's ``future_free_gpus`` holds it as breakpoints, so a plan costs what its
breakpoints cost, not what its slots do (deadlines are days of slots away). A policy
reserves, job after job, what each should hold; a job's :class:`Plan` is a step function
too, each step one of its levels (the counts it may run on) or 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from gpuplan.core.instance import FloatArray, IntArray


@dataclass(frozen=True)
class Levels:
    """The counts one job may run on and its iterations per second on each.

    Attributes
    ----------
    counts
        Ascending counts, with 0 first (holding nothing).
    rates
        Iterations per second on each (0 for the count 0).
    """

    counts: IntArray
    rates: FloatArray

    @cached_property
    def steps(self) -> dict[int, tuple[int, float]]:
        """From each count, the next level up and the iterations/s it adds per GPU."""
        counts, rates = self.counts.tolist(), self.rates.tolist()
        return {c: (counts[i + 1], (rates[i + 1] - rates[i]) / (counts[i + 1] - c))
                for i, c in enumerate(counts[:-1])}

    def below(self, gpus: IntArray) -> IntArray:
        """Per entry, the index of the largest level of at most that many GPUs."""
        found: IntArray = np.searchsorted(self.counts, gpus, side="right") - 1
        return found


@dataclass(frozen=True)
class Plan:
    """A job's GPUs over the slots from the decision on, as steps, and when it ends.

    Attributes
    ----------
    bounds
        ``(K + 1,)`` slot indices, ascending from 0: step ``k`` covers the slots
        ``[bounds[k], bounds[k + 1])``; the job holds nothing from ``bounds[-1]`` on.
    counts
        ``(K,)`` GPUs held in each step.
    end_s
        Seconds from the decision to its last iteration (inf if the steps end first).
    """

    bounds: IntArray
    counts: IntArray
    end_s: float

    @property
    def now(self) -> int:
        """GPUs held in the first slot (0 for a plan of no step)."""
        return int(self.counts[0]) if self.counts.size else 0

    def first_change(self) -> int | None:
        """The first slot at which the plan holds another count than in the first one."""
        other = np.flatnonzero(self.counts != self.now)
        return int(self.bounds[other[0]]) if other.size else None


class Slots:
    """Free GPUs per slot from a decision on, as steps; all GPUs free past the last.

    Parameters
    ----------
    gpus
        GPUs of the cluster.
    slot_s
        Slot length in seconds.
    """

    def __init__(self, gpus: int, slot_s: float) -> None:
        self.gpus = gpus
        self.slot_s = slot_s
        self.bounds: IntArray = np.zeros(1, dtype=np.int64)
        self.free: IntArray = np.zeros(0, dtype=np.int64)

    def slot_of(self, seconds: float) -> int:
        """How many whole or partial slots ``seconds`` from the decision span."""
        return max(math.ceil(seconds / self.slot_s - 1e-9), 0)

    def window(self, n: int) -> tuple[IntArray, IntArray]:
        """The steps over the first ``n`` slots: their bounds ``(K + 1,)`` and free GPUs."""
        bounds, free = self.bounds, self.free
        if bounds[-1] < n:
            bounds = np.append(bounds, n)
            free = np.append(free, self.gpus)
        cut = int(np.searchsorted(bounds, n, side="left"))
        return np.append(bounds[:cut], n), free[:cut]

    def reserve(self, plan: Plan) -> None:
        """Take the plan's GPUs out of the free ones."""
        if not plan.counts.size:
            return
        own, free = self.window(int(plan.bounds[-1]))
        if own[-1] < self.bounds[-1]:
            own, free = self.bounds, self.free
        bounds = np.union1d(own, plan.bounds)
        starts = bounds[:-1]
        free = free[np.searchsorted(own, starts, side="right") - 1]
        held = starts < plan.bounds[-1]
        free[held] -= plan.counts[np.searchsorted(plan.bounds, starts[held], side="right") - 1]
        if free.size > 1:
            keep = np.concatenate(([True], free[1:] != free[:-1]))
            bounds = np.append(bounds[:-1][keep], bounds[-1])
            free = free[keep]
        self.bounds, self.free = bounds, free

    def run(self, levels: Levels, bounds: IntArray, cap: IntArray, need: float,
            lengths: FloatArray, spent: FloatArray) -> Plan:
        """The plan that holds level ``cap[k]`` in step ``k`` until ``need`` is done.

        ``bounds`` are the steps' slots; ``lengths`` their seconds of progress (the last
        step may end early, at a deadline) less ``spent``, the overhead paid at the
        start of each. The plan ends with the slot its last iteration falls in.
        """
        done = np.cumsum(levels.rates[cap] * lengths)
        last = int(np.searchsorted(done, need * (1 - 1e-12)))
        if last >= cap.size:
            return Plan(bounds, levels.counts[cap], math.inf)
        before = float(done[last - 1]) if last else 0.0
        rate = float(levels.rates[cap[last]])
        end = float(bounds[last]) * self.slot_s + float(spent[last]) + (need - before) / rate
        ends = np.append(bounds[:last + 1], max(self.slot_of(end), int(bounds[last]) + 1))
        return Plan(ends, levels.counts[cap[:last + 1]], end)
