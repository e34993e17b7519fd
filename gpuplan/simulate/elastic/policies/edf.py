"""``edf``: earliest deadline first at each job's widest count, ElasticFlow's EDF baseline.

As ElasticFlow's simulator runs it (``one_queue_edf_sim_jobs`` and ``edf_sim_allocation``
in pkusys/ElasticFlow): at every decision the jobs are planned again in deadline order
over the slots of :mod:`~gpuplan.simulate.elastic.slots`, each at the most GPUs it may use
(ElasticFlow's ``max_gpu`` for its baselines: the job's largest count, however poorly
it scales) where that many are free, else the largest count the free GPUs of the slot
allow, slot after slot until its iterations are done. Each job holds now what its plan
holds in the first slot; no job is declined, and one past its deadline still runs to its
end.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from gpuplan.simulate.elastic.engine import ElasticDecision, ElasticView
from gpuplan.simulate.elastic.policies.common import JobLevels, restart_lengths
from gpuplan.simulate.elastic.policies.elasticflow import SlotOptions
from gpuplan.simulate.elastic.slots import Slots


class EarliestDeadline:
    """EDF: deadline order, each job at its widest count in the first window that fits."""

    name: ClassVar[str] = "edf"
    description: ClassVar[str] = ("earliest deadline first, each job at its widest count, "
                                  "no admission control (ElasticFlow's EDF)")
    options_type: ClassVar[type[Any]] = SlotOptions
    calls_solver: ClassVar[bool] = False

    def __init__(self, instance: Any, options: SlotOptions) -> None:
        self.levels = JobLevels(instance)
        self.slot_s = options.slot_s
        self.decision_gap_s = options.slot_s

    def decide(self, view: ElasticView) -> ElasticDecision:
        """Plan each job at its widest count where the slots allow, deadline first."""
        instance = view.instance
        jobs = np.concatenate([view.active, view.arrived]).tolist()
        jobs.sort(key=lambda j: (instance.due[j], instance.release[j], j))
        slots = Slots(view.gpus, self.slot_s)
        count: dict[int, int] = {}
        wake = np.inf
        for j in jobs:
            levels = self.levels(j)
            need = float(view.remaining[j])
            n = slots.slot_of(need / float(levels.rates[-1])) + 2
            while True:
                slots.reach(n)
                lengths = restart_lengths(view, j, n, n * self.slot_s, self.slot_s)
                plan = slots.run(levels, levels.below(slots.free[:n]), need, lengths)
                if np.isfinite(plan.end_s):
                    break
                n *= 2
            slots.reserve(plan)
            count[j] = int(plan.counts[0])
            changes = np.flatnonzero(plan.counts[1:] != plan.counts[0])
            if changes.size:
                wake = min(wake, float(changes[0] + 1))
        return ElasticDecision({j: c for j, c in count.items() if c}, (),
                               view.now + wake * self.slot_s if np.isfinite(wake) else None)
