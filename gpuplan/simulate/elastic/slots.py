"""The future as ElasticFlow's policies see it: free GPUs per time slot, and reservations.

Time from the decision on is cut into slots of ``slot_s`` seconds (ElasticFlow's
``scheduling_slot``, 60 s). A :class:`Slots` holds the GPUs still free in each; a policy
reserves, job after job, the GPUs each should hold in each slot. A job's plan is an array
of counts, one per slot, each one of its levels (the counts it may run on, from
:attr:`~gpuplan.core.instance.Instance.counts`) or 0.
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
    """A job's counts slot by slot from the decision on, and when it ends.

    Attributes
    ----------
    counts
        GPUs held in each slot (0 from its end on).
    end_s
        Seconds from the decision to its last iteration (inf when the slots end first).
    """

    counts: IntArray
    end_s: float


class Slots:
    """Free GPUs per slot from a decision on; slots are added as plans reach further.

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
        self.free: IntArray = np.full(64, gpus, dtype=np.int64)

    def reach(self, slots: int) -> None:
        """Hold at least ``slots`` slots (the new ones wholly free)."""
        if slots > self.free.size:
            grown = max(slots, 2 * self.free.size)
            self.free = np.concatenate([self.free, np.full(grown - self.free.size, self.gpus,
                                                           dtype=np.int64)])

    def slot_of(self, seconds: float) -> int:
        """How many whole or partial slots ``seconds`` from the decision span."""
        return max(math.ceil(seconds / self.slot_s - 1e-9), 0)

    def reserve(self, plan: Plan) -> None:
        """Take the plan's GPUs out of the free ones."""
        self.reach(plan.counts.size)
        self.free[:plan.counts.size] -= plan.counts

    def run(self, levels: Levels, cap: IntArray, need: float, lengths: FloatArray,
            spent: FloatArray) -> Plan:
        """The plan that holds, slot by slot, level ``cap[s]`` until ``need`` is done.

        ``lengths`` are the slots' seconds of progress: a slot's length (the last may end
        early, at a deadline) less ``spent``, the overhead paid at its start; ``cap``
        indexes ``levels``. The plan ends with the slot its last iteration falls in;
        ``end_s`` is that instant.
        """
        done = np.cumsum(levels.rates[cap] * lengths)
        last = int(np.searchsorted(done, need * (1 - 1e-12)))
        if last >= cap.size:
            return Plan(levels.counts[cap], math.inf)
        before = float(done[last - 1]) if last else 0.0
        rate = float(levels.rates[cap[last]])
        end = last * self.slot_s + float(spent[last]) + (need - before) / rate
        counts = levels.counts[cap[:last + 1]]
        return Plan(counts, end)
