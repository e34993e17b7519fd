"""``tiresias``: Tiresias' discretized 2D-LAS on rigid gangs, as ElasticFlow compares with.

Every job runs at the count it asked for (its reference count: the trace's ``num_gpu``);
priority queues by attained GPU-seconds (ElasticFlow's ``dlas-gpu``: three queues split at
3250 and 7200 GPU-seconds, as Tiresias' own), first-come first-served within a queue,
preemptive; a job that does not fit is passed over for one that does. No job is declined.
Events within a slot of the last decision are decided together at the slot's end, as
ElasticFlow's simulator does for every policy.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from gpuplan.simulate.elastic.engine import ElasticDecision, ElasticView
from gpuplan.simulate.elastic.policies.common import fixed_counts
from gpuplan.simulate.elastic.policies.elasticflow import SlotOptions

#: ElasticFlow's ``dlas-gpu`` queue thresholds, GPU-seconds (``jobs.py``: 3250, 7200).
THRESHOLDS_S = (3250.0, 7200.0)


class Tiresias:
    """Tiresias' 2D-LAS over rigid gangs at their requested counts."""

    name: ClassVar[str] = "tiresias"
    description: ClassVar[str] = ("Tiresias' 2D-LAS, rigid: each job at the count it asked "
                                  "for, queues by attained GPU-time, preemptive")
    options_type: ClassVar[type[Any]] = SlotOptions
    calls_solver: ClassVar[bool] = False

    def __init__(self, instance: Any, options: SlotOptions) -> None:
        # ElasticFlow's simulator merges Tiresias' events within a slot as its own.
        self.decision_gap_s = options.slot_s
        self.limits = np.asarray(THRESHOLDS_S)
        self.gang = instance.gang
        self.release = instance.release

    def decide(self, view: ElasticView) -> ElasticDecision:
        """Queue by attained service, then arrival; start in order what fits."""
        count = fixed_counts(view)
        jobs = np.array([j for j in np.concatenate([view.active, view.arrived]).tolist()
                         if j not in count], dtype=np.int64)
        queue = np.searchsorted(self.limits, view.attained[jobs] + 1e-6, side="right")
        order = jobs[np.lexsort((jobs, self.release[jobs], queue))]
        left = view.gpus - sum(count.values())
        pinned = bool(count)
        chosen: list[int] = []
        gangs = self.gang[order].tolist()
        for j, gang in zip(order.tolist(), gangs, strict=True):
            if gang <= left and (not pinned or view.packs([*chosen, gang])):
                chosen.append(gang)
                count[j] = gang
                left -= gang
                if not left:
                    break
        # Wake when the first running job reaches the next queue's threshold.
        running = np.fromiter(count, dtype=np.int64, count=len(count))
        wake = np.inf
        if running.size:
            attained = view.attained[running]
            q = np.searchsorted(self.limits, attained + 1e-6, side="right")
            below = q < self.limits.size
            if below.any():
                wake = float(((self.limits[q[below]] - attained[below])
                              / self.gang[running[below]]).min())
        return ElasticDecision(count, (), view.now + wake if np.isfinite(wake) else None)
