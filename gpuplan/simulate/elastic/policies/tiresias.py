"""``tiresias``: Tiresias' discretized 2D-LAS on rigid gangs, as ElasticFlow compares with.

Every job runs at the count it asked for (its reference count: the trace's ``num_gpu``);
priority queues by attained GPU-seconds (ElasticFlow's ``dlas-gpu``: three queues split at
3250 and 7200 GPU-seconds, as Tiresias' own), first-come first-served within a queue,
preemptive; a job that does not fit is passed over for one that does. No job is declined.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from gpuplan.core.options import option
from gpuplan.simulate.elastic.engine import ElasticDecision, ElasticView
from gpuplan.simulate.policies.las import DEFAULT_THRESHOLDS, _thresholds


@dataclass(frozen=True)
class TiresiasOptions:
    """Options of ``tiresias``."""

    thresholds: tuple[float, ...] = option(
        DEFAULT_THRESHOLDS, "--thresholds", "attained-service thresholds of the priority "
        "queues, GPU-hours, increasing (default: 3250 and 7200 GPU-seconds)",
        parse=_thresholds, metavar="H,H,...")


class Tiresias:
    """Tiresias' 2D-LAS over rigid gangs at their requested counts."""

    name: ClassVar[str] = "tiresias"
    description: ClassVar[str] = ("Tiresias' 2D-LAS, rigid: each job at the count it asked "
                                  "for, queues by attained GPU-time, preemptive")
    options_type: ClassVar[type[Any]] = TiresiasOptions
    calls_solver: ClassVar[bool] = False
    decision_gap_s: ClassVar[float] = 0.0

    def __init__(self, instance: Any, options: TiresiasOptions) -> None:
        self.limits = np.asarray(options.thresholds, dtype=float) * 3600.0
        self.gang = instance.gang
        self.release = instance.release

    def decide(self, view: ElasticView) -> ElasticDecision:
        """Queue by attained service, then arrival; start in order what fits."""
        jobs = np.concatenate([view.active, view.arrived])
        queue = np.searchsorted(self.limits, view.attained[jobs] + 1e-6, side="right")
        order = jobs[np.lexsort((jobs, self.release[jobs], queue))]
        left = view.gpus
        count: dict[int, int] = {}
        wake = np.inf
        for j in order.tolist():
            gang = int(self.gang[j])
            if gang <= left:
                count[j] = gang
                left -= gang
                q = int(np.searchsorted(self.limits, view.attained[j] + 1e-6, side="right"))
                if q < self.limits.size:
                    wake = min(wake, (self.limits[q] - view.attained[j]) / gang)
        return ElasticDecision(count, (), view.now + wake if np.isfinite(wake) else None)
