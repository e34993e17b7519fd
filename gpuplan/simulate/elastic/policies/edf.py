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
from gpuplan.simulate.elastic.policies.common import JobLevels, fixed_counts
from gpuplan.simulate.elastic.policies.elasticflow import SlotOptions


class EarliestDeadline:
    """EDF: deadline order, each job at its widest count in the first window that fits."""

    name: ClassVar[str] = "edf"
    description: ClassVar[str] = ("earliest deadline first, each job at its widest count, "
                                  "no admission control (ElasticFlow's EDF)")
    options_type: ClassVar[type[Any]] = SlotOptions
    calls_solver: ClassVar[bool] = False

    def __init__(self, instance: Any, options: SlotOptions) -> None:
        self.levels = JobLevels(instance)
        self.decision_gap_s = options.slot_s

    def decide(self, view: ElasticView) -> ElasticDecision:
        """Deadline first, each job the widest count the GPUs still free allow.

        ElasticFlow's EDF plans each job forward over the slots, the largest count the
        slot's free GPUs allow, capped at its widest; what a job holds now depends only on
        the jobs before it, so the first slot is all a decision needs (the plan changes
        only when a job ends, an event of its own).
        """
        instance = view.instance
        count = fixed_counts(view)
        jobs = [j for j in np.concatenate([view.active, view.arrived]).tolist()
                if j not in count]
        jobs.sort(key=lambda j: (instance.due[j], instance.release[j], j))
        pinned = bool(count)
        free = view.gpus - sum(count.values())
        chosen: list[int] = []
        for j in jobs:
            if not free:
                break
            levels = self.levels(j)
            k = int(levels.below(np.array([free]))[0])
            while k and pinned and not view.packs([*chosen, int(levels.counts[k])]):
                k -= 1
            if k:
                count[j] = int(levels.counts[k])
                chosen.append(count[j])
                free -= count[j]
        return ElasticDecision(count)
